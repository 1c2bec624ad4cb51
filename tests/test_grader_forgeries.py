"""A class with one hostile copy of every kind, graded once in the sandbox, once without.

Each hostile copy answers exercise 1.2 WRONG (``return grad_out``) and tries to get
a PASS some other way, as a student with the grader's code open beside him would:

    direct_url    read the teacher's install (direct_url.json) and run its 1.2 block
    symlink       minimegatron/ is a link to the teacher's package
    kill_grader   write a report into its grader's pipe, then kill the grader
    escapes       a process in its own session (double fork) that outlives the check,
                  fills TMPDIR and rewrites the gradebook's JSON later
    pyc           a forged judge .pyc beside the grader's judge.py (every later copy PASS)
    other_copies  a file added to every other copy of the class (their cells CHANGED)
    fifo          a FIFO in the package (the grader's read never returns)
    devzero       a link to /dev/zero in the package (the grader reads until memory ends)
    fill_tmp      fills TMPDIR (the next copy's grader cannot write its files)

and three honest copies (right, wrong, blank) are graded after them. The class is graded
with the static read switched off (``MINIMEGATRON_STATIC_READ=off``), so every hostile
block really runs and the sandbox alone is what stops it; with the read on, as in class,
each of those blocks is SUSPECT and never runs (the last test here). In bubblewrap:
no hostile cell passes, every honest copy gets the cells it gets alone, and no process
or file of a forgery is left. The fallback (``MINIMEGATRON_SANDBOX=off``) keeps its
documented limits (docs/teaching.md): it still catches links, FIFOs, devices, the
killed grader, escaped processes, the .pyc and TMPDIR, but not reading the teacher's
files (direct_url PASSES there, which shows that forgery works without the sandbox)
nor writing other copies (they turn CHANGED). The .pyc the fallback let a check
write is loaded by a grader without the private bytecode cache, and makes a blank
copy PASS: the defence is what stops it.

The teacher here is a throwaway copy of this package (run from a folder that holds no
other ``minimegatron``), so a forgery that gets through can only spoil that copy.
"""
import json
import os
import shutil
import subprocess
import sys
import uuid

import pytest

from minimegatron.classroom import exercises, gradebook, grader
from minimegatron.classroom.exercises import PACKAGE_DIR, find_blocks, replace_bodies

SPEC = "1.2,1.3"
MARKER = f"mmforgery{uuid.uuid4().hex[:12]}"
WRONG = "        return grad_out\n"
HAS_BWRAP = shutil.which("bwrap") is not None
IN_CI = (os.environ.get("CI", "").lower() == "true"
         or os.environ.get("MINIMEGATRON_REQUIRE_SANDBOX") == "1")


def _lines(text):
    return [line + "\n" for line in text.strip("\n").split("\n")]


