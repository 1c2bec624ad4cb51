"""``minimegatron run -n N [--timeout S] script.py [args]``: mpiexec, made safe to teach with.

What it adds to a bare ``mpiexec -n N python script.py``:

1. the right mpiexec: the one next to ``sys.executable`` (pip's mpich puts it
   there), then the one next to mpi4py's configured compiler, then PATH;
2. each rank runs ``python -m minimegatron.launcher --child script.py args``,
   which installs ``comm.install_abort_hook()`` first: an uncaught exception on
   any rank prints that rank's traceback and aborts every rank (no hang);
3. a wall-clock ``--timeout``: the whole job (its process group) is killed,
   with a message and exit code 124;
4. BLAS threads per rank = max(1, cores // N), set in the environment before
   NumPy starts in any rank (see ``minimegatron.threads``);
5. PYTHONPATH starts with the directory holding this package, so every rank
   imports the same minimegatron.

A first word that is not a ``.py`` file is a minimegatron command:
``minimegatron run -n 8 verify`` runs ``python -m minimegatron verify``.
"""
import argparse
import os
import runpy
import shutil
import signal
import subprocess
import sys

from minimegatron.threads import BLAS_ENV, cores, threads_per_rank

PACKAGE_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def find_mpiexec():
    """Path of the mpiexec that belongs to the MPI runtime mpi4py uses."""
    candidates = [os.path.join(os.path.dirname(sys.executable), "mpiexec")]
    try:
        import mpi4py
        mpicc = mpi4py.get_config().get("mpicc")
        if mpicc:
            candidates.append(os.path.join(os.path.dirname(mpicc), "mpiexec"))
    except ImportError:
        pass
    candidates += [shutil.which("mpiexec"), shutil.which("mpirun")]
    for path in candidates:
        if path and os.path.isfile(path) and os.access(path, os.X_OK):
            return path
    raise FileNotFoundError("no mpiexec found: pip install mpich (or install any MPI "
                            "that mpi4py supports and put its mpiexec on PATH)")


def mpiexec_flags(mpiexec, nprocs):
    """Extra flags Open MPI needs to run more ranks than cores (and as root)."""
    try:
        version = subprocess.run([mpiexec, "--version"], capture_output=True, text=True,
                                 timeout=20).stdout
    except (OSError, subprocess.SubprocessError):
        return []
    if "Open MPI" not in version and "OpenRTE" not in version:
        return []
    flags = ["--oversubscribe"] if nprocs > cores() else []
    return flags + (["--allow-run-as-root"] if os.geteuid() == 0 else [])


def child_env(nprocs, env=None):
    """The environment of every rank: BLAS threads and PYTHONPATH (see module docstring)."""
    env = dict(os.environ if env is None else env)
    threads = str(threads_per_rank(nprocs))
    for name in BLAS_ENV:
        env[name] = threads
    paths = [PACKAGE_ROOT] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
    env["PYTHONPATH"] = os.pathsep.join(paths)
    return env


def build_command(nprocs, target, args=(), mpiexec=None):
    """mpiexec -n N python -m minimegatron.launcher --child TARGET ARGS."""
    mpiexec = mpiexec or find_mpiexec()
    return ([mpiexec] + mpiexec_flags(mpiexec, nprocs) + ["-n", str(nprocs), sys.executable,
            "-m", "minimegatron.launcher", "--child", target] + list(args))


def run_job(cmd, timeout=None, env=None, **popen_kw):
    """Run cmd in its own process group; on timeout kill the whole group.

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


def kill_group(proc):
    """SIGTERM, a 2 s grace, then SIGKILL to every process of the job (mpiexec, ranks)."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(timeout=2)
        except subprocess.TimeoutExpired:
            pass


def child_main(argv):
    """Inside each rank: abort hook first, then run the script (or minimegatron command)."""
    from minimegatron import comm, threads
    threads.limit_blas_threads()
    comm.install_abort_hook()
    target, args = argv[0], argv[1:]
    if target.endswith(".py"):
        sys.argv = [target] + args
        sys.path.insert(0, os.path.dirname(os.path.abspath(target)))
        runpy.run_path(target, run_name="__main__")
    else:
        sys.argv = ["minimegatron", target] + args
        runpy.run_module("minimegatron", run_name="__main__", alter_sys=True)
    return 0


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["--child"]:
        return child_main(argv[1:])
    parser = argparse.ArgumentParser(prog="minimegatron run",
                                     description="run a script (or command) on N MPI ranks")
    parser.add_argument("-n", "--np", type=int, required=True, help="number of ranks")
    parser.add_argument("--timeout", type=float, default=None, help="kill the job after S s")
    parser.add_argument("target", help="script.py, or a minimegatron command such as verify")
    parser.add_argument("args", nargs=argparse.REMAINDER)
    opts = parser.parse_args(argv)
    if opts.np < 1:
        parser.error(f"-n must be >= 1, got {opts.np}")
    if opts.target.endswith(".py") and not os.path.isfile(opts.target):
        parser.error(f"no such script: {opts.target}")
    cmd = build_command(opts.np, opts.target, opts.args)
    code, _, _, timed_out = run_job(cmd, timeout=opts.timeout, env=child_env(opts.np))
    if timed_out:
        print(f"minimegatron run: timed out after {opts.timeout:g} s; killed all {opts.np} "
              f"ranks (a deadlock? a rank waiting for a message nobody sends?)",
              file=sys.stderr, flush=True)
    return code


if __name__ == "__main__":
    sys.exit(main())
