"""One class of hostile copies, one of each kind, graded in ONE ``grade --class``.

Each copy answers one exercise by a trick, as a student with the grader's code open
beside her would, with the static read switched off (``MINIMEGATRON_STATIC_READ=off``),
so every block really runs and the other walls alone stop it (in bubblewrap where the
machine has it, as in CI):

    h_links       1.2 plants links to a file of the teacher's (and links to nothing) at
                  every name of its run folder, then answers right: the runner still
                  writes its evidence there (``test_grader_doors.RUN_NAMES``)
    h_fifos       the same with FIFOs
    h_pickle      code run through an allowed import (numpy's ``load`` of a pickle)
    h_judge_helper  a blank 10.1 but for a call of the check module's judge helpers
    h_reference   10.1 that reads another exercise's reference and the judge from the copy
    h_evidence    3.2 done as an all-gather plus a sum, the trace rewritten in-process to
                  show one all-reduce (the MPI counter's trace switched off too)
    h_handle      4.1 with a hand-made handle (a lambda with wait, test, done)
    h_environ     1.2 that raises ``os.environ`` (the teacher's secret is set in the grade)
    h_bomb        1.2 that forks 512 processes
    =HYPERLINK... a folder whose name is a formula and an escape, whose 1.2 raises a
                  message full of escapes

and a right copy. Each hostile copy's other cells are the handout's blanks. Held: no
PASS but the right copy's (no wrong or blank block passes); each hostile cell is the
verdict of its wall; the teacher's file and package are unchanged and quoted nowhere;
nothing of the teacher's environment is in any feedback; what is printed holds no
control character and no CSV cell is a formula; the machine still forks afterwards.

With the static read on, as in class, every hostile block is SUSPECT before it runs and
the right blocks read clean (read, not graded: no launch). The mutation: the judge
without its cross-check of the trace against the MPI calls counted apart from it
(``tp_problem.cross_check``) passes the rewritten 3.2; evidence rewritten consistently
in both (what docs/teaching.md says the judge cannot tell) passes too.
"""
import csv
import hashlib
import json
import os
import subprocess
import sys

import pytest

from minimegatron.classroom import exercises, grader, static_read
from minimegatron.classroom.exercise_checks import tp_problem
from minimegatron.classroom.exercises import PACKAGE_DIR, find_blocks
from test_grader_doors import RIGHT_1_2, RUN_NAMES, _planting_block
from test_grader_forgeries import _write_block
from test_grader_forgeries_judge import HAS_BWRAP, JUDGE_LINES, ZIGZAG_LINE, hostile_blocks
from test_grader_output import EVIL_MESSAGE, _clean
from test_sandbox_wall import BOMB

SPEC = "1.2,3.2,4.1,10.1"
SECRET = "TEACHER_TOKEN_" + "5eed" * 8
ANSWER = "REFERENCE_ANSWER_" + "c1a55" * 6
FORMULA = "=HYPERLINK(\"evil.example\",\"grades\")\x1b[31m"
IN_CI = (os.environ.get("CI", "").lower() == "true"
         or os.environ.get("MINIMEGATRON_REQUIRE_SANDBOX") == "1")


def _pad(text, indent=8):
    return [" " * indent + line + "\n" for line in text.strip("\n").split("\n")]


def class_blocks(teacher_file):
    """{folder: (exercise, block lines)} of every hostile copy of the class."""
    links = RUN_NAMES[0::2], RUN_NAMES[1::2]
    planted_links = (_planting_block("link", teacher_file, links[0], 8, "")
                     + [line.replace("planted_once", "planted_twice") for line in
                        _planting_block("dangling", teacher_file, links[1], 8, "")])
    blocks = {
        "h_links": ("1.2", planted_links + [RIGHT_1_2]),
        "h_fifos": ("1.2", _planting_block("fifo", teacher_file, RUN_NAMES, 8, "")
                    + [RIGHT_1_2]),
        "h_environ": ("1.2", _pad("import os\nraise RuntimeError(repr(dict(os.environ)))")),
        "h_bomb": ("1.2", _pad(BOMB) + [RIGHT_1_2]),
        FORMULA: ("1.2", _pad(f"raise RuntimeError({EVIL_MESSAGE!r})")),
    }
    blocks.update(hostile_blocks())
    return blocks