def hostile_blocks(teacher, class_dir):
    """{kind: block lines} of the forgeries that run code (each ends with a wrong answer)."""
    escapee = ("import os, sys, time\n"
               "marker, tmp, book = sys.argv[1:4]\n"
               "open(os.path.join(tmp, marker + '.junk'), 'wb').write(b'x' * 2 ** 24)\n"
               "for _ in range(600):\n"
               "    time.sleep(0.5)\n"
               "    try:\n"
               "        if os.path.exists(book):\n"
               "            open(book, 'w').write('forged')\n"
               "    except OSError:\n"
               "        pass\n")
    verdict = {"result": "PASS", "missed": [], "lines": ["forged"], "seconds": 1}
    forged = json.dumps({"nonce": "guess", "sandbox": "bwrap",
                         "verdicts": {"1.2": verdict, "1.3": verdict}})
    return {
        "direct_url": _lines(f"""
        import glob, json, os, site
        for info in glob.glob(os.path.join(site.getsitepackages()[0],
                                           "minimegatron*.dist-info", "direct_url.json")):
            root = json.load(open(info))["url"][len("file://"):]
            text = open(os.path.join(root, "minimegatron", "autodiff", "ops.py")).read()
            body = text.split("# EXERCISE 1.2 begin\\n")[1].split("# EXERCISE 1.2 end")[0]
            scope = {{}}
            exec("def answer(ctx, grad_out):\\n" + body, scope)
            return scope["answer"](ctx, grad_out)
        return grad_out
        """),
        "kill_grader": _lines(f"""
        import os, signal
        pid = os.getppid()
        while pid > 1:
            cmd = open(f"/proc/{{pid}}/cmdline", "rb").read().split(b"\\0")
            if b"--report-fd" in cmd:
                fd = cmd[cmd.index(b"--report-fd") + 1].decode()
                try:
                    with open(f"/proc/{{pid}}/fd/{{fd}}", "w") as pipe:
                        pipe.write({forged!r})
                except OSError:
                    pass
                os.kill(pid, signal.SIGKILL)
                break
            pid = int(open(f"/proc/{{pid}}/stat").read().rpartition(")")[2].split()[1])
        return grad_out
        """),
        "escapes": _lines(f"""
        import os, sys, tempfile
        if os.fork() == 0:
            os.setsid()
            if os.fork() == 0:
                os.execv(sys.executable, [sys.executable, "-c", {escapee!r}, {MARKER!r},
                                          tempfile.gettempdir(),
                                          {str(class_dir.parent / "book.json")!r}])
            os._exit(0)
        os.wait()
        return grad_out
        """),
        "pyc": _lines(f"""
        import os, sys
        from importlib._bootstrap_external import _code_to_timestamp_pyc
        src = os.path.join({str(teacher)!r}, "minimegatron", "classroom", "exercise_checks",
                           "judge.py")
        try:
            text = open(src).read() + ("\\ndef judge(ex_id, records, seed):\\n"
                                       "    return Verdict('PASS', ['forged'])\\n")
            info = os.stat(src)
            data = _code_to_timestamp_pyc(compile(text, src, "exec"), int(info.st_mtime),
                                          info.st_size)
            pyc = os.path.join(os.path.dirname(src), "__pycache__",
                               f"judge.{{sys.implementation.cache_tag}}.pyc")
            os.makedirs(os.path.dirname(pyc), exist_ok=True)
            open(pyc, "wb").write(data)
        except OSError:
            pass
        return grad_out
        """),
        "other_copies": _lines(f"""
        import os
        try:
            for name in os.listdir({str(class_dir)!r}):
                path = os.path.join({str(class_dir)!r}, name, "minimegatron",
                                    f"planted_{{name}}.py")
                open(path, "w").write("x = 1\\n")
        except OSError:
            pass
        return grad_out
        """),
        "fill_tmp": _lines(f"""
        import os, tempfile
        try:
            for n in range(8):
                with open(os.path.join(tempfile.gettempdir(), f"{MARKER}.{{n}}"), "wb") as f:
                    for _ in range(64):
                        f.write(bytes(2 ** 20))
        except OSError:
            pass
        return grad_out
        """),
    }


def folder(kind):
    """The hostile copy's folder: graded in name order, the one writing into the others
    last of them (in the fallback it turns every copy after it CHANGED)."""
    return ("y_" if kind == "other_copies" else "h_") + kind


def _write_block(copy, ex_id, lines):
    block = find_blocks(os.path.join(copy, "minimegatron"))[ex_id]
    path = os.path.join(copy, "minimegatron", block.path)
    with open(path, encoding="utf-8") as f:
        text = replace_bodies(f.read(), block.path, {ex_id: lines})
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)


HONEST = {"z_right": ["1.2", "1.3"], "z_wrong": [], "z_blank": []}


def build_class(root, teacher):
    """The class folder: one hostile copy per kind (h_KIND), then the honest ones."""
    class_dir = root / "class"
    for kind, lines in hostile_blocks(teacher, class_dir).items():
        exercises.make(str(class_dir / folder(kind)), source_root=str(teacher))
        _write_block(str(class_dir / folder(kind)), "1.2", lines)
    for kind in ("symlink", "fifo", "devzero"):
        exercises.make(str(class_dir / f"h_{kind}"), source_root=str(teacher))
    package = class_dir / "h_symlink" / "minimegatron"
    shutil.rmtree(package)
    os.symlink(teacher / "minimegatron", package)
    os.mkfifo(class_dir / "h_fifo" / "minimegatron" / "pipe.py")
    os.symlink("/dev/zero", class_dir / "h_devzero" / "minimegatron" / "zero.py")
    for name, solved in HONEST.items():
        exercises.make(str(class_dir / name), source_root=str(teacher))
        exercises.solve(str(class_dir / name), solved)
    _write_block(str(class_dir / "z_wrong"), "1.2", [WRONG])
    return class_dir


def _teacher(root):
    """A throwaway teacher checkout: this package, copied."""
    teacher = root / "teacher"
    shutil.copytree(PACKAGE_DIR, teacher / "minimegatron", ignore=exercises.IGNORE)
    return teacher


def _leftovers():
    """Processes whose command line holds the marker, and files under /tmp named with it."""
    procs = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                if MARKER.encode() in f.read():
                    procs.append(int(pid))
        except OSError:
            pass
    files = []
    for here, dirs, names in os.walk("/tmp"):
        if here.count(os.sep) > 4:
            dirs[:] = []
        files += [os.path.join(here, n) for n in names + dirs if MARKER in n]
    return procs, files


