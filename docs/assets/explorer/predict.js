// Predict, then check (docs/explorer.md): the student types a number before seeing it, the page
// computes the answer with calc.js (MMCalc, equal to `minimegatron memory` and `timeline`)
// and says whether the prediction is within 2 %, then shows the answer and where it comes from.
//   zero2   model state of one rank (weights + gradients + optimizer state, GB) at ZeRO-2, tp 2:
//           P/rank from rank_param_count, then 2P + 2P/N + 12P/N in mixed precision
//   bubble  the idle fraction of ZBV against 1F1B's, K = 4 stages, M = 8 micro-batches,
//           T_F = T_B = T_W: the question's numbers and the answer from MMCalc.simulate
//   cp      bytes a rank sends in one layer's attention backward, ring over all-gather, cp 4:
//           cp_attention_bytes, (2c-1) 2kv/c against 2(c-1)/c kv, 7/3
// A prediction may be written 0.27, 27 %, or 3/11. Runs only on a page with #mm-predict.
(function () {
  "use strict";
  var ZERO2 = {layers: 24, hidden: 2048, heads: 16, vocab: 51200, seq: 2048, micro_batch: 1,
               micro_batches: 1, dp: 8, tp: 2, pp: 1, cp: 1, zero: 2, schedule: "1f1b",
               checkpoint: true, precision: "mixed", sequence_parallel: false,
               attention: "ring"};
  var BUBBLE = {stages: 4, micro_batches: 8, t: 1};      // T_F = T_B = T_W = t
  var CP = {vocab: 51200, seq_len: 4096, n_layer: 24, d_model: 2048, n_head: 16};
  var TEXT = {
    en: {
      zero2: "A GPT of 24 layers, d_model 2048, 16 heads, vocabulary 51,200, sequence 2,048, " +
             "in mixed precision, on dp 8 x tp 2 with ZeRO-2. How many GB of model state " +
             "(weights + gradients + optimizer state) does one rank hold?",
      bubble: "1F1B on K = {K} stages with M = {M} micro-batches, forward, input gradient B " +
              "and weight gradient W each one unit: the simulator finds the stages idle " +
              "{plain} of the time (makespan {plain_makespan}). ZBV splits B from W and " +
              "runs two half chunks per stage in a V. What fraction of the time is idle " +
              "under ZBV, at the same times?",
      cp: "Context parallelism over cp = 4 ranks, sequence 4,096, d_model 2048: in one " +
          "layer's attention backward, how many times the all-gather's bytes does the ring " +
          "send per rank?",
      unit_zero2: "GB", unit_bubble: "(0.5, 50 % or 1/2)", unit_cp: "x", check: "check",
      right: "Right. ", wrong: "Not quite. ", unreadable: "Write a number, e.g. 0.27 or 3/11.",
      answer: "The answer: ",
      why_zero2: " GB: P = {P} parameters per rank (tp 2), 2P + 2P/N + 12P/N with N = 8.",
      why_bubble: " = {zbv}, the simulator's idle / (K x makespan): ZBV's makespan is " +
                  "{zbv_makespan} against 1F1B's {plain_makespan}; its stages never wait " +
                  "inside their span (the paper's bubble {zbv_bubble} against {plain_bubble})" +
                  ", only stage k starts k T_F/2 late.",
      why_cp: ": the ring sends K/V c - 1 times and dK/dV c times, (2c - 1) 2kv/c; the " +
              "all-gather's reduce-scatters 2(c - 1)/c kv: 7/3 at c = 4."
    },
    ko: {
      zero2: "layer 24개, d_model 2048, head 16개, 어휘 51,200, sequence 2,048인 GPT를 " +
             "mixed precision으로 dp 8 x tp 2에서 ZeRO-2로 학습합니다. rank 하나가 가지는 " +
             "model state (weight + gradient + optimizer state)는 몇 GB일까요?",
      bubble: "stage K = {K}개, micro-batch M = {M}개의 1F1B에서 forward, input gradient B, " +
              "weight gradient W가 각각 한 단위 걸리면, simulator는 stage들이 시간의 " +
              "{plain}만큼 idle이라고 찾습니다 (makespan {plain_makespan}). ZBV는 B와 W를 " +
              "나누고 stage마다 절반 크기 chunk 두 개를 V자로 돌립니다. 같은 시간에서 " +
              "ZBV는 시간의 몇 분의 몇이 idle일까요?",
      cp: "cp = 4개 rank의 context parallelism, sequence 4,096, d_model 2048: layer 하나의 " +
          "attention backward에서 ring은 rank마다 all-gather의 몇 배 byte를 보낼까요?",
      unit_zero2: "GB", unit_bubble: "(0.5, 50 % 또는 1/2)", unit_cp: "배", check: "확인",
      right: "맞았습니다. ", wrong: "다릅니다. ", unreadable: "숫자를 쓰세요 (예: 0.27 또는 3/11).",
      answer: "답: ",
      why_zero2: " GB: rank마다 parameter P = {P}개 (tp 2), N = 8에서 2P + 2P/N + 12P/N.",
      why_bubble: " = {zbv}, simulator의 idle / (K x makespan): ZBV의 makespan은 " +
                  "1F1B의 {plain_makespan}에 비해 {zbv_makespan}이고, stage는 자기 구간 안에서 " +
                  "기다리지 않습니다 (논문의 bubble {zbv_bubble}, 1F1B는 {plain_bubble}); " +
                  "stage k가 k T_F/2 늦게 시작할 뿐입니다.",
      why_cp: ": ring은 K/V를 c - 1번, dK/dV를 c번 보내 (2c - 1) 2kv/c; all-gather의 " +
              "reduce-scatter는 2(c - 1)/c kv: c = 4에서 7/3."
    }
  };

  // "0.27", "27 %", "3/11" -> a number; NaN when it is none of them.
  function parse(text) {
    var s = String(text).trim().replace(",", ".");
    var m = s.match(/^(\d+(?:\.\d*)?)\s*\/\s*(\d+(?:\.\d*)?)$/);
    if (m) return Number(m[1]) / Number(m[2]);
    m = s.match(/^(\d*\.?\d+)\s*%$/);
    if (m) return Number(m[1]) / 100;
    return /^\d*\.?\d+(e[+-]?\d+)?$/i.test(s) ? Number(s) : NaN;
  }

  // x as "n/d" with the least d <= 200 that gives x exactly, else its four decimals.
  function ratio(x) {
    for (var d = 1; d <= 200; d++) {
      var n = Math.round(x * d);
      if (Math.abs(n / d - x) < 1e-12) return n + "/" + d;
    }
    return x.toFixed(4);
  }

  function answers() {
    var r = MMCalc.rankReport(ZERO2, 0), b = BUBBLE;
    var plain = MMCalc.simulate("1f1b", b.stages, b.micro_batches, b.t, b.t, 1, b.t);
    var zbv = MMCalc.simulate("zbv", b.stages, b.micro_batches, b.t, b.t, 1, b.t);
    var ring = MMCalc.cpAttentionBytes(CP, 1, 1, 4, "ring", "mixed").backward;
    var gather = MMCalc.cpAttentionBytes(CP, 1, 1, 4, "allgather", "mixed").backward;
    return {zero2: {value: (r.weights + r.grads + r.optimizer) / 1e9, params: r.params},
            bubble: {value: zbv.bubble_fraction, fill: {
              K: b.stages, M: b.micro_batches, plain: ratio(plain.bubble_fraction),
              plain_makespan: plain.makespan, plain_bubble: plain.bubble,
              zbv: ratio(zbv.bubble_fraction), zbv_makespan: zbv.makespan,
              zbv_bubble: zbv.bubble}},
            cp: {value: ring / gather}};
  }

  // A text with {name} replaced by what the simulator found (answer.fill).
  function fill(text, values) {
    return text.replace(/\{(\w+)\}/g, function (all, key) {
      return values && key in values ? String(values[key]) : all;
    });
  }

  function exercise(root, t, name, answer) {
    var box = document.createElement("div");
    box.className = "mm-exercise";
    box.setAttribute("data-exercise", name);
    var question = document.createElement("p");
    question.textContent = fill(t[name], answer.fill);
    var input = document.createElement("input");
    input.type = "text";
    input.name = name;
    input.size = 10;
    var button = document.createElement("button");
    button.type = "button";
    button.className = "md-button";
    button.textContent = t.check;
    var result = document.createElement("p");
    result.setAttribute("data-mm", "verdict." + name);
    button.addEventListener("click", function () {
      var guess = parse(input.value);
      if (!isFinite(guess)) {
        result.className = "mm-wrong";
        result.textContent = t.unreadable;
        return;
      }
      var right = Math.abs(guess - answer.value) <= 0.02 * answer.value;
      result.className = right ? "mm-right" : "mm-wrong";
      result.textContent = (right ? t.right : t.wrong) + t.answer;
      var value = document.createElement("strong");
      value.setAttribute("data-mm", "answer." + name);
      value.setAttribute("data-value", String(answer.value));
      value.textContent = answer.value.toFixed(name === "zero2" ? 3 : 4);
      result.appendChild(value);
      result.appendChild(document.createTextNode(fill(t["why_" + name], answer.fill).replace(
        "{P}", (answer.params || 0).toLocaleString("en-US"))));
    });
    var line = document.createElement("p");
    line.appendChild(input);
    line.appendChild(document.createTextNode(" " + t["unit_" + name] + " "));
    line.appendChild(button);
    box.appendChild(question);
    box.appendChild(line);
    box.appendChild(result);
    root.appendChild(box);
  }

  function start() {
    var root = document.getElementById("mm-predict");
    if (!root || root.getAttribute("data-started")) return;
    root.setAttribute("data-started", "1");
    var t = TEXT[document.documentElement.lang === "ko" ? "ko" : "en"];
    var found = answers();
    exercise(root, t, "zero2", found.zero2);
    exercise(root, t, "bubble", found.bubble);
    exercise(root, t, "cp", found.cp);
  }

  if (typeof module !== "undefined" && module.exports) module.exports = {parse: parse};
  else if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
