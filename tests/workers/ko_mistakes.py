"""A student's mistakes, many in one process: tests/test_ko_mistakes.py's cheap batch.

``python ko_mistakes.py MISTAKES.json OUT.json`` runs each mistake of the list (the argv of
``python -m minimegatron ...``, or a tutorial's path and its flags) in this one process, as
``python -m minimegatron`` and ``python tutorials/x.py`` run them: ``commands.cli.main`` or
the tutorial as ``__main__``, on one rank. Each one's exit code and everything it wrote to
file descriptors 1 and 2 (its own prints and a child process's) go to OUT.json.

``wrong_n(mistakes)`` is the same on every rank of a ``run_mpi`` launch: each tutorial run
on a rank count it cannot take, and commands given a bad flag under ``minimegatron run``. It returns, per tutorial, this rank's exit code, the message
this rank gave ``entry.usage_error`` (every rank must give one, the same, before any
collective: a rank that went on instead would wait forever) and what this rank printed.
"""
import contextlib
import json
import os
import runpy
import sys
import tempfile
import traceback

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@contextlib.contextmanager
def captured():
    """Descriptors 1 and 2 into one file inside the block; the list it yields then holds the
    text."""
    sys.stdout.flush()
    sys.stderr.flush()
    saved = os.dup(1), os.dup(2)
    text = []
    with tempfile.TemporaryFile() as sink:
        os.dup2(sink.fileno(), 1)
        os.dup2(sink.fileno(), 2)
        try:
            yield text
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            for fd, copy in zip((1, 2), saved):
                os.dup2(copy, fd)
                os.close(copy)
            sink.seek(0)
            text.append(sink.read().decode("utf-8", "replace"))


def attempt(argv):
    """(exit code, output) of one mistake: ``["tutorials/x.py", flags...]`` runs the tutorial,
    any other argv ``minimegatron ARGV``. An uncaught exception is code "traceback"."""
    from minimegatron.commands import cli
    with captured() as text:
        try:
            if argv[0].endswith(".py"):
                sys.argv = [os.path.join(ROOT, argv[0]), *argv[1:]]
                runpy.run_path(sys.argv[0], run_name="__main__")
                code = 0
            else:
                sys.argv = ["minimegatron", *argv]
                code = cli.main(argv)
        except SystemExit as end:
            code = end.code
        except Exception:                             # noqa: BLE001 (the test shows it)
            traceback.print_exc()
            code = "traceback"
    return code, text[0]


def wrong_n(mistakes):
    """{"argv": [exit code, the message given to usage_error, output]} on this rank, for each
    mistake's argv (a tutorial's path, or a command run under ``minimegatron run``)."""
    from minimegatron.commands import entry
    said = []
    original = entry.usage_error

    def recording(message, code=2):
        said.append(message)
        original(message, code)

    entry.usage_error = recording
    found = {}
    try:
        for argv in mistakes:
            del said[:]
            code, text = attempt(argv.split())
            found[argv] = [code, said[0] if said else None, text]
    finally:
        entry.usage_error = original
    return found


if __name__ == "__main__":
    sys.path.insert(0, ROOT)
    source, destination = sys.argv[1:3]          # attempt() sets sys.argv for each mistake
    with open(source) as f:
        mistakes = json.load(f)
    results = [attempt(argv) for argv in mistakes]
    with open(destination, "w") as f:
        json.dump(results, f)
