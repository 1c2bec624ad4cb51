"""DataParallel (master style) and DistributedDataParallel on 1, 2, 4 and 8 real MPI ranks.

One launch per rank count (tests/workers/dp_checks.py:check_all) trains every
configuration for 5 AdamW steps next to one process (minimegatron/checks/data.py)
and returns the differences, the trace's bytes per step and the error messages.
Tolerance: 1e-10 absolute in float64.
"""
import pytest

from mpi_harness import run_mpi

from minimegatron.data.demo import SMALL_CONFIG
from minimegatron.nn import GPT

TOL = 1e-10
DDP = ["ddp_overlap", "ddp_tiny_buckets", "ddp_4k_buckets", "ddp_4k_no_overlap",
       "ddp_no_sync_accumulate"]
PARAMS = GPT(SMALL_CONFIG).num_parameters()
G = 8 * PARAMS                                      # gradient (and weight) bytes, float64


@pytest.fixture(scope="module", params=[1, 2, 4, 8])
def launch(request):
    return request.param, run_mpi(request.param, "workers/dp_checks.py:check_all", timeout=150)


def test_ddp_equals_one_process(launch):
    nprocs, results = launch
    for rank, res in enumerate(results):
        for name in DDP:
            r = res[name]
            assert max(r["loss"], r["grad"], r["weight"]) < TOL, (rank, name, r)
    assert results[0]["ddp_tiny_buckets"]["buckets"] == len(GPT(SMALL_CONFIG).parameters())
    assert results[0]["ddp_4k_buckets"]["buckets"] > 1
    assert results[0]["ddp_overlap"]["buckets"] == 1


def test_data_parallel_equals_one_process(launch):
    nprocs, results = launch
    root = results[0]["data_parallel"]
    assert max(root["loss"], root["grad"], root["weight"]) < TOL, root
    for rank, res in enumerate(results):
        assert res["data_parallel"]["final_weight"] < TOL, rank
        if rank:
            assert res["data_parallel"]["loss"] is None   # only the root has the loss


def test_data_parallel_root_carries_the_traffic(launch):
    """Exact trace bytes per step (flat model for rooted ops) and root = (N-1) x other."""
    N, results = launch
    if N == 1:
        assert results[0]["data_parallel"]["sent"] == 0
        return
    B, T, V = 8, SMALL_CONFIG.seq_len, SMALL_CONFIG.vocab_size
    X, O = 8 * B * T, 8 * B * T * V                  # int64 inputs, float64 logits
    root, others = results[0]["data_parallel"], [r["data_parallel"] for r in results[1:]]
    assert root["sent"] == (N - 1) * G + (X - X // N) + (O - O // N)
    assert root["recv"] == (O - O // N) + (N - 1) * G
    for r in others:
        assert r["sent"] == O // N + G and r["recv"] == G + X // N + O // N
        assert root["sent"] + root["recv"] == (N - 1) * (r["sent"] + r["recv"])
    # the root alone holds gradients and optimizer state
    assert root["memory"]["optimizer"] == 2 * G and root["memory"]["grads"] == G
    assert all(r["memory"]["optimizer"] == 0 and r["memory"]["grads"] == 0 for r in others)


def test_ddp_ranks_move_equal_bytes_ring_model(launch):
    N, results = launch
    ring = 2 * (N - 1) / N * G
    for name in DDP:
        moved = {(r[name]["sent"], r[name]["recv"]) for r in results}
        assert len(moved) == 1, (name, moved)        # no rank is special
        sent, recv = moved.pop()
        assert sent == recv
        assert ring - results[0][name]["buckets"] <= sent <= ring, (name, sent, ring)
    assert results[0]["ddp_overlap"]["sent"] == 2 * (N - 1) * G // N  # one bucket: exact


def test_overlap_starts_all_reduce_during_backward(launch):
    """first bucket's iall_reduce start < end of the "backward" span, in every step."""
    _, results = launch
    for res in results:
        for name in ("ddp_tiny_buckets", "ddp_4k_buckets", "ddp_no_sync_accumulate"):
            assert res[name]["overlap_lead"] > 0, (name, res[name]["overlap_lead"])
        assert res["ddp_4k_no_overlap"]["overlap_lead"] < 0


def test_clear_errors_on_every_rank(launch):
    N, results = launch
    if N == 1:
        return
    messages = [res["errors"] for res in results]
    for key, words in (("uneven_shard", "does not split evenly"),
                       ("uneven_dp", "DataParallel batch of"),
                       ("mismatch", "parameters differ across")):
        assert len({m[key] for m in messages}) == 1, key   # the same message everywhere
        assert words in messages[0][key] and f"{N} ranks" in messages[0][key], messages[0][key]
    assert "blocks.0.mlp.fc1.weight" in messages[0]["mismatch"]