def _package_digest():
    """A hash of every file of the teacher's package (bytecode caches aside)."""
    digest = hashlib.sha256()
    for here, dirs, names in sorted(os.walk(PACKAGE_DIR)):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        for name in sorted(names):
            path = os.path.join(here, name)
            digest.update(path.encode())
            with open(path, "rb") as f:
                digest.update(f.read())
    return digest.hexdigest()


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    if not HAS_BWRAP and IN_CI:
        pytest.fail("in CI bubblewrap (bwrap) must be installed: the sandbox is tested")
    root = tmp_path_factory.mktemp("forgery_class")
    teacher_file = root / "teacher" / "answer.py"
    teacher_file.parent.mkdir()
    teacher_file.write_text(f"ANSWER = {ANSWER!r}\n")
    before = (teacher_file.stat().st_mtime_ns, _package_digest())
    class_dir = root / "class"
    for name, (ex_id, lines) in class_blocks(str(teacher_file)).items():
        exercises.make(str(class_dir / name))
        _write_block(str(class_dir / name), ex_id, lines)
    exercises.make(str(class_dir / "z_right"))
    exercises.solve(str(class_dir / "z_right"), SPEC.split(","))
    env = {**os.environ, "MINIMEGATRON_SANDBOX": "bwrap" if HAS_BWRAP else "off",
           "MINIMEGATRON_STATIC_READ": "off", "MM_TEACHER_SECRET": SECRET}
    book, sheet = root / "book.json", root / "book.csv"
    proc = subprocess.run([sys.executable, "-m", "minimegatron", "grade", SPEC, "--class",
                           str(class_dir), "--json", str(book), "--csv", str(sheet),
                           "--timeout", "60", "--jobs", "2"],
                          env=env, cwd=root, capture_output=True, text=True, timeout=1500)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    cells = {}
    for row in json.loads(book.read_text(encoding="utf-8")):
        cells.setdefault(row["student"], {})[row["exercise"]] = row
    with open(sheet, encoding="utf-8", newline="") as f:
        rows = list(csv.reader(f))
    after = (teacher_file.stat().st_mtime_ns, _package_digest())
    return {"proc": proc, "cells": cells, "rows": rows, "before": before, "after": after,
            "teacher_file": teacher_file, "blocks": class_blocks(str(teacher_file))}


def _cell(graded, name):
    return graded["cells"][name][graded["blocks"][name][0]]       # the JSON: names as they are


def exercises_shown(name):
    """The student column of a folder: escaped, a formula quoted (``inert``)."""
    from minimegatron.classroom import inert
    return inert.line(name)


def test_no_wrong_or_blank_block_passes_and_the_right_copy_passes_all(graded):
    cells = graded["cells"]
    assert {ex: c["result"] for ex, c in cells["z_right"].items()} == \
        {ex: "PASS" for ex in SPEC.split(",")}, cells["z_right"]
    passed = [(who, ex) for who, row in cells.items() for ex, c in row.items()
              if c["result"] == "PASS" and who != "z_right"]
    assert passed == [], passed
    sandbox = "bwrap" if HAS_BWRAP else "unsandboxed"
    assert all(c["sandbox"] in (sandbox, "") for row in cells.values() for c in row.values())


def test_each_hostile_cell_is_the_verdict_of_its_wall(graded):
    got = {name: _cell(graded, name)["result"] for name in graded["blocks"]}
    want = {"h_links": "ERROR", "h_fifos": "ERROR", "h_bomb": "ERROR", "h_environ": "FAIL",
            FORMULA: "FAIL", "h_pickle": "FAIL", "h_judge_helper": "FAIL",
            "h_reference": "FAIL", "h_handle": "FAIL", "h_evidence": "FAIL"}
    assert got == want, json.dumps(graded["cells"], indent=1)[:6000]
    missed = {name: _cell(graded, name)["missed"] for name in graded["blocks"]}
    assert missed["h_links"] == missed["h_fifos"] == ["tampered"], missed
    assert missed["h_bomb"] == ["processes"] and missed["h_evidence"] == ["one_all_reduce"]
    for name in ("h_links", "h_fifos"):
        text = "\n".join(_cell(graded, name)["lines"])
        assert "log.txt (" in text and "evidence_rank0.jsonl (" in text, text
    evidence = "\n".join(_cell(graded, "h_evidence")["lines"])
    assert "all_reduce over [0, 1], but no MPI call made it" in evidence, evidence
    assert "the pickle ran: no judge in this copy" in "\n".join(_cell(graded, "h_pickle")["lines"])
    helper = "\n".join(_cell(graded, "h_judge_helper")["lines"])
    assert "cannot import name" in helper and "judge_" in helper, helper
    seen = "\n".join(_cell(graded, "h_reference")["lines"])
    assert "Exercise 8.2: cut the S tokens" in seen, seen      # what the copy holds: the blank
    assert "Cut by the grader (classroom/staging.py)" in seen, seen
    assert "No such file or directory" in seen and "judge.py" in seen, seen


def test_no_teacher_file_changed_or_quoted_and_no_teacher_environment(graded):
    assert graded["after"] == graded["before"]          # the planted links' target, the package
    assert graded["teacher_file"].read_text() == f"ANSWER = {ANSWER!r}\n"
    everything = (json.dumps(graded["cells"]) + json.dumps(graded["rows"])
                  + graded["proc"].stdout + graded["proc"].stderr)
    assert ANSWER not in everything and ZIGZAG_LINE not in everything
    assert not any(line in everything for line in JUDGE_LINES)
    assert SECRET not in everything and "MM_TEACHER_SECRET" not in everything
    shown = "\n".join(_cell(graded, "h_environ")["lines"])
    assert "PYTHONPATH" in shown, shown                 # the environment it had: the list


