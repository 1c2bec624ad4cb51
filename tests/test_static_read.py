"""The static read: a block is read before it runs, and what no exercise needs is SUSPECT.

- no false SUSPECT: every reference block, every blank of the handout and every right
  answer written another way (the lesson tests' ALTERNATIVES, and a few more here)
  read clean;
- each forbidden construct, in a small block of its own, gives SUSPECT with the right
  kind and the right line; the 14-line forgery that runs the teacher's own reference
  (found through the editable install's direct_url.json) too;
- end to end: ``minimegatron grade`` shows SUSPECT in English and Korean, exits 1,
  never runs the block (a marker it would write stays absent), and the class gradebook
  (table, CSV, JSON) carries the cell;
- mutation: with the static read switched off, the same blocks do run.
"""
import csv
import glob
import importlib
import io
import json
import os
import re
import string
import subprocess
import sys

import pytest

from minimegatron import i18n
from minimegatron.classroom import exercises, gradebook, grader, static_read
from minimegatron.classroom.exercise_checks import EXERCISES
from minimegatron.classroom.exercises import blank_line, find_blocks, replace_bodies

REFERENCE = find_blocks()
IDS = [ex.id for ex in EXERCISES]
HANGUL = re.compile(r"[\uac00-\ud7a3]")

FORGERY = [        # runs the teacher's own answer: the editable install says where it is
    "        import json, os",
    "        from importlib import metadata",
    "        dist = metadata.distribution('minimegatron')",
    "        url = json.loads(dist.read_text('direct_url.json'))['url']",
    "        root = url[len('file://'):]",
    "        path = os.path.join(root, 'minimegatron', 'autodiff', 'ops.py')",
    "        with open(path) as f:",
    "            lines = f.read().splitlines(keepends=True)",
    "        begin = lines.index('        # EXERCISE 1.2 begin\\n')",
    "        end = lines.index('        # EXERCISE 1.2 end\\n')",
    "        source = 'def reference(ctx, grad_out):\\n' + ''.join(lines[begin + 1:end])",
    "        scope = {}",
    "        exec(compile(source, path, 'exec'), scope)",
    "        return scope['reference'](ctx, grad_out)",
]
RIGHT_12 = "        return grad_out * ctx.saved[0]"


def _read(ex_id, lines):
    return static_read.read_block(ex_id, [line + "\n" for line in lines], REFERENCE[ex_id])


def _line(ex_id, index):
    """The file line of body line ``index`` when the block sits where the reference's does."""
    return REFERENCE[ex_id].begin + 2 + index


# ---- no false SUSPECT ----------------------------------------------------------------------

def _lesson_alternatives():
    """(ex_id, name, body) of every right answer written another way in the lesson tests."""
    found = []
    for path in sorted(glob.glob(os.path.join(os.path.dirname(__file__), "test_lesson_*.py"))):
        module = importlib.import_module(os.path.basename(path)[:-3])
        alternatives = getattr(module, "ALTERNATIVES", {})
        for key, value in alternatives.items():
            if isinstance(value, list):                   # {name: body} of one exercise EX
                found.append((module.EX, key, value))
            else:
                found += [(key, name, body) for name, body in value.items()]
    return found