def grade_class(root, teacher, mode, jobs):
    class_dir = build_class(root, teacher)
    env = {**os.environ, "PYTHONPATH": str(teacher), "MINIMEGATRON_SANDBOX": mode,
           "MINIMEGATRON_STATIC_READ": "off"}          # the sandbox alone (module docstring)
    env.pop("PYTHONPYCACHEPREFIX", None)
    book = root / "book.json"
    proc = subprocess.run([sys.executable, "-m", "minimegatron", "grade", SPEC, "--class",
                           str(class_dir), "--json", str(book), "--csv", str(root / "book.csv"),
                           "--timeout", "30", "--jobs", str(jobs)],
                          env=env, cwd=root, capture_output=True, text=True, timeout=900)
    procs, files = _leftovers()
    with open(book, encoding="utf-8") as f:
        rows = json.load(f)
    cells = {}
    for row in rows:
        cells.setdefault(row["student"], {})[row["exercise"]] = row
    return proc, cells, procs, files, class_dir


@pytest.fixture(scope="module")
def alone(tmp_path_factory):
    """{honest copy: {id: (result, missed)}}: each graded alone, before any forgery ran."""
    root = tmp_path_factory.mktemp("alone")
    out = {}
    for name, solved in HONEST.items():
        exercises.make(str(root / name))
        exercises.solve(str(root / name), solved)
        if name == "z_wrong":
            _write_block(str(root / name), "1.2", [WRONG])
        verdicts = grader.grade_copy(str(root / name), SPEC, timeout=30)
        out[name] = {ex_id: (v.result, v.missed) for ex_id, v in verdicts.items()}
    return out


@pytest.fixture(scope="module")
def sandboxed(tmp_path_factory):
    if not HAS_BWRAP:
        if IN_CI:
            pytest.fail("in CI (CI=true or MINIMEGATRON_REQUIRE_SANDBOX=1) bubblewrap (bwrap) "
                        "must be installed: the grader's sandbox is tested, not skipped")
        pytest.skip("bubblewrap (bwrap) is not installed")
    root = tmp_path_factory.mktemp("sandboxed")
    teacher = _teacher(root)
    return (*grade_class(root, teacher, "bwrap", jobs=2), teacher)


@pytest.fixture(scope="module")
def fallback(tmp_path_factory):
    root = tmp_path_factory.mktemp("fallback")
    teacher = _teacher(root)
    return (*grade_class(root, teacher, "off", jobs=1), teacher)


def _results(cells, name):
    return {ex_id: (cell["result"], cell["missed"]) for ex_id, cell in cells[name].items()}


SANDBOXED_1_2 = {"direct_url": "FAIL", "kill_grader": "FAIL", "escapes": "FAIL", "pyc": "FAIL",
                 "other_copies": "FAIL", "fill_tmp": "FAIL", "symlink": "CHANGED",
                 "fifo": "CHANGED", "devzero": "CHANGED"}


def test_in_the_sandbox_no_forgery_passes(sandboxed):
    proc, cells, _, _, _, _ = sandboxed
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[0].startswith("minimegatron grade")
    assert "sandboxed: each copy's checks run in bubblewrap" in proc.stdout.splitlines()[1]
    got = {kind: cells[folder(kind)]["1.2"]["result"] for kind in SANDBOXED_1_2}
    assert got == SANDBOXED_1_2, json.dumps(cells, indent=1)[:6000]
    for kind in ("symlink", "fifo", "devzero"):
        text = "\n".join(cells[folder(kind)]["1.2"]["lines"])
        why = {"symlink": "minimegatron (symbolic link)", "fifo": "pipe.py (FIFO)",
               "devzero": "zero.py (symbolic link)"}[kind]
        assert "not graded" in text and why in text, text
    assert all(cell["sandbox"] in ("bwrap", "") for c in cells.values() for cell in c.values())


def test_in_the_sandbox_honest_copies_get_their_cells_alone(sandboxed, alone):
    cells = sandboxed[1]
    for name in HONEST:
        assert _results(cells, name) == {k: (r, list(m)) for k, (r, m) in alone[name].items()}
        assert all(cell["sandbox"] == "bwrap" for cell in cells[name].values())


def test_in_the_sandbox_nothing_is_left_behind(sandboxed):
    proc, cells, procs, files, class_dir, teacher = sandboxed
    assert procs == [] and files == [], (procs, files)
    assert not list(teacher.rglob("__pycache__/judge.*.pyc"))         # the .pyc never landed
    assert not list(class_dir.glob("*/minimegatron/planted_*.py"))    # nor the planted files


def test_the_fallback_says_so_and_marks_every_cell(fallback):
    proc, cells = fallback[0], fallback[1]
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[0].startswith("NOT SANDBOXED: bubblewrap is switched off")
    assert all(cell["sandbox"] in ("unsandboxed", "") for c in cells.values()
               for cell in c.values())
    assert all(cells["z_right"][ex]["sandbox"] == "unsandboxed" for ex in ("1.2", "1.3"))


