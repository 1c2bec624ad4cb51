"""The built docs site, opened offline in headless Chromium: what a reader sees, not just the HTML.

The site is built with ``mkdocs build --strict`` into a temporary folder and served on
127.0.0.1 by ``http.server`` in a thread. Every page is opened in headless Chromium, driven
through the DevTools protocol over ``--remote-debugging-pipe``: Chromium reads JSON commands
on fd 3 and writes replies and events on fd 4, each message ended by a NUL byte, so the
standard library is the whole client (no websocket library, no Selenium). Unlike
``--dump-dom``, the protocol sees console messages, exceptions and every network request.

Every page is opened in both languages (the English page, and under /ko/ its Korean twin
or, where there is none, the English page the i18n plugin falls back to; the exercise
pages too). For every page the test asserts:
- the header's language switch links the same page in English and in Korean, the page's
  ``lang`` is its language, and a Korean twin's text is in Korean;
- no console error, no uncaught exception, no failed load, no request to another host;
- every Mermaid block became an SVG (Material draws it in a closed shadow root, which the
  protocol's ``DOM.getDocument(pierce=True)`` still reaches), and none is an error drawing;
- every maths block (pymdownx.arithmatex) was rendered by KaTeX and no raw delimiter
  (``\\(``, ``\\[``, ``$``) is left in the text outside code;
- every image loaded (``naturalWidth > 0``).

Screenshots of the index, tensor-parallel, pipeline and glossary pages go to
``$MINIMEGATRON_ARTIFACTS/screenshots`` (default ``artifacts/screenshots`` in the
repository), which CI keeps. Skipped with a reason when no Chromium or no mkdocs is installed
(a failure instead when MINIMEGATRON_REQUIRE_BROWSER is set: .ci/run installs both and sets
it, so CI always runs it). A fault page (a foreign request, a console error,
a broken image, an unrendered diagram and formula) checks that the checks can fail.
"""
import base64
import fcntl
import functools
import http.server
import json
import os
import posixpath
import queue
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCREENSHOT_PAGES = ["index", "tensor_parallel", "pipeline", "glossary", "grid3d", "ko/index",
                    "ko/tensor_parallel", "ko/exercises/3.1"]
DOCS = os.path.join(ROOT, "docs")


def site_pages():
    """Every page of the site in both languages: "pipeline", "exercises/3.1", and the same
    under "ko/" (a Korean twin where there is one, else the English page it falls back to)."""
    english = []
    for folder, _, names in os.walk(DOCS):
        for name in names:
            if name.endswith(".md") and not name.endswith(".ko.md") and \
                    "assets" not in folder:
                english.append(os.path.relpath(os.path.join(folder, name), DOCS)[:-3])
    english.sort()
    return english + ["ko/" + page for page in english]


def has_korean_twin(page):
    """Whether docs/<page>.ko.md exists (page without its "ko/" prefix)."""
    return os.path.exists(os.path.join(DOCS, page + ".ko.md"))


def page_path(page):
    """The page's folder in the built site: "" for the index, "ko/pipeline/", ..."""
    if page in ("index", "ko/index"):
        return page[:-len("index")]
    return page + "/"
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--disable-extensions", "--hide-scrollbars", "--remote-debugging-pipe"]
RENDER_TIMEOUT = 60.0
LOAD_TIMEOUT = 120.0     # one page, on a loaded 2-core machine (the site has ~110 pages)


def chromium():
    """Path of a Chromium binary: $MINIMEGATRON_CHROMIUM, else the first one on PATH."""
    if os.environ.get("MINIMEGATRON_CHROMIUM"):
        return os.environ["MINIMEGATRON_CHROMIUM"]
    for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable"):
        if shutil.which(name):
            return shutil.which(name)
    return None


# Put the two pipe ends on fds 3 and 4, then become Chromium (a plain sh cannot name fd >= 10).
TRAMPOLINE = ("import os, sys; os.dup2(int(sys.argv[1]), 3); os.dup2(int(sys.argv[2]), 4); "
              "os.execv(sys.argv[3], sys.argv[3:])")


def high_fd(fd):
    """A copy of fd numbered 10 or above (the original is closed)."""
    copy = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 10)
    os.close(fd)
    return copy


