"""Run the student side of exercise checks in a fresh process (the grader starts it).

    python -m minimegatron.classroom.exercise_checks.runner JOBS.json RUN_DIR [--mpi]

JOBS.json is a list of {"id": "1.1", "key": K, "path": DIR, "seed": S}: run
exercise 1.1's ``collect`` (``lesson.py``) with DIR first on sys.path, so
``import minimegatron`` is the copy in DIR. Between jobs with different DIRs
every minimegatron module is dropped from sys.modules and imported again from
the new DIR, so one process (or one mpiexec launch) runs many exercises, each
against its own copy.

With --mpi this runs on every rank of an mpiexec job of 4 ranks, laid out as
a 2 x 2 grid in Megatron's order (``ProcessGrid(dp=2, pp=1, tp=2)``): a check
of kind "tp" runs on the tp groups [0, 1] and [2, 3], one of kind "dp" on the
dp groups [0, 2] and [1, 3]. Each group is a strict subset of the world, so a
collective over the world instead of the group gives a wrong number. Every MPI call
the trace does not show (the pickle API, a direct call on ``group.comm``) is recorded
in the trace too (``mpi_count.py``).

This process runs student code, so it decides NOTHING. Each rank appends, per
job, one line to ``RUN_DIR/evidence_rank<r>.jsonl``:

    {"key", "id", "rank", "status": "ok" | "todo" | "error", "message", "evidence",
     "seconds"}

A chapter-1 block the check runs through that is still the handout's raise is
stood in for (``standins.py``: the judge's way, no answer), never the exercise's own.

``todo``: the student's block still raises NotImplementedError; ``error``: the
student's code raised (the message says where). The grader watches these files
(a check that makes no progress is a HANG), reads them back as data and judges
them itself (``grader.py``). The jobs file is read and the evidence written through
``runtime/plain_files.py``: student code may plant a link or a FIFO at either name, and
neither is ever opened through (the runner ends with NotPlain; the grader names what
was planted, ERROR). The process ends right after the last line with C's
``exit`` (``leave``), so no ``atexit`` hook of student code runs.
"""
import ctypes
import importlib
import json
import os
import sys
import time
import traceback

from minimegatron.runtime.plain_files import append_plain, read_plain
from minimegatron.runtime.rank_setup import rank_from_env


def use_copy(path, previous):
    """Forget every imported minimegatron module and put ``path`` first on sys.path."""
    for name in [n for n in sys.modules if n == "minimegatron" or n.startswith("minimegatron.")]:
        del sys.modules[name]
    if previous in sys.path:
        sys.path.remove(previous)
    sys.path.insert(0, path)
    importlib.invalidate_caches()


def where_it_failed(tb, path, skip=()):
    """'in Class.method: <source line>' for the deepest frame inside the copy under test
    (not in a file whose name is in ``skip``)."""
    frames = [f for f in traceback.extract_tb(tb) if f.filename.startswith(path)
              and os.path.basename(f.filename) not in skip]
    if not frames:
        return ""
    frame = frames[-1]
    return f" (in {frame.name}: {frame.line.strip()})" if frame.line else f" (in {frame.name})"


def collect(ex_id, path, group, seed):
    """(status, message, evidence): "ok" with the evidence, or "todo" / "error"."""
    from minimegatron.classroom.exercise_checks import by_id
    from minimegatron.classroom.exercise_checks.evidence import encode
    from minimegatron.classroom.exercise_checks.standins import install
    exercise = by_id(ex_id)
    try:
        install(but=(ex_id,))          # chapter 1's blocks still blank: stood in for
        module = importlib.import_module(
            f"minimegatron.classroom.exercise_checks.{exercise.module}")
        evidence = module.LESSONS[ex_id].collect(group, seed)
        if group is not None:
            evidence = {**evidence, "rank": group.rank, "group": list(group.ranks)}
        return "ok", "", encode(evidence)
    except NotImplementedError as err:
        return "todo", str(err), None
    except Exception as err:   # noqa: BLE001 -- a student's bug, reported as a failure
        where = where_it_failed(err.__traceback__, path)
        return "error", f"{type(err).__name__}: {err}{where}", None


def check_group(ex_id):
    """The group this rank checks exercise ex_id on: its tp or dp group of a 2 x 2 grid."""
    from minimegatron.classroom.exercise_checks import by_id
    from minimegatron.parallel.grid import ProcessGrid
    grid = ProcessGrid(dp=2, pp=1, tp=2)
    return grid.tp if by_id(ex_id).group == "tp" else grid.dp


def leave(code):
    """End this process now with ``code``: the C library's ``exit``, never Python's.

    Not ``os._exit``: MPICH (4.1 and later) tells its process manager that a rank
    finalized only at process exit (PMI ``cmd=finalize``, sent by an exit handler of
    libmpi), not in MPI_Finalize. ``os._exit`` skips it, so Hydra's proxy takes the
    rank for one that died and SIGKILLs every rank of the launch still running: a
    rank that is merely slower (still in MPI_Finalize on a busy machine) ends by
    signal 9, mpiexec says "EXIT CODE: 9", and the grader turns the check into ERROR.

    C's ``exit`` runs the C exit handlers (MPI's) and nothing of Python: no atexit
    hook, no thread joined, no ``__del__``. It is called through ``PyDLL``, which
    keeps the GIL, so no other Python thread runs while the handlers do.
    """
    sys.stdout.flush()
    sys.stderr.flush()
    try:
        ctypes.PyDLL(None).exit(code)
    except (OSError, AttributeError):     # no C library to call (not Linux or macOS)
        pass
    os._exit(code)


def main(argv):
    jobs_file, run_dir, use_mpi = argv[0], argv[1], "--mpi" in argv
    jobs = json.loads(read_plain(jobs_file))       # never through a link or a FIFO
    rank = rank_from_env() if use_mpi else 0
    out_file = os.path.join(run_dir, f"evidence_rank{rank}.jsonl")
    current = None
    for job in jobs:
        if job["path"] != current:
            use_copy(job["path"], current)
            current = job["path"]
        group = None
        if use_mpi:
            from minimegatron.classroom.exercise_checks.mpi_count import count_mpi_calls
            from minimegatron.runtime import setup
            setup()                         # one failing rank ends the launch, named
            count_mpi_calls()            # an MPI call the trace does not show is seen too
            group = check_group(job["id"])
        start = time.perf_counter()
        status, message, evidence = collect(job["id"], job["path"], group, job["seed"])
        line = json.dumps({"key": job["key"], "id": job["id"], "rank": rank, "status": status,
                           "message": message, "evidence": evidence,
                           "seconds": round(time.perf_counter() - start, 3)})
        append_plain(out_file, line + "\n")        # a plain file of one link, or NotPlain
    if use_mpi:
        from minimegatron.comm.local import finalize
        finalize()
    leave(0)             # no atexit hook of student code runs after the last line


if __name__ == "__main__":
    main(sys.argv[1:])
