"""Numeric guards: non-finite numbers stop training, bad hyper-parameters and ids are refused."""
import sys

import numpy as np
import pytest

from minimegatron import nn, optim
from minimegatron.data.demo import SMALL_CONFIG, batch
from minimegatron.autodiff.functional import cross_entropy
from minimegatron.autodiff.guards import NonFiniteError, all_finite, check_finite, rank_name
from minimegatron.autodiff.tensor import Tensor
from mpi_harness import TESTS_DIR, minimegatron_run, run_mpi, run_script, time_bound

V = SMALL_CONFIG.vocab_size


def _param(values, grads):
    p = nn.Parameter(np.array(values, dtype=float))
    p.grad = np.array(grads, dtype=float)
    return p


# ---- the finite test ---------------------------------------------------------------------
def test_all_finite():
    assert all_finite([np.ones(3), np.zeros((2, 2), dtype=np.float32)])
    assert all_finite([])
    for bad in (np.nan, np.inf, -np.inf):
        assert not all_finite([np.ones(3), np.array([1.0, bad])])
    with np.errstate(over="ignore"):
        overflow = np.float16([6e4]) * np.float16(2)                   # fp16: inf
    assert not all_finite([overflow])


def serial_or_rank_0():
    """How a message names this process: an earlier test may have started MPI in it."""
    mpi = sys.modules.get("mpi4py.MPI")
    return "on rank 0" if mpi is not None and mpi.Is_initialized() else "in a serial run"


def test_check_finite_names_step_and_rank():
    where = serial_or_rank_0()
    assert rank_name() == ("rank 0" if where == "on rank 0" else "serial")
    check_finite("loss", [np.array(1.0)], 3)
    with pytest.raises(NonFiniteError, match=rf"^non-finite loss at step 7 {where}"):
        check_finite("loss", [np.array(np.nan)], 7)
    assert issubclass(NonFiniteError, FloatingPointError)


# ---- optimizer hyper-parameters ------------------------------------------------------------
@pytest.mark.parametrize("make,name", [
    (lambda p: optim.SGD(p, lr=float("nan")), "lr"),
    (lambda p: optim.SGD(p, lr=float("inf")), "lr"),
    (lambda p: optim.SGD(p, lr=-0.1), "lr"),
    (lambda p: optim.AdamW(p, lr="0.1"), "lr"),
    (lambda p: optim.SGD(p, momentum=1.0), "momentum"),
    (lambda p: optim.SGD(p, momentum=-0.5), "momentum"),
    (lambda p: optim.SGD(p, weight_decay=-1e-3), "weight_decay"),
    (lambda p: optim.AdamW(p, weight_decay=float("inf")), "weight_decay"),
    (lambda p: optim.AdamW(p, betas=(1.0, 0.999)), r"betas\[0\]"),
    (lambda p: optim.AdamW(p, betas=(0.9, float("nan"))), r"betas\[1\]"),
    (lambda p: optim.AdamW(p, betas=(0.9,)), "betas"),
    (lambda p: optim.AdamW(p, eps=0.0), "eps"),
    (lambda p: optim.AdamW(p, eps=-1e-8), "eps"),
])
def test_bad_hyper_parameters_raise_one_line(make, name):
    with pytest.raises(ValueError, match=f"^{name}") as info:
        make([_param([1.0], [1.0])])
    assert "\n" not in str(info.value)


def test_good_hyper_parameters_and_later_lr_changes():
    p = _param([1.0], [1.0])
    optim.SGD([p], lr=0.0, momentum=0.0, weight_decay=0.0).step()      # lr 0: a warm-up start
    assert p.data[0] == 1.0
    opt = optim.AdamW([p], lr=1e-3, betas=(0.0, 0.0), eps=1e-12, weight_decay=0.0)
    opt.lr = 0.5                                                       # a scheduler
    assert opt.lr == 0.5
    with pytest.raises(ValueError, match="^lr must be a finite number in"):
        opt.lr = float("nan")


# ---- non-finite gradients, weights and losses stop the step ---------------------------------
@pytest.mark.parametrize("make", [lambda p: optim.SGD(p, lr=0.1, momentum=0.9),
                                  lambda p: optim.AdamW(p, lr=0.1)])
@pytest.mark.parametrize("where,bad", [("gradient", np.nan), ("gradient", np.inf),
                                       ("weight", np.nan), ("weight", -np.inf)])