class DevTools:
    """A minimal DevTools-protocol client over Chromium's --remote-debugging-pipe."""

    def __init__(self, exe, profile):
        cmd_read, self._cmd = os.pipe()        # we write commands, Chromium reads fd 3
        self._out, out_write = os.pipe()       # Chromium writes fd 4, we read
        cmd_read, out_write = (high_fd(cmd_read), high_fd(out_write))  # never 3 or 4 itself
        self._log = open(os.path.join(profile, "chromium.log"), "wb")
        self.proc = subprocess.Popen(
            [sys.executable, "-c", TRAMPOLINE, str(cmd_read), str(out_write), exe, *FLAGS,
             f"--user-data-dir={profile}", "about:blank"],
            pass_fds=(cmd_read, out_write), stdin=subprocess.DEVNULL, stdout=self._log,
            stderr=subprocess.STDOUT)
        os.close(cmd_read)
        os.close(out_write)
        self._messages = queue.Queue()
        self.events = []
        self._next_id = 0
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        buffer = b""
        while True:
            chunk = os.read(self._out, 1 << 16)
            if not chunk:
                self._messages.put(None)
                return
            buffer += chunk
            *whole, buffer = buffer.split(b"\0")
            for raw in whole:
                self._messages.put(json.loads(raw))

    def _take(self, deadline):
        try:
            message = self._messages.get(timeout=max(0.0, deadline - time.time()))
        except queue.Empty:
            raise TimeoutError("Chromium sent nothing in time") from None
        if message is None:
            with open(self._log.name, "rb") as log:
                tail = log.read()[-2000:].decode(errors="replace")
            raise RuntimeError(f"Chromium closed the pipe; the end of its log:\n{tail}")
        return message

    def call(self, method, params=None, session=None, timeout=30.0):
        self._next_id += 1
        message = {"id": self._next_id, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = session
        os.write(self._cmd, json.dumps(message).encode() + b"\0")
        deadline = time.time() + timeout
        while True:
            reply = self._take(deadline)
            if reply.get("id") == self._next_id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply.get("result", {})
            self.events.append(reply)

    def wait_event(self, method, session, since=0, timeout=30.0):
        deadline = time.time() + timeout
        for event in self.events[since:]:
            if event.get("method") == method and event.get("sessionId") == session:
                return event
        while True:
            event = self._take(deadline)
            self.events.append(event)
            if event.get("method") == method and event.get("sessionId") == session:
                return event

    def evaluate(self, expression, session):
        result = self.call("Runtime.evaluate", {"expression": expression,
                                                 "returnByValue": True,
                                                 "awaitPromise": True}, session)
        if "exceptionDetails" in result:
            raise RuntimeError(f"page script failed: {result['exceptionDetails']}")
        return result["result"].get("value")

    def close(self):
        try:
            self.call("Browser.close", timeout=5)
        except (RuntimeError, TimeoutError, OSError):
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        os.close(self._cmd)
        self._log.close()


# What the page shows, read once everything has had time to render.
STATE_JS = r"""(() => {
  const outside = document.body.cloneNode(true);
  outside.querySelectorAll("pre, code, .katex, .arithmatex, script, style, svg")
         .forEach(el => el.remove());
  return {
    pendingMermaid: document.querySelectorAll("pre.mermaid").length,
    drawnMermaid: document.querySelectorAll("div.mermaid").length,
    maths: document.querySelectorAll(".arithmatex").length,
    unrenderedMaths: [...document.querySelectorAll(".arithmatex")]
        .filter(el => !el.querySelector(".katex")).map(el => el.textContent),
    images: [...document.images].map(img => ({src: img.getAttribute("src"),
                                             done: img.complete, width: img.naturalWidth})),
    rawDelimiters: (outside.textContent.match(/\\\(|\\\)|\\\[|\\\]|\$/g) || []),
    lang: document.documentElement.lang,
    switch: [...document.querySelectorAll(".md-select a[hreflang]")]
        .map(a => [a.getAttribute("hreflang"), new URL(a.href).pathname]),
    article: ((document.querySelector("article") || {}).textContent || "").slice(0, 4000),
    height: document.documentElement.scrollHeight,
  };
})()"""


def mermaid_svgs(devtools, session):
    """Text of the SVG inside each div.mermaid's (closed) shadow root; None where none is."""
    tree = devtools.call("DOM.getDocument", {"depth": -1, "pierce": True}, session)["root"]
    found = []

    def text_of(node):
        own = node.get("nodeValue", "") if node.get("nodeType") == 3 else ""
        return own + "".join(text_of(c) for c in node.get("children", []) +
                             node.get("shadowRoots", []))

    def svg_in(node):
        if node.get("localName") == "svg":
            return node
        for child in node.get("children", []) + node.get("shadowRoots", []):
            hit = svg_in(child)
            if hit:
                return hit
        return None

    def walk(node):
        attrs = node.get("attributes", [])
        classes = dict(zip(attrs[::2], attrs[1::2])).get("class", "").split()
        if node.get("localName") == "div" and "mermaid" in classes:
            svg = svg_in(node)
            found.append(text_of(svg) if svg else None)
        for child in node.get("children", []) + node.get("shadowRoots", []):
            walk(child)

    walk(tree)
    return found


def open_tab(devtools):
    """One tab for every page, 1280 px wide; its session id."""
    target = devtools.call("Target.createTarget", {"url": "about:blank"})["targetId"]
    session = devtools.call("Target.attachToTarget", {"targetId": target,
                                                      "flatten": True})["sessionId"]
    for domain in ("Page", "Runtime", "Log", "Network"):
        devtools.call(f"{domain}.enable", session=session)
    devtools.call("Emulation.setDeviceMetricsOverride", {"width": 1280, "height": 900,
                                                         "deviceScaleFactor": 1,
                                                         "mobile": False}, session)
    return session


def visit(devtools, session, url, shots=None, render_timeout=RENDER_TIMEOUT):
    """Open url in the tab; a dict of what went wrong and what was drawn."""
    start = len(devtools.events)
    devtools.call("Page.navigate", {"url": url}, session, timeout=LOAD_TIMEOUT)
    devtools.wait_event("Page.loadEventFired", session, since=start, timeout=LOAD_TIMEOUT)
    deadline = time.time() + render_timeout
    while True:
        state = devtools.evaluate(STATE_JS, session)
        ready = (not state["pendingMermaid"] and not state["unrenderedMaths"]
                 and all(img["done"] for img in state["images"]))
        if ready or time.time() > deadline:
            break
        time.sleep(0.05)
    state["svgs"] = mermaid_svgs(devtools, session) if state["drawnMermaid"] else []
    if shots:
        height = min(state["height"], 8000)
        shot = devtools.call("Page.captureScreenshot", {
            "format": "png", "captureBeyondViewport": True,
            "clip": {"x": 0, "y": 0, "width": 1280, "height": height, "scale": 1}}, session)
        with open(shots, "wb") as file:
            file.write(base64.b64decode(shot["data"]))
    errors, requests = [], []
    for event in devtools.events[start:]:
        if event.get("sessionId") != session:
            continue
        method, params = event.get("method"), event.get("params", {})
        if method == "Runtime.consoleAPICalled" and params["type"] in ("error", "assert"):
            errors.append("console: " + " ".join(str(a.get("value", a.get("description")))
                                                 for a in params["args"]))
        elif method == "Runtime.exceptionThrown":
            details = params["exceptionDetails"]
            errors.append("exception: " + details.get("exception", {}).get(
                "description", details.get("text", "")))
        elif method == "Log.entryAdded" and params["entry"]["level"] == "error":
            errors.append(f"log: {params['entry']['text']} {params['entry'].get('url', '')}")
        elif method == "Network.loadingFailed" and not params.get("canceled"):
            errors.append(f"load failed: {params.get('errorText')}")
        elif method == "Network.requestWillBeSent":
            requests.append(params["request"]["url"])
    state.update(errors=errors, requests=requests)
    return state


def foreign(requests, base):
    return [url for url in requests
            if not url.startswith(base) and not re.match(r"(data|blob|about):", url)]


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


FAULT_PAGE = """<!doctype html><html><head><meta charset="utf-8"></head><body>
<pre class="mermaid"><code>flowchart LR
  a --> b</code></pre>
<span class="arithmatex">\\(x^2\\)</span> costs $5
<img src="missing.png">
<script src="https://cdn.example.invalid/lib.js"></script>
<script>console.error("deliberate fault");</script>
</body></html>"""


def chromium_or_skip():
    """Chromium's path; a skip with the reason when it or mkdocs is missing (a failure when
    MINIMEGATRON_REQUIRE_BROWSER is set, as CI does)."""
    skip = pytest.fail if os.environ.get("MINIMEGATRON_REQUIRE_BROWSER") else pytest.skip
    exe = chromium()
    if exe is None:
        skip("no Chromium installed (Debian: apt-get install chromium); "
             "CI installs it in .ci/run")
    try:
        import material  # noqa: F401
        import mkdocs  # noqa: F401
    except ImportError:
        skip('mkdocs / mkdocs-material not installed (pip install ".[docs]")')
    return exe


def build_site(site_dir):
    """``mkdocs build --strict`` of the repository's site into site_dir."""
    built = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir",
                            site_dir], capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert built.returncode == 0, built.stdout + built.stderr


