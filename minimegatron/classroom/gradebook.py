"""``minimegatron grade --class DIR``: grade a whole class in one command, into a gradebook.

    minimegatron grade --class class/ --csv grades.csv --json grades.json
    minimegatron grade 3 --class class/ --jobs 2 --student-timeout 900

Every folder under DIR is one student's copy (``exercises make`` wrote it;
the folder's name is the student's). Each copy is graded by its own
``minimegatron grade --path COPY`` process of THIS package (teacher mode:
the student's exercise blocks run inside the reference, nothing else of the
copy does), ``--jobs`` copies at once (default: the cores / 4, since a
multi-rank check takes 4 ranks). A copy that hangs past ``--student-timeout``
is killed: its unfinished cells read TIMEOUT. A copy that cannot be graded
(no ``minimegatron/``, broken markers, a crash) reads ERROR. Neither stops
the class.

While it runs, one progress line per finished copy goes to stderr. At the
end: a table (students x exercises) on stdout, and the gradebook as CSV and
JSON, one row per cell::

    student, exercise, result, point, seconds

``result`` is PASS, FAIL, TODO, HANG, ERROR, CHANGED, TIMEOUT or SUSPECT
(``exercise_checks/judge.py``); ``point`` names the first point of the
lesson that was missed (the JSON also has every missed point and the
grader's full text). The exit status is 0 when every cell got a result
(grading worked), whatever the students scored; 2 on a usage error.

The class options (``--class``, ``--csv``, ``--json``, ``--jobs``, ``--student-timeout``)
are parsed by ``minimegatron/commands/grade.py``; the functions here take them as
plain arguments.
"""
import csv
import json
import os
import subprocess
import sys
import tempfile
import time

from minimegatron import i18n
from minimegatron.classroom.exercise_checks import EXERCISES
from minimegatron.classroom.exercises import select
from minimegatron.runtime.launcher import kill_group

SHORT = {"PASS": "pass", "FAIL": "FAIL", "TODO": "todo", "HANG": "HANG", "ERROR": "ERR",
         "CHANGED": "CHGD", "TIMEOUT": "TIME", "SUSPECT": "SUSP"}


def students(class_dir):
    """The student folders under class_dir (sorted; hidden folders left out)."""
    if not os.path.isdir(class_dir):
        raise ValueError(i18n.text("gradebook.no_class", path=class_dir))
    found = sorted(name for name in os.listdir(class_dir)
                   if not name.startswith(".") and os.path.isdir(os.path.join(class_dir, name)))
    if not found:
        raise ValueError(i18n.text("gradebook.empty", path=class_dir))
    return found


def write_report(path, verdicts):
    """One copy's verdicts as JSON ({id: {result, missed, lines, seconds}})."""
    with open(path, "w", encoding="utf-8") as f:
        json.dump({ex_id: {"result": v.result, "missed": v.missed, "lines": v.lines,
                           "seconds": v.seconds} for ex_id, v in verdicts.items()}, f)


def _start(student_dir, spec, timeout, report):
    cmd = [sys.executable, "-m", "minimegatron", "grade", spec, "--path", student_dir,
           "--timeout", str(timeout), "--report", report]
    return subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            start_new_session=True)


def _cells(report, ids, ended, stderr):
    """{id: cell} for one copy, from its report; TIMEOUT / ERROR for what is missing."""
    try:
        with open(report, encoding="utf-8") as f:
            verdicts = json.load(f)
    except (OSError, ValueError):
        verdicts = {}
    why = stderr.strip().splitlines()[-1] if stderr.strip() else ""
    cells = {}
    for ex_id in ids:
        if ex_id in verdicts:
            cells[ex_id] = verdicts[ex_id]
        elif ended == "timeout":
            cells[ex_id] = {"result": "TIMEOUT", "missed": ["timeout"], "seconds": None,
                            "lines": [i18n.text("gradebook.timeout")]}
        else:
            cells[ex_id] = {"result": "ERROR", "missed": ["error"], "seconds": None,
                            "lines": [why or i18n.text("gradebook.no_report")]}
    return cells


def grade_class(class_dir, spec="all", timeout=60.0, jobs=1, student_timeout=1200.0,
                err=sys.stderr):
    """{student: {id: cell}}: every copy graded, ``jobs`` at once, progress on err."""
    names = students(class_dir)
    ids = select(spec, [ex.id for ex in EXERCISES])
    book, running, waiting = {}, {}, list(names)
    with tempfile.TemporaryDirectory(prefix="mm_class_") as workdir:
        while waiting or running:
            while waiting and len(running) < jobs:
                name = waiting.pop(0)
                report = os.path.join(workdir, f"{len(book) + len(running)}.json")
                proc = _start(os.path.join(class_dir, name), spec, timeout, report)
                running[name] = (proc, report, time.monotonic())
            time.sleep(0.2)
            for name, (proc, report, started) in list(running.items()):
                late = time.monotonic() - started > student_timeout
                if proc.poll() is None and not late:
                    continue
                ended = "timeout" if proc.poll() is None else "done"
                if ended == "timeout":
                    kill_group(proc)
                stderr = proc.stderr.read().decode("utf-8", "replace")
                proc.stderr.close()
                book[name] = _cells(report, ids, ended, stderr)
                del running[name]
                passed = sum(c["result"] == "PASS" for c in book[name].values())
                print(i18n.text("gradebook.progress", done=len(book), count=len(names),
                                student=name, passed=passed, total=len(ids),
                                seconds=time.monotonic() - started), file=err, flush=True)
    return {name: book[name] for name in names}


def rows(book):
    """The gradebook as rows: student, exercise, result, point, seconds (and the details)."""
    return [{"student": name, "exercise": ex_id, "result": cell["result"],
             "point": cell["missed"][0] if cell["missed"] else "",
             "seconds": cell["seconds"], "missed": cell["missed"], "lines": cell["lines"]}
            for name, cells in book.items() for ex_id, cell in cells.items()]


def table(book):
    """A text table: one row per student, one column per exercise, and the pass count."""
    ids = list(next(iter(book.values())))
    width = max(7, *(len(name) for name in book))
    lines = [f"{'':<{width}} " + " ".join(f"{ex_id:>4}" for ex_id in ids) + "  pass"]
    for name, cells in book.items():
        marks = " ".join(f"{SHORT[cells[ex_id]['result']]:>4}" for ex_id in ids)
        passed = sum(c["result"] == "PASS" for c in cells.values())
        lines.append(f"{name:<{width}} {marks}  {passed}/{len(ids)}")
    return "\n".join(lines)


def write(book, csv_path=None, json_path=None):
    """The gradebook into the CSV and / or JSON files named."""
    if csv_path:
        with open(csv_path, "w", newline="", encoding="utf-8") as f:
            out = csv.writer(f)
            out.writerow(["student", "exercise", "result", "point", "seconds"])
            for row in rows(book):
                out.writerow([row["student"], row["exercise"], row["result"], row["point"],
                              "" if row["seconds"] is None else row["seconds"]])
    if json_path:
        with open(json_path, "w", encoding="utf-8") as f:
            json.dump(rows(book), f, indent=1, ensure_ascii=False)
