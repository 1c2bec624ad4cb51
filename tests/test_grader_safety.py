"""What a student's copy cannot do to the grade: forge a PASS, outlive the grader, flood it.

Two kinds of attack, each tried as a student would:

- edits OUTSIDE the exercise blocks (the package ``__init__``, the backend, a
  check file, a ``sitecustomize.py``, ``conftest.py`` or ``.pth`` beside the
  package, ``setup.cfg``): in teacher mode none of it runs (the copy graded is the
  reference with the student's block put in), and every cell of such a copy is
  CHANGED, naming the path, never PASS;
- tricks INSIDE a block, where student code does run: writing reports into the
  grader's files (a second report for one check is a forgery), evidence that
  is not data, a background process, endless output. The judge runs in the
  grader's process and reads data only, so none of these reaches PASS.

Exercise 7.1 (the loss scaler, 4 ranks) and 1.2 (Exp backward, 1 process) are
the targets; the right answer with the trick is graded, so only the trick can
change the verdict.
"""
import os
import re
import time

import pytest

from minimegatron.classroom import exercises
from minimegatron.classroom.exercises import find_blocks
from minimegatron.classroom.grader import MAX_OUTPUT, grade_copy, grade_variants

RIGHT_71 = [line for line in find_blocks()["7.1"].body]
RIGHT_12 = ["        return grad_out * ctx.saved[0]\n"]


def _alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with open(f"/proc/{pid}/stat") as f:                # a zombie is dead too
        return f.read().split(")")[-1].split()[0] != "Z"


# ---- edits outside the blocks: CHANGED, and the edit never runs -------------------------

FORGED_CHECK = ("\nimport minimegatron.classroom.exercise_checks.judge as _j\n"
                "_j.judge = lambda *a, **k: _j.Verdict('PASS', ['forged'])\n")
EDITS = {
    "package __init__ replaces the judge": ("minimegatron/__init__.py", FORGED_CHECK),
    "backend.to_numpy patched": ("minimegatron/backend.py",
                                 "\nto_numpy = lambda a: __import__('numpy').zeros(1)\n"),
    "a check file edited": ("minimegatron/classroom/exercise_checks/mixed_precision.py",
                            "\nSTEPS = 1\n"),
    "a new module in the package": ("minimegatron/helper.py", "x = 1\n"),
    "sitecustomize.py beside the package": ("sitecustomize.py", FORGED_CHECK),
    "conftest.py beside the package": ("conftest.py", "import os\n"),
    "a .pth file beside the package": ("evil.pth", "import os\n"),
    "setup.cfg edited": ("setup.cfg", "\n# mine\n"),
}


@pytest.fixture(scope="module")
def edited_copies(tmp_path_factory):
    """{case: verdicts} for copies with 7.1 and 1.2 solved and ONE edit outside the blocks."""
    out = {}
    for case, (rel, text) in EDITS.items():
        path = str(tmp_path_factory.mktemp("edited"))
        exercises.make(path)
        exercises.solve(path, ["7.1", "1.2"])
        with open(os.path.join(path, rel), "a", encoding="utf-8") as f:
            f.write(text)
        out[case] = (rel, grade_copy(path, "1.2,1.3"))
    return out


def test_an_untouched_copy_is_not_changed(tmp_path):
    exercises.make(str(tmp_path))
    exercises.solve(str(tmp_path), ["1.2"])
    assert exercises.changed_outside(str(tmp_path)) == []
    ops = tmp_path / "minimegatron" / "autodiff" / "ops.py"      # an editor's save: CRLF, spaces
    ops.write_bytes(ops.read_bytes().replace(b"\n", b"  \r\n") + b"\r\n\r\n")
    assert exercises.changed_outside(str(tmp_path)) == []
    ops.write_bytes(ops.read_bytes() + b"x = 1\r\n")       # but not one more statement
    assert exercises.changed_outside(str(tmp_path)) == ["minimegatron/autodiff/ops.py"]
    ops.write_bytes(ops.read_bytes()[:-len(b"x = 1\r\n")])
    verdicts = grade_copy(str(tmp_path), "1.2,1.3")
    assert verdicts["1.2"].result == "PASS", verdicts["1.2"].lines
    assert verdicts["1.3"].result == "TODO", verdicts["1.3"].lines


@pytest.mark.parametrize("case", list(EDITS))
def test_an_edit_outside_the_blocks_marks_every_cell_changed(edited_copies, case):
    rel, verdicts = edited_copies[case]
    for ex_id, verdict in verdicts.items():
        text = "\n".join(verdict.lines)
        assert verdict.result == "CHANGED", f"{case}: {ex_id} is {verdict.result}\n{text}"
        assert "changed outside the exercise" in text and rel in text, text
    # graded inside the reference, the blocks alone: the solved one passes, the blank not
    assert "(the blocks alone, graded inside the reference: PASS)" in verdicts["1.2"].lines[0]
    assert "(the blocks alone, graded inside the reference: TODO)" in verdicts["1.3"].lines[0]


