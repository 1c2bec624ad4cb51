// The explorer page (docs/explorer.md): inputs, a stacked bar of memory per rank, the bytes
// each dimension sends per step, and the pipeline's timeline, redrawn on every change.
// Every number comes from calc.js (MMCalc), which tests/test_explorer.py holds equal to
// `minimegatron memory` and `minimegatron timeline`. Runs only on a page with #mm-explorer;
// no library, no network. Each shown number carries data-mm (its name) and data-value (the
// exact double) so tests/test_explorer_browser.py reads what the student sees. verify_runs.js
// adds the bytes and idle fraction measured in verify's runs (measured.js) when it is loaded.
(function () {
  "use strict";
  var TEXT = {
    en: {
      model: "Model", grid: "Grid and training", layers: "layers (L)", hidden: "d_model (h)",
      heads: "heads (a)", vocab: "vocabulary (V)", seq: "sequence (s)",
      micro_batch: "micro-batch size (b)", micro_batches: "micro-batches (M)",
      precision: "precision", dp: "dp (N)", tp: "tp (t)", pp: "pp (K stages)", cp: "cp (c)",
      attention: "cp attention", zero: "ZeRO stage", sequence_parallel: "sequence parallelism",
      checkpoint: "activation checkpointing (recomputation)", schedule: "schedule",
      t_forward: "forward time", t_backward: "backward time",
      t_weight: "weight gradient time W (empty: 1 with W apart, else 0)",
      bubble: "bubble (the most a stage idles inside its own span)",
      bubble_1f1b: "1F1B at the same times",
      memory: "Memory per rank", stage: "stage", params: "parameters / rank",
      weights: "weights", grads: "gradients", optimizer: "optimizer state",
      activations: "activations", ring_in_flight: "ring K/V buffers", total: "total",
      comm: "Bytes each dimension sends per step, per rank", timeline: "Timeline of the schedule",
      idle: "idle fraction", formula: "formula", makespan: "makespan",
      ranks: "ranks", unit: "unit", bad: "This grid cannot split the model: ",
      derive: "derived on",
      step: "Predicted step time (scaling model; ZeRO and cp ignored)", compute: "compute",
      efficiency: "efficiency"
    },
    ko: {
      model: "모델", grid: "Grid와 학습", layers: "layer 수 (L)", hidden: "d_model (h)",
      heads: "head 수 (a)", vocab: "어휘 크기 (V)", seq: "sequence 길이 (s)",
      micro_batch: "micro-batch 크기 (b)", micro_batches: "micro-batch 수 (M)",
      precision: "정밀도 (precision)", dp: "dp (N)", tp: "tp (t)", pp: "pp (stage K개)",
      cp: "cp (c)", attention: "cp attention", zero: "ZeRO stage",
      sequence_parallel: "sequence parallelism",
      checkpoint: "activation checkpointing (재계산)", schedule: "schedule",
      t_forward: "forward 시간", t_backward: "backward 시간",
      t_weight: "weight gradient 시간 W (비우면 W를 따로 돌릴 때 1, 아니면 0)",
      bubble: "bubble (한 stage가 자기 구간 안에서 가장 오래 쉬는 시간)",
      bubble_1f1b: "같은 시간에서 1F1B",
      memory: "rank마다 메모리", stage: "stage", params: "rank마다 parameter",
      weights: "weight", grads: "gradient", optimizer: "optimizer state",
      activations: "activation", ring_in_flight: "ring K/V buffer", total: "합계",
      comm: "차원마다 step당 보내는 byte (rank마다)", timeline: "schedule의 timeline",
      idle: "idle 비율", formula: "공식", makespan: "makespan",
      ranks: "rank", unit: "단위", bad: "이 grid로는 모델을 나눌 수 없습니다: ",
      derive: "유도한 곳",
      right: "맞았습니다: ", wrong: "다릅니다: 이 페이지의 계산은 "
    }
  };
  var COLORS = {weights: "#4C78A8", grads: "#F58518", optimizer: "#54A24B",
                activations: "#B279A2", ring_in_flight: "#8C8C8C", F: "#4C78A8", B: "#F58518",
                W: "#2A9D8F"};
  var PARTS = ["weights", "grads", "optimizer", "activations", "ring_in_flight"];
  var NUMBERS = [["layers", 8], ["hidden", 512], ["heads", 8], ["vocab", 51200], ["seq", 1024],
                 ["micro_batch", 8], ["micro_batches", 4], ["dp", 4], ["tp", 2], ["pp", 2],
                 ["cp", 1]];
  var CHOICES = [["precision", ["mixed", "float32", "float64"]], ["zero", ["0", "1", "2", "3"]],
                 ["schedule", ["1f1b", "gpipe", "interleaved", "zb-h1", "zb-h2", "zbv",
                               "dualpipe", "dualpipev"]],
                 ["attention", ["ring", "allgather", "ulysses"]]];
  var SVG = "http://www.w3.org/2000/svg";

  function svgBox(width, height, name) {    // scales with the page, never crops
    return el("svg:svg", {viewBox: "0 0 " + width + " " + height, width: width,
                          height: height, role: "img", "data-mm": name});
  }

  function el(tag, attrs, text) {
    var node = tag.indexOf("svg:") === 0 ? document.createElementNS(SVG, tag.slice(4))
                                          : document.createElement(tag);
    Object.keys(attrs || {}).forEach(function (k) { node.setAttribute(k, attrs[k]); });
    if (text !== undefined) node.textContent = text;
    return node;
  }

  function shown(x, size, name) {       // a number as the command line prints it (8.2f)
    return el("span", {"data-mm": name, "data-value": String(x), title: x + " bytes"},
              (x / size).toFixed(2));
  }

  function link(id) {                   // the page that derives a number (a link in the .md)
    var a = document.getElementById(id);
    return a ? a.getAttribute("href") : "#";
  }

  function form(root, t) {
    var box = el("div", {"class": "mm-form"});
    NUMBERS.forEach(function (pair) {
      var label = el("label", {}, t[pair[0]] + " ");
      label.appendChild(el("input", {type: "number", min: "1", step: "1", name: pair[0],
                                     value: String(pair[1])}));
      box.appendChild(label);
    });
    CHOICES.forEach(function (pair) {
      var label = el("label", {}, t[pair[0]] + " ");
      var select = el("select", {name: pair[0]});
      pair[1].forEach(function (v) { select.appendChild(el("option", {value: v}, v)); });
      label.appendChild(select);
      box.appendChild(label);
    });
    [["t_forward", "1"], ["t_backward", "2"], ["t_weight", ""]].forEach(function (pair) {
      var label = el("label", {}, t[pair[0]] + " ");
      label.appendChild(el("input", {type: "number", min: "0", step: "0.1", name: pair[0],
                                     value: pair[1]}));
      box.appendChild(label);
    });
    if (window.MMMoE) MMMoE.inputs(box, document.documentElement.lang === "ko" ? "ko" : "en",
                                   el);
    ["sequence_parallel", "checkpoint"].forEach(function (name) {
      var label = el("label", {});
      label.appendChild(el("input", {type: "checkbox", name: name}));
      label.appendChild(document.createTextNode(" " + t[name]));
      box.appendChild(label);
    });
    root.appendChild(box);
    return box;
  }

  function read(box) {
    var c = {};
    box.querySelectorAll("input, select").forEach(function (input) {
      if (input.type === "checkbox") c[input.name] = input.checked;
      else if (input.name === "t_weight") c.t_weight = input.value === "" ? null
                                                                           : Number(input.value);
      else if (input.name === "precision" || input.name === "schedule" ||
               input.name === "attention") c[input.name] = input.value;
      else c[input.name] = Number(input.value);
    });
    return c;
  }

  function valid(c) {
    var bad = NUMBERS.filter(function (p) {
      return !(Number.isInteger(c[p[0]]) && c[p[0]] >= 1 && c[p[0]] <= 1e6);
    }).map(function (p) { return p[0]; });
    if (!(c.t_forward > 0 && c.t_backward > 0)) bad.push("t_forward, t_backward");
    if (c.t_weight !== null && !(c.t_weight > 0 ||
                                 c.t_weight === 0 && MMCalc.SPLIT.indexOf(c.schedule) < 0)) {
      bad.push("t_weight (> 0 with W apart)");
    }
    return bad.length ? bad.join(", ") + " must be positive integers" : MMCalc.checkConfig(c);
  }

  function memoryBlock(out, c, rows, t) {
    var biggest = Math.max.apply(null, rows.map(function (r) { return r.total; }));
    var unit = biggest >= 1e9 ? ["GB", 1e9] : biggest >= 1e6 ? ["MB", 1e6] : ["kB", 1e3];
    var head = el("h3", {}, t.memory + " (" + t.unit + " " + unit[0] + ", " +
                  c.dp * c.tp * c.pp * c.cp + " " + t.ranks + ") ");
    head.appendChild(el("a", {href: link("mm-link-state")}, t.derive + " memory"));
    out.appendChild(head);
    var width = 640, bar = 26;
    var svg = svgBox(width + 120, rows.length * (bar + 8) + 30, "memory-bars");
    rows.forEach(function (r, stage) {
      var y = stage * (bar + 8), x = 80;
      svg.appendChild(el("svg:text", {x: 0, y: y + 18, "font-size": 13, "class": "mm-label"},
                         t.stage + " " + stage));
      PARTS.forEach(function (part) {
        var w = biggest > 0 ? r[part] / biggest * width : 0;
        var rect = el("svg:rect", {x: x, y: y, width: w, height: bar, fill: COLORS[part],
                                   "data-part": part});
        rect.appendChild(el("svg:title", {}, t[part] + ": " + (r[part] / unit[1]).toFixed(2) +
                            " " + unit[0]));
        svg.appendChild(rect);
        x += w;
      });
    });
    var lx = 0, ly = rows.length * (bar + 8) + 14;
    PARTS.forEach(function (part) {
      svg.appendChild(el("svg:rect", {x: lx, y: ly, width: 12, height: 12, fill: COLORS[part]}));
      svg.appendChild(el("svg:text", {x: lx + 16, y: ly + 11, "font-size": 12,
                                      "class": "mm-label"}, t[part]));
      lx += 26 + 7.5 * t[part].length;
    });
    out.appendChild(svg);
    var table = el("table", {"class": "mm-table"});
    var axes = ["dp", "tp", "pp"].concat(c.cp > 1 ? ["cp"] : []);
    var tr = el("tr", {});
    [t.stage, t.params].concat(PARTS.concat(["total"]).map(function (k) { return t[k]; }))
      .concat(axes.map(function (a) { return a + " comm"; }))
      .forEach(function (name) { tr.appendChild(el("th", {}, name)); });
    table.appendChild(tr);
    rows.forEach(function (r, stage) {
      var row = el("tr", {});
      row.appendChild(el("td", {}, String(stage)));
      var p = el("td", {});
      p.appendChild(el("span", {"data-mm": "stage" + stage + ".params", "data-value":
                                String(r.params)}, r.params.toLocaleString("en-US")));
      row.appendChild(p);
      PARTS.concat(["total"]).forEach(function (k) {
        var td = el("td", {});
        td.appendChild(shown(r[k], unit[1], "stage" + stage + "." + k));
        row.appendChild(td);
      });
      axes.forEach(function (a) {
        var td = el("td", {});
        td.appendChild(shown(r.comm[a], unit[1], "stage" + stage + ".comm." + a));
        row.appendChild(td);
      });
      table.appendChild(row);
    });
    out.appendChild(table);
    var note = el("p", {});
    note.appendChild(el("a", {href: link("mm-link-comm")}, t.comm));
    out.appendChild(note);
    stepBlock(out, c, t);
  }

  // scaling.step_time on its default hardware, as `minimegatron memory` prints it.
  function stepBlock(out, c, t) {
    var step = MMCalc.stepTime(c);
    var p = el("p", {"class": "mm-step"});
    p.appendChild(el("a", {href: link("mm-link-step")}, t.step));
    p.appendChild(document.createTextNode(" " + MMCalc.HARDWARE.name + ": "));
    ["total", "compute", "tp", "dp", "pp"].forEach(function (part, i) {
      p.appendChild(document.createTextNode(i === 0 ? "" : i === 1 ? " s = " + t.compute + " " :
                                            " + " + part + " "));
      p.appendChild(el("span", {"data-mm": "step." + part, "data-value": String(step[part])},
                       step[part].toPrecision(3)));
    });
    p.appendChild(document.createTextNode(" s; " + t.efficiency + " "));
    p.appendChild(el("span", {"data-mm": "step.efficiency",
                              "data-value": String(step.efficiency)},
                     Math.round(step.efficiency * 100) + " %"));
    out.appendChild(p);
  }

  function timelineBlock(out, c, t) {
    var v = c.schedule === "interleaved" ? 2 : 1;
    var split = MMCalc.SPLIT.indexOf(c.schedule) >= 0;   // `minimegatron timeline`'s default
    var tW = c.t_weight === null ? (split ? 1 : 0) : c.t_weight;
    var sim = MMCalc.simulate(c.schedule, c.pp, c.micro_batches, c.t_forward, c.t_backward, v,
                              tW);
    var f = MMCalc.bubbleFormula(c.pp, c.micro_batches, v);
    var head = el("h3", {}, t.timeline + " (" + c.schedule + ") ");
    head.appendChild(el("a", {href: link("mm-link-bubble")}, t.derive + " pipeline"));
    out.appendChild(head);
    var width = 760, row = 24, scale = width / sim.makespan;
    var svg = svgBox(width + 70, c.pp * (row + 4) + 4, "timeline");
    sim.slots.forEach(function (slots, stage) {
      var y = stage * (row + 4);
      svg.appendChild(el("svg:text", {x: 0, y: y + 16, "font-size": 12, "class": "mm-label"},
                         t.stage + " " + stage));
      svg.appendChild(el("svg:rect", {x: 66, y: y, width: width, height: row, fill: "#EEEEEE"}));
      slots.forEach(function (s) {
        var w = (s.end - s.start) * scale, name = s.op + s.mb + (s.chunk == null ? "" :
                                                                  "c" + s.chunk);
        var rect = el("svg:rect", {x: 66 + s.start * scale, y: y, width: w, height: row,
                                   fill: COLORS[s.op], stroke: "white", "data-slot": name});
        rect.appendChild(el("svg:title", {}, name + ": " + s.start + " - " + s.end));
        svg.appendChild(rect);
        if (w >= 7 * name.length) {
          svg.appendChild(el("svg:text", {x: 66 + s.start * scale + w / 2, y: y + 16,
                                          "font-size": 11, "class": "mm-in",
                                          "text-anchor": "middle"}, name));
        }
      });
    });
    out.appendChild(svg);
    var p = el("p", {"class": "mm-idle"});
    p.appendChild(document.createTextNode(t.idle + " = "));
    p.appendChild(el("strong", {"data-mm": "idle", "data-value": String(sim.bubble_fraction)},
                     sim.bubble_fraction.toFixed(4)));
    p.appendChild(document.createTextNode("; " + (split ? "1F1B " : "") + t.formula +
                                          " (K - 1) / (" +
                                          (v > 1 ? "vM" : "M") + " + K - 1) = " +
                                          f[0] + "/" + f[1] + " = "));
    p.appendChild(el("span", {"data-mm": "formula", "data-value": String(f[0] / f[1])},
                     (f[0] / f[1]).toFixed(4)));
    p.appendChild(document.createTextNode("; " + t.makespan + " "));
    p.appendChild(el("span", {"data-mm": "makespan", "data-value": String(sim.makespan)},
                     String(sim.makespan)));
    if (split) {                 // the zero-bubble paper's bubble beside 1F1B's, as the command
      var plain = MMCalc.simulate("1f1b", c.pp, c.micro_batches, c.t_forward, c.t_backward, 1,
                                  tW);
      p.appendChild(document.createTextNode("; " + t.bubble + " "));
      p.appendChild(el("strong", {"data-mm": "bubble", "data-value": String(sim.bubble)},
                       String(+sim.bubble.toFixed(4))));
      p.appendChild(document.createTextNode(", " + t.bubble_1f1b + " "));
      p.appendChild(el("span", {"data-mm": "bubble_1f1b", "data-value": String(plain.bubble)},
                       String(+plain.bubble.toFixed(4))));
    }
    out.appendChild(p);
  }

  function draw(root, box, out, t, lang) {
    var c = read(box);
    out.textContent = "";
    var bad = valid(c);
    if (bad) {
      out.appendChild(el("p", {"class": "mm-error", "data-mm": "error"}, t.bad + bad));
      return;
    }
    c.zero = Number(c.zero);
    var rows = [];
    for (var stage = 0; stage < c.pp; stage++) rows.push(MMCalc.rankReport(c, stage));
    memoryBlock(out, c, rows, t);
    timelineBlock(out, c, t);
    if (window.MMMoE) MMMoE.block(out, c, lang, el, link("mm-link-moe"));
    if (window.MMVerifyRuns) MMVerifyRuns.block(out, c, rows, lang, el, link("mm-link-verify"));
    root.setAttribute("data-ready", JSON.stringify(c));
  }

  function start() {
    var root = document.getElementById("mm-explorer");
    if (!root || root.getAttribute("data-started")) return;
    root.setAttribute("data-started", "1");
    var lang = document.documentElement.lang === "ko" ? "ko" : "en";
    var t = TEXT[lang];
    var box = form(root, t);
    var out = el("div", {"class": "mm-out"});
    root.appendChild(out);
    var redraw = function () { draw(root, box, out, t, lang); };
    if (window.MMVerifyRuns) MMVerifyRuns.picker(box, lang, el, redraw);
    box.addEventListener("input", redraw);
    box.addEventListener("change", redraw);
    redraw();
    if (window.performance && performance.mark) performance.mark("mm-explorer-drawn");
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
