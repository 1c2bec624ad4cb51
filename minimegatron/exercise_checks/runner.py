"""Run exercise checks in a fresh process (the grader starts it; students never need to).

    python -m minimegatron.exercise_checks.runner JOBS.json RESULTS.jsonl [--mpi]

JOBS.json is a list of {"id": "1.1", "path": DIR}: run exercise 1.1's check
with DIR first on sys.path, so ``import minimegatron`` is the copy in DIR.
Between jobs with different DIRs every minimegatron module is dropped from
sys.modules and imported again from the new DIR, so one process (or one
mpiexec launch) grades many exercises, each against its own copy.

With --mpi this runs on every rank of an mpiexec job: each rank runs the
check, then ``comm.allgather_object`` collects every rank's verdict and rank 0
appends one JSON line per exercise to RESULTS.jsonl, as soon as it is known
(the grader watches the file to time out a check that hangs).
"""
import importlib
import json
import sys
import time
import traceback


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


def main(argv):
    jobs_file, results_file, use_mpi = argv[0], argv[1], "--mpi" in argv
    with open(jobs_file) as f:
        jobs = json.load(f)
    current = None
    for job in jobs:
        if job["path"] != current:
            use_copy(job["path"], current)
            current = job["path"]
        group = None
        if use_mpi:
            from minimegatron import comm
            comm.install_abort_hook()
            group = comm.world()
        start = time.perf_counter()
        verdict = run_check(job["id"], job["path"], group)
        verdicts = comm.allgather_object(verdict, group) if use_mpi else [verdict]
        if group is None or group.rank == 0:
            line = {"id": job["id"], "ranks": verdicts,
                    "seconds": round(time.perf_counter() - start, 3)}
            with open(results_file, "a") as f:
                f.write(json.dumps(line) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
