// Render the maths that pymdownx.arithmatex (generic mode) leaves in the page:
// inline <span class="arithmatex">\(...\)</span>, display <div class="arithmatex">\[...\]</div>.
// Uses the KaTeX copy inside the site (assets/vendor/katex), so no network is needed.
// A formula KaTeX cannot parse is reported on the console, which the browser test fails on.
(function () {
  function render(root) {
    root.querySelectorAll(".arithmatex").forEach(function (el) {
      if (el.querySelector(".katex")) return;
      var tex = el.textContent.trim();
      var display = el.tagName === "DIV";
      tex = tex.replace(/^\\[(\[]/, "").replace(/\\[)\]]$/, "");
      try {
        katex.render(tex, el, { displayMode: display, throwOnError: true });
      } catch (err) {
        console.error("KaTeX could not render " + JSON.stringify(tex) + ": " + err.message);
      }
    });
  }
  if (typeof document$ !== "undefined") {
    document$.subscribe(function () { render(document.body); });
  } else {
    document.addEventListener("DOMContentLoaded", function () { render(document.body); });
  }
})();
