// The pipeline schedules as action lists and the simulator that times them: a line-by-line port
// of minimegatron/parallel/pipeline_parallel/schedules.py (gpipe, 1f1b, interleaved; the
// zero-bubble and DualPipe schedules are zb.js, loaded first),
// actions.py and simulator.py (simulate, the idle fraction), in the same order of operations,
// so the timeline and its idle fraction equal `minimegatron timeline`'s (tests/test_explorer.py
// runs it under node against the Python). calc.js uses it for the activations a stage holds.
(function (root) {
  "use strict";

  // Python's a // b for non-negative integers, exactly.
  function idiv(a, b) { return (a - a % b) / b; }

  var Z = typeof module !== "undefined" && module.exports ? require("./zb.js")
                                                          : root.MMZeroBubble;
  var forwardActions = Z.forwardActions, backwardActions = Z.backwardActions;
  var SPLIT = ["zb-h1", "zb-h2", "zbv", "dualpipe", "dualpipev"];   // schedules with W
  var OPS = {forward: "F", backward: "B", weight: "W"};

  // schedules.chunk_share: the part of a stage's layers one chunk's step runs: 1/v
  // (interleaved), 1/2 (zbv, dualpipev: two half chunks), 1 (dualpipe: two whole stages).
  function chunkShare(schedule, v) {
    if (schedule === "interleaved") return 1 / v;
    return schedule === "zbv" || schedule === "dualpipev" ? 0.5 : 1;
  }

  // schedules.placement: virtual stage of (K, stage, chunk); a loop, or a V.
  function place(schedule, K, s, chunk) {
    if (schedule === "zbv" || schedule === "dualpipe" || schedule === "dualpipev") {
      return Z.vPlacement(K, s, chunk);
    }
    return chunk * K + s;
  }

  // The action list of stage k under a schedule: gpipe, 1f1b, interleaved (v chunks), and
  // zb.js's zb-h1, zb-h2, zbv, dualpipe, dualpipev.
  function program(schedule, K, M, k, v) {
    var out = [], i, j;
    if (SPLIT.indexOf(schedule) >= 0) return Z[schedule](K, M, k);
    if (schedule === "gpipe") {
      for (i = 0; i < M; i++) out = out.concat(forwardActions(K, k, i, null));
      for (i = 0; i < M; i++) out = out.concat(backwardActions(K, k, i, null));
      return out;
    }
    if (schedule === "1f1b") {
      var warm = Math.min(K - k - 1, M);
      for (i = 0; i < warm; i++) out = out.concat(forwardActions(K, k, i, null));
      for (i = 0; i < M - warm; i++) {
        out = out.concat(forwardActions(K, k, warm + i, null), backwardActions(K, k, i, null));
      }
      for (i = M - warm; i < M; i++) out = out.concat(backwardActions(K, k, i, null));
      return out;
    }
    if (schedule !== "interleaved") throw new Error("unknown schedule " + schedule);
    if (M % K) throw new Error("interleaved needs M a multiple of K");
    var total = M * v;
    function step(j, forward) {
      var group = idiv(j, K * v), position = j % (K * v);
      var chunk = forward ? idiv(position, K) : v - 1 - idiv(position, K);
      var make = forward ? forwardActions : backwardActions;
      return make(K * v, chunk * K + k, group * K + position % K, chunk);
    }
    var warmup = Math.min((K - k - 1) * 2 + (v - 1) * K, total);
    for (j = 0; j < warmup; j++) out = out.concat(step(j, true));
    for (j = 0; j < total - warmup; j++) out = out.concat(step(warmup + j, true), step(j, false));
    for (j = total - warmup; j < total; j++) out = out.concat(step(j, false));
    return out;
  }

  // Most micro-batches whose forward is done and backward (or W, if any) is not.
  function peakInFlight(actions) {
    var held = 0, peak = 0;
    var release = actions.some(function (a) { return a.op === "weight"; }) ? "weight"
                                                                             : "backward";
    actions.forEach(function (a) {
      if (a.op === "forward") { held += 1; peak = Math.max(peak, held); }
      else if (a.op === release) held -= 1;
    });
    return peak;
  }

  // simulator.simulate: every stage runs its list against a clock; a receive waits for its
  // send. A schedule with W runs B in tB and W in tW (> 0); one without, its backward in
  // tB + tW. Returns {slots: [[{start, end, op, mb, chunk}]], makespan, bubble_fraction,
  // bubble (the zero-bubble paper's: the most a stage idles inside its own span)}.
  function simulate(schedule, K, M, tF, tB, v, tW) {
    v = schedule === "interleaved" ? (v || 2) : 1;
    tW = tW || 0;
    var programs = [], s;
    for (s = 0; s < K; s++) programs.push(program(schedule, K, M, s, v));
    var split = programs.some(function (p) {
      return p.some(function (a) { return a.op === "weight"; });
    });
    if (split && !(tW > 0)) {
      throw new Error("schedule '" + schedule + "' runs W on its own: need t_weight > 0");
    }
    var share = chunkShare(schedule, v);
    var duration = {forward: tF * share, weight: tW * share,
                    backward: (tB + (split ? 0 : tW)) * share};
    var clock = [], pc = [], slots = [], posted = {};
    for (s = 0; s < K; s++) { clock.push(0); pc.push(0); slots.push([]); }
    var progress = true;
    while (progress) {
      progress = false;
      for (s = 0; s < K; s++) {
        var prog = programs[s];
        while (pc[s] < prog.length) {
          var a = prog[pc[s]];
          var here = place(schedule, K, s, a.chunk || 0);
          var step = a.op === "recv_act" || a.op === "send_grad" ? -1 : 1;
          if (a.op.indexOf("recv") === 0) {
            var key = (here + step) + "," + here + "," + a.mb;
            if (!(key in posted)) break;
            clock[s] = Math.max(clock[s], posted[key]);
            delete posted[key];
          } else if (a.op.indexOf("send") === 0) {
            posted[here + "," + (here + step) + "," + a.mb] = clock[s];
          } else {
            var t = duration[a.op];
            slots[s].push({start: clock[s], end: clock[s] + t, op: OPS[a.op], mb: a.mb,
                           chunk: a.chunk});
            clock[s] += t;
          }
          pc[s] += 1;
          progress = true;
        }
      }
    }
    for (s = 0; s < K; s++) {
      if (pc[s] < programs[s].length || Object.keys(posted).length) {
        throw new Error("schedule " + schedule + " deadlocks");
      }
    }
    var makespan = Math.max.apply(null, clock);
    var idle = 0, bubble = -Infinity;
    for (s = 0; s < K; s++) {
      var busy = slots[s].reduce(function (sum, x) { return sum + (x.end - x.start); }, 0);
      idle += makespan - busy;
      var row = slots[s];
      bubble = Math.max(bubble, row[row.length - 1].end - row[0].start - busy);
    }
    return {slots: slots, makespan: makespan, bubble_fraction: idle / (K * makespan),
            bubble: bubble};
  }

  // schedules.bubble_formula: (K-1)/(vM + K-1), as [numerator, denominator] in lowest terms.
  function bubbleFormula(K, M, v) {
    var num = K - 1, den = (v || 1) * M + K - 1;
    var a = num, b = den;
    while (b) { var r = a % b; a = b; b = r; }
    return [num / a, den / a];
  }

  var api = {program: program, peakInFlight: peakInFlight, simulate: simulate,
             bubbleFormula: bubbleFormula, chunkShare: chunkShare, SPLIT: SPLIT};
  if (typeof module !== "undefined" && module.exports) module.exports = api;
  else root.MMSchedule = api;
})(this);