MORE_RIGHT = {     # a student's own way of writing right answers: imports and helpers allowed
    "1.2 numpy by its name": ("1.2", ["        import numpy as np",
                                      "        return np.multiply(grad_out, ctx.saved[0])"]),
    "1.3 math and a local": ("1.3", ["        import math",
                                     "        z = ctx.saved[0]",
                                     "        return grad_out * (1 - z * z) * math.exp(0)"]),
    "3.2 world from comm": ("3.2", ["        from minimegatron.comm import world",
                                    "        return x if group.size == 1 else "
                                    "all_reduce(x, group)"]),
    "3.1 comm under another name": ("3.1", [
        "            from minimegatron import comm as c",
        "            return c.all_reduce(grad_out, ctx.group), None"]),
    "7.1 self's own private helper": ("7.1", REFERENCE["7.1"].body[:-1] + [
        "                self.clean_steps = 0 if self._grew() else 0"]),
    "7.1 trace.span and functools": ("7.1", [
        "        import functools",
        "        with trace.span('check'):",
        "            bad = functools.reduce(lambda a, b: a or b,",
        "                                   [not all_finite([g]) for g in grads], False)",
        "        local = xp.asarray([1.0 if bad else 0.0])",
        "        if group is not None:",
        "            with trace.label('mixed.found_inf'):",
        "                local = comm.all_reduce(local, group, op='max')",
        "        found_inf = bool(local[0] > 0)"]),
    "8.1 math from the file": ("8.1", ["    top = xp.maximum(lse, block_lse)",
                                       "    scale = math.log(1.0)",
                                       "    new_lse = top + xp.log(xp.exp(lse - top) + "
                                       "xp.exp(block_lse - top)) + scale",
                                       "    return (xp.exp(lse - new_lse)[..., None] * out",
                                       "            + xp.exp(block_lse - new_lse)[..., None] "
                                       "* block_out), new_lse"]),
    "1.2 an error caught and annotated": ("1.2", [
        "        try:",
        "            return grad_out * ctx.saved[0]",
        "        except ValueError as err:",
        "            err.note = 'shapes'",
        "            raise"]),
    "2.1 a helper inside the function": ("2.1", [
        "    def both(i):",
        "        return (forward_actions(num_stages, stage, i),",
        "                backward_actions(num_stages, stage, i))",
        "    pairs = [both(i) for i in range(num_micro_batches)]",
        "    for f, _ in pairs:",
        "        actions += f",
        "    for _, b in pairs:",
        "        actions += b"]),
    "4.1 then a blank line and a comment, at the end of its function": ("4.1", [
        "            handle = comm.iall_reduce(bucket.reduce, self.group, op='mean',",
        "                                      inplace=True)",
        "            bucket.handle = handle",
        "",
        "            # started: finish() waits for it"]),
    "5.1 a counter kept with getattr": ("5.1", [
        "                self.count = getattr(self, 'count', 0) + 1"]
        + [line.rstrip("\n") for line in REFERENCE["5.1"].body]),
}


@pytest.mark.parametrize("ex_id", IDS)
def test_every_reference_block_and_its_blank_read_clean(ex_id):
    block = REFERENCE[ex_id]
    assert static_read.read_block(ex_id, block.body, block) == []
    assert static_read.read_block(ex_id, [blank_line(ex_id, block.indent)], block) == []


@pytest.mark.parametrize("ex_id, name, body", _lesson_alternatives() + [
    (ex_id, name, body) for name, (ex_id, body) in MORE_RIGHT.items()])
def test_right_answers_written_another_way_read_clean(ex_id, name, body):
    assert _read(ex_id, [line.rstrip("\n") for line in body]) == [], name


def test_the_handout_reads_clean(tmp_path):
    exercises.make(str(tmp_path))
    student = find_blocks(str(tmp_path / "minimegatron"))
    assert static_read.suspects(student, IDS, REFERENCE) == {}


# ---- each forbidden construct: SUSPECT, with its kind and its line ---------------------------

