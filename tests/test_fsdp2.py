"""FSDP2 (per-parameter sharding on dim 0) and HSDP: equal to one process on 1-8 ranks, the
bytes of the trace and the peak gathered memory equal to tools/memory_fsdp's, every weight
freed after backward, frozen and float32 weights, resharding to any data-parallel size."""
import numpy as np
import pytest

from mpi_harness import run_mpi
from minimegatron import comm
from minimegatron.data.demo import SMALL_CONFIG
from minimegatron.nn import GPT
from minimegatron.parallel.data_parallel.fsdp2 import fully_shard, hsdp_groups, shard_rows
from minimegatron.tools.memory_fsdp import fsdp2_bytes, shard_values

ROWS = [("n2", {"shard": 2}), ("n4", {"shard": 4}), ("n8", {"shard": 8}),
        ("n4_no_prefetch", {"shard": 4, "prefetch": False}),
        ("hsdp2x4", {"shard": 4, "replicate": 2}), ("hsdp4x2", {"shard": 2, "replicate": 4}),
        ("frozen_float32", {"shard": 4, "frozen": True, "float32": True}),
        ("never_resharded", {"shard": 4, "steps": 1, "keep_gathered": True})]


def test_a_shard_is_whole_rows_of_the_padded_weight():
    w = np.arange(13 * 3.0).reshape(13, 3)
    parts = [shard_rows(w, r, 4) for r in range(4)]                     # c = 4 rows each
    assert [p.shape for p in parts] == [(4, 3)] * 4
    np.testing.assert_array_equal(np.concatenate(parts)[:13], w)
    assert not np.concatenate(parts)[13:].any()                        # 3 zero rows of padding
    assert shard_values((13, 3), 4) == 12 and shard_values((5,), 8) == 1


def test_the_calculator_counts_pairs_with_prefetch_and_singles_without():
    units = [[((16, 4), "float64", False)], [((4,), "float64", True)], [((8, 8), "float64", False)]]
    with_prefetch, alone = fsdp2_bytes(units, 4), fsdp2_bytes(units, 4, prefetch=False)
    # shards of 16, 1 and 16 values (c = 4, 1, 2 rows); gathered: 4 x that x 8 bytes
    assert with_prefetch["gathered_peak"] == 4 * (16 + 1) * 8          # two units at once
    assert alone["gathered_peak"] == 4 * 16 * 8                        # the largest alone
    assert with_prefetch["grads"] == (4 * 4 + 2 * 8) * 8                # the frozen one: none
    assert with_prefetch["sent"] == 2 * 3 * (16 + 1 + 16) * 8 + 3 * (16 + 16) * 8


def test_bad_layouts_are_refused_before_any_message():
    from types import SimpleNamespace
    for shard in (3, 0, True, 2.0):
        with pytest.raises(ValueError, match="HSDP: shard="):
            hsdp_groups(SimpleNamespace(size=4, rank=0), shard)
    model, world = GPT(SMALL_CONFIG), comm.world()
    model.extra = model.blocks[0].ln1.weight                           # the root owns one
    with pytest.raises(ValueError, match="the root"):
        fully_shard(model, world)


@pytest.fixture(scope="module")
def trained():
    return run_mpi(8, "workers/fsdp2_checks.py:cases", args=(ROWS,), timeout=600)


@pytest.mark.parametrize("label", [r[0] for r in ROWS if r[0] != "never_resharded"])
def test_fsdp2_trains_equal_to_one_process(trained, label):
    for rank, res in enumerate(trained):
        r = res[label]
        # float32 LayerNorms: their gradients are reduced in float32 (one process sums in
        # float64, then rounds), so they and what follows them agree to float32's precision
        tight = 1e-9 if label == "frozen_float32" else 1e-12
        assert max(r["loss"], r["grad"], r["weight"]) < tight, (rank, label, r)
        assert max(r["grad32"], r["weight32"]) < 1e-6, (rank, label, r)
        assert r["freed"], (rank, label)                   # every W dropped after backward


@pytest.mark.parametrize("label", [r[0] for r in ROWS if r[0] != "never_resharded"])
def test_bytes_and_memory_equal_the_calculator(trained, label):
    for rank, res in enumerate(trained):
        r = res[label]
        assert r["sent"] == r["predicted"]["sent"] > 0, (rank, label, r)
        for key in ("weights", "grads", "optimizer", "gathered_peak"):
            assert r["measured"][key] == r["predicted"][key], (rank, label, key, r)


def test_prefetch_holds_two_units_and_hsdp_adds_the_replica_all_reduce(trained):
    r = trained[0]
    assert r["n4"]["measured"]["gathered_peak"] > r["n4_no_prefetch"]["measured"]["gathered_peak"]
    assert r["hsdp2x4"]["sent"] > r["n4"]["sent"]


def test_frozen_weights_get_no_gradient_and_float32_ones_stay_float32(trained):
    for res in trained:
        r = res["frozen_float32"]
        assert r["frozen_grad"] and r["dtypes_kept"] and 0 < r["grad32"], r   # float32 ran


def test_a_unit_never_resharded_is_caught(trained):
    assert not any(res["never_resharded"]["freed"] for res in trained)


def test_weights_and_adam_state_reshard_to_any_data_parallel_size():
    results = run_mpi(8, "workers/fsdp2_checks.py:reshard", timeout=300)
    for rank, res in enumerate(results):
        assert all(diff < 1e-12 for diff in res.values()), (rank, res)


def test_verify_rows_equal_one_process_and_send_the_formula():
    for rank, res in enumerate(run_mpi(8, "workers/fsdp2_checks.py:verify_rows", timeout=300)):
        for label in ("fsdp2", "hsdp"):
            r = res[label]
            assert max(r["loss"], r["grad"], r["weight"]) < 1e-12, (rank, label, r)
            assert r["sent"] == r["formula"] > 0, (rank, label, r)
        assert res["float16"]["loss"] < 1e-3 and res["float16"]["weight"] < 1e-3, res["float16"]
