// The explorer's arithmetic: memory per rank, bytes per step and the pipeline timeline.
//
// A line-by-line port of minimegatron/tools/memory.py (rank_report and what it calls) and of
// tools/scaling.py (step_time), kept in the same order of operations, so every number equals
// the command line's to the byte; the schedules and the simulator are schedule.js (loaded
// first), re-exported here. tests/test_explorer.py runs this file under node over thousands
// of random configurations against the Python. Plain JavaScript, no library, no network; the
// page (explorer.js) and node both load it. Integers stay exact below 2^53, as Python's do;
// the step time's FLOPs, past it, are BigInt.
(function (root) {
  "use strict";
  var MIXED = "mixed";
  var PRECISIONS = {mixed: 2, float32: 4, float64: 8};  // bytes per element (memory.py)
  var ATTENTION = ["ring", "allgather", "ulysses"];
  var SCHEDULES = ["gpipe", "1f1b", "interleaved", "zb-h1", "zb-h2", "zbv", "dualpipe",
                   "dualpipev"];
  var S = typeof module !== "undefined" && module.exports ? require("./schedule.js")
                                                          : root.MMSchedule;

  // Python's a // b for non-negative integers, exactly (no float rounding of a / b).
  function idiv(a, b) { return (a - a % b) / b; }

  // split.padded: n rounded up to a multiple of parts.
  function padded(n, parts) { return idiv(n + parts - 1, parts) * parts; }

  // ------------------------------------------------------------- parameters (memory.py)

  // L(12h^2 + 13h) + (V + s)h + 2h + hV: the whole untied GPT.
  function paramCount(g) {
    var h = g.d_model;
    return g.n_layer * (12 * h * h + 13 * h) + (g.vocab + g.seq_len) * h + 2 * h + h * g.vocab;
  }

  // Parameters of one rank of stage `stage`: L/K layers of (12h^2 + 7h)/t + 6h, the vocab
  // slice of wte and wpe on stage 0, ln_f and the head's slice on stage K-1.
  function rankParamCount(g, pp, tp, stage) {
    var h = g.d_model, t = tp;
    if (g.n_layer % pp || h % t || g.n_head % t || !(stage >= 0 && stage < pp)) {
      throw new Error("layers " + g.n_layer + " % pp " + pp + ", hidden " + h + " and heads " +
                      g.n_head + " % tp " + t + " must be 0, and 0 <= stage " + stage + " < pp");
    }
    var perLayer = idiv(12 * h * h + 7 * h, t) + 6 * h;
    var count = idiv(g.n_layer, pp) * perLayer;
    var vocabShard = idiv(padded(g.vocab, t), t) * h;
    if (stage === 0) count += vocabShard + g.seq_len * h;
    if (stage === pp - 1) count += 2 * h + vocabShard;
    return count;
  }

  // memory.pipeline_param_count: zbv and dualpipev hold virtual stages k and 2K-1-k of 2K
  // (a V), dualpipe stages k and K-1-k of K (every stage twice); the others stage k's.
  function pipelineParamCount(g, pp, tp, stage, schedule) {
    if (schedule === "zbv" || schedule === "dualpipev") {
      return rankParamCount(g, 2 * pp, tp, stage) + rankParamCount(g, 2 * pp, tp,
                                                                   2 * pp - 1 - stage);
    }
    if (schedule === "dualpipe") {
      return rankParamCount(g, pp, tp, stage) +
        (pp - 1 - stage === stage ? 0 : rankParamCount(g, pp, tp, pp - 1 - stage));
    }
    return rankParamCount(g, pp, tp, stage);
  }

  // ------------------------------------------------------------- model state

  // ZeRO stage s divides the optimizer (s >= 1), the grads (s >= 2), the weights (s = 3).
  function shardedStateBytes(perParam, params, dp, zero) {
    if ([0, 1, 2, 3].indexOf(zero) < 0) throw new Error("ZeRO stage must be 0, 1, 2 or 3");
    var out = {
      weights: params * perParam.weights / (zero >= 3 ? dp : 1),
      grads: params * perParam.grads / (zero >= 2 ? dp : 1),
      optimizer: params * perParam.optimizer / (zero >= 1 ? dp : 1)
    };
    out.total = 0 + out.weights + out.grads + out.optimizer;
    return out;
  }

  // Mixed: 2 + 2 + 12 bytes per parameter; one precision of b bytes: b + b + 2b.
  function modelStateBytes(params, dp, zero, precision) {
    var b = PRECISIONS[precision];
    var perParam = {weights: b, grads: b, optimizer: precision === MIXED ? 12 : 2 * b};
    return shardedStateBytes(perParam, params, dp, zero);
  }

  // ------------------------------------------------------------- activations

  // Bytes one layer keeps for backward per micro-batch (memory.activation_bytes_per_layer).
  function activationBytesPerLayer(g, mb, tp, precision, sp, recompute, cp, attention) {
    var s = g.seq_len, h = g.d_model, a = g.n_head, t = tp, b = mb;
    if (cp > 1 && ATTENTION.indexOf(attention) < 0) throw new Error("unknown attention");
    var split = sp ? t : 1;
    var local = idiv(s, cp);
    var sbh = local * b * h;
    if (precision === MIXED) {
      if (recompute === "full") return 2 * sbh / split;
      if (cp > 1 && recompute !== "selective") {
        var extra = {ring: 0, allgather: 4 * s * b * h / t,
                     ulysses: 5 * a * s * s * b / (cp * t)}[attention];
        return sbh * (10 / split + 24 / t) + extra;
      }
      var attentionTerm = recompute === "selective" ? 0 : 5 * a * s / (h * t);
      return sbh * (10 / split + 24 / t + attentionTerm);
    }
    if (recompute === "selective") throw new Error("this code has no selective recomputation");
    var itemsize = PRECISIONS[precision];
    if (recompute === "full") return itemsize * sbh / split;
    var replicated = 5 * sbh + 2 * local * b;
    if (cp === 1) return itemsize * (replicated / split + (16 * sbh + a * s * s * b) / t);
    if (attention === "ring") {
      return itemsize * (replicated / split + (17 * sbh + a * local * b) / t) + 8 * s;
    }
    if (attention === "allgather") {
      var sharded = 15 * sbh + 2 * s * b * h + a * local * b;
      return itemsize * (replicated / split + sharded / t) + local * s;
    }
    return itemsize * (replicated / split + (16 * sbh + a * s * s * b / cp) / t);
  }

  // The ring's transient K/V blocks of one layer: 2 forward, 4 backward.
  function ringInFlightBytes(g, mb, tp, cp, precision) {
    if (cp === 1) return {forward: 0, backward: 0};
    var block = 2 * idiv(g.seq_len, cp) * mb * g.d_model / tp * PRECISIONS[precision];
    return {forward: 2 * block, backward: 4 * block};
  }

  // Micro-batches whose activations stage k holds at peak: GPipe M, 1F1B min(M, K - k),
  // any other schedule read off its action list (peak x the part of a stage a chunk holds).
  function inFlight(pp, M, stage, schedule) {
    if (schedule === "gpipe") return M;
    if (schedule === "1f1b") return Math.min(M, pp - stage);
    if (SCHEDULES.indexOf(schedule) < 0) throw new Error("unknown schedule " + schedule);
    return S.peakInFlight(S.program(schedule, pp, M, stage, 2)) * S.chunkShare(schedule, 2);
  }

  function activationBytes(g, mb, M, pp, tp, stage, schedule, checkpoint, precision, sp, cp,
                           attention) {
    var layers = idiv(g.n_layer, pp);
    var perLayer = activationBytesPerLayer(g, mb, tp, precision, sp, null, cp, attention);
    var held = inFlight(pp, M, stage, schedule);
    if (!checkpoint) return held * layers * perLayer;
    var blockInput = idiv(g.seq_len, cp) * mb * g.d_model * PRECISIONS[precision];
    return held * layers * blockInput / (sp ? tp : 1) + perLayer;
  }

  // ------------------------------------------------------------- communication

  function allReduceBytes(nbytes, n) { return 2 * (n - 1) / n * nbytes; }

  function cpAttentionBytes(g, mb, tp, cp, attention, precision) {
    var c = cp;
    if (c === 1) return {forward: 0, backward: 0};
    var kv = g.seq_len * mb * g.d_model / tp * PRECISIONS[precision];
    if (attention === "allgather") {
      var both = 2 * (c - 1) / c * kv;
      return {forward: both, backward: both};
    }
    if (attention === "ring") {
      return {forward: (c - 1) * 2 * kv / c, backward: (2 * c - 1) * 2 * kv / c};
    }
    if (attention === "ulysses") {
      var each = 4 * (c - 1) / c * kv / c;
      return {forward: each, backward: each};
    }
    throw new Error("attention must be one of " + ATTENTION.join(", "));
  }

  // Bytes one rank of stage `stage` sends per step, by dimension (memory.comm_bytes).
  function commBytes(g, mb, M, dp, pp, tp, stage, zero, recompute, precision, sp, cp,
                     attention, schedule) {
    var b = PRECISIONS[precision];
    var local = idiv(g.seq_len, cp);
    var sbh = local * mb * g.d_model * b;
    var grads = pipelineParamCount(g, pp, tp, stage, schedule) * b;
    var ranks = dp * cp;
    var dpBytes = (zero === 1 || zero === 3 ? 3 : 2) * (ranks - 1) / ranks * grads;
    var spOn = sp && tp > 1 ? 1 : 0;
    var perLayer = (recompute ? 6 : 4) + spOn;
    var hB = g.d_model * b;
    var tpValues = idiv(g.n_layer, pp) * (perLayer * sbh + spOn * 6 * hB);
    var first = spOn ? sbh + 0.5 * local * hB : sbh;
    var last = spOn ? 1.5 * sbh + 2 * hB : sbh;
    tpValues += (stage === 0 ? 1 : 0) * first +
                (stage === pp - 1 ? 1 : 0) * (last + 3 * sbh / g.d_model);
    var tpBytes = M * allReduceBytes(tpValues, tp);
    // 1F1B's sends; interleaved (v = 2): a micro-batch crosses every rank v times, 2v - first
    // - last; zbv, dualpipev: a V, down and back up, twice 1F1B's
    var sends = (stage < pp - 1 ? 1 : 0) + (stage > 0 ? 1 : 0);
    if (schedule === "interleaved" && pp > 1) {
      sends = 2 * 2 - (stage === pp - 1 ? 1 : 0) - (stage === 0 ? 1 : 0);
    } else if (schedule === "zbv" || schedule === "dualpipev") {
      sends = 2 * sends;
    }
    var ppBytes = M * sbh / (spOn ? tp : 1) * sends;
    var attn = cpAttentionBytes(g, mb, tp, cp, attention, precision);
    var cpBytes = idiv(M * g.n_layer, pp) * (attn.forward * (recompute ? 2 : 1) +
                                             attn.backward);
    return {dp: dpBytes, tp: tpBytes, pp: ppBytes, cp: cpBytes,
            total: dpBytes + tpBytes + ppBytes + cpBytes};
  }

  // Everything one rank of `stage` holds and sends (memory.rank_report); c: a config with
  // vocab, seq, layers, hidden, heads, micro_batch, micro_batches, dp, pp, tp, cp, zero,
  // schedule, checkpoint, precision, sequence_parallel, attention.
  function rankReport(c, stage) {
    var g = shape(c);
    var params = pipelineParamCount(g, c.pp, c.tp, stage, c.schedule);   // dualpipe: two
    var r = modelStateBytes(params, c.dp * c.cp, c.zero, c.precision);
    r.params = params;
    r.activations = activationBytes(g, c.micro_batch, c.micro_batches, c.pp, c.tp, stage,
                                    c.schedule, c.checkpoint, c.precision,
                                    c.sequence_parallel, c.cp, c.attention);
    r.ring_in_flight = c.attention === "ring" ?
        ringInFlightBytes(g, c.micro_batch, c.tp, c.cp, c.precision).backward : 0;
    r.total += r.activations + r.ring_in_flight;
    r.comm = commBytes(g, c.micro_batch, c.micro_batches, c.dp, c.pp, c.tp, stage, c.zero,
                       c.checkpoint, c.precision, c.sequence_parallel, c.cp, c.attention,
                       c.schedule);
    return r;
  }

  function shape(c) {
    return {vocab: c.vocab, seq_len: c.seq, n_layer: c.layers, d_model: c.hidden,
            n_head: c.heads};
  }

  // commands/memory.check_config: the one-line reason a grid cannot split the model, or "".
  function checkConfig(c) {
    if (c.layers % c.pp || c.hidden % c.tp || c.heads % c.tp) {
      return "layers % pp, hidden % tp and heads % tp must be 0";
    }
    var parts = c.attention === "ulysses" ? c.cp : 2 * c.cp;
    if (c.cp > 1 && c.seq % parts) return "seq must be a multiple of " + parts + " (cp chunks)";
    if (c.cp > 1 && c.attention === "ulysses" && idiv(c.heads, c.tp) % c.cp) {
      return "heads / tp must be a multiple of cp (ulysses)";
    }
    if (c.sequence_parallel && idiv(c.seq, c.cp) % c.tp) return "seq / cp must split over tp";
    if (c.schedule === "interleaved" && c.micro_batches % c.pp) {
      return "interleaved needs micro-batches a multiple of pp";
    }
    if ((c.schedule === "zbv" || c.schedule === "dualpipev") && c.layers % (2 * c.pp)) {
      return "layers % (2 pp) must be 0 (two chunks per stage in a V)";
    }
    try {                                // the schedule's own rule (M, K), as the command's
      for (var stage = 0; stage < c.pp; stage++) inFlight(c.pp, c.micro_batches, stage,
                                                           c.schedule);
    } catch (error) {
      return error.message;
    }
    return "";
  }

  // ------------------------------------------------------------- step time (scaling.py)

  // scaling.Hardware's defaults: DGX-2H, 16 V100 per node, as in Megatron-LM (2019).
  var HARDWARE = {name: "DGX-2H (16 x V100)", gpus_per_node: 16, peak_flops: 130e12,
                  efficiency: 0.30, intra_bw: 150e9, inter_bw: 100e9, intra_latency: 2e-6,
                  inter_latency: 5e-6};

  // Python's int / int: the exact quotient of two BigInts rounded once to a double. The
  // quotient is taken with 64 bits more than a double holds and a sticky last bit, so
  // Number() rounds it to nearest-even exactly as Python does.
  function bigDivide(a, b) {
    var shift = 0n;
    while ((a << shift) / b < (1n << 64n)) shift += 64n;
    var scaled = a << shift, q = scaled / b;
    if (scaled % b !== 0n) q = q | 1n;
    return Number(q) / Math.pow(2, Number(shift));
  }

  // memory.training_flops as an exact integer: passes * 2BL(12sh^2 + 2s^2h) + 6Bshv.
  function trainingFlops(g, batch, recompute) {
    var B = BigInt(batch), T = BigInt(g.seq_len), D = BigInt(g.d_model), H = BigInt(g.n_layer);
    var forward = 2n * B * H * (12n * T * D * D + 2n * T * T * D);
    return (recompute ? 4n : 3n) * forward + 6n * B * T * D * BigInt(g.vocab);
  }

  function link(hw, size, stride) {
    if (size * stride <= hw.gpus_per_node) return [hw.intra_bw, hw.intra_latency];
    var perNode = Math.max(1, Math.min(size, idiv(hw.gpus_per_node, stride)));
    return [Math.min(hw.intra_bw, hw.inter_bw * perNode / hw.gpus_per_node),
            hw.inter_latency];
  }

  function allReduceTime(hw, nbytes, size, stride) {
    if (size === 1) return 0;
    var bw = link(hw, size, stride);
    return 2 * (size - 1) * (bw[1] + nbytes / size / bw[0]);
  }

  // scaling.step_time: seconds per step (compute with the bubble, tp, dp, pp) and efficiency,
  // as `minimegatron memory` prints under its table.
  function stepTime(c, hw) {
    hw = hw || HARDWARE;
    var g = shape(c), M = c.micro_batches, pp = c.pp, tp = c.tp, dp = c.dp;
    var flopsRate = hw.peak_flops * hw.efficiency;
    var flopsMb = trainingFlops(g, c.micro_batch, c.checkpoint);
    var compute = bigDivide(BigInt(M + pp - 1) * flopsMb, BigInt(tp * pp)) / flopsRate;
    var sbh = g.seq_len * c.micro_batch * g.d_model * PRECISIONS[c.precision];
    var perLayer = c.checkpoint ? 6 : 4;
    var tpTime = M * idiv(g.n_layer, pp) * perLayer * allReduceTime(hw, sbh, tp, 1);
    var grads = rankParamCount(g, pp, tp, 0) * PRECISIONS[c.precision];
    var dpTime = allReduceTime(hw, grads, dp, tp);
    var ppTime = 0;
    if (pp > 1) {
      var bw = link(hw, 2, tp * dp);
      ppTime = 2 * M * (bw[1] + sbh / bw[0]);
    }
    var total = compute + tpTime + dpTime + ppTime;
    var useful = Number(BigInt(M) * flopsMb * BigInt(dp));
    return {compute: compute, tp: tpTime, dp: dpTime, pp: ppTime, total: total,
            comm_share: (tpTime + dpTime + ppTime) / total, flops_per_s: useful / total,
            efficiency: useful / (dp * tp * pp * flopsRate * total)};
  }

  var api = {
    MIXED: MIXED, PRECISIONS: PRECISIONS, ATTENTION: ATTENTION, SCHEDULES: SCHEDULES,
    paramCount: paramCount, rankParamCount: rankParamCount, modelStateBytes: modelStateBytes,
    pipelineParamCount: pipelineParamCount,
    activationBytesPerLayer: activationBytesPerLayer, activationBytes: activationBytes,
    inFlight: inFlight, commBytes: commBytes, cpAttentionBytes: cpAttentionBytes,
    rankReport: rankReport, checkConfig: checkConfig,
    program: S.program, peakInFlight: S.peakInFlight, simulate: S.simulate, SPLIT: S.SPLIT,
    bubbleFormula: S.bubbleFormula, stepTime: stepTime, HARDWARE: HARDWARE,
    bigDivide: bigDivide
  };
  if (typeof module !== "undefined" && module.exports) module.exports = api;
  else root.MMCalc = api;
})(this);
