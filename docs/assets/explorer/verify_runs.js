// "Measured" on the explorer page: the rows `minimegatron verify` runs on 8 ranks, trained and
// traced by benchmarks/explorer_measured.py (checks/measured.py) into measured.js (MMMeasured).
// A picker loads a row's configuration into the form; whenever the form holds a configuration
// that one of those rows ran, the page shows the bytes each dimension sent per stage in that
// run beside its own prediction (MMCalc.rankReport), and the idle fraction measured with
// F, B and W of one unit each beside the simulator's. Each measured number carries data-mm
// "measured.<row>.stage<k>.<axis>" / "measured.<row>.idle" and data-value (the exact value),
// which tests/test_explorer_browser.py reads. explorer.js calls picker() and block().
(function (root) {
  "use strict";
  var TEXT = {
    en: {pick: "load a configuration verify runs on 8 ranks", none: "(choose)",
         head: "Measured in verify's run", ranks: "ranks", stage: "stage",
         measured: "measured", predicted: "predicted", bytes: "bytes sent per step",
         idle: "idle fraction with F, B and W one unit each (a backward not split: 2): " +
               "measured ",
         vs: ", simulator ", loss: "not in the calculator: the loss itself, ",
         loss_unit: " B per rank (all-reduce over dp x cp, broadcast over pp)",
         how: "how it was measured", equal: "equal", differs: "DIFFERS"},
    ko: {pick: "verify가 rank 8개에서 돌리는 설정 불러오기", none: "(선택)",
         head: "verify의 실행에서 측정한 값", ranks: "rank", stage: "stage",
         measured: "측정", predicted: "예측", bytes: "step마다 보낸 byte",
         idle: "F, B, W가 각각 한 단위 (나누지 않은 backward는 2)일 때 idle 비율: 측정 ",
         vs: ", simulator ", loss: "계산기에 없는 것: loss 자체, ",
         loss_unit: " B (rank마다; dp x cp의 all-reduce, pp의 broadcast)",
         how: "측정한 방법", equal: "같음", differs: "다름"}
  };
  var KEYS = ["layers", "hidden", "heads", "vocab", "seq", "micro_batch", "micro_batches", "dp",
              "tp", "pp", "cp", "precision", "zero", "schedule", "sequence_parallel",
              "checkpoint"];
  var AXES = ["dp", "tp", "pp", "cp"];

  function data() { return root.MMMeasured || {rows: [], ranks: 0}; }

  function name(row) {
    return row.scheme + " " + row.dims.join("x");
  }

  // The rows whose configuration is the form's (cp attention counts only with cp > 1).
  function matching(c) {
    return data().rows.filter(function (row) {
      var r = row.config;
      return KEYS.every(function (k) { return String(r[k]) === String(c[k]); }) &&
        (c.cp === 1 || r.attention === c.attention);
    });
  }

  // A select of every measured row; choosing one sets the form and redraws.
  function picker(box, lang, el, redraw) {
    var t = TEXT[lang];
    var label = el("label", {"class": "mm-pick"}, t.pick + " ");
    var select = el("select", {"data-mm": "verify-row"});
    select.appendChild(el("option", {value: ""}, t.none));
    data().rows.forEach(function (row, i) {
      select.appendChild(el("option", {value: String(i)}, row.label + " (" + name(row) + ")"));
    });
    select.addEventListener("change", function (event) {
      event.stopPropagation();
      var row = data().rows[Number(select.value)];
      if (!row) return;
      box.querySelector("[name=t_weight]").value = "";     // the command's default
      var experts = box.querySelector("[name=experts]");
      if (experts) experts.value = "0";                     // verify's rows here are dense
      Object.keys(row.config).forEach(function (k) {
        var input = box.querySelector("[name=\"" + k + "\"]");
        if (!input) return;
        if (input.type === "checkbox") input.checked = row.config[k];
        else input.value = String(row.config[k]);
      });
      redraw();
    });
    label.appendChild(select);
    box.parentNode.insertBefore(label, box);
  }

  function cell(el, tag, text, attrs) {
    return el(tag, attrs || {}, text);
  }

  // The measured block for the form's configuration c (nothing when no verify row ran it).
  function block(out, c, rows, lang, el, href) {
    var t = TEXT[lang];
    matching(c).forEach(function (row) {
      var id = name(row);
      var head = el("h3", {"data-mm-row": id}, t.head + ": " + row.label + " " +
                    row.dims.join(" x ") + " (" + data().ranks + " " + t.ranks + ") ");
      head.appendChild(el("a", {href: href}, t.how));
      out.appendChild(head);
      var table = el("table", {"class": "mm-table"});
      var tr = el("tr", {});
      tr.appendChild(cell(el, "th", t.stage));
      AXES.forEach(function (a) {
        tr.appendChild(cell(el, "th", a + " " + t.measured));
        tr.appendChild(cell(el, "th", a + " " + t.predicted));
      });
      table.appendChild(tr);
      row.measured.stages.forEach(function (m, stage) {
        var line = el("tr", {});
        line.appendChild(cell(el, "td", String(stage)));
        AXES.forEach(function (a) {
          var p = rows[stage].comm[a];
          line.appendChild(cell(el, "td", m[a].toLocaleString("en-US") + " (" +
                                (m[a] === p ? t.equal : t.differs) + ")",
                                {"data-mm": "measured." + id + ".stage" + stage + "." + a,
                                 "data-value": String(m[a])}));
          line.appendChild(cell(el, "td", p.toLocaleString("en-US")));
        });
        table.appendChild(line);
      });
      out.appendChild(table);
      var p = el("p", {"class": "mm-measured"});
      p.appendChild(document.createTextNode(t.bytes + "; " + t.loss));
      p.appendChild(el("span", {"data-mm": "measured." + id + ".loss",
                                "data-value": String(row.measured.loss_bytes)},
                       String(row.measured.loss_bytes)));
      p.appendChild(document.createTextNode(t.loss_unit));
      if (row.measured.idle !== null) {
        var v = c.schedule === "interleaved" ? 2 : 1;
        var sim = MMCalc.simulate(c.schedule, c.pp, c.micro_batches, 1, 1, v, 1);
        p.appendChild(document.createTextNode(". " + t.idle));
        p.appendChild(el("strong", {"data-mm": "measured." + id + ".idle",
                                    "data-value": String(row.measured.idle)},
                         row.measured.idle.toFixed(4)));
        p.appendChild(document.createTextNode(t.vs));
        p.appendChild(el("span", {"data-mm": "measured." + id + ".idle_predicted",
                                  "data-value": String(sim.bubble_fraction)},
                         sim.bubble_fraction.toFixed(4)));
      }
      out.appendChild(p);
    });
  }

  root.MMVerifyRuns = {picker: picker, block: block, matching: matching};
})(this);