FORBIDDEN = {      # name: (exercise, body, kind, index of the body line it is on)
    "import os": ("1.2", ["        import os", RIGHT_12], "import", 0),
    "import the grader": ("1.2", ["        x = 1", "        from minimegatron.classroom import "
                                  "grader", RIGHT_12], "import", 1),
    "import the lab as a name": ("1.2", ["        from minimegatron import runtime",
                                         RIGHT_12], "reaches", 0),
    "a dunder of a function": ("3.1", ["            comm_world = all_reduce.__module__",
                                    "            return all_reduce(grad_out, ctx.group), None"],
                            "dunder", 0),
    "MPI reached by attribute": ("7.1", ["        w = comm.collectives.MPI.COMM_WORLD"]
                                 + REFERENCE["7.1"].body, "reaches", 0),
    "open": ("1.2", ["        open('/tmp/x', 'w').write('1')", RIGHT_12], "builtin", 0),
    "exec": ("1.2", ["        exec('y = 1')", RIGHT_12], "builtin", 0),
    "eval": ("1.2", ["        return eval('grad_out * ctx.saved[0]')"], "builtin", 0),
    "compile": ("1.2", ["        c = compile('1', 'x', 'eval')", RIGHT_12], "builtin", 0),
    "getattr with a computed name": ("1.2", ["        f = getattr(ctx, 'sav' + 'ed')",
                                             RIGHT_12], "builtin", 0),
    "setattr": ("1.2", ["        setattr(ctx, 'saved', ctx.saved)", RIGHT_12], "builtin", 0),
    "globals": ("1.2", ["        g = globals()", RIGHT_12], "builtin", 0),
    "vars": ("1.2", ["        v = vars(ctx)", RIGHT_12], "builtin", 0),
    "__import__": ("1.2", ["        m = __import__('o' + 's')", RIGHT_12], "dunder", 0),
    "a dunder attribute": ("1.2", ["        k = grad_out.__class__", RIGHT_12], "dunder", 0),
    "a private member of another object": ("1.2", ["        n = grad_out._node", RIGHT_12],
                                           "private", 0),
    "a frame": ("1.2", ["        g = (i for i in ()).gi_frame", RIGHT_12], "frame", 0),
    "MPI spawn on the group's communicator": ("3.2", [
        "        group.comm.Spawn('python3', ['-c', 'print(1)'], 1)",
        "        return all_reduce(x, group)"], "spawn", 0),
    "numpy file io": ("1.2", ["        xp.save('/tmp/x.npy', grad_out)", RIGHT_12],
                      "file_io", 0),
    "trace switched off": ("3.2", ["        trace.disable()",
                                   "        return all_reduce(x, group)"], "trace", 0),
    "a made-up trace record": ("3.2", [
        "        from minimegatron.comm.trace import record",
        "        record('all_reduce', group.name, x.nbytes, 0, 0, 0.0, 0.0)",
        "        return x"], "trace", 0),
    "the trace's state switched off": ("3.2", ["        trace._state['enabled'] = False",
                                               "        return all_reduce(x, group)"],
                                       "private", 0),
    "MINIMEGATRON_CHECK=0 through the environment": ("1.2", [
        "        import os",
        "        os.environ['MINIMEGATRON_CHECK'] = '0'", RIGHT_12], "env", 1),
    "the spans filled by hand": ("3.2", ["        trace.spans().append({'op': 'all_reduce'})",
                                         "        return x"], "trace", 0),
    "the trace under another name": ("3.2", ["        t = trace",
                                             "        return x"], "trace", 0),
    "the collective checks off": ("4.1", ["            comm_check.disable()"]
                                  + REFERENCE["4.1"].body, "trace", 0),
    "MINIMEGATRON_CHECK": ("1.2", ["        key = 'MINIMEGATRON_CHECK'", RIGHT_12], "env", 0),
    "a fake handle": ("4.1", ["            bucket.handle = comm.Handle('all_reduce', self.group,"
                              " [], lambda: None, 0, 0, 0)"], "handle", 0),
    "a class of one's own": ("4.1", ["            class Done:",
                                     "                def wait(self):",
                                     "                    return None",
                                     "            bucket.handle = Done()"], "class", 0),
    "a handle made by namedtuple": ("4.1", [
        "            import collections",
        "            fake = collections.namedtuple('Fake', 'wait test')",
        "            bucket.handle = fake(lambda: None, lambda: True)"], "class", 1),
    "a class made by type": ("4.1", ["            bucket.handle = type('H', (), {})()"],
                             "builtin", 0),
    "del of a package function": ("3.2", ["        del Function.apply", "        return x"],
                                  "patch", 0),
    "global": ("1.2", ["        global xp", RIGHT_12], "global", 0),
    "a module patched": ("3.2", ["        trace.label = None", "        return x"], "patch", 0),
    "a package function replaced": ("3.2", ["        comm_all = all_reduce",
                                            "        Function.apply = None",
                                            "        return x"], "patch", 1),
    "a dunder by text": ("1.2", ["        s = '{0.__class__}'.format(grad_out)", RIGHT_12],
                         "string", 0),
    "a statement outside the function": ("1.2", [RIGHT_12, "import math",
                                                 "Exp.backward = None"], "escape", 1),
    # the allow-list of names: NumPy's file and pickle functions however they are reached
    "numpy's load imported by name": ("1.2", ["        from numpy import savetxt, load",
                                              RIGHT_12], "file_io", 0),
    "numpy's load with allow_pickle": ("1.2", [
        "        import numpy as np",
        "        m = np.load('/tmp/x.npy', allow_pickle=True)", RIGHT_12], "file_io", 1),
    "numpy's load through xp": ("1.2", ["        m = xp.load('/tmp/x.npy', allow_pickle=True)",
                                        RIGHT_12], "file_io", 0),
    "numpy's load renamed": ("1.2", ["        from numpy import load as ld",
                                     "        m = ld('/tmp/x.npy', allow_pickle=True)",
                                     RIGHT_12], "file_io", 0),
    "numpy's fromfile on the staged copy": ("10.1", [
        "    import numpy",
        "    text = numpy.fromfile('minimegatron/nn/moe/routing.py', dtype=numpy.uint8)",
        "    return None"], "file_io", 1),
    "numpy's savetxt": ("1.2", ["        xp.savetxt('/tmp/x', grad_out)", RIGHT_12],
                        "file_io", 0),
    "numpy's DataSource": ("1.2", ["        from numpy import DataSource", RIGHT_12],
                           "file_io", 0),
    "a NumPy name outside the allow-list": ("1.2", [
        "        f = xp.vectorize(lambda v: v)", RIGHT_12], "numpy", 0),
    "numpy.lib imported": ("1.2", ["        from numpy.lib import npyio", RIGHT_12],
                           "import", 0),
    "numpy's internals reached": ("1.2", ["        m = xp.core.multiarray", RIGHT_12],
                                  "reaches", 0),
    "getattr of numpy, a public name written out": ("1.2", [
        "        f = getattr(xp, 'load')", RIGHT_12], "builtin", 0),
    "getattr of numpy for a module": ("1.2", ["        f = getattr(xp, 'lib')", RIGHT_12],
                                      "builtin", 0),
    "dir": ("1.2", ["        names = dir(ctx)", RIGHT_12], "builtin", 0),
    # no check module, no judge helper
    "a judge helper imported": ("10.1", [
        "    from minimegatron.classroom.exercise_checks.moe_routing import judge_top_k",
        "    return judge_top_k(probs, k)"], "import", 0),
    "a judge helper reached through the package": ("10.1", [
        "    import minimegatron",
        "    f = minimegatron.classroom.exercise_checks.judge",
        "    return None"], "reaches", 1),
    # no state on function objects: a lambda or a def with attributes is a hand-made object
    "a lambda with attributes as a handle": ("4.1", ["            h = lambda: None",
                                                     "            h.wait = h",
                                                     "            h.test = lambda: True",
                                                     "            bucket.handle = h"],
                                             "function_state", 1),
    "an inner def with attributes": ("1.2", ["        def f():",
                                             "            return 0",
                                             "        f.calls = 1", RIGHT_12],
                                     "function_state", 2),
    "a partial with attributes": ("4.1", ["            import functools",
                                          "            h = functools.partial(print)",
                                          "            h.wait = print",
                                          "            bucket.handle = h"],
                                  "function_state", 2),
}


