"""Mixed precision: float16 model, float32 masters, dynamic loss scaling (mixed_precision/).

A second 4-rank launch splits one model over a strict-subset pp or tp group of 2
ranks, or over a 2 x 2 3D grid, and overflows on one rank (test_an_overflow_in_...).
One 4-rank launch (workers/mixed_checks.py) trains DDP and ZeRO 1-3 in float16
for 5 steps with an inf planted in ONE gradient element on rank 1 at step 1,
after the gradients were reduced, so only rank 1 sees it. Every rank must skip
that step (weights bitwise unchanged), halve the scale, and double it after
growth_interval = 2 clean steps; the measured bytes per parameter are 2 + 2 + 12.
The grader's mutants (test_lesson_mixed_precision.py, 7.1) show that a flag not
all-reduced, or reduced over the world, or no halving, fails.
"""
import dataclasses
import re

import numpy as np
import pytest

from mpi_harness import run_mpi

from minimegatron.checks.mixed import HALF_CONFIG, INIT_SCALE, run_mixed
from minimegatron.data.demo import LR, WEIGHT_DECAY, batch
from minimegatron.autodiff.guards import NonFiniteError
from minimegatron.mixed_precision.master_weights import MixedPrecisionOptimizer
from minimegatron.mixed_precision.cast import UpcastHalf, float32_if_half
from minimegatron.mixed_precision.loss_scaler import DynamicLossScaler
from minimegatron.nn import GPT
from minimegatron.optim import AdamW
from minimegatron.autodiff.tensor import Tensor
from minimegatron.tools.memory import model_state_bytes, sharded_state_bytes
from minimegatron.tools.memory_measure import padding_margin, per_param_bytes

GB = 1e9
SCHEMES = ("ddp", "zero1", "zero2", "zero3")


def test_upcast_is_float32_forward_and_half_backward():
    x = Tensor(np.array([1.0, 60000.0], np.float16), requires_grad=True)
    y = float32_if_half(x)
    assert y.dtype == np.float32
    (y * 2.0).sum().backward()
    assert x.grad.dtype == np.float16 and list(x.grad) == [2.0, 2.0]
    with pytest.warns(RuntimeWarning, match="overflow"):     # NumPy says so; the inf is the point
        big = UpcastHalf.backward(type("C", (), {"dtype": np.float16})(), np.float32([1e5]))
    assert np.isinf(big[0])                     # past 65504: overflow, what the scaler sees
    z = Tensor(np.ones(2))
    assert float32_if_half(z) is z             # float64 models: untouched


def test_a_float16_gpt_computes_in_float16_and_its_loss_in_float32():
    model = GPT(HALF_CONFIG)
    x, y = batch(HALF_CONFIG, 4, 0)
    loss = model.loss(x, y)
    assert loss.dtype == np.float32
    (loss * 256.0).backward()
    assert {str(p.grad.dtype) for p in model.parameters()} == {"float16"}
    ref = GPT(dataclasses.replace(HALF_CONFIG, dtype="float64")).loss(x, y).item()
    assert abs(loss.item() - ref) < 1e-3 * abs(ref)


def test_the_scaler_skips_halves_and_grows():
    scaler = DynamicLossScaler(8.0, growth_interval=2, min_scale=4.0)
    fine, bad = [np.ones(2)], [np.array([1.0, np.nan])]
    assert [scaler.update(fine, None), scaler.scale] == [False, 8.0]
    assert [scaler.update(fine, None), scaler.scale] == [False, 16.0]
    assert [scaler.update(bad, None), scaler.scale] == [True, 8.0]
    assert [scaler.update(fine, None), scaler.scale] == [False, 8.0]   # count restarted
    assert [scaler.update(bad, None), scaler.scale] == [True, 4.0]
    floor = r"^an overflow at the minimum loss scale 4 (on rank 0|in a serial run) \(3 steps"
    with pytest.raises(NonFiniteError, match=floor):
        scaler.update(bad, None)                  # skipped AT the floor: no smaller S helps
    assert list(scaler.history) == [(8.0, False), (8.0, False), (16.0, True), (8.0, False),
                                    (8.0, True), (4.0, True)]
    assert scaler.skipped_steps == 3 and scaler.state_dict()["skipped_steps"] == 3
    assert DynamicLossScaler().scale == 2.0 ** 16 and DynamicLossScaler().growth_interval == 1000
    for bad_args in ({"init_scale": 0.5}, {"growth_interval": 0}, {"backoff_factor": 1.0}):
        with pytest.raises(ValueError):
            DynamicLossScaler(**bad_args)


