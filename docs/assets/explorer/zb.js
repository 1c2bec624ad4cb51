// The schedules that split the backward into B and W: ZB-H1, ZB-H2 and ZBV (zero_bubble.py)
// and DeepSeek's DualPipe and DualPipeV (dualpipe.py), as action lists; a line-by-line port
// of minimegatron/parallel/pipeline_parallel/zero_bubble.py and dualpipe.py, in the same order,
// so schedule.js's simulator times them as `minimegatron timeline` does (tests/test_explorer.py
// runs it under node against the Python, slot by slot). schedule.js loads this file first.
(function (root) {
  "use strict";

  function idiv(a, b) { return (a - a % b) / b; }

  function forwardActions(K, k, i, chunk) {
    var out = k > 0 ? [{op: "recv_act", mb: i, chunk: chunk}] : [];
    out.push({op: "forward", mb: i, chunk: chunk});
    if (k < K - 1) out.push({op: "send_act", mb: i, chunk: chunk});
    return out;
  }

  function backwardActions(K, k, i, chunk) {
    var out = k < K - 1 ? [{op: "recv_grad", mb: i, chunk: chunk}] : [];
    out.push({op: "backward", mb: i, chunk: chunk});
    if (k > 0) out.push({op: "send_grad", mb: i, chunk: chunk});
    return out;
  }

  function weight(i, chunk) { return {op: "weight", mb: i, chunk: chunk}; }

  // zero_bubble._split_backward: w warm-up forwards; then B, W (if holding cap), F; then B, W;
  // then the W's left.
  function splitBackward(K, M, k, warmup, cap, name) {
    var least = warmup(K, 0);
    if (M < least) {
      throw new Error("schedule '" + name + "' needs at least " + least + " micro-batches for " +
                      K + " stages (the first stage's warm-up); got " + M);
    }
    var w = warmup(K, k), out = [], held = w, weights = 0, i, j;
    for (i = 0; i < w; i++) out = out.concat(forwardActions(K, k, i, null));
    for (j = 0; j < M - w; j++) {
      out = out.concat(backwardActions(K, k, j, null));
      if (held === cap) { out.push(weight(weights, null)); weights += 1; held -= 1; }
      out = out.concat(forwardActions(K, k, w + j, null));
      held += 1;
    }
    for (j = M - w; j < M; j++) {
      out = out.concat(backwardActions(K, k, j, null));
      out.push(weight(weights, null));
      weights += 1;
    }
    for (i = weights; i < M; i++) out.push(weight(i, null));
    return out;
  }

  // The V: chunk 0 of stage k is virtual stage k, chunk 1 is 2K-1-k.
  function vPlacement(K, k, chunk) { return chunk === 0 ? k : 2 * K - 1 - k; }

  // zero_bubble.zbv: two chunks per stage in a V, F/B/W of each chunk interleaved.
  function zbv(K, M, k) {
    if (M < 2 * K - 1) {
      throw new Error("schedule 'zbv' needs at least " + (2 * K - 1) + " micro-batches for " +
                      K + " stages (the first stage's warm-up); got " + M);
    }
    var out = [], done = {F0: 0, F1: 0, B0: 0, B1: 0, W0: 0, W1: 0}, n, op, c;
    function run(op, chunk, times) {
      for (var t = 0; t < (times === undefined ? 1 : times); t++) {
        var key = op + chunk, i = done[key], here = vPlacement(K, k, chunk);
        done[key] += 1;
        if (op === "W") out.push(weight(i, chunk));
        else out = out.concat((op === "F" ? forwardActions : backwardActions)(2 * K, here, i,
                                                                               chunk));
      }
    }
    run("F", 0, 2 * (K - k) - 1);
    for (n = 0; n < k; n++) { run("F", 1); run("F", 0); }
    for (n = 0; n < K - k; n++) { run("F", 1); run("B", 1); run("W", 1); }
    var steady = [["B", 0], ["W", 0], ["F", 1], ["B", 1], ["W", 1]];
    while (done.F1 < M) {
      if (done.F0 < M) run("F", 0);
      for (n = 0; n < steady.length; n++) { op = steady[n][0]; c = steady[n][1]; run(op, c); }
    }
    for (n = 0; n < k; n++) { run("B", 0); run("B", 1); }
    for (n = 0; n < K - k; n++) { run("B", 0); run("W", 0); }
    run("W", 1, M - done.W1);
    run("W", 0, M - done.W0);
    return out;
  }

  // dualpipe.program: one rank's compute steps; n ranks on a side, h the distance from its
  // end, N micro-batches per chunk.
  function dualProgram(n, h, N) {
    var steps = [], i, r;
    function repeat(list, times) { for (r = 0; r < times; r++) steps = steps.concat(list); }
    repeat([["F", "near"]], 2 * (n - h - 1));
    repeat([["F", "near"], ["F", "far"]], h + 1);
    repeat([["B", "far", false], ["W"], ["F", "far"]], n - h - 1);
    repeat([["F&B", "near", "far"], ["F&B", "far", "near"]], N - 2 * n + h + 1);
    repeat([["B", "far", true], ["F&B", "far", "near"]], n - h - 1);
    var half = idiv(h + 1, 2);
    for (i = 0; i < h + 1; i++) {
      var splitFar = i > half || i === half && h % 2 === 1;
      var splitNear = i >= half;
      steps.push(["B", "far", !splitFar], ["B", "near", !splitNear]);
    }
    repeat([["W"], ["B", "near", false]], n - h - 1);
    repeat([["W"]], h + 1);
    return steps;
  }

  // dualpipe._Rank and _build: the action list of one rank, W's first in, first out.
  function dualBuild(n, h, N, near, microBatches, stageOf, K) {
    var chunk = {near: near, far: 1 - near}, done = {}, waiting = [], out = [];
    [0, 1].forEach(function (c) { done["F" + c] = 0; done["B" + c] = 0; });
    function next(op, side) {
      var c = chunk[side], i = microBatches[c][done[op + c]];
      done[op + c] += 1;
      var steps = (op === "F" ? forwardActions : backwardActions)(K, stageOf[c], i, c);
      var at = steps.map(function (a) { return a.op; })
        .indexOf(op === "F" ? "forward" : "backward");
      return [steps.slice(0, at), steps.slice(at, at + 1), steps.slice(at + 1)];
    }
    function backward(side, full) {
      var parts = next("B", side), b = parts[1][0], w = weight(b.mb, b.chunk);
      if (full) return [parts[0], parts[1].concat([w]), parts[2]];
      waiting.push(w);
      return parts;
    }
    dualProgram(n, h, N).forEach(function (step) {
      if (step[0] === "W") { out.push(waiting.shift()); return; }
      var parts = step[0] === "F&B" ? [next("F", step[1]), backward(step[2], true)] :
                  step[0] === "F" ? [next("F", step[1])] : [backward(step[1], step[2])];
      for (var position = 0; position < 3; position++) {
        parts.forEach(function (part) { out = out.concat(part[position]); });
      }
    });
    return out;
  }

  function range(a, b) { var out = []; for (var i = a; i < b; i++) out.push(i); return out; }

  function dualpipe(P, M, k) {
    if (P % 2 || M % 2 || M < 2 * P) {
      throw new Error("schedule 'dualpipe' needs an even number of stages and an even number " +
                      "of micro-batches at least twice the stages (half go down, half go " +
                      "up): got " + P + " stages, " + M + " micro-batches");
    }
    var N = idiv(M, 2);
    return dualBuild(idiv(P, 2), Math.min(k, P - 1 - k), N, k >= idiv(P, 2) ? 1 : 0,
                     {0: range(0, N), 1: range(N, 2 * N)}, {0: k, 1: P - 1 - k}, P);
  }

  function dualpipev(P, M, k) {
    if (M < 2 * P) {
      throw new Error("schedule 'dualpipev' needs at least " + 2 * P + " micro-batches for " +
                      P + " stages (twice the stages: the V's 2P chunks); got " + M);
    }
    return dualBuild(P, k, M, 0, {0: range(0, M), 1: range(0, M)},
                     {0: vPlacement(P, k, 0), 1: vPlacement(P, k, 1)}, 2 * P);
  }

  var api = {
    "zb-h1": function (K, M, k) {
      return splitBackward(K, M, k, function (K, k) { return K - k; }, K, "zb-h1");
    },
    "zb-h2": function (K, M, k) {
      return splitBackward(K, M, k, function (K, k) { return 2 * (K - k) - 1; }, 2 * K - 1,
                           "zb-h2");
    },
    zbv: zbv, dualpipe: dualpipe, dualpipev: dualpipev, vPlacement: vPlacement,
    forwardActions: forwardActions, backwardActions: backwardActions
  };
  if (typeof module !== "undefined" && module.exports) module.exports = api;
  else root.MMZeroBubble = api;
})(this);
