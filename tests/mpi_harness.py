"""Run a function on N real MPI ranks from a pytest test, with a timeout.

    results = run_mpi(4, "workers/comm_checks.py:check_all", args=(0,))
    # results[r] is what rank r's check_all(0) returned (JSON round trip)

One launch costs 1-2 s on a 2-core laptop, so a worker should run MANY checks
and return a dict of named measurements (max abs errors, counts...) that the
test then asserts one by one.

Each rank writes its stdout/stderr and its JSON result to its own file in a
temporary directory. If a rank raises, the abort hook prints its traceback
and aborts the job; if the job hangs, the whole process group is killed at
``timeout``. Either way the test fails with every rank's output and a line
saying which rank failed (or that the job timed out).

``run_script(nprocs, script, args, timeout)`` runs a plain
``mpiexec -n N python script.py args`` (how a student runs a tutorial) and
returns (returncode, stdout, stderr); ``minimegatron_run(*argv, timeout)`` runs
``python -m minimegatron run ARGV`` (the launcher's own report) and returns
(returncode, stdout, stderr, seconds).

Children import this repository's minimegatron (PYTHONPATH = repo root).

``time_bound(quiet, ceiling)`` is the wall-time bound of a test that asserts one
("the job ends within 30 s"): ``quiet`` seconds on a quiet machine, stretched by
the load (``load_factor``: the 1-minute load average per core) on a busy laptop, and
never above ``ceiling``, the time the bug it guards against takes (a grace period,
a timeout), so the assertion can still fail under any load. ``run_mpi`` and
``run_script`` stretch their hang timeout the same way (at most 4 times).
"""
import importlib.util
import json
import os
import runpy
import subprocess
import sys
import tempfile
import time

TESTS_DIR = os.path.dirname(os.path.abspath(__file__))
REPO_ROOT = os.path.dirname(TESTS_DIR)


def load_factor():
    """How many times slower than on a quiet machine wall time runs now: the 1-minute load
    average per core (what other programs and this test's own ranks ask of the cores), at
    least 1."""
    try:
        load = os.getloadavg()[0]
    except OSError:                                   # no load average here: assume quiet
        return 1.0
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return max(1.0, load / max(1, cores or 1))


def time_bound(quiet, ceiling):
    """Seconds a timed step may take: ``quiet`` x ``load_factor()``, at most ``ceiling`` (the
    time of the failure the bound exists to catch: it must stay below it)."""
    assert quiet < ceiling, (quiet, ceiling)
    return min(quiet * load_factor(), ceiling)


def _launch(nprocs, argv, timeout, env, plain=False):
    """mpiexec -n N argv; ``plain`` keeps the caller's BLAS settings (like a bare mpirun).

    ``timeout`` is the hang guard of a quiet machine: on a loaded one it stretches with
    ``load_factor()`` (at most 4 times), so a slow run is not mistaken for a hang."""
    timeout = timeout * min(load_factor(), 4.0)
    if REPO_ROOT not in sys.path:
        sys.path.insert(0, REPO_ROOT)
    from minimegatron.runtime.launcher import child_env
    from minimegatron.runtime.mpiexec import find_mpiexec, mpiexec_flags
    from minimegatron.runtime.processes import run_job
    mpiexec = find_mpiexec()
    cmd = [mpiexec] + mpiexec_flags(mpiexec, nprocs) + ["-n", str(nprocs)] + argv
    full_env = child_env(nprocs, {**os.environ, **(env or {})})
    if plain:
        full_env = {**os.environ, **(env or {}), "PYTHONPATH": full_env["PYTHONPATH"]}
    return run_job(cmd, timeout=timeout, env=full_env, stdout=subprocess.PIPE,
                   stderr=subprocess.PIPE, text=True)


def _resolve(target):
    path, _, function = target.partition(":")
    if not os.path.isabs(path):
        path = os.path.join(TESTS_DIR, path)
    return path, function


def run_mpi(nprocs, target, args=(), timeout=120, env=None):
    """Call ``file.py:function(*args)`` on every rank; the list of per-rank return values."""
    import pytest
    path, function = _resolve(target)
    with tempfile.TemporaryDirectory(prefix="mm_mpi_") as outdir:
        argv = [sys.executable, os.path.abspath(__file__), outdir, path, function,
                json.dumps(list(args))]
        code, out, err, timed_out = _launch(nprocs, argv, timeout, env)
        ranks = [_read_rank(outdir, r) for r in range(nprocs)]
    missing = [r for r, (res, _, _) in enumerate(ranks) if res is None]
    if code == 0 and not timed_out and not missing:
        return [json.loads(res)["result"] for res, _, _ in ranks]
    failed = [r for r, (_, _, e) in enumerate(ranks) if "Traceback" in e]
    why = (f"timed out after {timeout} s (killed the job)" if timed_out else
           f"rank(s) {failed} failed" if failed else f"exit code {code}, no result from {missing}")
    report = [f"{target} on {nprocs} ranks: {why}",
              f"--- mpiexec stdout ---\n{out}", f"--- mpiexec stderr ---\n{err}"]
    report += [f"--- rank {r} stdout ---\n{o}\n--- rank {r} stderr ---\n{e}"
               for r, (_, o, e) in enumerate(ranks)]
    pytest.fail("\n".join(report), pytrace=False)


def run_script(nprocs, script, args=(), timeout=120, env=None):
    """(returncode, stdout, stderr) of a plain ``mpiexec -n N python script args``.

    Only PYTHONPATH is added to the environment; returncode 124 means timed out.
    """
    path = script if os.path.isabs(script) else os.path.join(REPO_ROOT, script)
    code, out, err, _ = _launch(nprocs, [sys.executable, path] + [str(a) for a in args],
                                timeout, env, plain=True)
    return code, out, err


def minimegatron_run(*argv, timeout=60):
    """(returncode, stdout, stderr, seconds) of `python -m minimegatron run ...`."""
    if REPO_ROOT not in sys.path:
        sys.path.insert(0, REPO_ROOT)
    from minimegatron.runtime.processes import run_job
    env = {**os.environ, "PYTHONPATH": REPO_ROOT}
    start = time.perf_counter()
    code, out, err, _ = run_job([sys.executable, "-m", "minimegatron", "run", *argv],
                                timeout=timeout, env=env, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
    return code, out, err, time.perf_counter() - start


def _read_rank(outdir, rank):
    def text(name):
        path = os.path.join(outdir, f"rank{rank}.{name}")
        return open(path).read() if os.path.exists(path) else None
    return text("json"), text("out") or "", text("err") or ""


def _rank_main(outdir, path, function, args_json):
    """Inside each rank: own output files, abort hook, call the function, save the result."""
    from minimegatron.runtime import setup
    setup()                               # BLAS threads, heap, abort hook: as a tutorial does
    from mpi4py import MPI
    rank = MPI.COMM_WORLD.Get_rank()
    for stream, name in ((sys.stdout, "out"), (sys.stderr, "err")):
        stream.flush()
        fd = os.open(os.path.join(outdir, f"rank{rank}.{name}"),
                     os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
        os.dup2(fd, stream.fileno())
    sys.path.insert(0, os.path.dirname(path))
    result = None
    if function:
        spec = importlib.util.spec_from_file_location("mpi_worker", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        result = getattr(module, function)(*json.loads(args_json))
    else:
        runpy.run_path(path, run_name="__main__")
    with open(os.path.join(outdir, f"rank{rank}.json"), "w") as f:
        json.dump({"result": result}, f)


if __name__ == "__main__":
    _rank_main(*sys.argv[1:5])