def test_optimizer_stops_before_changing_any_weight(make, where, bad):
    good, hit = _param([1.0, 2.0], [0.1, 0.2]), _param([3.0, 4.0], [0.3, 0.4])
    opt = make([good, hit])
    opt.step()                                                         # step 1 is fine
    (hit.grad if where == "gradient" else hit.data)[1] = bad
    before = good.data.copy(), hit.data.copy()
    message = rf"^non-finite {where} 'parameter 1 \(2,\)' at step 2 {serial_or_rank_0()}$"
    with pytest.raises(NonFiniteError, match=message):
        opt.step()
    np.testing.assert_array_equal(good.data, before[0])               # nothing was updated
    np.testing.assert_array_equal(hit.data, before[1])


def test_opting_out_trains_on_nan():
    p = _param([1.0, 2.0], [np.nan, 0.2])
    optim.AdamW([p], lr=0.1, check_finite=False).step()
    assert np.isnan(p.data[0]) and np.isfinite(p.data[1])


def test_diverging_serial_training_stops_with_the_step():
    model = nn.GPT(SMALL_CONFIG)
    opt = optim.SGD(model.parameters(), lr=1e4)
    with np.errstate(all="ignore"), pytest.raises(NonFiniteError) as info:
        for step in range(200):
            loss = model.loss(*batch(SMALL_CONFIG, 4, step))
            opt.zero_grad()
            loss.backward()
            opt.step()
    assert f"at step {opt.step_count} {serial_or_rank_0()}" in str(info.value)
    assert 1 < opt.step_count < 200


def test_the_activation_watch_names_the_first_non_finite_input_or_output(monkeypatch):
    """A NaN made by an op between modules (here GeLU) is named as the next module's input;
    clear() lets the kept activations go; an unwatched model keeps none."""
    from minimegatron.autodiff import functional
    from minimegatron.nn.watch import ActivationWatch
    model = nn.GPT(SMALL_CONFIG)
    watch = ActivationWatch(model)
    model.loss(*batch(SMALL_CONFIG, 2, 0))
    assert watch.first_non_finite() is None and len(watch.records) > 10
    gelu = functional.gelu
    monkeypatch.setattr(functional, "gelu", lambda x: gelu(x) * np.nan)
    model.loss(*batch(SMALL_CONFIG, 2, 0))
    assert watch.first_non_finite() == "input of 'blocks.0.mlp.fc2'"
    watch.clear()
    assert watch.first_non_finite() is None and not watch.records
    nn.GPT(SMALL_CONFIG).loss(*batch(SMALL_CONFIG, 2, 0))
    assert not watch.records


# ---- token ids and targets -----------------------------------------------------------------
@pytest.mark.parametrize("bad", [V, V + 100, -1, -V])
def test_serial_embedding_and_loss_refuse_ids_outside_the_vocabulary(bad):
    model = nn.GPT(SMALL_CONFIG)
    x, y = batch(SMALL_CONFIG, 2, 0)
    x_bad, y_bad = x.copy(), y.copy()
    x_bad[1, 3], y_bad[0, 5] = bad, bad
    with pytest.raises(ValueError,
                       match=rf"^token id {bad} is outside the vocabulary \[0, {V}\)$"):
        model.loss(x_bad, y)
    with pytest.raises(ValueError,
                       match=rf"^target id {bad} is outside the vocabulary \[0, {V}\)$"):
        model.loss(x, y_bad)
    assert np.isfinite(model.loss(x, y).item())


def test_empty_batch_is_refused():
    model = nn.GPT(SMALL_CONFIG)
    x, y = batch(SMALL_CONFIG, 2, 0)
    with pytest.raises(ValueError, match="empty batch"):
        model.loss(x[:0], y[:0])
    with pytest.raises(ValueError, match="empty batch"):
        cross_entropy(Tensor(np.zeros((0, V))), np.zeros((0,), dtype=int))


# ---- 4 ranks: the same errors on every rank, no hang ---------------------------------------
@pytest.fixture(scope="module")
def ranks():
    return run_mpi(4, "workers/guard_checks.py:check_all", timeout=240)


def test_vocab_parallel_ids_give_the_serial_error_on_every_rank(ranks):
    for r in ranks:
        ids = r["ids"]
        for name, bad in (("too_big", 16), ("minus_one", -1)):
            text = f"ValueError: token id {bad} is outside the vocabulary [0, 16)"
            assert ids[f"embed_{name}"] == ids[f"serial_embed_{name}"] == text
            assert ids[f"ce_{name}"] == ids[f"serial_ce_{name}"] == text.replace("token", "target")
        assert ids["in_range_ok"] is True