def serve(site_dir):
    """(server, base URL): site_dir served on 127.0.0.1 from a thread."""
    handler = functools.partial(QuietHandler, directory=site_dir)
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}/"


def screenshot_dir():
    """$MINIMEGATRON_ARTIFACTS/screenshots (default artifacts/screenshots), created."""
    shots = os.path.join(os.environ.get("MINIMEGATRON_ARTIFACTS",
                                        os.path.join(ROOT, "artifacts")), "screenshots")
    os.makedirs(shots, exist_ok=True)
    return shots


@pytest.fixture(scope="module")
def site():
    """(devtools, base URL, {page: state}) for every built page, plus the fault page."""
    exe = chromium_or_skip()
    work = tempfile.mkdtemp(prefix="minimegatron-browser-")
    site_dir = os.path.join(work, "site")
    build_site(site_dir)
    with open(os.path.join(site_dir, "__fault__.html"), "w", encoding="utf-8") as file:
        file.write(FAULT_PAGE)
    server, base = serve(site_dir)
    profile = os.path.join(work, "profile")
    os.makedirs(profile)
    shots = screenshot_dir()
    devtools = DevTools(exe, profile)
    pages = {}
    try:
        session = open_tab(devtools)
        for page in site_pages():
            path = page_path(page)
            shot = (os.path.join(shots, page.replace("/", "_") + ".png")
                    if page in SCREENSHOT_PAGES else None)
            state = visit(devtools, session, base + path, shot)
            with open(os.path.join(site_dir, path, "index.html"), encoding="utf-8") as f:
                html = f.read()
            state["mermaid_in_html"] = html.count('class="mermaid"')
            state["maths_in_html"] = html.count('class="arithmatex"')
            pages[page] = state
        pages["__fault__"] = visit(devtools, session, base + "__fault__.html",
                                   render_timeout=1.0)
        yield devtools, base, pages, shots
    finally:
        devtools.close()
        server.shutdown()
        server.server_close()
        shutil.rmtree(work, ignore_errors=True)