def test_the_fallback_catches_what_it_documents(fallback):
    proc, cells, procs, files, class_dir, teacher = fallback
    results = {kind: cells[folder(kind)]["1.2"]["result"] for kind in SANDBOXED_1_2}
    assert results["kill_grader"] == "ERROR", cells[folder("kill_grader")]
    for kind in ("symlink", "fifo", "devzero"):
        assert results[kind] == "CHANGED", (kind, cells[folder(kind)])
    for kind in ("escapes", "pyc", "fill_tmp"):
        assert results[kind] == "FAIL", (kind, cells[folder(kind)])
    # it also wrote through h_symlink into the teacher's package, so even its own copy
    # differs from the handout now; what its block alone scored is still a FAIL
    text = cells[folder("other_copies")]["1.2"]["lines"][0]
    assert results["other_copies"] == "FAIL" or "inside the reference: FAIL)" in text, text
    assert procs == [] and files == [], (procs, files)       # escaped process, TMPDIR junk
    book = json.loads((class_dir.parent / "book.json").read_text())
    assert len(book) == 2 * len(cells)                       # not rewritten by the escapee


def test_the_fallback_limits_reading_the_teacher_and_writing_other_copies(fallback):
    """Documented: without the sandbox a check reads the teacher's files (the reference
    block: a forged PASS) and writes the other copies (right answers turn CHANGED)."""
    cells, class_dir = fallback[1], fallback[4]
    assert cells[folder("direct_url")]["1.2"]["result"] == "PASS"
    assert cells["z_right"]["1.2"]["result"] == "CHANGED"
    assert "minimegatron/planted_z_right.py" in cells["z_right"]["1.2"]["lines"][0]


def test_the_pyc_a_fallback_check_wrote_fools_a_grader_without_a_private_cache(fallback):
    """The mutation: the forged judge .pyc landed in the teacher's package, the class's
    graders never loaded it (their blank copies are TODO); a grader without
    PYTHONPYCACHEPREFIX does, and passes a blank copy."""
    cells, class_dir, teacher = fallback[1], fallback[4], fallback[5]
    assert list(teacher.rglob("__pycache__/judge.*.pyc"))
    assert cells["z_blank"]["1.3"]["result"] in ("TODO", "CHANGED"), cells["z_blank"]
    assert "forged" not in json.dumps(cells["z_blank"])
    env = {**os.environ, "PYTHONPATH": str(teacher), "MINIMEGATRON_SANDBOX": "off"}
    env.pop("PYTHONPYCACHEPREFIX", None)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    blank = class_dir.parent / "blank"
    exercises.make(str(blank), source_root=str(teacher))
    proc = subprocess.run([sys.executable, "-m", "minimegatron", "grade", "1.3", "--path",
                           str(blank)], env=env, cwd=blank.parent, capture_output=True,
                          text=True, timeout=300)
    assert "PASS" in proc.stdout and "forged" in proc.stdout, proc.stdout + proc.stderr


def test_a_report_without_the_nonce_or_from_a_killed_grader_is_not_taken():
    good = json.dumps({"nonce": "n1", "sandbox": "bwrap", "verdicts": {"1.2": {
        "result": "PASS", "missed": [], "lines": [], "seconds": 1}}}).encode()
    assert gradebook._sealed(good, "n1", 0)[0] is not None
    assert gradebook._sealed(good, "n2", 0)[0] is None           # not this grade's nonce
    assert gradebook._sealed(good, "n1", -9)[0] is None          # its grader was killed
    assert gradebook._sealed(good + good, "n1", 0)[0] is None    # a second report in the pipe


def test_with_the_static_read_on_every_hostile_block_is_suspect_and_never_runs(tmp_path):
    """As in class (the read on): each block that answers 1.2 by a trick is SUSPECT before
    anything runs, with the line; the read is a tripwire in front of the sandbox."""
    from minimegatron.classroom import static_read
    teacher = _teacher(tmp_path)
    class_dir = tmp_path / "class"
    reference = find_blocks(PACKAGE_DIR)
    for kind, lines in hostile_blocks(teacher, class_dir).items():
        copy = str(class_dir / folder(kind))
        exercises.make(copy, source_root=str(teacher))
        _write_block(copy, "1.2", lines)
        student = find_blocks(os.path.join(copy, "minimegatron"))
        got = static_read.suspects(student, ["1.2"], reference)
        assert set(got) == {"1.2"} and got["1.2"].result == "SUSPECT", kind
    honest = str(tmp_path / "right")
    exercises.make(honest, source_root=str(teacher))
    exercises.solve(honest, ["1.2"])
    assert static_read.suspects(find_blocks(os.path.join(honest, "minimegatron")), ["1.2"],
                                reference) == {}