def test_a_nan_weight_under_zero1_is_named_where_it_is_before_the_reduce(ranks):
    """As the pipeline case below, with ZeRO-1 in place of DDP (before: "non-finite loss at
    step 2" on every rank, the weight never named)."""
    note = "before ZeRO-1's gradient reduce over group"
    assert ranks[0]["nan_zero1"].startswith("NonFiniteError: non-finite weight "
                                            f"'blocks.0.ln1.weight' on rank 0, {note}")
    for r in ranks[1:]:
        origin = ("output of 'blocks.0." if r["rank"] == 1
                  else "input of pipeline stage 1, received from stage 0 (")
        assert r["nan_zero1"].startswith(f"NonFiniteError: non-finite activation: {origin}"), r
        assert f"every weight finite) on rank {r['rank']}, {note}" in r["nan_zero1"]


def test_a_nan_weight_in_a_pipeline_is_named_where_it_is_before_the_dp_reduce(ranks):
    """pp spreads the NaN to every stage; each rank stops before DDP's all-reduce (over a dp
    group of one here), rank 0 naming its weight, the others the first activation they saw
    it in: rank 1 (rank 0's tp peer) an output in stage 0, ranks 2 and 3 their input,
    received from stage 0."""
    note = "before DDP's all-reduce over group"
    assert ranks[0]["nan_pp_tp"].startswith("NonFiniteError: non-finite weight "
                                            f"'blocks.0.ln1.weight' on rank 0, {note}")
    for r in ranks[1:]:
        origin = ("output of 'blocks.0." if r["rank"] == 1
                  else "input of pipeline stage 1, received from stage 0 (")
        assert r["nan_pp_tp"].startswith(f"NonFiniteError: non-finite activation: {origin}"), r
        assert f"every weight finite) on rank {r['rank']}, {note}" in r["nan_pp_tp"]


# (case, ranks, the rank with the NaN weight); before: "non-finite gradient (or loss) at step
# 2 on rank 0", named on every rank after DDP (or the loss all-reduce) had spread it
NAN_JOBS = [("ddp", 2, 1), ("dp_tp", 4, 0), ("mixed", 2, 1)]


@pytest.mark.parametrize("case,nprocs,bad", NAN_JOBS)
def test_a_nan_weight_is_named_with_its_rank_before_ddp_spreads_it(case, nprocs, bad):
    code, out, err, seconds = minimegatron_run("-n", str(nprocs), "--timeout", "50",
                                               f"{TESTS_DIR}/workers/nan_weight.py", case)
    assert code not in (0, 124), err
    summary = err[err.index("minimegatron run: the job failed"):]
    assert summary.startswith(
        f"minimegatron run: the job failed (exit code 1): rank {bad}: raised NonFiniteError: "
        f"non-finite weight 'blocks.0.ln1.weight' on rank {bad}, before DDP's all-reduce"), err
    assert "trained on" not in out and seconds < time_bound(30, 49)   # a hang: --timeout 50


# (case, what rank 1 names first, what rank 0 names or None: rank 0 waits in the reduce and
# the abort ends it). Before: "non-finite loss at step 2 on rank 0", nothing named; in
# float16 (the mixed-precision rule's own check off) ZeRO-1/2 said only "non-finite loss at
# step 2" and ZeRO-3 "non-finite weight 'flat shard 2'".
MOE = "before the MoE gradient reductions"
NAN_MOE_ZERO = [
    ("moe_router", f"non-finite weight 'blocks.0.mlp.router.weight' on rank 1, {MOE}",
     "non-finite activation: "),
    ("moe_expert", f"non-finite weight 'blocks.0.mlp.experts.fc1.weight' on rank 1, {MOE}",
     "non-finite activation: "),
    ("moe_aux", f"non-finite aux loss of 'blocks.1.mlp' on rank 1, {MOE}",
     "non-finite gradient 'blocks.0.mlp.experts."),
    ("zero1", "non-finite weight 'blocks.0.ln1.weight' on rank 1, before ZeRO-1's gradient "
     "reduce over group 'dp0'", None),
    ("zero2", "non-finite weight 'blocks.0.ln1.weight' on rank 1, before ZeRO-2's gradient "
     "reduce over group 'dp0'", None),
    ("zero1_half", "non-finite weight 'blocks.0.ln1.weight' on rank 1, before ZeRO-1's "
     "gradient reduce over group 'dp0'", None),
    ("zero2_half", "non-finite weight 'blocks.0.ln1.weight' on rank 1, before ZeRO-2's "
     "gradient reduce over group 'dp0'", None),
    ("zero3_half", "non-finite weight 'blocks.0.ln1.bias' on rank 1 (in its ZeRO-3 shard), "
     "before ZeRO-3's reduce-scatter over group 'world'", None),
    ("zero2_act", "non-finite activation: input of 'blocks.1.attn.proj' (the first module "
     "input or output that is not finite; every weight finite) on rank 1, before ZeRO-2's "
     "gradient reduce over group 'dp0'", None),
    ("zero3", "non-finite weight 'blocks.0.ln1.bias' on rank 1 (in its ZeRO-3 shard), before "
     "ZeRO-3's reduce-scatter over group 'world'", "non-finite activation: output of "
     "'blocks.0.ln1'")]