def test_a_skip_at_the_floor_warns_each_time_where_asked():
    scaler = DynamicLossScaler(2.0, min_scale=1.0, at_min_scale="warn")
    bad = [np.array([np.nan])]
    assert scaler.update(bad, None) and scaler.scale == 1.0          # 2 -> 1: no warning
    for count in (2, 3):
        with pytest.warns(RuntimeWarning, match=f"minimum loss scale 1 .*{count} steps skipped"):
            assert scaler.update(bad, None)
    with pytest.raises(ValueError, match="at_min_scale must be 'error' or 'warn'"):
        DynamicLossScaler(at_min_scale="ignore")


def _half_gpt_step(model, opt, step):
    opt.zero_grad()
    with np.errstate(all="ignore"):
        opt.scale_loss(model.loss(*batch(HALF_CONFIG, 4, step))).backward()
    return opt.step()


def test_a_nan_weight_or_master_is_an_error_naming_the_parameter():
    """Before: every step was skipped as an overflow, S fell to its floor, the loss was NaN
    and training went on; a NaN weight is no overflow."""
    model = GPT(HALF_CONFIG)
    names = [n for n, _ in model.named_parameters()]
    opt = MixedPrecisionOptimizer(AdamW(model.parameters(), lr=LR), names=names)
    assert _half_gpt_step(model, opt, 0)
    dict(model.named_parameters())["blocks.0.ln1.weight"].data[3] = np.nan
    with pytest.raises(NonFiniteError, match=r"^non-finite weight 'blocks.0.ln1.weight' at "
                       r"step 2 (on rank 0|in a serial run)$"):
        _half_gpt_step(model, opt, 1)
    dict(model.named_parameters())["blocks.0.ln1.weight"].data[3] = 1.0
    opt.state[names.index("wpe.weight")]["master"][0, 0] = np.inf
    with pytest.raises(NonFiniteError, match=r"^non-finite master weight 'wpe.weight' at step"):
        _half_gpt_step(model, opt, 2)
    plain = MixedPrecisionOptimizer(AdamW(model.parameters(), lr=LR))      # no names given
    model.parameters()[1].data[0, 0] = np.nan
    name = re.escape(f"'parameter 1 {tuple(model.parameters()[1].shape)}'")
    with pytest.raises(NonFiniteError, match=rf"^non-finite weight {name} at step 1"):
        _half_gpt_step(model, plain, 3)
    assert opt.skipped_steps == 0


def test_the_scaler_keeps_only_the_last_history_len_updates(monkeypatch):
    monkeypatch.setattr(DynamicLossScaler, "HISTORY_LEN", 3)
    scaler = DynamicLossScaler(8.0, growth_interval=100)
    for grads in ([np.ones(1)], [np.array([np.inf])], [np.ones(1)], [np.ones(1)]):
        scaler.update(grads, None)
    assert list(scaler.history) == [(8.0, True), (4.0, False), (4.0, False)]


def test_one_process_skips_a_forced_overflow_and_keeps_training():
    run = run_mixed(None, "serial", steps=5, overflow=(1, 0), growth_interval=2)
    rec = run["records"]
    assert [r["skipped"] for r in rec] == [False, True, False, False, False]
    assert rec[1]["unchanged"] and not rec[2]["unchanged"]
    assert [r["scale"] for r in rec] == [INIT_SCALE, INIT_SCALE, INIT_SCALE / 2,
                                         INIT_SCALE / 2, INIT_SCALE]
    assert run["mixed"].steps_taken == 4
    masters = [s["master"] for s in run["mixed"].state]
    assert {str(m.dtype) for m in masters} == {"float32"}
    assert all(np.array_equal(m.astype(np.float16), p.data)
               for m, p in zip(masters, run["model"].parameters()))


