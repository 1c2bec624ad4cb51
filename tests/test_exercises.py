"""Classroom exercises: the student copy, its blanks, and the grader's verdicts.

Grading every exercise costs one plain subprocess (1-rank checks) and one
mpiexec launch (multi-rank checks) per copy; each copy is graded once per
session (module fixtures) and the tests read the verdicts and the printed text.
"""
import io
import os
import re
import subprocess
import sys

import pytest

from mpi_harness import REPO_ROOT

from minimegatron.classroom import exercises
from minimegatron.classroom.exercise_checks import EXERCISES, by_id
from minimegatron.classroom.grader import grade
from minimegatron.commands.exercises import main as exercises_main
from minimegatron.commands.grade import main as grade_main

IDS = [ex.id for ex in EXERCISES]
ONE = "4.1"        # solved in the "one solved" copy: DDP, which needs MatMul etc.
_GRADES = {}


def graded(name, path, spec="all", timeout=60):
    """(verdicts {id: passed}, printed text) of grading the copy at path, once per session."""
    if name not in _GRADES:
        out = io.StringIO()
        _GRADES[name] = grade(path, spec, timeout=timeout, out=out), out.getvalue()
    return _GRADES[name]


def section(text, ex_id):
    """The lines the grader printed for one exercise (its PASS/FAIL line and the details)."""
    word = "(PASS|FAIL|TODO|HANG|ERROR|CHANGED|TIMEOUT)"
    match = re.search(rf"^{word}  {re.escape(ex_id)} .*?(?=^{word}  |^\d+ of )",
                      text, re.S | re.M)
    assert match, f"no verdict for {ex_id} in:\n{text}"
    return match.group(0)


@pytest.fixture(scope="module")
def fresh(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("fresh"))
    exercises.make(path)
    return path


@pytest.fixture(scope="module")
def one_solved(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("one_solved"))
    exercises.make(path)
    exercises.solve(path, [ONE])
    return path


def test_every_marked_block_is_a_registered_exercise():
    blocks = exercises.find_blocks()
    assert sorted(blocks) == sorted(IDS)
    for ex_id, block in blocks.items():
        assert block.indent, ex_id                     # inside a function body
        assert any(line.strip() for line in block.body), ex_id
        assert by_id(ex_id).hint and by_id(ex_id).note


def test_markers_errors_are_clear():
    with pytest.raises(ValueError, match="x.py:2: EXERCISE 1.1 end without its begin"):
        exercises.parse_blocks("def f():\n    # EXERCISE 1.1 end\n", "x.py")
    with pytest.raises(ValueError, match="must sit inside a function body"):
        exercises.parse_blocks("# EXERCISE 1.1 begin\nx = 1\n# EXERCISE 1.1 end\n", "x.py")
    with pytest.raises(ValueError, match="never ends"):
        exercises.parse_blocks("def f():\n    # EXERCISE 1.1 begin\n    pass\n", "x.py")


def test_blank_text_keeps_markers_and_indentation():
    text = ("def f(x):\n    if x:\n        # EXERCISE 2.1 begin\n        y = x + 1\n"
            "        # EXERCISE 2.1 end\n        return y\n")
    student = exercises.blank_text(text)
    assert student.splitlines()[2:5] == [
        "        # EXERCISE 2.1 begin",
        f'        raise NotImplementedError("Exercise 2.1: {by_id("2.1").hint}")',
        "        # EXERCISE 2.1 end"]
    assert "y = x + 1" not in student
    compile(student, "student.py", "exec")


def test_student_copy_has_no_solution_lines(fresh):
    reference = exercises.find_blocks()
    student = exercises.find_blocks(os.path.join(fresh, "minimegatron"))
    assert sorted(student) == sorted(reference)
    for ex_id, block in reference.items():
        assert exercises.is_blank(student[ex_id]), ex_id
        with open(os.path.join(REPO_ROOT, "minimegatron", block.path)) as f:
            ref_text = f.read()
        with open(os.path.join(fresh, "minimegatron", block.path)) as f:
            copy_text = f.read()
        assert "".join(block.body) not in copy_text, ex_id
        assert exercises.leaked_lines(copy_text, ref_text) == [], ex_id
    with open(os.path.join(fresh, "minimegatron", "autodiff", "ops.py")) as f:
        ops = f.read()
    for line in ("grad_out * (1 - ctx.saved[0] ** 2)", "xp.swapaxes(x2, -1, -2) @ g",
                 "grad = grad.sum(axis=axis, keepdims=True)"):
        assert line not in ops
    tensor = ""
    for name in ("mappings.py", "linear.py"):
        with open(os.path.join(fresh, "minimegatron", "parallel", "tensor_parallel", name)) as f:
            tensor += f.read()
    for line in ("return all_reduce(grad_out, ctx.group), None",
                 "return x if group.size == 1 else all_reduce(x, group)",
                 "y = reduce_from_tp(partial, self.tp_group)"):
        assert line not in tensor
    zero_bubble = {"autodiff/split_backward.py": "return masked_backward(node.fn, node.ctx, "
                                                 "grad_outs, others)",
                   "parallel/pipeline_parallel/zero_bubble.py": 'actions.append(Action("weight", '
                                                                'weights))'}
    for name, line in zero_bubble.items():            # the B/W split and ZB-H1's W steps
        with open(os.path.join(fresh, "minimegatron", name)) as f:
            assert line not in f.read(), name
        with open(os.path.join(REPO_ROOT, "minimegatron", name)) as f:
            assert line in f.read(), name
    compiled = [name for _, _, files in os.walk(fresh) for name in files
                if name.endswith(".pyc")]
    assert compiled == []                              # no bytecode of the solutions
    assert os.path.isfile(os.path.join(fresh, "tutorials", "02_worked_example.py"))


