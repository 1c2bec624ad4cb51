"""MoE checkpoints with ZeRO-1/2 across grids, the optimizer's kind compared on load, numpy
integers in configs (tests/workers/ckpt_moe_zero.py, one 4-rank launch).

Before: ``MoETrainer(zero_stage=1 or 2)`` could neither save nor load ("optimizer
ExpertShardedOptimizer is not supported"); a float16 SGD-with-momentum file loaded into a
float16 AdamW run (both "MixedPrecisionOptimizer"); ``MoEConfig(num_experts=np.int64(8))``
trained but every save failed (int64 is not JSON serializable), and GPTConfig refused
np.int64 outright.
"""
import pytest

from mpi_harness import run_mpi
from test_checkpoint import assert_resumed

LEGS = {"z1_ep2": 2, "z1_same": 4, "z2_pp2": 4, "z0_one": 6, "z0_again": 6, "z2_ep4": 8,
        "z1_tp2": 8}                                      # leg: the step count after it


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    directory = tmp_path_factory.mktemp("moe_zero")
    return run_mpi(4, "workers/ckpt_moe_zero.py:check_moe_zero", args=(str(directory),),
                   timeout=300)


@pytest.mark.parametrize("leg", sorted(LEGS))
def test_moe_with_zero_resumes_on_any_grid_like_one_process(runs, leg):
    """dp 4 x ep 2 ZeRO-1 -> (the same; dp 2 x pp 2 x ep 2 ZeRO-2 -> one process without
    ZeRO -> dp 4 x ep 4 ZeRO-2, dp 2 x tp 2 x ep 2 ZeRO-1): 2 AdamW steps after each load,
    losses and weights next to one process that never stopped."""
    assert_resumed(runs, leg, LEGS[leg])


def test_moe_zero_file_gives_each_rank_its_slices_back_to_the_bit(runs):
    for res in runs:
        assert res["error_z1_save"] == "" and res["exact_z1_same"] == 0.0
    assert runs[0]["meta_z1"] == {"grid": {"dp": 4, "pp": 1, "tp": 1, "cp": 1, "ep": 2,
                                           "zero": 1},
                                  "optimizer": {"class": "AdamW", "kind": "AdamW",
                                                "fields": ["m", "v"], "keys": ["m", "v"]}}


@pytest.mark.parametrize("case, ours", [
    ("adamw_zero1", "MixedPrecisionOptimizer(AdamW) (keeps: m, master, v)"),
    ("adamw", "MixedPrecisionOptimizer(AdamW) (keeps: m, master, v)"),
    ("sgd_plain", "MixedPrecisionOptimizer(SGD) (keeps: master)")])
def test_a_file_of_another_update_rule_is_refused_with_both_named(runs, case, ours):
    """float16 SGD with momentum (master, momentum) offered to float16 AdamW (ZeRO-1 and
    plain) and to SGD without momentum: the same outer class, refused, no weight moved."""
    for res in runs:
        assert res[f"kind_{case}"].endswith(
            "holds the state of MixedPrecisionOptimizer(SGD) (per weight: master, momentum); "
            f"this run's optimizer is {ours}"), res[f"kind_{case}"]
        assert res[f"kind_{case}_moved"] == 0


def test_the_same_update_rule_loads_on_another_grid(runs):
    assert runs[0]["kind_meta"] == {"class": "MixedPrecisionOptimizer",
                                    "kind": "MixedPrecisionOptimizer(SGD)",
                                    "fields": ["master", "momentum"],
                                    "keys": ["master", "momentum"]}
    for res in runs:
        assert res["kind_sgd_momentum"] == "" and res["kind_sgd_momentum_moved"] > 0
        assert 0 < res["kind_sgd_momentum_loss"] < 10


def test_numpy_integers_train_save_as_ints_and_load_exactly(runs):
    for res in runs:
        assert res["ints_save"] == "" and res["ints_exact"] == 0.0
        assert res["ints_config"] == [True, "int", "int"]
    moe, config, grid = runs[0]["ints_meta"]
    assert moe["num_experts"] == 8 and config["n_layer"] == 2 and grid["zero"] == 2
    assert runs[0]["ints_types"] == ["bool", "float", "int", "str"]   # bool: GPTConfig.fp8
