"""Aux-loss-free balancing (DeepSeek-V3): the sign rule, the bias on the choice only, the
load counted once per forward, and MoETrainer on 8 ranks equal to one process, biases too."""
import dataclasses

import numpy as np
import pytest

from mpi_harness import run_mpi
from minimegatron.autodiff.tensor import Tensor
from minimegatron.checks.moe import MOE, MOE_CONFIG, moe_reference
from minimegatron.nn.moe import MoE, MoEConfig, bias_update, take_load
from minimegatron.parallel.pipeline_parallel.recompute import recompute

BIASED = dataclasses.replace(MOE, bias_update_rate=0.05, aux_loss_coeff=0.0)


def assert_sign_rule(rule):
    """rule(bias, load, rate) must move each bias by +-rate toward the mean load, 0 at it."""
    bias = np.array([0.5, 0.0, -0.25, 0.0])
    got = rule(bias, np.array([5.0, 1.0, 2.0, 0.0]), 0.1)          # mean 2
    np.testing.assert_array_equal(got, bias + 0.1 * np.array([-1.0, 1.0, 0.0, 1.0]))
    flat = rule(bias, np.array([9.0, 9.0, 9.0, 9.0]), 0.1)        # balanced: unchanged
    np.testing.assert_array_equal(flat, bias)
    far = rule(np.zeros(2), np.array([1000.0, 0.0]), 1e-3)         # magnitude does not count
    np.testing.assert_array_equal(far, np.array([-1e-3, 1e-3]))


def test_bias_moves_by_the_sign_of_the_load_deviation_not_its_size():
    assert_sign_rule(bias_update)


@pytest.mark.parametrize("mutant", [
    lambda b, load, r: b + r * (load.mean() - load),               # by magnitude
    lambda b, load, r: b + r * np.sign(load - load.mean()),        # the wrong way round
    lambda b, load, r: b + r * np.sign(load.mean() - load) - r * np.sign(
        load.mean() - load).mean()])                               # centred (not the rule)
def test_the_rule_check_fails_each_wrong_rule(mutant):
    with pytest.raises(AssertionError):
        assert_sign_rule(mutant)


def test_the_bias_picks_the_experts_but_the_gates_stay_the_router_probs():
    moe = MoEConfig(num_experts=4, top_k=2, capacity_factor=None, bias_update_rate=1e-3)
    layer = MoE(6, moe)
    rng = np.random.default_rng(0)
    for p in layer.parameters():
        p.data = rng.normal(size=p.shape) * 0.3
    x = rng.normal(size=(2, 5, 6))
    layer.expert_bias = np.array([0.0, 0.0, 0.0, 10.0])            # expert 3 always first
    y = layer(Tensor(x)).data
    plan = layer.last_plan
    assert (plan.choice[..., 0] == 3).all()
    logits = x @ layer.router.weight.data                          # (b, T, E)
    probs = np.exp(logits - logits.max(-1, keepdims=True))
    probs /= probs.sum(-1, keepdims=True)
    want = np.zeros_like(x)
    w1, b1 = layer.experts.fc1.weight.data, layer.experts.fc1.bias.data
    w2, b2 = layer.experts.fc2.weight.data, layer.experts.fc2.bias.data
    for s in range(2):
        for t in range(5):
            for e in plan.choice[s, t]:
                h = x[s, t] @ w1[e] + b1[e]
                h = 0.5 * h * (1 + np.tanh(np.sqrt(2 / np.pi) * (h + 0.044715 * h ** 3)))
                want[s, t] += probs[s, t, e] * (h @ w2[e] + b2[e])   # unbiased gate
    np.testing.assert_allclose(y, want, rtol=1e-10, atol=1e-12)
    assert take_load([layer]).tolist() == [np.bincount(plan.choice.ravel(), minlength=4)
                                           .tolist()]


def test_a_recomputed_layer_counts_its_load_once():
    layer = MoE(6, dataclasses.replace(BIASED, num_experts=4, capacity_factor=None))
    x = Tensor(np.random.default_rng(1).normal(size=(2, 4, 6)), requires_grad=True)
    recompute(layer, x).sum().backward()                           # forward runs twice
    assert len(layer.load_log) == 1 and layer.load_log[0].sum() == 2 * 4 * 2


