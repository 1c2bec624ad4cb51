"""``minimegatron run -n N [--timeout S] script.py [args]``: mpiexec, made safe to teach with.

What it adds to a bare ``mpiexec -n N python script.py``:

1. the right mpiexec, the one of mpi4py's MPI library (mpiexec.py);
2. each rank runs ``python -m minimegatron.runtime.launcher --child script.py args``,
   which sets the rank up first (``minimegatron.runtime.setup()``, the abort hook):
   an uncaught exception, a ``sys.exit(code)`` or a normal end while other
   ranks still wait ends every rank, and says which rank and why;
3. it owns its job: SIGTERM, SIGHUP or SIGINT sent to the launcher goes to
   mpiexec, Hydra's proxy and every rank (each runs in its own session) as
   SIGTERM, then SIGKILL after ``GRACE_S`` (processes.py); exit code 128 + the signal. If the
   launcher itself is SIGKILLed, mpiexec gets SIGTERM (PR_SET_PDEATHSIG);
4. a rank that dies without a word (``os._exit``, a signal, a crash) is named,
   with its exit code or signal: each rank has its own waiter, the process that
   reaps it and writes down when and how it ended (``minimegatron.runtime.reaper``); the
   first to end is named, the ranks ended after it are listed as ended by the
   launcher, and if mpiexec leaves the others waiting (an ``os._exit(0)``) the
   launcher ends the job ``END_GRACE_S`` later: it always ends, with no timeout;
5. a wall-clock ``--timeout``: every rank first reports where it waits
   (``hang_report.dump_request``: the collective, its group, the script's line, a
   short stack), then the whole job is killed, with "HANG" and exit code 124;
6. BLAS threads per rank = max(1, cores // N), set in the environment before
   NumPy starts in any rank (see ``minimegatron.runtime.threads``), unless the user
   already set OPENBLAS_NUM_THREADS, OMP_NUM_THREADS or MKL_NUM_THREADS;
7. PYTHONPATH starts with the directory holding this package, so every rank
   imports the same minimegatron.

A first word that is not a ``.py`` file is a minimegatron command:
``minimegatron run -n 8 verify`` runs ``python -m minimegatron verify``.
The command's arguments are parsed by ``minimegatron/commands/run.py``; the
functions here take plain arguments (``build_command``, ``supervise``). Why a job
failed comes from what the ranks left in the job directory (job_files.py).
"""
import ctypes
import os
import runpy
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time

from minimegatron.i18n import text_or_english as say
from minimegatron.runtime import faults, reaper
from minimegatron.runtime.hang_report import dump_request, format_dumps
from minimegatron.runtime.job_files import JOB_DIR_ENV, all_done, failures, rank_pids, said_why
from minimegatron.runtime.mpiexec import find_mpiexec, mpiexec_flags
from minimegatron.runtime.processes import GRACE_S, kill_group
from minimegatron.runtime.threads import BLAS_ENV, threads_per_rank

PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))   # .../minimegatron
PACKAGE_ROOT = os.path.dirname(PACKAGE_DIR)   # the checkout (or site-packages) holding it
FORWARDED = (signal.SIGTERM, signal.SIGHUP, signal.SIGINT)
END_GRACE_S = 2.0      # a rank ended badly: mpiexec (or the abort hook) ends the job, or we do
POLL_S = 0.1
DUMP_WAIT_S = 2.0      # how long the ranks get to say where they wait, at the timeout
PR_SET_PDEATHSIG = 1
try:
    _LIBC = ctypes.CDLL(None, use_errno=True) if sys.platform.startswith("linux") else None
except OSError:
    _LIBC = None




def package_root(target=None):
    """The directory whose minimegatron/ the ranks import: the one beside the script's folder
    (a checkout or a student copy: tutorials/NN.py next to minimegatron/), else this one's."""
    if target and target.endswith(".py"):
        root = os.path.dirname(os.path.dirname(os.path.abspath(target)))
        if os.path.isfile(os.path.join(root, "minimegatron", "__init__.py")):
            return root
    return PACKAGE_ROOT