def real_pages(pages):
    return {name: state for name, state in pages.items() if name != "__fault__"}


def test_every_page_was_opened(site):
    _, _, pages, _ = site
    names = set(real_pages(pages))
    assert {"index", "tensor_parallel", "pipeline", "glossary", "grid3d"} <= names
    assert {"ko/index", "ko/pipeline", "exercises/3.1", "ko/exercises/3.1"} <= names
    assert len(names) == 2 * len([n for n in names if not n.startswith("ko/")])
    for name, state in real_pages(pages).items():
        assert state["height"] > 500, f"{name}: the page looks empty"


HANGUL = re.compile("[\uac00-\ud7a3]")


def test_every_page_has_the_language_switch_in_both_languages(site):
    """The header's switch on every page links the same page in English and in Korean."""
    _, base, pages, _ = site
    root = "/" + base.split("/", 3)[3]
    for name, state in real_pages(pages).items():
        english = name[len("ko/"):] if name.startswith("ko/") else name
        links = dict(state["switch"])
        assert set(links) == {"en", "ko"}, f"{name}: the language switch is missing: {links}"
        assert links["en"] == root + page_path(english), (name, links)
        assert links["ko"] == root + page_path("ko/" + english), (name, links)
        assert state["lang"] == ("ko" if name.startswith("ko/") else "en"), (name, state["lang"])
        if name.startswith("ko/") and has_korean_twin(english):
            hangul = len(HANGUL.findall(state["article"]))
            assert hangul > 100, f"{name}: the Korean page shows {state['article'][:200]}"


