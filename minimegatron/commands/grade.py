"""``minimegatron grade [EXERCISE] [--path DIR | --class DIR]``: the grading command.

One copy is graded by ``minimegatron/classroom/grader.py`` (its docstring says how), a
class by ``minimegatron/classroom/gradebook.py``; this is the command: its arguments
(the class options too), the banner, and the printed table and files.

    minimegatron grade 3.2                       (a student, from the copy's directory)
    minimegatron grade --path class/alice        (the teacher, one copy)
    minimegatron grade --class class/ --csv book.csv --json book.json
"""
import argparse
import json
import os
import sys

from minimegatron import i18n
from minimegatron.classroom import gradebook, grader, sandbox
from minimegatron.commands.argtypes import finite_positive_float, positive_int
from minimegatron.commands.entry import banner

EPILOG = """\
a student, from the copy's directory:   minimegatron grade 3.2
the teacher, one copy:                  minimegatron grade --path class/alice
the teacher, the whole class:           minimegatron grade --class class/ --csv book.csv \\
                                                           --json book.json
Each cell is PASS, FAIL (the point of the lesson missed, and a hint), TODO, HANG,
ERROR, CHANGED (a file outside the exercise blocks differs from the handout: never
PASS), TIMEOUT or SUSPECT (the block uses open, os, the trace's switches...: not run,
never PASS; the line is shown). What each exercise checks: exercises/<id>.md, docs/teaching.md."""


def add_class_arguments(parser):
    """The class options of ``minimegatron grade``."""
    group = parser.add_argument_group("a whole class")
    group.add_argument("--class", dest="class_dir", metavar="DIR",
                       help="grade every student folder under DIR (one copy each)")
    group.add_argument("--csv", metavar="FILE", help="write the gradebook as CSV")
    group.add_argument("--json", metavar="FILE", help="write the gradebook as JSON")
    group.add_argument("--jobs", type=positive_int, default=max(1, (os.cpu_count() or 1) // 4),
                       help="copies graded at once (default: cores / 4)")
    group.add_argument("--student-timeout", type=finite_positive_float, default=1200.0,
                       metavar="S", help="seconds one copy may take in all (default 1200)")
    group.add_argument("--report-fd", type=int, help=argparse.SUPPRESS)   # gradebook's pipe


def grade_class(opts):
    """``grade --class``: grade, print the table, write the files; 0 when graded."""
    sandbox.seal_process()
    book = gradebook.grade_class(opts.class_dir, opts.exercise, opts.timeout, opts.jobs,
                                 opts.student_timeout)
    print(gradebook.table(book))
    gradebook.write(book, opts.csv, opts.json)
    for path in (opts.csv, opts.json):
        if path:
            print(i18n.text("gradebook.wrote", path=path))
    return 0


def report_copy(opts, box):
    """One copy of a class (``gradebook.py`` started this process): the verdicts go, as
    JSON sealed with the nonce read from stdin, down the pipe ``--report-fd``; no file
    a check could write. This process is sealed first (``sandbox.seal_process``)."""
    sandbox.seal_process()
    nonce = sys.stdin.readline().strip()
    verdicts = grader.grade_copy(opts.path, opts.exercise, opts.timeout, box=box)
    data = json.dumps({"nonce": nonce, "sandbox": box.kind if box else "self-check",
                       "verdicts": gradebook.report(verdicts)}).encode("utf-8")
    with os.fdopen(opts.report_fd, "wb") as pipe:
        pipe.write(data)
    return 0


def main(argv=None):
    """`minimegatron grade [EXERCISE] [--path DIR | --class DIR]`: 0 when all pass, 1 if
    not, 2 on a usage error (with --class: 0 when every cell got a result)."""
    parser = argparse.ArgumentParser(
        prog="minimegatron grade", formatter_class=argparse.RawDescriptionHelpFormatter,
        description="check a student copy, exercise by exercise (--class: every copy of a "
                    "class, into a gradebook)", epilog=EPILOG)
    parser.add_argument("exercise", nargs="?", default="all",
                        help="an id (3.2), a group (3), a list (1.1,3) or all (default)")
    parser.add_argument("--path", default=".", help="directory holding the copy's minimegatron/")
    parser.add_argument("--timeout", type=finite_positive_float, default=60.0,
                        help="seconds a check may run without finishing (default 60)")
    add_class_arguments(parser)
    opts = parser.parse_args(argv)
    try:
        box = sandbox.choose() if grader.teacher_mode() else None
        if box is not None and not box.bwrap and opts.report_fd is None:
            print(box.line(), flush=True)              # not sandboxed: the first line says so
        banner("grade")
        if box is not None and box.bwrap and opts.report_fd is None:
            print(box.line(), flush=True)
        if opts.class_dir:
            return grade_class(opts)
        if opts.report_fd is not None:       # one copy of a class: gradebook.py reads it
            return report_copy(opts, box)
        results = grader.grade(opts.path, opts.exercise, opts.timeout, box=box)
    except (ValueError, FileNotFoundError) as err:      # FileNotFoundError: no mpiexec
        print(f"minimegatron grade: {err}", file=sys.stderr)
        return 2
    return 0 if all(results.values()) else 1
