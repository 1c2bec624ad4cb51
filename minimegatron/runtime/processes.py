"""A job's processes: run it in its own session, and kill all of it.

mpiexec starts Hydra's proxy (or Open MPI's daemon), which starts the ranks, and
each of them may start its own session: signalling mpiexec's process group alone
would leave them running. So ``kill_group`` walks the process tree under mpiexec
(``descendants``, from /proc) and sends SIGTERM, then after a grace SIGKILL, to
every process in it; ``run_job`` runs a command that way with a timeout.

    code, out, err, timed_out = run_job(cmd, timeout=60, stdout=subprocess.PIPE)
"""
import os
import signal
import subprocess
import time

GRACE_S = 1.0          # SIGTERM, then SIGKILL to whatever is left


def run_job(cmd, timeout=None, env=None, **popen_kw):
    """Run cmd in its own session; on timeout kill the whole job (``kill_group``).

    Returns (returncode, stdout, stderr, timed_out); stdout/stderr are None
    unless popen_kw redirects them (e.g. ``stdout=subprocess.PIPE``).
    """
    proc = subprocess.Popen(cmd, env=env, start_new_session=True, **popen_kw)
    try:
        out, err = proc.communicate(timeout=timeout)
        return proc.returncode, out, err, False
    except subprocess.TimeoutExpired:
        kill_group(proc)
        out, err = proc.communicate()
        return 124, out, err, True
    except KeyboardInterrupt:
        kill_group(proc)
        raise


def kill_group(proc, pids=(), grace=GRACE_S):
    """SIGTERM, a grace, then SIGKILL to mpiexec, every process below it, and ``pids``.

    Hydra's proxy and every rank each start their own session, so signalling
    mpiexec's process group alone would leave them running.
    """
    tree = descendants(proc.pid) | set(pids)
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for pid in [proc.pid] + sorted(tree):
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                pass
        end = time.monotonic() + grace
        while time.monotonic() < end and (proc.poll() is None or any(map(alive, tree))):
            time.sleep(0.02)
        if proc.poll() is not None and not any(map(alive, tree)):
            return
        tree |= descendants(proc.pid)
    proc.wait()


def descendants(pid):
    """Every process below pid (children, grandchildren...), from /proc."""
    children = {}
    for entry in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{entry}/stat") as f:
                ppid = int(f.read().rpartition(")")[2].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        children.setdefault(ppid, []).append(int(entry))
    found, todo = set(), [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            if child not in found:
                found.add(child)
                todo.append(child)
    return found


def alive(pid):
    """pid exists and is not a zombie."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rpartition(")")[2].split()[0] != "Z"
    except OSError:
        return False