def test_bytes_per_parameter_measured_then_the_7_5B_example_through_the_same_function():
    run = run_mixed(None, "serial", steps=2)
    params = run["model"].num_parameters()
    per_param = per_param_bytes(run["memory"], params)
    assert per_param == {"weights": 2.0, "grads": 2.0, "optimizer": 12.0}    # 16 in all
    totals = [sharded_state_bytes(per_param, 7.5e9, 64, zero)["total"] / GB
              for zero in range(4)]
    assert [round(t, 1) for t in totals] == [120.0, 31.4, 16.6, 1.9]
    assert totals == [model_state_bytes(7.5e9, 64, zero)["total"] / GB for zero in range(4)]


@pytest.fixture(scope="module")
def four_ranks():
    return run_mpi(4, "workers/mixed_checks.py:overflow_on_one_rank", timeout=400)


@pytest.mark.parametrize("scheme", SCHEMES)
def test_an_overflow_on_rank_1_is_skipped_on_every_rank(four_ranks, scheme):
    for rank, out in enumerate(four_ranks):
        rec = out[scheme]["records"]
        assert [r["skipped"] for r in rec] == [False, True, False, False, False], rank
        assert rec[1]["unchanged"], (rank, "a skipped step changed this rank's weights")
        assert [r["scale"] for r in rec] == [256.0, 256.0, 128.0, 128.0, 256.0], rank
        assert out[scheme]["found_inf_calls"] == 5, rank          # one MAX all-reduce a step
        assert [r["skipped"] for r in out[scheme]["ref"]] == [r["skipped"] for r in rec]


@pytest.mark.parametrize("scheme", SCHEMES)
def test_every_scheme_stays_near_one_mixed_process(four_ranks, scheme):
    """Losses within float16's rounding; weights within 2 lr per step taken + one ulp.

    AdamW moves a weight by about lr per step whatever its gradient's size, so a
    one-ulp float16 difference in a near-zero gradient (reordered sums) can flip
    an update's sign: at most 2 lr(1 + wd) per step taken, plus a float16 ulp of
    a weight (2^-10 for |w| < 2). A missing all-reduce moves losses by ~1e-1.
    """
    tol = 2 * LR * (1 + WEIGHT_DECAY) * 4 + 2.0 ** -10
    for rank, out in enumerate(four_ranks):
        assert out[scheme]["weight"] <= tol, (rank, out[scheme]["weight"], tol)
        for got, want in zip(out[scheme]["records"], out[scheme]["ref"]):   # this rank's
            assert abs(got["loss"] - want["loss"]) < 0.1, rank       # B/N rows vs all B


@pytest.mark.parametrize("zero", [1, 2, 3])
def test_measured_zero_bytes_per_rank_match_4_plus_12_over_n_and_so_on(four_ranks, zero):
    """Stage 1: 4P + 12P/N; stage 2: 2P + 14P/N; stage 3: 16P/N (N = 4), padding aside."""
    per_param = per_param_bytes(four_ranks[0]["ddp"]["memory"], four_ranks[0]["ddp"]["params"])
    assert per_param == {"weights": 2.0, "grads": 2.0, "optimizer": 12.0, "buffers": 4.0}
    for out in four_ranks:
        got = out[f"zero{zero}"]["memory"]
        want = sharded_state_bytes(per_param, out[f"zero{zero}"]["params"], 4, zero)
        units = len([m for _, m in GPT(HALF_CONFIG).named_modules() if m._parameters]) \
            if zero == 3 else 1
        assert abs(got["total"] - want["total"]) <= padding_margin(4, units, 4), (got, want)


@pytest.fixture(scope="module")
def split_models():
    return run_mpi(4, "workers/mixed_checks.py:overflow_in_pp_tp_3d", timeout=400)