@pytest.mark.parametrize("case", list(FORBIDDEN))
def test_each_forbidden_construct_is_suspect_on_its_line(case):
    ex_id, body, kind, index = FORBIDDEN[case]
    findings = _read(ex_id, [line.rstrip("\n") for line in body])
    assert (kind, _line(ex_id, index)) in {(f.kind, f.line) for f in findings}, \
        f"{case}: {findings}"


def test_the_numpy_allow_list_holds_no_file_function_and_no_module():
    """Every name listed is NumPy's and no module; no closed name is allowed however it is
    spelled; ufuncs and scalar types are allowed without a list."""
    import numpy
    from minimegatron.classroom import allowed_names
    for module, names in allowed_names.FUNCTIONS.items():
        found = importlib.import_module(module)
        for name in names.split():
            value = getattr(found, name)
            assert not isinstance(value, type(numpy)), (module, name)
            assert allowed_names.numpy_name_allowed(module, name), (module, name)
    for module in allowed_names.MODULES:
        for name in allowed_names.CLOSED:
            assert not allowed_names.numpy_name_allowed(module, name), (module, name)
    assert allowed_names.numpy_name_allowed("numpy", "logaddexp")       # a ufunc
    assert allowed_names.numpy_name_allowed("numpy", "bfloat16") is False
    assert allowed_names.numpy_name_allowed("numpy", "uint16")          # a scalar type
    assert not allowed_names.numpy_name_allowed("numpy.lib", "pad")
    assert not allowed_names.numpy_name_allowed("numpy", "fromstring")  # not listed


