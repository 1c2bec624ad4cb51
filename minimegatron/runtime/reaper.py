"""Each rank's own waiter: how and when a rank ended, written by the process that reaps it.

Under ``minimegatron run`` every rank is ``python -m minimegatron.runtime.launcher --child ...``
with ``MINIMEGATRON_REAP`` set. The first thing ``runtime.setup()`` does there,
before MPI starts, is ``reap_if_asked()``: the process forks; the child goes on to be
the rank, the parent only waits for it (``os.waitpid``) and, the moment the wait
returns, writes ``rank<r>.exit`` in the job directory: the exit status (a code or a
signal) and the time (CLOCK_MONOTONIC, one clock for every process of the machine).
Then the parent ends the same way (same code, same signal), so mpiexec sees what it
would have seen without it. SIGTERM, SIGINT and SIGHUP sent to the parent go to the rank.

Why a waiter: a rank is mpiexec's grandchild, so the launcher cannot reap it; a pidfd
says that a process ended but not how, and the moment a poll loop wakes up is not the
moment a rank ended: mpiexec kills the other ranks at once, and one wake-up sees
several ends. The waiter writes its record before it exits, so before mpiexec can
learn of the end and kill anyone: the earliest record is the first rank to end.

Launcher side: ``exits(job_dir)`` reads the records, ``early_end(job_dir)`` says when
the first rank ended without a clean exit (the launcher then ends the job itself:
an ``os._exit(0)`` leaves the others waiting forever otherwise), and ``blame``
writes the report: that rank, how it ended, and the ranks ended after it.
"""
import ctypes
import os
import signal
import time

from minimegatron.runtime.job_files import JOB_DIR_ENV
from minimegatron.runtime.rank_setup import rank_from_env

REAP_ENV = "MINIMEGATRON_REAP"
FORWARDED = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
PR_SET_PDEATHSIG = 1


def reap_if_asked():
    """In the launcher's child (``REAP_ENV`` and a job dir set): fork; return in the rank,
    never in the waiter."""
    job_dir = os.environ.pop(REAP_ENV, None) and os.environ.get(JOB_DIR_ENV)
    if not job_dir or not hasattr(os, "fork"):
        return
    waiter, rank = os.getpid(), rank_from_env()
    child = os.fork()
    if child == 0:
        try:                                    # the waiter killed: the rank dies with it
            ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
        except (OSError, AttributeError):
            pass
        if os.getppid() != waiter:
            os._exit(1)
        return
    try:
        _wait_and_record(child, job_dir, rank)
    finally:                       # the waiter never prints a traceback of its own, nor
        os._exit(1)                # returns into the rank's code


def _wait_and_record(child, job_dir, rank):
    def forward(signum, frame):
        try:
            os.kill(child, signum)
        except ProcessLookupError:
            pass
    for sig in FORWARDED:
        signal.signal(sig, forward)
    _, status = os.waitpid(child, 0)
    now = time.monotonic_ns()
    if os.WIFSIGNALED(status):
        kind, number = "signal", os.WTERMSIG(status)
    else:
        kind, number = "code", os.waitstatus_to_exitcode(status)
    try:
        tmp = os.path.join(job_dir, f".rank{rank}.exit.{os.getpid()}")
        with open(tmp, "w") as f:
            f.write(f"{now} {kind} {number}\n")
        os.replace(tmp, os.path.join(job_dir, f"rank{rank}.exit"))
    except OSError:
        pass
    if kind == "signal":
        _end_by(number)
        number = 128 + number
    os._exit(number)


def _end_by(number):
    """End this process by the rank's signal. SIGKILL and SIGSTOP take no handler (setting
    one is an OSError), so only the others are reset to the default first."""
    try:
        if number not in (signal.SIGKILL, signal.SIGSTOP):
            signal.signal(number, signal.SIG_DFL)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, [number])
        os.kill(os.getpid(), number)
    except (OSError, ValueError):
        pass


# --- in the launcher ------------------------------------------------------------------------

def exits(job_dir):
    """{rank: (time_ns, "code" or "signal", number)} of every rank whose waiter wrote."""
    found = {}
    for name in os.listdir(job_dir):
        if name.startswith("rank") and name.endswith(".exit"):
            try:
                with open(os.path.join(job_dir, name)) as f:
                    when, kind, number = f.read().split()
                found[int(name[4:-5])] = (int(when), kind, int(number))
            except (OSError, ValueError):
                continue
    return found


def _clean(job_dir, rank):
    """The rank passed the exit barrier (faults writes ``done: ...`` in rank<r>.end)."""
    try:
        with open(os.path.join(job_dir, f"rank{rank}.end")) as f:
            return f.read().startswith("done:")
    except OSError:
        return False


def _early(job_dir):
    """[(time_ns, rank, kind, number)] of the ranks that ended without a clean exit, first
    first."""
    return sorted((when, rank, kind, number) for rank, (when, kind, number)
                  in exits(job_dir).items() if not _clean(job_dir, rank))


def early_end(job_dir):
    """time.monotonic() of the first rank's end without a clean exit, or None."""
    early = _early(job_dir)
    return early[0][0] / 1e9 if early else None


def how(kind, number, text=None):
    """"exit code 1" or "killed by SIGKILL" (``text``: i18n.text, the reader's language)."""
    if text is not None:
        if kind == "code":
            return text("reaper.exit_code", code=number)
        try:
            return text("reaper.killed_by", name=signal.Signals(number).name)
        except ValueError:
            return text("reaper.killed_by_signal", number=number)
    if kind == "code":
        return f"exit code {number}"
    try:
        return f"killed by {signal.Signals(number).name}"
    except ValueError:
        return f"killed by signal {number}"


def exit_code(job_dir):
    """The job's exit code when the launcher ended it: the first rank's code, 128 + its
    signal, or 1 when it exited with 0 while the others still ran."""
    early = _early(job_dir)
    if not early:
        return 1
    _, _, kind, number = early[0]
    return 128 + number if kind == "signal" else number or 1


def blame(job_dir, nprocs, text):
    """The report lines: the first rank to end without a clean exit and how, then the ranks
    ended after it. ``text(key, **fields)`` is i18n.text."""
    early = _early(job_dir)
    if not early:
        return []
    _, first, kind, number = early[0]
    lines = [text("run.first_end", rank=first, how=how(kind, number, text))]
    after = [r for r in range(nprocs) if r != first and not _clean(job_dir, r)]
    if after:
        lines.append(text("run.ended_after", ranks=after, rank=first))
    return lines