def test_student_copy_imports(fresh):
    modules = sorted({"minimegatron." + b.path[:-3].replace(os.sep, ".")
                      for b in exercises.find_blocks().values()})
    code = "import " + ", ".join(modules) + "; import minimegatron; print(minimegatron.__file__)"
    out = subprocess.run([sys.executable, "-c", code], cwd=fresh, capture_output=True,
                         text=True, env={**os.environ, "PYTHONPATH": fresh}, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == os.path.join(fresh, "minimegatron", "__init__.py")


def test_make_refuses_an_existing_copy_and_a_student_source(fresh, capsys):
    assert exercises_main(["make", fresh]) == 2
    assert "is not empty" in capsys.readouterr().err
    with pytest.raises(ValueError, match="itself a student copy"):
        exercises.make(os.path.join(fresh, "again"), source_root=fresh)


def test_make_refuses_root_home_and_a_non_empty_directory(tmp_path, capsys):
    for bad in ("/", os.path.expanduser("~")):
        with pytest.raises(ValueError, match="refusing to write a copy into"):
            exercises.make(bad, force=True)
    (tmp_path / "keep.txt").write_text("mine")
    assert exercises_main(["make", str(tmp_path)]) == 2
    assert "is not empty (1 entries)" in capsys.readouterr().err
    assert (tmp_path / "keep.txt").read_text() == "mine"            # nothing written
    assert sorted(os.listdir(tmp_path)) == ["keep.txt"]
    assert exercises_main(["make", str(tmp_path), "--force"]) == 0
    assert (tmp_path / "keep.txt").read_text() == "mine"
    assert (tmp_path / "setup.cfg").is_file()                        # pip install -e works


def test_a_tutorial_in_a_copy_runs_the_copy_and_stops_at_its_blank(fresh, tmp_path):
    """The reference is installed (this test runs it), yet the copy's tutorial runs the
    copy: its first line names the copy's package, and it stops at the blank in one line."""
    script = os.path.join(fresh, "tutorials", "00_autodiff_and_gpt.py")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    proc = subprocess.run([sys.executable, script, "--steps", "1"], cwd=str(tmp_path),
                          capture_output=True, text=True, timeout=120, env=env)
    package = os.path.join(fresh, "minimegatron")
    assert proc.stdout.startswith(f"minimegatron tutorials/00_autodiff_and_gpt.py: package "
                                  f"{package}\n"), proc.stdout
    assert proc.returncode == 2, proc.stderr
    assert re.fullmatch(r"error: this copy's Exercise 1\.\d: .*\(fill in that block, then "
                        r"grade it: minimegatron grade 1\.\d\)\n", proc.stderr), proc.stderr
    cmd = [sys.executable, "-m", "minimegatron", "run", "-n", "2", "--timeout", "120",
           os.path.join(fresh, "tutorials", "02_worked_example.py")]
    proc = subprocess.run(cmd, cwd=str(tmp_path), capture_output=True, text=True, timeout=180,
                          env=env)
    assert f"package {package}" in proc.stdout and proc.returncode == 2, proc
    assert proc.stderr.count("error: this copy's Exercise 3.") == 1, proc.stderr
    assert "Traceback" not in proc.stderr


def test_reference_passes_every_exercise():
    verdicts, text = graded("reference", REPO_ROOT)
    assert verdicts == {ex_id: True for ex_id in IDS}, text
    assert f"{len(IDS)} of {len(IDS)} exercise(s) pass" in text


def test_fresh_copy_fails_each_exercise_with_its_own_message(fresh):
    verdicts, text = graded("fresh", fresh)
    assert verdicts == {ex_id: False for ex_id in IDS}, text
    for ex_id in IDS:
        lines = section(text, ex_id)
        assert lines.startswith(f"TODO  {ex_id} ")
        assert f"not done yet: Exercise {ex_id}: {by_id(ex_id).hint}" in lines, lines
        assert "Exercise" not in lines.replace(f"Exercise {ex_id}:", "")   # no other one
        assert f'source notes: "{by_id(ex_id).note}"' in lines


def test_copy_with_one_exercise_solved_passes_exactly_that_one(one_solved):
    verdicts, text = graded("one_solved", one_solved)
    assert verdicts == {ex_id: ex_id == ONE for ex_id in IDS}, text
    assert section(text, ONE).startswith(f"PASS  {ONE} ")


def test_wrong_answers_say_what_to_fix(tmp_path):
    path = str(tmp_path)
    exercises.make(path)
    ops = os.path.join(path, "minimegatron", "autodiff", "ops.py")
    with open(ops) as f:
        text = f.read()
    text = exercises.replace_bodies(text, "autodiff/ops.py", {
        "1.3": ["        return grad_out * (1 - ctx.saved[0])\n"],          # forgot the square
        "1.4": ["        return ctx.saved[0] * grad_out\n"]})              # shapes do not match
    with open(ops, "w") as f:
        f.write(text)
    tensor = os.path.join(path, "minimegatron", "parallel", "tensor_parallel", "mappings.py")
    with open(tensor) as f:
        text = f.read()
    with open(tensor, "w") as f:                                              # g forgot to sum
        f.write(exercises.replace_bodies(text, "mappings.py", {"3.2": ["        return x\n"]}))
    out = io.StringIO()
    verdicts = grade(path, "1.3,1.4,3.2", out=out)
    text = out.getvalue()
    assert verdicts == {"1.3": False, "1.4": False, "3.2": False}
    tanh = section(text, "1.3")
    assert "missed: dL/dx = dL/dz * (1 - z^2)" in tanh, tanh      # the point, then the values
    assert re.search(r"z = tanh\(x\), .*: dL/dx:\n\s+expected .*\n\s+got ", tanh), tanh
    assert 'source notes: "z = tanh x    dz/dx = 1 - z^2"' in tanh
    assert "ValueError: operands could not be broadcast" in section(text, "1.4")
    assert "in backward: return ctx.saved[0] * grad_out" in section(text, "1.4")
    g = section(text, "3.2")                     # which rank, which value, expected vs got
    assert "missed: g's forward gives every rank the SUM of the group's x" in g, g
    assert re.search(r"rank 0: g\(x\) \(float64\): the sum of x over the ranks \[0, 1\]:\n"
                     r"\s+expected \[\[.*\]\]\n\s+got      \[\[.*\]\]\n\s+hint: ", g), g
    assert "the collectives were [no collective]; expected [all_reduce over [0, 1]" in g, g
    assert "g is all-reduce in forward and identity in backward" in g


def test_grade_command_exit_status(fresh, capsys):
    assert grade_main(["1.2", "--path", REPO_ROOT]) == 0
    assert grade_main(["1.2", "--path", fresh]) == 1
    assert grade_main(["9.9", "--path", fresh]) == 2
    assert "no exercise '9.9'" in capsys.readouterr().err
    assert grade_main(["--path", os.path.join(fresh, "tutorials")]) == 2


def test_a_check_that_hangs_is_killed_and_the_others_still_graded(tmp_path, monkeypatch):
    from minimegatron.classroom import load      # a quiet machine: a busy one says TIMEOUT
    monkeypatch.setattr(load, "load_per_core", lambda: 0.0)
    path = str(tmp_path)
    exercises.make(path)
    exercises.solve(path, ["1.3"])
    ops = os.path.join(path, "minimegatron", "autodiff", "ops.py")
    with open(ops) as f:
        text = f.read()
    with open(ops, "w") as f:
        f.write(exercises.replace_bodies(text, "autodiff/ops.py", {"1.2": ["        while True:\n",
                                                                  "            pass\n"]}))
    out = io.StringIO()
    verdicts = grade(path, "1.2,1.3", timeout=3, out=out)
    assert verdicts == {"1.2": False, "1.3": True}, out.getvalue()
    assert "HANG: no progress for 3 s, so every rank was killed" in section(out.getvalue(),
                                                                            "1.2")


def test_self_check_mode_grades_the_copy_as_it_is(tmp_path):
    """A student runs the copy's own grader: no answers to put back, so the copy's own
    blocks are judged, and one a check runs through that is not written yet (4.1's MatMul
    backward, 1.1) is stood in for: 4.1 PASSes alone, 1.3 is still not done."""
    path = str(tmp_path / "copy")
    exercises.make(path)
    exercises.solve(path, ["1.2", "4.1"])
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PYTHONPATH"] = path                         # the copy's own minimegatron
    proc = subprocess.run([sys.executable, "-m", "minimegatron", "grade", "1.2,1.3,4.1"],
                          cwd=path, capture_output=True, text=True, timeout=300, env=env)
    out = proc.stdout
    assert proc.returncode == 1, proc.stderr
    assert f"package {os.path.join(path, 'minimegatron')}" in out, out
    assert "this minimegatron is itself a student copy (self-check mode)" in out, out
    assert section(out, "1.2").startswith("PASS  1.2"), out
    assert section(out, "1.3").startswith("TODO  1.3"), out
    ddp = section(out, "4.1")
    assert ddp.startswith("PASS  4.1") and "needs Exercise" not in ddp, ddp