@pytest.mark.parametrize("case,origin,other", NAN_MOE_ZERO)
def test_a_nan_in_moe_or_zero_is_named_with_its_weight_and_rank(case, origin, other):
    code, out, err, seconds = minimegatron_run("-n", "2", "--timeout", "50",
                                               f"{TESTS_DIR}/workers/nan_moe_zero.py", case)
    assert code not in (0, 124), err
    summary = err[err.index("minimegatron run: the job failed"):]
    assert summary.startswith("minimegatron run: the job failed (exit code 1): rank 1: raised "
                              f"NonFiniteError: {origin}"), err
    if other is not None:                              # rank 0 names where it saw it
        assert f"; rank 0: raised NonFiniteError: {other}" in summary, err
    assert "non-finite loss" not in err and "trained on" not in out and seconds < 40


def test_a_nan_activation_is_named_with_its_module_and_rank_before_ddp_spreads_it():
    """Every weight finite, rank 1's attention in block 1 overflows: the report names the
    activation (the first module input that is not finite) and the rank, not a gradient.
    Before: "non-finite gradient 'head.weight' on rank 1"."""
    code, out, err, seconds = minimegatron_run("-n", "2", "--timeout", "50",
                                               f"{TESTS_DIR}/workers/nan_weight.py", "activation")
    assert code not in (0, 124), err
    summary = err[err.index("minimegatron run: the job failed"):]
    assert summary.startswith(
        "minimegatron run: the job failed (exit code 1): rank 1: raised NonFiniteError: "
        "non-finite activation: input of 'blocks.1.attn.proj' (the first module input or "
        "output that is not finite; every weight finite) on rank 1, before DDP's all-reduce "
        "over group 'world'"), err
    assert "trained on" not in out and seconds < time_bound(30, 49)   # a hang: --timeout 50


def test_opting_out_trains_on_in_3d(ranks):
    for r in ranks:
        assert r["nan_opted_out"] == {"error": None, "loss_is_nan": True}


def test_zero_gradient_slice_is_checked(ranks):
    for r in ranks:
        assert r["zero_grad"].startswith("NonFiniteError: non-finite gradient '"), r
        assert f"' at step 1 on rank {r['rank']}" in r["zero_grad"], r    # the weight it is in


def test_trainer3d_checks_the_batch_on_every_stage(ranks):
    for r in ranks:
        b = r["batch"]
        assert b["ids"] == "ValueError: token id 14 is outside the vocabulary [0, 14)"
        assert b["targets"] == "ValueError: target id -1 is outside the vocabulary [0, 14)"
        assert b["empty"] == "ValueError: a global batch needs at least 1 sequence, got 0"
        assert np.isfinite(b["still_works"])


def test_a_nan_only_one_rank_sees_ends_the_whole_job():
    """Only rank 0 raises (its unused embedding row); the abort hook ends rank 1 too."""
    code, out, err = run_script(2, "tests/workers/nan_one_rank.py", timeout=90)
    assert code not in (0, 124), (code, out, err)            # failed, and did not hang
    assert "NonFiniteError: non-finite weight 'wte.weight' at step 2 on rank 0" in err, err
    assert "trained on" not in out


@pytest.mark.parametrize("stage", [1, 2])
def test_zero_optimizer_stops_on_a_nan_gradient_before_any_update(stage):
    """ShardedOptimizer calls update() itself: its own check stops it (one process, a world of
    one rank, so the reduce-scatter is the identity)."""
    from minimegatron import comm
    from minimegatron.parallel.data_parallel import ShardedOptimizer
    model = nn.Linear(3, 2, seed=0)
    params = model.parameters()
    zero = ShardedOptimizer(params, comm.world(), stage, optim.AdamW(params, lr=0.1))
    model(Tensor(np.ones((1, 3)))).sum().backward()
    params[0].grad[0, 0] = np.nan
    before = [p.data.copy() for p in params]
    with pytest.raises(NonFiniteError, match="^non-finite gradient 'parameter 0' on rank 0, "
                                             f"before ZeRO-{stage}'s gradient reduce"):
        zero.step()                                  # named before the reduce, unchanged
    assert all((p.data == b).all() for p, b in zip(params, before))
