// Mixture of experts on the explorer page: the parameters one rank holds (experts, dense), the
// padded dispatch buffer and the bytes the all-to-alls send over ep per step. A line-by-line
// port of minimegatron/tools/memory_moe.py (moe_rank_params, dispatch_buffer_bytes, ep_bytes;
// dispatch.padded_bytes), in the same order of operations; tests/test_explorer.py runs it under
// node against the Python. calc.js (MMCalc, loaded first) gives rankParamCount.
(function (root) {
  "use strict";
  var C = typeof module !== "undefined" && module.exports ? require("./calc.js") : root.MMCalc;

  function idiv(a, b) { return (a - a % b) / b; }

  // One expert MLP h -> 4h -> h: 8h^2 + 5h parameters.
  function expertSize(h) { return 8 * h * h + 5 * h; }

  // The MoE blocks among stage k's L/K consecutive blocks: i % every == 0.
  function moeLayers(g, every, pp, stage) {
    var per = idiv(g.n_layer, pp), n = 0;
    for (var i = stage * per; i < (stage + 1) * per; i++) if (i % every === 0) n += 1;
    return n;
  }

  // memory_moe.moe_rank_params: {experts, dense} parameters of one rank of stage k.
  function rankParams(g, experts, every, ep, pp, tp, stage) {
    if (experts % ep) throw new Error("experts=" + experts + " is not divisible by ep=" + ep);
    var h = g.d_model, nP = moeLayers(g, every, pp, stage);
    var denseMlp = idiv(8 * h * h + 4 * h, tp) + h;               // the MLP's tp share
    return {experts: idiv(nP * experts, ep) * expertSize(h),
            dense: C.rankParamCount(g, pp, tp, stage) - nP * denseMlp + nP * h * experts};
  }

  function capacity(g, experts, topK, factor) {
    return Math.ceil(topK * g.seq_len * factor / experts);
  }

  // memory_moe.dispatch_buffer_bytes: one padded dispatch buffer, E b C h values.
  function dispatchBufferBytes(g, experts, topK, factor, mb, precision) {
    return experts * mb * capacity(g, experts, topK, factor) * g.d_model *
      C.PRECISIONS[precision];
  }

  // dispatch.padded_bytes: what a rank sends in one dispatch or combine, (ep-1) E/ep C h b.
  function paddedBytes(ep, experts, cap, width, sequences, itemsize) {
    return (ep - 1) * idiv(experts, ep) * cap * width * sequences * itemsize;
  }

  // memory_moe.ep_bytes: M n_p 4 padded all-to-alls per step (no recomputation).
  function epBytes(g, experts, topK, factor, mb, M, ep, pp, stage, every, precision) {
    var nP = moeLayers(g, every, pp, stage);
    return M * nP * 4 * paddedBytes(ep, experts, capacity(g, experts, topK, factor),
                                    g.d_model, mb, C.PRECISIONS[precision]);
  }

  // The MoE rows of the page's configuration c (experts, top_k, capacity_factor, ep,
  // moe_every beside calc.js's fields): one {experts, dense, ep} per stage and the buffer.
  function report(c) {
    var g = {vocab: c.vocab, seq_len: c.seq, n_layer: c.layers, d_model: c.hidden,
             n_head: c.heads};
    var rows = [];
    for (var stage = 0; stage < c.pp; stage++) {
      var r = rankParams(g, c.experts, c.moe_every, c.ep, c.pp, c.tp, stage);
      r.ep = epBytes(g, c.experts, c.top_k, c.capacity_factor, c.micro_batch,
                     c.micro_batches, c.ep, c.pp, stage, c.moe_every, c.precision);
      rows.push(r);
    }
    return {stages: rows, buffer: dispatchBufferBytes(g, c.experts, c.top_k, c.capacity_factor,
                                                      c.micro_batch, c.precision)};
  }

  // Why the page cannot show this MoE, or "": E over ep, ep over dp x cp, k <= E.
  function check(c) {
    if (c.experts % c.ep) return "experts must be a multiple of ep";
    if ((c.dp * c.cp) % c.ep) return "ep must divide dp x cp (ep is folded over them)";
    if (c.top_k > c.experts) return "top-k must be at most the experts";
    return c.capacity_factor > 0 ? "" : "the capacity factor must be > 0 (padded all-to-all)";
  }

  // ------------------------------------------------------------- the page (explorer.js)

  var TEXT = {
    en: {experts: "experts E (0: dense)", top_k: "top-k", capacity_factor: "capacity factor",
         ep: "ep (folded over dp x cp)", moe_every: "MoE every n-th block",
         head: "Mixture of experts: per rank", stage: "stage", expert_params: "expert params",
         dense_params: "dense params", ep_bytes: "ep bytes per step (all-to-alls)",
         buffer: "one padded dispatch buffer (E b C h values): ", bytes: " bytes",
         derive: "derived on", bad: "This MoE does not fit the grid: "},
    ko: {experts: "expert 수 E (0: dense)", top_k: "top-k", capacity_factor: "capacity factor",
         ep: "ep (dp x cp 위에 접힘)", moe_every: "n번째 block마다 MoE",
         head: "Mixture of experts: rank마다", stage: "stage", expert_params: "expert parameter",
         dense_params: "dense parameter", ep_bytes: "step마다 ep byte (all-to-all)",
         buffer: "padding한 dispatch buffer 하나 (E b C h 값): ", bytes: " byte",
         derive: "유도한 곳", bad: "이 MoE는 grid에 맞지 않습니다: "}
  };
  var INPUTS = [["experts", "0"], ["top_k", "2"], ["capacity_factor", "1.25"], ["ep", "1"],
                ["moe_every", "1"]];

  function inputs(box, lang, el) {
    INPUTS.forEach(function (pair) {
      var label = el("label", {}, TEXT[lang][pair[0]] + " ");
      label.appendChild(el("input", {type: "number", min: pair[0] === "experts" ? "0" : "1",
                                     step: pair[0] === "capacity_factor" ? "0.25" : "1",
                                     name: pair[0], value: pair[1]}));
      box.appendChild(label);
    });
  }

  function block(out, c, lang, el, href) {
    if (!(c.experts > 0)) return;
    var t = TEXT[lang];
    var bad = INPUTS.filter(function (p) {
      return p[0] !== "capacity_factor" && !(Number.isInteger(c[p[0]]) && c[p[0]] >= 1);
    }).length ? "experts, top-k, ep and n must be positive integers" : check(c);
    var head = el("h3", {}, t.head + " ");
    head.appendChild(el("a", {href: href}, t.derive + " moe"));
    out.appendChild(head);
    if (bad) {
      out.appendChild(el("p", {"class": "mm-error", "data-mm": "moe-error"}, t.bad + bad));
      return;
    }
    var r = report(c), table = el("table", {"class": "mm-table"}), tr = el("tr", {});
    [t.stage, t.expert_params, t.dense_params, t.ep_bytes].forEach(function (name) {
      tr.appendChild(el("th", {}, name));
    });
    table.appendChild(tr);
    r.stages.forEach(function (row, stage) {
      var line = el("tr", {});
      line.appendChild(el("td", {}, String(stage)));
      ["experts", "dense", "ep"].forEach(function (k) {
        line.appendChild(el("td", {"data-mm": "moe.stage" + stage + "." + k,
                                   "data-value": String(row[k])},
                            row[k].toLocaleString("en-US")));
      });
      table.appendChild(line);
    });
    out.appendChild(table);
    var p = el("p", {}, t.buffer);
    p.appendChild(el("span", {"data-mm": "moe.buffer", "data-value": String(r.buffer)},
                     r.buffer.toLocaleString("en-US")));
    p.appendChild(document.createTextNode(t.bytes));
    out.appendChild(p);
  }

  var api = {report: report, check: check, rankParams: rankParams, epBytes: epBytes,
             dispatchBufferBytes: dispatchBufferBytes, inputs: inputs, block: block};
  if (typeof module !== "undefined" && module.exports) module.exports = api;
  else root.MMMoE = api;
})(this);
