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
from minimegatron.classroom import gradebook, grader, inert, sandbox
from minimegatron.commands.argtypes import finite_positive_float, positive_int
from minimegatron.commands.entry import banner
from minimegatron.commands.parser import ArgumentParser, RawDescriptionHelpFormatter, say


def msg(key):
    """The grade command's text ``key`` in the reader's language (i18n ``cli.grade.*``)."""
    return say(f"cli.grade.{key}")


def add_class_arguments(parser):
    """The class options of ``minimegatron grade``."""
    group = parser.add_argument_group(msg("class_title"))
    group.add_argument("--class", dest="class_dir", metavar="DIR", help=msg("class"))
    group.add_argument("--csv", metavar="FILE", help=msg("csv"))
    group.add_argument("--json", metavar="FILE", help=msg("json"))
    group.add_argument("--jobs", type=positive_int, default=max(1, (os.cpu_count() or 1) // 4),
                       metavar="N", help=msg("jobs"))
    group.add_argument("--student-timeout", type=finite_positive_float, default=1200.0,
                       metavar="S", help=msg("student_timeout"))
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
    parser = ArgumentParser(
        prog="minimegatron grade", formatter_class=RawDescriptionHelpFormatter,
        description=msg("description"), epilog=msg("epilog"))
    parser.add_argument("exercise", nargs="?", default="all", help=msg("exercise"))
    parser.add_argument("--path", default=".", metavar="DIR", help=msg("path"))
    parser.add_argument("--timeout", type=finite_positive_float, default=60.0, metavar="S",
                        help=msg("timeout"))
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
        print(inert.terminal(say("cli.grade.error", error=err)), file=sys.stderr)
        return 2
    return 0 if all(results.values()) else 1
