"""Collectives against NumPy on 1, 2, 3, 4 and 8 real MPI ranks, and the trace's byte model.

One launch per rank count runs every check (tests/workers/comm_checks.py) and
returns {check: max abs error}; inputs are small integers so every error is 0.
"""
import pytest

from mpi_harness import run_mpi

from minimegatron.comm import trace

COLLECTIVES = ["all_reduce_sum", "all_reduce_mean", "all_reduce_max", "all_reduce_inplace",
               "iall_reduce_eq", "reduce", "broadcast", "ibroadcast_eq", "scatter_rows3",
               "gather_axis-1", "all_gather_axis-1", "iall_gather_axis-1_eq",
               "reduce_scatter_rows3", "isend_irecv_ring", "test_then_wait",
               "all_to_all_axis0", "all_to_all_axis-1", "iall_to_all_axis2_eq",
               "all_to_all_twice_is_identity", "all_to_all_out", "all_to_allv",
               "all_to_allv_axis1"]


@pytest.fixture(scope="module", params=[1, 2, 3, 4, 8])
def checks(request):
    return request.param, run_mpi(request.param, "workers/comm_checks.py:check_all", timeout=90)


def test_every_collective_matches_numpy(checks):
    nprocs, results = checks
    assert len(results) == nprocs
    for rank, res in enumerate(results):
        assert res["size"] == nprocs and res["name"] == "world"
        assert res["ranks"] == list(range(nprocs))
        for dtype in ("float32", "float64"):
            for name in COLLECTIVES:
                assert f"{name}[{dtype}]" in res, name
        errors = {k: v for k, v in res.items() if "[" in k or k == "int_all_reduce"}
        assert len(errors) >= 2 * 42  # every check ran, for both dtypes
        bad = {k: v for k, v in errors.items() if v != 0.0}
        assert not bad, f"rank {rank} of {nprocs}: {bad}"
        assert res["mean_of_ints_raises"] == 1 and res["unknown_op_raises"] == 1
        assert res["all_to_all_uneven_raises"] == 1 and res["all_to_allv_bad_sizes_raises"] == 1
    if nprocs >= 2:
        assert "send_recv[float64]" in results[-1]


def _expected_bytes(op, rank, N, n=8000):
    """The documented model, written out for n = 8000 bytes per rank and root 0."""
    if N == 1:
        return 0, 0
    full = N * n
    return {
        "all_reduce": (3 * 2 * (N - 1) * n // N,) * 2,
        "all_gather": ((N - 1) * n,) * 2,
        "reduce_scatter": ((N - 1) * n,) * 2,
        "broadcast": ((N - 1) * n, 0) if rank == 0 else (0, n),
        "scatter": (full - n, 0) if rank == 0 else (0, n),
        "gather": (0, full - n) if rank == 0 else (n, 0),
        "reduce": (0, (N - 1) * n) if rank == 0 else (n, 0),
        "all_to_all": ((N - 1) * n,) * 2,
    }[op]


@pytest.mark.parametrize("nprocs", [1, 4])
def test_trace_counts_bytes_by_the_model(nprocs):
    results = run_mpi(nprocs, "workers/comm_checks.py:check_trace", timeout=60)
    for rank, res in enumerate(results):
        summary = res["summary"]
        assert summary["all_reduce"]["count"] == 3
        for op in ("all_gather", "reduce_scatter", "broadcast", "scatter", "gather", "reduce",
                   "all_to_all"):
            assert summary[op]["count"] == 1, op
        for op in ("all_reduce", "all_gather", "reduce_scatter", "broadcast", "scatter",
                   "gather", "reduce", "all_to_all"):
            got = summary[op]["bytes_sent"], summary[op]["bytes_recv"]
            assert got == _expected_bytes(op, rank, nprocs), (op, rank, got)
        if nprocs >= 2 and rank in (0, 1):
            op = "send" if rank == 0 else "recv"
            assert summary[op] == {**summary[op], "count": 1,
                                   "bytes_sent": 8000 * (rank == 0),
                                   "bytes_recv": 8000 * (rank == 1)}
        spans = res["spans"]
        assert all(s["start"] <= s["end"] for s in spans)
        assert [s["label"] for s in spans if s["op"] == "all_reduce"] == [None, None, "layer0"]
        forward = [s for s in spans if s["op"] == "forward"]
        assert forward[0]["kind"] == "compute" and forward[0]["label"] == "mb3"
        assert all(s["nbytes"] == 8000 for s in spans if s["op"] in ("all_reduce", "gather"))
        assert res["disabled_count"] == 0
    assert results[0]["gathered_lengths"] == [len(r["spans"]) for r in results]
    assert all(r["gathered_lengths"] is None for r in results[1:])


def test_byte_model_single_rank_moves_nothing():
    for op in ("all_reduce", "all_gather", "reduce_scatter", "broadcast", "scatter", "gather",
               "reduce"):
        assert trace.bytes_moved(op, 4096, 1, is_root=True) == (0, 0)
    assert trace.bytes_moved("all_reduce", 4096, 8) == (7168, 7168)
    assert trace.bytes_moved("broadcast", 4096, 8, is_root=True) == (7 * 4096, 0)
    assert trace.bytes_moved("all_to_all", 4096, 8) == (3584, 3584)   # keeps its 1/8
    with pytest.raises(ValueError):
        trace.bytes_moved("scan", 1, 2)


def test_summary_and_format():
    spans = [{"op": "all_reduce", "bytes_sent": 10, "bytes_recv": 10, "start": 0.0, "end": 1.0},
             {"op": "all_reduce", "bytes_sent": 5, "bytes_recv": 5, "start": 1.0, "end": 1.5}]
    table = trace.summary(spans)
    assert table == {"all_reduce": {"count": 2, "bytes_sent": 15, "bytes_recv": 15,
                                    "seconds": 1.5}}
    assert "all_reduce" in trace.format_summary(table)


@pytest.mark.parametrize("nprocs", [1, 3])
def test_out_equals_fresh_output_and_is_written_in_place(nprocs):
    """Every collective's out= result is the fresh result, in out itself; with axis 0
    comm/collectives.py allocates no buffer (MPI writes out), under both ways of waiting."""
    results = run_mpi(nprocs, "workers/comm_out_checks.py:check_out", timeout=90)
    for rank, res in enumerate(results):
        assert len(res) == 2 * 14, sorted(res)
        assert res == {k: 0.0 for k in res}, (rank, {k: v for k, v in res.items() if v})


def test_bad_out_raises_on_every_rank_before_any_collective():
    results = run_mpi(2, "workers/comm_out_checks.py:check_bad_out", timeout=60)
    for res in results:
        assert res == {"shape": 1, "dtype": 1, "readonly": 1, "overlap": 1,
                       "inplace_and_out": 1, "not_an_array": 1, "gather_shape": 1,
                       "after": 0.0}


def test_waiting_ranks_give_the_cpu_away_when_they_share_cores():
    """Rank 0 sleeps 0.2 s before a broadcast. Ranks that share cores (auto) wait with
    little CPU; spinning ones (forced, or auto with a core each) burn what they get (a
    loaded machine gives them less: the best of 3 rounds is compared)."""
    results = run_mpi(3, "workers/comm_out_checks.py:check_waiting", timeout=60)
    assert results[0]["oversubscribed"] == (3 > results[0]["cores"])
    for res in results[1:]:      # 3 ranks spinning on 2 cores would get about 2/3 each
        assert res["auto_shared"] < 0.5, res
        assert min(res["spin"], res["auto_own_core"]) > 1.5 * res["auto_shared"], res