def test_a_state_kept_on_the_functions_own_objects_is_still_clean():
    """What function_state does not touch: attributes of the function's arguments and of
    objects it built (a right answer may note a count on ctx or keep a list)."""
    assert _read("1.2", ["        ctx.note = 1", "        out = [grad_out]",
                         "        return out[0] * ctx.saved[0]"]) == []
    assert _read("4.1", ["            handle = comm.iall_reduce(bucket.reduce, self.group, "
                         "op='mean', inplace=True)",
                         "            bucket.handle = handle"]) == []


def test_the_reference_forgery_is_suspect_from_its_first_line():
    findings = _read("1.2", FORGERY)
    first = _line("1.2", 0)
    assert findings[0].line == first and findings[0].kind == "import", findings
    found = {(f.kind, f.name, f.line - first) for f in findings}
    for expected in [("import", "importlib", 1), ("builtin", "open", 6),
                     ("builtin", "exec", 12), ("builtin", "compile", 12)]:
        assert expected in found, (expected, found)


def test_an_import_of_nothing_is_left_to_the_run():
    assert _read("1.2", ["        from math.no_such_module import x", RIGHT_12]) == []
    # NumPy is an allow-list of modules: one it does not name is SUSPECT, known or not
    assert [f.kind for f in _read("1.2", ["        from numpy.no_such_module import x",
                                          RIGHT_12])] == ["import"]


def test_a_read_that_breaks_is_suspect_not_clean(monkeypatch):
    def broken(*args, **kwargs):
        raise RecursionError("too deep")
    monkeypatch.setattr(static_read, "read_block", broken)
    block = REFERENCE["1.2"]
    verdict = static_read.suspects({"1.2": block}, ["1.2"], REFERENCE)["1.2"]
    assert verdict.result == "SUSPECT" and verdict.missed == ["static: unread"], verdict
    assert "RecursionError('too deep')" in "\n".join(verdict.lines)


# ---- end to end: the grader, the gradebook, both languages ---------------------------------

def _write_block(copy, ex_id, lines):
    block = find_blocks(os.path.join(copy, "minimegatron"))[ex_id]
    path = os.path.join(copy, "minimegatron", block.path)
    with open(path, encoding="utf-8") as f:
        text = replace_bodies(f.read(), block.path, {ex_id: [line + "\n" for line in lines]})
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
    return block


def _marker_block(marker):
    """1.3's right answer that also leaves a file behind: proof that the block ran."""
    return [f"        open({marker!r}, 'w').write('ran')",
            "        return grad_out * (1 - ctx.saved[0] ** 2)"]


@pytest.fixture
def forged_copy(tmp_path):
    copy = str(tmp_path / "copy")
    exercises.make(copy)
    marker = str(tmp_path / "ran")
    _write_block(copy, "1.2", FORGERY)
    block = _write_block(copy, "1.3", _marker_block(marker))
    return copy, marker, block


def _grade(copy, spec, lang):
    """``minimegatron grade SPEC --path COPY`` in a process of its own: (exit status, stdout)."""
    env = {**os.environ, "MINIMEGATRON_LANG": lang}
    proc = subprocess.run([sys.executable, "-m", "minimegatron", "grade", spec, "--path", copy],
                          capture_output=True, text=True, env=env, timeout=300)
    return proc.returncode, proc.stdout


def test_grade_shows_suspect_with_the_line_and_runs_nothing(forged_copy):
    copy, marker, block_13 = forged_copy
    code, out = _grade(copy, "1.2,1.3,1.4", "en")
    assert code == 1, out
    ops = os.path.join(copy, "minimegatron", "autodiff", "ops.py")
    with open(ops, encoding="utf-8") as f:
        lines = f.read().splitlines()
    import_line = lines.index(FORGERY[0]) + 1                 # the student's numbering
    assert "SUSPECT  1.2 " in out and "SUSPECT  1.3 " in out, out
    assert f"minimegatron/autodiff/ops.py:{import_line}: import json, os" in out, out
    assert "<- imports json, os, outside" in out and "uses compile, exec," in out, out
    assert f"ops.py:{block_13.begin + 2}: open(" in out, out
    assert "TODO  1.4" in out and "0 of 3 exercise(s) pass" in out, out
    assert not os.path.exists(marker), "a SUSPECT block ran"