def test_names_and_messages_reach_the_teacher_inert(graded):
    proc, rows = graded["proc"], graded["rows"]
    assert _clean(proc.stdout) and _clean(proc.stderr), proc.stdout[-2000:]
    assert all(_clean(cell) for row in rows for cell in row)
    assert all(not row[0].startswith(("=", "+", "-", "@", "\t", "\r")) for row in rows[1:])
    assert "'" + exercises_shown(FORMULA) in [row[0] for row in rows]
    assert subprocess.run(["true"], timeout=30).returncode == 0      # the machine forks


def test_as_in_class_every_hostile_block_is_suspect_and_the_right_ones_read_clean(tmp_path):
    reference = find_blocks(PACKAGE_DIR)
    kinds, copy = {}, str(tmp_path / "copy")
    exercises.make(copy)                 # one copy, each block written in turn, read alone
    for name, (ex_id, lines) in class_blocks(str(tmp_path / "answer.py")).items():
        if name == FORMULA:
            continue                     # a plain raise: no trick to read, its name is one
        _write_block(copy, ex_id, lines)
        got = static_read.suspects(find_blocks(os.path.join(copy, "minimegatron")), [ex_id],
                                   reference)
        kinds[name] = got.get(ex_id) and (got[ex_id].result, got[ex_id].missed)
    assert {name: kind[0] for name, kind in kinds.items()} == \
        {name: "SUSPECT" for name in kinds}, kinds
    assert {name: kinds[name][1] for name in hostile_blocks()} == {
        "h_pickle": ["static: file_io"], "h_judge_helper": ["static: import"],
        "h_evidence": ["static: import"], "h_handle": ["static: function_state"],
        "h_reference": ["static: import"]}, kinds
    exercises.solve(copy, SPEC.split(","))               # the right blocks over them
    assert static_read.suspects(find_blocks(os.path.join(copy, "minimegatron")),
                                SPEC.split(","), reference) == {}


def copy_records(records):
    return json.loads(json.dumps(records))


def test_the_cross_check_is_what_fails_the_rewritten_trace(tmp_path, monkeypatch):
    """The rewritten 3.2 graded once, its records judged four ways: as the grader does
    (FAIL), by the judge without its cross-check (the mutant: PASS), with the forged span
    taken out (the all-gather hidden from the trace alone: FAIL), and with the MPI count
    rewritten to agree with the forged trace (PASS: consistent evidence is what the judge
    cannot tell from real, docs/teaching.md)."""
    ex_id, lines = hostile_blocks()["h_evidence"]
    copy = str(tmp_path / "copy")
    exercises.make(copy)
    _write_block(copy, ex_id, lines)
    monkeypatch.setenv("MINIMEGATRON_STATIC_READ", "off")
    seen = []
    judge = grader.judge
    monkeypatch.setattr(grader, "judge", lambda *a: seen.append(a) or judge(*a))
    verdict = grader.grade_copy(copy, ex_id, timeout=60, seed=grader.SEED)[ex_id]
    assert verdict.result == "FAIL" and verdict.missed == ["one_all_reduce"], verdict.lines
    (_, records, seed), = seen
    made = [c for ev in records for run in ev["evidence"]["runs"].values()
            for c in run["forward"] if c["op"] == tp_problem.MADE and c["method"]]
    assert {c["method"] for c in made} == {"allgather"}, made      # what MPI really did
    with monkeypatch.context() as m:
        m.setattr(tp_problem, "cross_check",
                  lambda ev, phase, calls: [c for c in calls if c["op"] != tp_problem.MADE])
        assert judge(ex_id, records, seed).result == "PASS"
    hidden = copy_records(records)                  # the all-gather alone, no span forged
    for ev in hidden:
        for run in ev["evidence"]["runs"].values():
            run["forward"] = [c for c in run["forward"] if c["op"] != "all_reduce"]
    verdict = judge(ex_id, hidden, seed)
    assert verdict.missed == ["one_all_reduce"], verdict.lines
    assert "MPI made allgather over [0, 1], which the trace does not show" in \
        "\n".join(verdict.lines), verdict.lines
    for ev in records:
        for run in ev["evidence"]["runs"].values():
            for call in run["forward"]:
                if call["op"] == tp_problem.MADE and call["method"] == "allgather":
                    traced = next(c for c in run["forward"] if c["op"] == "all_reduce")
                    call.update(method="Allreduce", nbytes=traced["nbytes"])
    assert judge(ex_id, records, seed).result == "PASS"