# ---- tricks inside a block: the judge reads data, and never trusts a report ----------------

FORGE_LINES = [                  # the runner's argv: JOBS.json RUN_DIR; write every key's line
    "        import json, os, sys\n",
    "        if not getattr(sys, 'forged', False):\n",
    "            sys.forged = True\n",
    "            for job in json.load(open(sys.argv[1])):\n",
    "                line = {'key': job['key'], 'id': job['id'], 'rank': 0, 'status': 'ok',\n",
    "                        'message': '', 'seconds': 0, 'evidence': {'all': 'pass'}}\n",
    "                with open(os.path.join(sys.argv[2], 'evidence_rank0.jsonl'), 'a') as f:\n",
    "                    f.write(json.dumps(line) + '\\n')\n",
]
NOT_DATA = [                      # evidence that claims to be an array of Python objects
    "        import json, os, sys\n",
    "        if not getattr(sys, 'forged', False):\n",
    "            sys.forged = True\n",
    "            line = {'key': 'not data', 'id': '1.2', 'rank': 0, 'status': 'ok',\n",
    "                    'message': '', 'seconds': 0,\n",
    "                    'evidence': {'__array__': 'object', 'shape': [1], 'data': ['os']}}\n",
    "            with open(os.path.join(sys.argv[2], 'evidence_rank0.jsonl'), 'a') as f:\n",
    "                f.write(json.dumps(line) + '\\n')\n",
    "            os._exit(0)\n",
]


@pytest.fixture(scope="module")
def tricks(tmp_path_factory):
    pid_file = str(tmp_path_factory.mktemp("spawn") / "pid")
    spawn = ["        import subprocess\n",
             f"        if not __import__('os').path.exists({pid_file!r}):\n",
             "            p = subprocess.Popen(['sleep', '300'])\n",
             f"            open({pid_file!r}, 'w').write(str(p.pid))\n"]
    verdicts = grade_variants({"honest": ("1.2", RIGHT_12), "spawns": ("1.2", spawn + RIGHT_12)})
    for name, variant in {"forges every report": ("1.2", FORGE_LINES + RIGHT_12),
                          "not data": ("1.2", NOT_DATA + RIGHT_12),
                          "forges the 7.1 report on rank 0": ("7.1", FORGE_LINES + RIGHT_71)
                          }.items():             # each alone: a forger writes every key's line
        verdicts.update(grade_variants({name: variant}))
    return verdicts, pid_file


def test_an_honest_answer_passes(tricks):
    verdicts, _ = tricks
    assert verdicts["honest"].result == "PASS", verdicts["honest"].lines


@pytest.mark.parametrize("case", ["forges every report", "forges the 7.1 report on rank 0"])
def test_a_second_report_for_one_check_is_a_forgery(tricks, case):
    verdict = tricks[0][case]
    assert verdict.result == "FAIL" and verdict.missed == ["forged"], verdict
    assert "reported this exercise twice" in "\n".join(verdict.lines)


def test_evidence_that_is_not_data_never_passes(tricks):
    verdict = tricks[0]["not data"]
    assert verdict.result == "FAIL", verdict


def test_a_background_process_of_student_code_does_not_outlive_the_grade(tricks):
    verdicts, pid_file = tricks
    assert verdicts["spawns"].result == "PASS"            # the answer itself is right
    pid = int(open(pid_file).read())
    deadline = time.monotonic() + 5
    while _alive(pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _alive(pid), f"student's process {pid} outlived the grader"


def test_endless_output_is_cut_off_with_a_message():
    body = ["        while True:\n",
            "            print('x' * 65536)\n"]
    verdict = grade_variants({"floods": ("1.2", body)}, timeout=60)["floods"]
    text = "\n".join(verdict.lines)
    assert verdict.result == "FAIL" and f"more than {MAX_OUTPUT // 2 ** 20} MiB" in text, text


def test_a_rank_divergent_hang_is_reported_as_HANG_with_where_each_rank_waits():
    """Rank 0 of each tp group waits for a message its partner never sends: no rank
    finishes, so after --timeout the grader asks every rank where it waits, then kills."""
    body = ["            if ctx.group.rank == 0:\n",
            "                import numpy\n",
            "                from minimegatron import comm\n",
            "                comm.recv(numpy.empty(1), 1, ctx.group)\n",
            "            return all_reduce(grad_out, ctx.group), None\n"]
    verdict = grade_variants({"hang": ("3.1", body)}, timeout=8)["hang"]
    text = "\n".join(verdict.lines)
    assert verdict.result == "HANG" and text.startswith("HANG: no progress for "), text
    for rank in range(4):
        assert f"rank {rank}: still inside the check" in text, text
    assert "where each rank waited when it was killed:" in text, text
    assert re.search(r"\[rank 0\] waits in recv .*rank 1", text), text
    assert re.search(r"\[rank 0\]   called at .*mappings\.py:\d+: comm\.recv\(", text), text