@pytest.mark.parametrize("kind", ["pp", "tp"])
def test_an_overflow_in_one_stage_or_shard_skips_its_whole_group_only(split_models, kind):
    """pp / tp groups {0, 1} and {2, 3}; world rank 1 alone overflows at step 1.

    Its partner (rank 0: the other stage, or the other shard) must skip too, or the
    two halves of one model would hold weights of different steps; the other pair
    must not (its found-inf MAX runs over its own group, not the world)."""
    for rank, out in enumerate(split_models):
        rec = out[kind]
        want = [False, rank < 2, False]
        assert [r["skipped"] for r in rec] == want, (rank, rec)
        assert [r["unchanged"] for r in rec] == want, (rank, rec)
        assert [r["scale"] for r in rec] == [256.0, 256.0, 128.0 if rank < 2 else 256.0]


@pytest.mark.parametrize("grid", ["3d", "3d_tp"])
def test_an_overflow_on_one_rank_of_a_3d_grid_skips_every_rank(split_models, grid):
    """dp=2 x pp=2 and pp=2 x tp=2 on 4 ranks; world rank 1 overflows: every dp x pp x
    tp rank skips (a MAX over only its pp or tp group would leave rank 1's dp peer, or
    the other pipeline, stepping)."""
    for rank, out in enumerate(split_models):
        rec = out[grid]
        assert [r["skipped"] for r in rec] == [False, True, False], (rank, rec)
        assert [r["unchanged"] for r in rec] == [False, True, False], (rank, rec)
        assert [r["scale"] for r in rec] == [256.0, 256.0, 128.0], (rank, rec)


@pytest.fixture(scope="module")
def reduce_dtypes():
    return run_mpi(4, "workers/mixed_checks.py:ddp_reduce_dtypes", timeout=400)


@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_ddp_reducing_in_float32_or_float16_stays_near_one_mixed_process(reduce_dtypes, dtype):
    """DDP on 2-rank groups of 4; verify's derived float16 tolerance (max(eps16, 4 x drift))."""
    from minimegatron.checks import verify
    tol = verify.tolerance(HALF_CONFIG, 2, 8)
    for rank, out in enumerate(reduce_dtypes):
        for key in ("loss", "grad", "weight"):
            assert out[dtype][key] <= tol[key], (rank, key, out[dtype][key], tol[key])


def test_ddp_in_float32_sends_twice_the_bytes_and_keeps_a_4_byte_buffer(reduce_dtypes):
    """The float32 reduce: 4 B per parameter on the wire (float16: 2) and a kept float32
    buffer (4 B); SGD's state is the float32 master alone (4 B)."""
    for out in reduce_dtypes:
        params = out["params"]
        assert out["float32"]["sent"] == pytest.approx(2 * out["float16"]["sent"], rel=0.01)
        assert per_param_bytes(out["float32"]["memory"], params) == {
            "weights": 2.0, "grads": 2.0, "optimizer": 4.0, "buffers": 4.0}
        assert per_param_bytes(out["float16"]["memory"], params) == {
            "weights": 2.0, "grads": 2.0, "optimizer": 4.0}


def test_ddp_with_adamw_measures_20_bytes_per_parameter(four_ranks):
    """2 (w16) + 2 (g16) + 12 (w32, m, v) + 4 (DDP's float32 reduce buffer) = 20, measured
    on every rank of the AdamW run; the formula's 16 + 4 beside it."""
    for out in four_ranks:
        memory, params = out["ddp"]["memory"], out["ddp"]["params"]
        assert memory["total"] == 20 * params
        assert memory["total"] == model_state_bytes(params)["total"] + 4 * params


def test_memory_mixed_prints_measured_next_to_the_formula():
    import subprocess
    import sys
    proc = subprocess.run([sys.executable, "-m", "minimegatron", "memory", "mixed"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    rows = {line[:28].strip(): line[28:].split() for line in proc.stdout.splitlines()}
    assert rows["float32 master, m, v"] == ["12.0", "12"]
    assert rows["DDP float32 reduce buffer"] == ["4.0", "4"]
    assert rows["total"][:2] == ["20.0", "20"]
    stages = [line.split() for line in proc.stdout.splitlines()[-4:]]
    assert [s[2:] for s in stages] == [["120.0", "120.0"], ["31.4", "31.4"],
                                       ["16.6", "16.6"], ["1.9", "1.9"]]