def test_one_process_with_the_bias_routes_otherwise_than_without_it():
    """The rows below are not vacuous: over 4 steps the bias changes the choices."""
    with_bias = moe_reference(MOE_CONFIG, BIASED, 4)
    without = moe_reference(MOE_CONFIG, dataclasses.replace(BIASED, bias_update_rate=0.0), 4)
    assert abs(with_bias["loss"][-1] - without["loss"][-1]) > 1e-4
    assert all(np.abs(b).max() > 0 for b in with_bias["bias"][0].values())


ROWS = [("dp8ep4", (8, 1, 1, 1, 4), {"steps": 4}),
        ("dropless", (8, 1, 1, 1, 2), {"steps": 4, "moe": {"capacity_factor": None}}),
        ("dp2pp2tp2_recompute", (2, 2, 2, 1, 2), {"steps": 3, "micro_batches": 2,
                                                  "checkpoint_activations": True}),
        ("cp2tp2", (2, 1, 2, 2, 4), {"steps": 3, "batch_size": 4,
                                     "moe": {"capacity_factor": None}}),
        ("zero2", (8, 1, 1, 1, 4), {"steps": 3, "zero_stage": 2}),
        ("wrong_group", (2, 1, 2, 2, 4), {"steps": 3, "batch_size": 4, "load_group": "dp",
                                          "moe": {"capacity_factor": None}})]


@pytest.fixture(scope="module")
def trained():
    return run_mpi(8, "workers/balancing_checks.py:trainer_rows", args=(ROWS,), timeout=600)


@pytest.mark.parametrize("label", [r[0] for r in ROWS if r[0] != "wrong_group"])
def test_moe_trainer_with_the_bias_equals_one_process(trained, label):
    for res in trained:
        r = res[label]
        assert max(r["loss"], r["grad"], r["weight"], r["bias"]) < 1e-12, (label, r)


def test_loads_summed_over_too_few_ranks_give_other_biases(trained):
    """cp 2: summing over dp alone leaves out the other half of each sequence's tokens."""
    assert max(res["wrong_group"]["bias"] for res in trained) > 1e-3


def test_one_all_reduce_of_the_stage_loads_per_step_over_dp_x_cp():
    spans = run_mpi(8, "workers/balancing_checks.py:load_bytes", timeout=300)
    for rank, mine in enumerate(spans):
        assert [s["op"] for s in mine] == ["all_reduce"], (rank, mine)
        assert mine[0]["nbytes"] == 8 * 1 * 8, (rank, mine)          # 8 L E, one layer a stage
        assert mine[0]["group"].startswith("dp"), (rank, mine)


@pytest.fixture(scope="module")
def resumed(tmp_path_factory):
    directory = str(tmp_path_factory.mktemp("balanced"))
    return run_mpi(8, "workers/balancing_checks.py:bias_checkpoint", args=(directory,),
                   timeout=300)


def test_a_checkpoint_carries_the_biases_across_grids(resumed):
    """Saved on dp 8 x ep 4 after 2 steps, loaded on dp 2 x pp 2 x tp 2: the loaded weights
    and biases, then 2 more steps, equal one process that never stopped."""
    for rank, res in enumerate(resumed):
        assert max(res["loaded_resumed"]) < 1e-12, (rank, res)
        assert res["loss_resumed"] < 1e-12 and max(res["after_resumed"]) < 1e-10, (rank, res)


def test_a_resume_that_forgets_the_biases_drifts(resumed):
    assert max(res["loss_forgot_bias"] for res in resumed) > 1e-6
    assert max(res["after_forgot_bias"][1] for res in resumed) > 1e-3


@pytest.mark.parametrize("saved", [
    {}, {"blocks.0.mlp": [0.0] * 8}, {"blocks.0.mlp": [0.0] * 8, "blocks.1.mlp": [0.0] * 7},
    {"blocks.0.mlp": [0.0] * 8, "blocks.1.mlp": [float("nan")] + [0.0] * 7},
    {"blocks.0.mlp": [0.0] * 8, "blocks.1.mlp": ["0"] * 8}, [0.0] * 8])
def test_a_missing_or_damaged_bias_record_is_refused(saved):
    from minimegatron.tools.checkpoint_format import CheckpointError, _check_biases
    reports = [{"moe": dataclasses.asdict(BIASED), "config": dataclasses.asdict(MOE_CONFIG)}]
    with pytest.raises(CheckpointError, match="expert bias"):
        _check_biases(saved, reports, "x.npz")
    _check_biases({"blocks.0.mlp": [0.0] * 8, "blocks.1.mlp": [0.05] * 8}, reports, "x.npz")