def child_env(nprocs, env=None, root=PACKAGE_ROOT):
    """The environment of every rank: BLAS threads and PYTHONPATH (see module docstring)."""
    env = dict(os.environ if env is None else env)
    if not any(name in env for name in BLAS_ENV):     # a thread count the user set wins
        threads = str(threads_per_rank(nprocs))
        for name in BLAS_ENV:
            env[name] = threads
    paths = [root] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
    env["PYTHONPATH"] = os.pathsep.join(paths)
    return env


def build_command(nprocs, target, args=(), mpiexec=None):
    """mpiexec -n N python -m minimegatron.runtime.launcher --child TARGET ARGS."""
    mpiexec = mpiexec or find_mpiexec()
    return ([mpiexec] + mpiexec_flags(mpiexec, nprocs) + ["-n", str(nprocs), sys.executable,
            "-m", "minimegatron.runtime.launcher", "--child", target] + list(args))


class JobSignal(Exception):
    """SIGTERM, SIGHUP or SIGINT reached the launcher."""


def _on_signal(signum, frame):
    raise JobSignal(signum)


def _in_child():
    """After fork, before exec: take signals again; SIGTERM to mpiexec if the launcher dies."""
    signal.pthread_sigmask(signal.SIG_UNBLOCK, FORWARDED)
    if _LIBC is not None:
        _LIBC.prctl(PR_SET_PDEATHSIG, signal.SIGTERM)


class RankWatch:
    """A pidfd per rank (``rank<r>.pid`` in the job dir): at the end, ``kill_left`` SIGKILLs
    exactly the ranks still running (a pidfd cannot name a reused pid). Who ended first,
    and how, is the waiters' record (reaper.py), not this."""

    def __init__(self, job_dir):
        self.job_dir, self.fds, self.seen = job_dir, {}, 0

    def poll(self, timeout):
        self._register()
        ready = set(select.select(list(self.fds.values()), [], [], timeout)[0]
                    if self.fds else time.sleep(timeout) or [])
        self._register()
        for rank, fd in list(self.fds.items()):
            if fd in ready:
                os.close(self.fds.pop(rank))

    def _register(self):
        names = [n for n in os.listdir(self.job_dir) if n.endswith(".pid")]
        if len(names) != self.seen and hasattr(os, "pidfd_open"):   # a rank started (Linux)
            self.seen = len(names)
            for rank, pid in rank_pids(self.job_dir).items():
                if rank not in self.fds:
                    try:
                        self.fds[rank] = os.pidfd_open(pid)
                    except OSError:
                        self.fds[rank] = None
            self.fds = {rank: fd for rank, fd in self.fds.items() if fd is not None}

    def kill_left(self, wait_s=GRACE_S):
        """SIGKILL every rank still running (a pidfd names exactly that process), and wait."""
        for fd in self.fds.values():
            try:
                signal.pidfd_send_signal(fd, signal.SIGKILL)
            except OSError:
                pass
        end = time.monotonic() + wait_s
        while self.fds and time.monotonic() < end:
            self.poll(max(0.0, min(POLL_S, end - time.monotonic())))
        for fd in self.fds.values():
            os.close(fd)
        self.fds = {}


