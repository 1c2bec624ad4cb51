"""Run exercise checks in a fresh process (the grader starts it; students never need to).

    python -m minimegatron.exercise_checks.runner JOBS.json RESULTS.jsonl [--mpi]

JOBS.json is a list of {"id": "1.1", "key": K, "path": DIR}: run exercise 1.1's check
with DIR first on sys.path, so ``import minimegatron`` is the copy in DIR.
Between jobs with different DIRs every minimegatron module is dropped from
sys.modules and imported again from the new DIR, so one process (or one
mpiexec launch) grades many exercises, each against its own copy.

With --mpi this runs on every rank of an mpiexec job of 4 ranks, laid out as
a 2 x 2 grid in Megatron's order (``ProcessGrid(dp=2, pp=1, tp=2)``): a check
of kind "tp" runs on the tp groups [0, 1] and [2, 3], one of kind "dp" on the
dp groups [0, 2] and [1, 3]. Each group is a strict subset of the world, so a
collective over the world instead of the group gives a wrong number, and the
check says so. After the check:

1. each rank appends its own verdict to ``progress_rank<r>.jsonl`` at once, so
   the grader still knows what a rank saw when another rank hangs;
2. ``comm.allgather_object`` collects every rank's verdict and rank 0 appends
   one JSON line per exercise to RESULTS.jsonl (the grader watches the file to
   time out a check that makes no progress).

Results cannot be forged by an accident or a casual trick: the grader writes a
random nonce to the runner's standard input, the runner reads it before any
student code is imported and puts it in every result line, and the process
ends with ``os._exit`` right after the last report, so no ``atexit`` hook of
student code runs. (Student code runs with the user's rights in this process:
a determined cheat can still read the nonce. The grader is a teaching aid,
not a sandbox.)
"""
import importlib
import json
import os
import sys
import time
import traceback

from minimegatron.threads import rank_from_env


def use_copy(path, previous):
    """Forget every imported minimegatron module and put ``path`` first on sys.path."""
    for name in [n for n in sys.modules if n == "minimegatron" or n.startswith("minimegatron.")]:
        del sys.modules[name]
    if previous in sys.path:
        sys.path.remove(previous)
    sys.path.insert(0, path)
    importlib.invalidate_caches()


def where_it_failed(tb, path):
    """'in Class.method: <source line>' for the deepest frame inside the copy under test."""
    frames = [f for f in traceback.extract_tb(tb) if f.filename.startswith(path)]
    if not frames:
        return ""
    frame = frames[-1]
    return f" (in {frame.name}: {frame.line.strip()})" if frame.line else f" (in {frame.name})"


def run_check(ex_id, path, group):
    """(status, message): "pass", "todo" (NotImplementedError), "fail" or "error"."""
    from minimegatron.exercise_checks import by_id
    exercise = by_id(ex_id)
    try:
        module = importlib.import_module(f"minimegatron.exercise_checks.{exercise.module}")
        check = module.CHECKS[ex_id]
        return "pass", str(check(group) if group is not None else check())
    except NotImplementedError as err:
        return "todo", str(err)
    except AssertionError as err:
        return "fail", str(err)
    except Exception as err:   # noqa: BLE001 -- a student's bug, reported as a failure
        return "error", f"{type(err).__name__}: {err}{where_it_failed(err.__traceback__, path)}"


def check_group(ex_id):
    """The group this rank checks exercise ex_id on: its tp or dp group of a 2 x 2 grid."""
    from minimegatron.exercise_checks import by_id
    from minimegatron.parallel.grid import ProcessGrid
    grid = ProcessGrid(dp=2, pp=1, tp=2)
    return grid.tp if by_id(ex_id).group == "tp" else grid.dp


def _append(path, record):
    with open(path, "a") as f:
        f.write(json.dumps(record) + "\n")


def main(argv):
    jobs_file, results_file, use_mpi = argv[0], argv[1], "--mpi" in argv
    # Before any student code is imported. mpiexec gives standard input to rank 0 alone.
    nonce = sys.stdin.readline().strip() if rank_from_env() == 0 else ""
    with open(jobs_file) as f:
        jobs = json.load(f)
    current, world = None, None
    for job in jobs:
        if job["path"] != current:
            use_copy(job["path"], current)
            current = job["path"]
        group = None
        if use_mpi:
            from minimegatron import comm
            comm.install_abort_hook()
            world = comm.world()
            group = check_group(job["id"])
        start = time.perf_counter()
        verdict = run_check(job["id"], job["path"], group)
        if use_mpi:
            progress = os.path.join(os.path.dirname(results_file),
                                    f"progress_rank{world.rank}.jsonl")
            _append(progress, {"id": job["id"], "key": job["key"], "verdict": verdict,
                               "time": time.time()})
        verdicts = comm.allgather_object(verdict, world) if use_mpi else [verdict]
        if world is None or world.rank == 0:
            _append(results_file, {"id": job["id"], "key": job["key"], "nonce": nonce,
                                   "ranks": verdicts,
                                   "seconds": round(time.perf_counter() - start, 3)})
    sys.stdout.flush()
    sys.stderr.flush()
    if use_mpi:
        from mpi4py import MPI
        MPI.Finalize()
    os._exit(0)          # no atexit hook of student code runs after the last report


if __name__ == "__main__":
    main(sys.argv[1:])
