"""How the grader's runner ends a rank (``exercise_checks/runner.py``: ``leave``).

MPICH's Hydra proxy SIGKILLs every rank still running when one rank's process ends
without having told it that it finalized, and MPICH tells it only at process exit
(an exit handler of libmpi), after MPI_Finalize. A rank that ended with ``os._exit``
skipped that: a slower rank (still in MPI_Finalize on a busy machine) was killed by
signal 9, the launch failed, and the grader reported the check as ERROR.
"""
from mpi_harness import run_script

LAUNCHES = 2         # os._exit: killed in about 5 launches of 6 each, so both pass ~1 in 36
SLOW_S = 1.0         # how long ranks 1..3 stay after MPI_Finalize, rank 0 already gone


def test_a_rank_slower_after_finalize_is_not_killed():
    for _ in range(LAUNCHES):
        code, out, err = run_script(4, "tests/workers/slow_after_finalize.py", [SLOW_S],
                                    timeout=60)
        assert code == 0, (code, out, err)          # Hydra: "EXIT CODE: 9" with os._exit
        assert "Killed" not in out + err, out + err
        assert [out.count(f"rank {r}: finalized") for r in range(4)] == [1] * 4, out
        assert "atexit hook ran" not in out + err, out + err   # no Python exit hook runs
