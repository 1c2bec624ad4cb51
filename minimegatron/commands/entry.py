"""What every entry point does first: say which minimegatron runs, and fail in one line.

A stale copy is the classic classroom trap: a student edits
``minimegatron/parallel/tensor_parallel/linear.py`` in a checkout while ``mpirun`` imports
another copy (an old ``pip install``, the teacher's reference). So every
command and tutorial starts with one line naming the package it imported::

    minimegatron verify: package /home/student/class/minimegatron

and a mistake the user can fix (a wrong rank count, a grid that does not fit)
is printed ONCE, as one line, by rank 0, while every rank exits with code 2:
no tracebacks, not eight copies. ``MINIMEGATRON_TRACEBACK=1`` shows the
traceback as well.

Neither function starts MPI: the rank comes from the launcher's environment
(``runtime/rank_setup.rank_from_env``), so a serial tutorial under ``mpirun -n 8`` also
prints once. It lives in commands/ (argparse and printing) and so sits above
classroom/: ``run`` shows a blank exercise's hint in the reader's language
(``classroom/blank.py``).
"""
import os
import sys
import traceback

from minimegatron import i18n
from minimegatron.i18n import book_errors
from minimegatron.classroom.blank import blank_message
from minimegatron.commands import parser
from minimegatron.runtime import faults, setup
from minimegatron.runtime.rank_setup import rank_from_env

PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def banner(name):
    """Set this rank up (``runtime.setup()``: waiter, heap, BLAS threads, abort hook), then
    print "minimegatron NAME: package /path/to/minimegatron" on rank 0: the first line of
    every tutorial and command."""
    setup()
    if rank_from_env() == 0:
        try:
            line = i18n.text("entry.banner", name=name, path=PACKAGE_DIR)
        except ValueError:                 # an unknown MINIMEGATRON_LANG: said later, once
            line = f"minimegatron {name}: package {PACKAGE_DIR}"
        print(line, flush=True)


def usage_error(message, code=2):
    """Print "error: MESSAGE" once (rank 0) and end this rank with ``code``; a message the
    book raised in English is said in the reader's language (``i18n/book_errors.py``).

    Call it on EVERY rank, at the same point, before any collective: the ranks
    then all reach the exit together and the job ends cleanly.
    """
    if rank_from_env() == 0:
        try:
            said = book_errors.translate(message, i18n.language())
            line = i18n.text("cli.error", message=said)
        except ValueError:                 # an unknown MINIMEGATRON_LANG is the message itself
            line = f"error: {message}"
        print(line, file=sys.stderr, flush=True)
    faults.said(message)          # under MPI the launcher then adds no "no rank said why"
    raise SystemExit(code)


class ArgumentParser(parser.ArgumentParser):
    """argparse under N ranks: a bad flag is ``usage_error`` (one line, once, exit 2, and the
    launcher adds nothing), and ``--help`` prints once (rank 0); in the reader's language
    (commands/parser.py)."""

    def error(self, message):
        usage_error(f"{self.prog}: {self.hinted(message)}")

    def _print_message(self, message, file=None):
        if rank_from_env() == 0:
            super()._print_message(message, file)


def run(main, name, *args):
    """``main(*args)`` after the banner; a ValueError becomes ``usage_error``.

    The package's rule is that a bad configuration raises the same ValueError
    on every rank before any collective, so every rank ends here together. In
    a student copy, a blank exercise raises NotImplementedError("Exercise 1.1:
    ...") on every rank alike: that too is one line, naming the exercise.
    """
    banner(name)
    try:
        return main(*args)
    except ValueError as err:
        _fail(str(err))
    except NotImplementedError as err:
        ex_id, message = blank_message(str(err))
        if ex_id is None:
            raise
        _fail(i18n.text("entry.blank", message=message, id=ex_id))


def _fail(message):
    if os.environ.get("MINIMEGATRON_TRACEBACK"):
        traceback.print_exc()
    usage_error(message)
