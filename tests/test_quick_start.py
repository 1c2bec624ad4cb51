"""README's Quick start: two lines that work on a stock Debian/Ubuntu python, and CI runs line 2.

A system python under PEP 668 refuses ``pip install`` outside a virtual environment
(externally-managed-environment), so each line makes (or reuses) ``.venv`` and activates
it before pip. ``.ci/run`` reads the test command out of the block (its second line)
and evals it: the same extraction, run here, must give the full test command. ``--quick``
(tests/conftest.py) must select single-process tests and drop multi-rank ones.
"""
import os
import re
import subprocess
import sys

from mpi_harness import REPO_ROOT

VENV = "python3 -m venv .venv && . .venv/bin/activate && "


def _block():
    with open(os.path.join(REPO_ROOT, "README.md"), encoding="utf-8") as f:
        readme = f.read()
    section = readme[readme.index("## Quick start"):]
    return section.split("```bash\n", 1)[1].split("```", 1)[0].splitlines()


def install_line():
    """README's first line up to its install: what a page shows where the demo does not fit
    (a student's copy, a teacher's reference install)."""
    return _block()[0].split(" && python3 -m minimegatron")[0]


def test_both_lines_make_and_use_a_virtual_environment_before_pip():
    lines = _block()
    assert len(lines) == 2, lines
    for line in lines:
        assert line.startswith(VENV), line
        assert "pip install" in line and line.index(".venv") < line.index("pip install")
    assert lines[0].endswith("python3 -m minimegatron run -n 8 tutorials/08_3d_parallel.py")
    assert lines[1].endswith('python3 -m pip install -e ".[test]" && python3 -m pytest')


def test_ci_reads_the_second_line():
    with open(os.path.join(REPO_ROOT, ".ci", "run"), encoding="utf-8") as f:
        script = f.read()
    extraction = re.search(r"test_cmd=\$\((.*?)\)\n", script, re.DOTALL).group(1)
    got = subprocess.run(["bash", "-c", extraction.replace("\\\n", " ")], cwd=REPO_ROOT,
                         capture_output=True, text=True, check=True).stdout.strip()
    assert got == _block()[1]


def test_quick_selects_single_process_tests():
    out = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "--quick",
                          "-p", "no:cacheprovider", "tests/test_launcher.py",
                          "tests/test_cli_args.py"], cwd=REPO_ROOT, capture_output=True,
                         text=True, env={**os.environ, "PYTHONPATH": REPO_ROOT}).stdout
    kept = [line for line in out.splitlines() if "::" in line]
    assert "tests/test_launcher.py::test_exception_on_rank3_aborts_job_via_run" in kept
    assert "tests/test_launcher.py::test_deadlock_is_killed_by_timeout" not in kept  # mpiexec
    assert "tests/test_launcher.py::test_finder_and_environment" in kept             # one process
    assert sum("test_cli_args.py" in line for line in kept) > 100, out
    assert re.search(r"\d+/\d+ tests collected \(\d+ deselected\)", out), out


def _fenced_lines(text):
    """The lines inside the page's fenced code blocks."""
    lines, inside = [], False
    for line in text.splitlines():
        if line.lstrip().startswith("```"):
            inside = not inside
        elif inside:
            lines.append(line.strip())
    return lines


def test_the_sites_pages_show_readmes_venv_lines():
    """One quick start everywhere: every install command in a code block of the site is one
    of README's two lines, or the first one's install without the demo (a teacher's
    reference install, a student's copy); index and running show both lines, teaching the
    install, in both languages."""
    docs = os.path.join(REPO_ROOT, "docs")
    allowed = set(_block()) | {install_line()}
    pages = {}
    for folder, _, names in os.walk(docs):
        for name in names:
            if name.endswith(".md"):
                with open(os.path.join(folder, name), encoding="utf-8") as f:
                    pages[os.path.relpath(os.path.join(folder, name), docs)] = f.read()
    strays = [(page, line) for page, text in pages.items() for line in _fenced_lines(text)
              if "pip install" in line and line not in allowed]
    assert strays == [], strays
    for page, wanted in (("index", _block()), ("running", _block()),
                         ("teaching", [install_line()])):
        for twin in (f"{page}.md", f"{page}.ko.md"):
            assert set(wanted) <= set(_fenced_lines(pages[twin])), twin
    # a planted page with the old line is caught
    old = '```bash\npython3 -m pip install -e ".[mpi,plot]"\n```\n'
    assert [line for line in _fenced_lines(old) if line not in allowed]


def test_readme_names_the_korean_site_and_writes_no_test_count():
    with open(os.path.join(REPO_ROOT, "README.md"), encoding="utf-8") as f:
        readme = f.read()
    assert "[docs/index.ko.md](docs/index.ko.md)" in readme and "한국어" in readme
    assert os.path.isfile(os.path.join(REPO_ROOT, "docs", "index.ko.md"))
    # how many tests there are changes with every commit: pytest says it, prose does not
    assert re.findall(r"\d[\d,]* tests", readme) == []
