"""Bound (persistent) all-reduce: bitwise equal to comm.all_reduce, traced, checked, waited.

One launch per rank count (2 and 4) runs tests/workers/bound_checks.py on the
world and on the strict subgroups of even and odd ranks, under both waits, with
MPI's persistent all-reduce and with the fallback taken when ``Allreduce_init``
is missing. DDP with bound buckets against one process: tests/test_data_parallel.py.
"""
import pytest

from mpi_harness import run_mpi

from minimegatron.runtime import hang_report


@pytest.fixture(scope="module", params=[2, 4])
def checks(request):
    return request.param, run_mpi(request.param, "workers/bound_checks.py:check_all",
                                  timeout=180)


def _groups(nprocs, rank):
    """(name, group size, world ranks) of the groups the worker used on this rank."""
    half = list(range(rank % 2, nprocs, 2))
    return [("world", nprocs, list(range(nprocs))), ("half", len(half), half)]


def test_bound_equals_comm_all_reduce_bitwise(checks):
    nprocs, results = checks
    for rank, res in enumerate(results):
        assert res["half_ranks"] == _groups(nprocs, rank)[1][2]
        for name, _, _ in _groups(nprocs, rank):
            for wait in ("spin", "yield"):
                for path in ("persistent", "fallback"):
                    cases = res[f"{name}_{wait}_{path}"]
                    assert len(cases) == 12, cases
                    assert not any(cases.values()), (rank, name, wait, path, cases)


def test_overlap_trace_and_start_twice(checks):
    nprocs, results = checks
    for rank, res in enumerate(results):
        for name, size, _ in _groups(nprocs, rank):
            for wait in ("spin", "yield"):
                for key in (f"{name}_{wait}_overlap", f"{name}_{wait}_fallback_overlap"):
                    got = res[key]
                    assert got["mean"] == 0.0 and got["sum"] == 0.0, (rank, key, got)
                    assert got["spans"] == 2 and got["labels"] == ["bucket0", "bucket1"], got
                    assert sorted(got["nbytes"]) == [24, 40] and got["ordered"] == 1, got
                    assert got["first_sent"] == got["want_sent"] == (
                        2 * (size - 1) * 40 // size), got
                    assert got["twice"] == 1, got


def test_faults_sees_the_rank_wait_in_the_bound_all_reduce(checks):
    nprocs, results = checks
    for rank, res in enumerate(results):
        for name, _, ranks in _groups(nprocs, rank):
            for wait in ("spin", "yield"):
                seen = res[f"{name}_{wait}_faults"]
                assert seen["op"] == "all_reduce" and seen["ranks"] == ranks, seen
                assert seen["group"].startswith(name) and seen["in_wait"], seen


def test_checking_mode_catches_ranks_starting_different_bound_calls(checks):
    nprocs, results = checks
    for rank, res in enumerate(results):
        assert res["world_mismatch"] == 1 and res["half_mismatch"] == 1, rank


def test_bad_input_raises_on_every_rank_before_any_array_moves(checks):
    nprocs, results = checks
    for rank, res in enumerate(results):
        for name, size, _ in _groups(nprocs, rank):
            bad = res[f"{name}_bad"]
            assert bad.pop("after") == 0.0, bad
            if size == 1:                 # one rank cannot disagree with itself
                assert bad.pop("shape_differs") == 0, bad
            assert len(bad) == 9 - (size == 1) and all(v == 1 for v in bad.values()), bad


def test_the_bound_wait_is_marked_for_the_hang_report():
    from minimegatron.comm import bound
    from minimegatron.comm.waits import WAITS
    for method in (bound.BoundAllReduce.wait, bound.BoundAllReduce.__call__):
        assert method.__code__ in WAITS and WAITS[method.__code__] is None
    assert hang_report.marks() is WAITS