def test_no_console_errors_and_no_request_to_another_host(site):
    _, base, pages, _ = site
    bad = {name: state["errors"] for name, state in real_pages(pages).items() if state["errors"]}
    assert not bad, f"console errors or failed loads: {bad}"
    outside = {name: foreign(state["requests"], base)
               for name, state in real_pages(pages).items() if foreign(state["requests"], base)}
    assert not outside, f"pages load from another host (the site must work offline): {outside}"
    assert all(state["requests"] for state in real_pages(pages).values())


def test_every_mermaid_block_became_an_svg(site):
    _, _, pages, _ = site
    total = 0
    for name, state in real_pages(pages).items():
        assert state["pendingMermaid"] == 0, f"{name}: a Mermaid block was left as text"
        svgs = state["svgs"]
        assert len(svgs) == state["mermaid_in_html"], (name, len(svgs), state["mermaid_in_html"])
        for text in svgs:
            assert text is not None, f"{name}: a Mermaid block has no SVG"
            assert "Syntax error" not in text, f"{name}: Mermaid drew an error: {text[:200]}"
            assert len(text) > 5, f"{name}: an empty Mermaid drawing"
        total += len(svgs)
    assert total >= 10, f"only {total} Mermaid diagrams on the whole site"
    for name, state in real_pages(pages).items():              # the same diagrams in Korean
        if name.startswith("ko/"):
            assert len(state["svgs"]) == len(pages[name[3:]]["svgs"]), name


def test_every_formula_was_rendered(site):
    _, _, pages, _ = site
    total = 0
    for name, state in real_pages(pages).items():
        assert state["maths"] == state["maths_in_html"], name
        assert not state["unrenderedMaths"], f"{name}: not rendered: {state['unrenderedMaths']}"
        assert not state["rawDelimiters"], (f"{name}: raw maths delimiters left in the text: "
                                            f"{state['rawDelimiters']}")
        total += state["maths"]
    assert total >= 20, f"only {total} formulas on the whole site"
    assert pages["tensor_parallel"]["maths"] > 0 and pages["pipeline"]["maths"] > 0
    for page in ("tensor_parallel", "pipeline", "memory"):      # the same maths in Korean
        assert pages["ko/" + page]["maths"] == pages[page]["maths"], page


def test_every_image_loads(site):
    """Every image loads and every figure is shown; the i18n plugin serves docs/img/NAME.ko.png
    to the Korean pages as ko/img/NAME.png."""
    _, _, pages, _ = site
    shown = set()
    for name, state in real_pages(pages).items():
        for img in state["images"]:
            assert img["done"] and img["width"] > 0, f"{name}: image did not load: {img['src']}"
            served = posixpath.normpath(posixpath.join(page_path(name), img["src"]))
            figure = os.path.basename(served)
            shown.add(figure[:-4] + ".ko.png" if served.startswith("ko/img/") else figure)
    figures = {n for n in os.listdir(os.path.join(ROOT, "docs", "img")) if n.endswith(".png")}
    assert figures <= shown, f"figures in docs/img/ shown on no page: {figures - shown}"


def test_screenshots_were_saved(site):
    _, _, _, shots = site
    for page in SCREENSHOT_PAGES:
        path = os.path.join(shots, page.replace("/", "_") + ".png")
        assert os.path.getsize(path) > 20_000, f"{path}: too small to be a page"
        with open(path, "rb") as file:
            assert file.read(8) == b"\x89PNG\r\n\x1a\n"


def test_the_checks_catch_a_broken_page(site):
    """The fault page breaks every rule once: each check above must see it."""
    _, base, pages, _ = site
    fault = pages["__fault__"]
    assert fault["pendingMermaid"] == 1
    assert fault["unrenderedMaths"] == ["\\(x^2\\)"]
    assert "$" in fault["rawDelimiters"]
    assert any(img["width"] == 0 for img in fault["images"])
    assert foreign(fault["requests"], base) == ["https://cdn.example.invalid/lib.js"]
    assert any("deliberate fault" in error for error in fault["errors"])
    assert any("404" in error or "missing.png" in error for error in fault["errors"])