def test_grade_in_korean(forged_copy):
    copy, _, _ = forged_copy
    code, out = _grade(copy, "1.2", "ko")
    assert code == 1, out
    section = out[out.index("의심  1.2"):]
    assert "의심: 블록을 실행하지 않았습니다" in section, out
    assert "json, os를 import합니다" in section and "compile, exec를 씁니다" in section, out
    assert "SUSPECT" not in section and "imports" not in section, section


def test_a_student_grading_her_own_copy_sees_suspect_too(forged_copy):
    """Self-check mode (the copy's own grader, no answers in it) reads the blocks the same
    way, so a student learns before handing in what no exercise needs."""
    copy, marker, _ = forged_copy
    env = {**os.environ, "PYTHONPATH": copy, "MINIMEGATRON_LANG": "en"}
    proc = subprocess.run([sys.executable, "-m", "minimegatron", "grade", "1.2,1.3"], cwd=copy,
                          capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "itself a student copy (self-check mode)" in proc.stdout, proc.stdout
    assert "SUSPECT  1.2 " in proc.stdout and "SUSPECT  1.3 " in proc.stdout, proc.stdout
    assert not os.path.exists(marker)


def test_the_gradebook_carries_suspect(forged_copy, tmp_path):
    copy, marker, _ = forged_copy
    class_dir = tmp_path / "class"
    class_dir.mkdir()
    os.rename(copy, class_dir / "mallory")
    book = gradebook.grade_class(str(class_dir), "1.2,1.3", err=io.StringIO())
    assert {ex: cell["result"] for ex, cell in book["mallory"].items()} == \
        {"1.2": "SUSPECT", "1.3": "SUSPECT"}
    assert "SUSP" in gradebook.table(book)
    gradebook.write(book, str(tmp_path / "book.csv"), str(tmp_path / "book.json"))
    with open(tmp_path / "book.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert [(r["exercise"], r["result"], r["point"]) for r in rows] == [
        ("1.2", "SUSPECT", "static: import"), ("1.3", "SUSPECT", "static: builtin")]
    with open(tmp_path / "book.json", encoding="utf-8") as f:
        cells = json.load(f)
    assert any("import json, os" in line for line in cells[0]["lines"]), cells[0]
    assert not os.path.exists(marker)


# ---- mutation: without the static read, the same blocks run -------------------------------

def test_without_the_static_read_the_blocks_would_have_run(forged_copy, monkeypatch):
    copy, marker, _ = forged_copy
    monkeypatch.setattr(static_read, "suspects", lambda *args: {})
    monkeypatch.setenv("MINIMEGATRON_SANDBOX", "off")   # in bubblewrap the marker's folder
    verdicts = grader.grade_copy(copy, "1.2,1.3")       # is out of reach (the sandbox's job)
    assert os.path.exists(marker), "the marker block never ran"
    assert verdicts["1.3"].result == "PASS", verdicts["1.3"].lines
    # the forgery runs too, and where the teacher's install is editable it PASSes
    from importlib import metadata
    try:
        url = metadata.distribution("minimegatron").read_text("direct_url.json") or "{}"
        editable = json.loads(url).get("dir_info", {}).get("editable", False)
    except metadata.PackageNotFoundError:
        editable = False
    assert verdicts["1.2"].result != "SUSPECT"
    if editable:
        assert verdicts["1.2"].result == "PASS", verdicts["1.2"].lines


# ---- the messages: same keys and fields in both languages -----------------------------------

def _fields(template):
    return sorted(name for _, name, _, _ in string.Formatter().parse(template) if name)


def test_messages_in_both_languages():
    en, ko = i18n.en_static.MESSAGES, i18n.ko_static.MESSAGES
    assert sorted(en) == sorted(ko)
    for key in en:
        assert _fields(en[key]) == _fields(ko[key]), key
        assert key == "static.line" or HANGUL.search(ko[key]), key
    kinds = set(re.findall(r'self\.flag\(node, "(\w+)"',
                           open(static_read.__file__, encoding="utf-8").read()))
    kinds |= {"reaches", "trace", "handle", "private", "module", "frame", "file_io",
              "spawn", "unread", "numpy", "function_state"}
    assert {f"static.{kind}" for kind in kinds} <= set(en), kinds - {k[7:] for k in en}

