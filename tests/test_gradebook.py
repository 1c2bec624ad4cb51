"""``minimegatron grade --class DIR``: a whole class in one command, into a gradebook.

A class of four copies: one right, one with wrong answers, one that hangs, one that is
not a copy at all. One command grades them within the timeout, never stops at a bad
copy, prints a progress line per copy and a table, and writes the CSV and JSON
gradebooks with the right cell for every (student, exercise). A second run with a
tiny --student-timeout marks the unfinished cells TIMEOUT.
"""
import csv
import json
import os
import subprocess
import sys
import time

import pytest
from mpi_harness import time_bound

from minimegatron.classroom import exercises
from minimegatron.classroom.exercises import find_blocks, replace_bodies

SPEC = "1.2,7.1"


def _write_block(copy, ex_id, lines):
    block = find_blocks(os.path.join(copy, "minimegatron"))[ex_id]
    path = os.path.join(copy, "minimegatron", block.path)
    with open(path, encoding="utf-8") as f:
        text = replace_bodies(f.read(), block.path, {ex_id: [l + "\n" for l in lines]})
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)


def _grade_class(class_dir, tmp_path, *extra, timeout=300):
    cmd = [sys.executable, "-m", "minimegatron", "grade", SPEC, "--class", str(class_dir),
           "--csv", str(tmp_path / "book.csv"), "--json", str(tmp_path / "book.json"),
           "--timeout", f"{time_bound(8, 60):.0f}", "--jobs", "2", *extra]   # 8 s when quiet
    start = time.monotonic()
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    return proc, time.monotonic() - start


@pytest.fixture(scope="module")
def classroom(tmp_path_factory):
    class_dir = tmp_path_factory.mktemp("class")
    for name in ("alice", "bob", "carol"):
        exercises.make(str(class_dir / name))
    exercises.solve(str(class_dir / "alice"), ["1.2", "7.1"])
    _write_block(str(class_dir / "bob"), "1.2", ["        return grad_out"])   # forgot z
    _write_block(str(class_dir / "carol"), "1.2", ["        import time",
                                                   "        time.sleep(600)"])
    (class_dir / "dave").mkdir()                                # handed in nothing
    out = tmp_path_factory.mktemp("book")
    proc, seconds = _grade_class(class_dir, out)
    return proc, seconds, out


def test_one_command_grades_the_class_and_writes_both_gradebooks(classroom):
    proc, seconds, out = classroom
    assert proc.returncode == 0, proc.stderr
    with open(out / "book.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    cells = {(r["student"], r["exercise"]): r for r in rows}
    assert sorted(cells) == sorted((s, e) for s in ("alice", "bob", "carol", "dave")
                                   for e in ("1.2", "7.1"))
    want = {("alice", "1.2"): "PASS", ("alice", "7.1"): "PASS",
            ("bob", "1.2"): "FAIL", ("bob", "7.1"): "TODO",
            ("carol", "1.2"): "HANG", ("carol", "7.1"): "TODO",
            ("dave", "1.2"): "ERROR", ("dave", "7.1"): "ERROR"}
    assert {key: cell["result"] for key, cell in cells.items()} == want, rows
    assert cells[("bob", "1.2")]["point"] and cells[("alice", "1.2")]["point"] == ""
    assert float(cells[("alice", "7.1")]["seconds"]) > 0
    with open(out / "book.json", encoding="utf-8") as f:
        book = json.load(f)
    assert {(r["student"], r["exercise"]): r["result"] for r in book} == want
    dave = next(r for r in book if r["student"] == "dave")
    assert "no minimegatron/ package" in dave["lines"][0], dave


def test_progress_then_a_table_within_the_timeout(classroom):
    proc, seconds, out = classroom
    progress = [line for line in proc.stderr.splitlines() if line.startswith("[")]
    assert len(progress) == 4 and progress[-1].startswith("[4/4] "), proc.stderr
    assert "alice: 2 of 2 pass" in proc.stderr, proc.stderr
    table = proc.stdout.splitlines()
    header = next(i for i, line in enumerate(table) if "1.2" in line and "7.1" in line)
    assert table[header + 1].split() == ["alice", "pass", "pass", "2/2"], proc.stdout
    assert table[header + 3].split() == ["carol", "HANG", "todo", "0/2"], proc.stdout
    assert f"wrote {out / 'book.csv'}" in proc.stdout
    assert seconds < time_bound(120, 299), seconds   # carol's hang costs --timeout (8 s when
    #                                                  quiet), not her 600 s sleep (stop: 300 s)


def test_a_copy_past_the_student_timeout_is_stopped_and_marked(tmp_path):
    class_dir = tmp_path / "class"
    exercises.make(str(class_dir / "slow"))
    _write_block(str(class_dir / "slow"), "1.2", ["        import time",
                                                  "        time.sleep(600)"])
    proc, seconds = _grade_class(class_dir, tmp_path, "--student-timeout", "4")
    assert proc.returncode == 0, proc.stderr
    with open(tmp_path / "book.json", encoding="utf-8") as f:
        book = json.load(f)
    assert {r["exercise"]: r["result"] for r in book} == {"1.2": "TIMEOUT", "7.1": "TIMEOUT"}
    assert seconds < time_bound(60, 299), seconds    # the copy sleeps 600 s: stopped at 4 s


def test_a_missing_class_folder_is_one_line(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "minimegatron", "grade", "--class",
                           str(tmp_path / "nobody")], capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 2 and "no class folder" in proc.stderr, proc.stderr
