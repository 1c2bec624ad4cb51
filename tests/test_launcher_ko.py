"""`minimegatron run` under MINIMEGATRON_LANG=ko: a failing and a hanging job say it in Korean.

The launcher's own lines (the summary, HANG, where each rank waits, the kill) and the
ranks' reports go through minimegatron/i18n; a book error (here a CollectiveMismatch) is
said again in Korean after its traceback. What Python prints itself (the traceback, from
"Traceback (most recent call last):" through the exception's line) is not counted, nor
what the MPI library prints itself (MPICH's "Abort(1) on node ..." at MPI_Abort, Hydra's
"BAD TERMINATION" box when the launcher kills the ranks): every other line must not be
English-only (tests/korean_lines.py).
"""
import os
import re

from korean_lines import english_lines
from mpi_harness import TESTS_DIR, minimegatron_run, time_bound

WORKERS = os.path.join(TESTS_DIR, "workers")
HANGUL = re.compile(r"[\uac00-\ud7a3]")
EXCEPTION_LINE = re.compile(r"^[A-Za-z_][\w.]*(Error|Exception|Mismatch|Interrupt)\b.*")
MPI_LINES = re.compile(r"^(Abort\(\d+\) on node |=====|=   |YOUR APPLICATION TERMINATED |"
                       r"This typically refers to a problem with your application|"
                       r"Please see the FAQ page)")


def ours(text):
    """``text`` less Python's own traceback blocks ("Traceback (most recent call last):"
    through the exception's line, "CollectiveMismatch: ...", and the indented lines of a
    multi-line message after it) and less the MPI library's own lines."""
    kept, inside, message = [], False, False
    for line in text.splitlines():
        if MPI_LINES.match(line):
            continue
        if line.startswith("Traceback (most recent call last):"):
            inside, message = True, False
            continue
        if inside:
            if EXCEPTION_LINE.match(line):
                inside, message = False, True
            continue
        if message and line.startswith("  "):
            continue
        message = False
        kept.append(line)
    return "\n".join(kept)


def korean_run(*argv):
    env_lang = os.environ.get("MINIMEGATRON_LANG")
    os.environ["MINIMEGATRON_LANG"] = "ko"
    try:
        return minimegatron_run(*argv)
    finally:
        if env_lang is None:
            del os.environ["MINIMEGATRON_LANG"]
        else:
            os.environ["MINIMEGATRON_LANG"] = env_lang


def test_a_failing_job_in_korean():
    code, out, err, seconds = korean_run("-n", "2", "--timeout", "50",
                                         os.path.join(WORKERS, "mismatch_job.py"))
    assert code not in (0, 124), (code, out, err)
    assert seconds < time_bound(20, 49)
    said = ours(out + "\n" + err)
    assert english_lines(said) == [], said
    assert "CollectiveMismatch" in err and HANGUL.search(err), err


def test_a_hanging_job_in_korean():
    code, out, err, seconds = korean_run("-n", "2", "--timeout", "3",
                                         os.path.join(WORKERS, "deadlock.py"))
    assert code == 124, (code, out, err)
    said = ours(out + "\n" + err)
    assert english_lines(said) == [], said
    assert "recv" in err and "rank 1" in err, err
