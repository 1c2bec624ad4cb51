"""Each tutorial run under MINIMEGATRON_LANG=ko at most once a test session, shared by the tests
that read it: test_tutorials_ko.py checks its words and tables, test_docs_ko_outputs.py the
Korean pages' output samples against it. An argument "OUT" is a fresh folder, written "out"
in the output (as the pages show it).
"""
import atexit
import shutil
import tempfile

from mpi_harness import run_script

_RUNS = {}


def korean_run(ranks, name, args, timeout=300):
    """(returncode, stdout, stderr) of ``tutorials/name`` on ``ranks`` ranks in Korean."""
    key = (ranks, name, tuple(args))
    if key not in _RUNS:
        out = tempfile.mkdtemp(prefix="ko_run_")
        atexit.register(shutil.rmtree, out, True)
        code, stdout, err = run_script(ranks, f"tutorials/{name}",
                                       [out if a == "OUT" else a for a in args],
                                       timeout=timeout, env={"MINIMEGATRON_LANG": "ko"})
        _RUNS[key] = (code, stdout.replace(out, "out"), err)
    return _RUNS[key]