def supervise(cmd, nprocs, timeout=None, env=None):
    """Run the job and own it: signals, rank failures and the timeout (module docstring)."""
    job_dir = tempfile.mkdtemp(prefix="minimegatron-job-")
    env = {**(os.environ if env is None else env), JOB_DIR_ENV: job_dir,
           reaper.REAP_ENV: "1"}
    watch, proc = RankWatch(job_dir), None
    previous = {sig: signal.signal(sig, _on_signal) for sig in FORWARDED}
    try:
        signal.pthread_sigmask(signal.SIG_BLOCK, FORWARDED)
        try:
            proc = subprocess.Popen(cmd, env=env, start_new_session=True, preexec_fn=_in_child)
        finally:
            signal.pthread_sigmask(signal.SIG_UNBLOCK, FORWARDED)   # raises a pending one
        deadline = None if timeout is None else time.monotonic() + timeout
        ended_by_us = False
        while proc.poll() is None:
            left = POLL_S if deadline is None else min(POLL_S, deadline - time.monotonic())
            if left <= 0:
                return _hang(proc, job_dir, nprocs, timeout)
            watch.poll(left)
            first = reaper.early_end(job_dir)       # a rank ended without a clean exit:
            if first is not None and time.monotonic() - first > END_GRACE_S:
                kill_group(proc, rank_pids(job_dir).values())    # the job ends
                ended_by_us = True
        code = proc.returncode if proc.returncode >= 0 else 128 - proc.returncode
        if ended_by_us or (code == 0 and reaper.early_end(job_dir) is not None):
            code = reaper.exit_code(job_dir)             # mpiexec saw nothing wrong: we did
        if code:
            _report(job_dir, nprocs, code)
        return code
    except JobSignal as stop:
        for sig in FORWARDED:
            signal.signal(sig, signal.SIG_IGN)
        name = signal.Signals(stop.args[0]).name
        if proc is not None:
            kill_group(proc, rank_pids(job_dir).values())
        _print(say("launcher.signal", name=name, nprocs=nprocs))
        return 128 + stop.args[0]
    finally:
        watch.kill_left()
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        shutil.rmtree(job_dir, ignore_errors=True)


def _report(job_dir, nprocs, code):
    """Why the job failed: the ranks' own records (an exception, an exit code at the exit
    barrier), else the first rank to end (its waiter's record) and the ranks ended after."""
    causes = failures(job_dir, say)
    if not causes and (said_why(job_dir) or all_done(job_dir, nprocs)):
        return             # a usage error was printed, or every rank chose to exit with code
    more = say("launcher.more", count=len(causes) - 2) if len(causes) > 2 else ""
    causes = causes[:2] or reaper.blame(job_dir, nprocs, say) or [say("launcher.no_cause")]
    _print(say("launcher.failed", code=code, causes="; ".join(causes), more=more))


def _hang(proc, job_dir, nprocs, timeout):
    _print(say("launcher.hang", timeout=timeout))
    print(format_dumps(dump_request(job_dir, DUMP_WAIT_S)), file=sys.stderr, flush=True)
    kill_group(proc, rank_pids(job_dir).values())
    _print(say("launcher.killed", nprocs=nprocs))
    return 124


def _print(line):
    print(f"minimegatron run: {line}", file=sys.stderr, flush=True)


def child_main(argv):
    """Inside each rank: the rank's setup first (waiter, heap, BLAS threads, abort hook),
    then the script (or minimegatron command)."""
    from minimegatron.runtime import setup
    setup()
    faults.install()             # also in a world of 1: `run -n 1` reports like any other
    target, args = argv[0], argv[1:]
    try:
        if target.endswith(".py"):
            sys.argv = [target] + args
            sys.path.insert(0, os.path.dirname(os.path.abspath(target)))
            runpy.run_path(target, run_name="__main__")
        else:
            sys.argv = ["minimegatron", target] + args
            runpy.run_module("minimegatron", run_name="__main__", alter_sys=True)
        code = 0
    except SystemExit as stop:         # the exit barrier then knows the code (faults.py)
        code = faults.exit_code(stop)
    faults.set_exit_code(code)
    return code


if __name__ == "__main__":      # each rank: python -m minimegatron.runtime.launcher --child ...
    if sys.argv[1:2] != ["--child"]:
        sys.exit(say("launcher.child_usage"))
    sys.exit(child_main(sys.argv[2:]))
