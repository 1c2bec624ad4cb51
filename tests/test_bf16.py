"""bf16 on one process: float32 accumulation, bf16 in and out, no loss scale, float32 masters.

Each property is shown with the mistake it prevents (a mutant that fails the same check):
a bf16 sum (1 + seven 2^-9 is 1 in bf16), a Function that lets NumPy's float32
promotion through, a loss scaler in bf16.
"""
import dataclasses

import ml_dtypes
import numpy as np
import pytest

from minimegatron.autodiff import ops
from minimegatron.autodiff.cast import is_bf16, is_half, matmul
from minimegatron.autodiff.guards import NonFiniteError
from minimegatron.autodiff.tensor import Tensor
from minimegatron.comm import trace
from minimegatron.data.demo import LR, SMALL_CONFIG, batch, make_optimizer
from minimegatron.mixed_precision.loss_scaler import DynamicLossScaler, NoLossScale
from minimegatron.mixed_precision.master_weights import MixedPrecisionOptimizer
from minimegatron.nn import GPT
from minimegatron.optim import SGD

BF16 = np.dtype(ml_dtypes.bfloat16)
ROW = np.array([1.0] + [2.0 ** -9] * 7, np.float32)      # float32 sum 1 + 7 x 2^-9 is exact
WANT = BF16.type(1.0 + 2.0 ** -6)                          # ... and rounds once to 1 + 2^-6
BF16_CONFIG = dataclasses.replace(SMALL_CONFIG, dtype="bfloat16")


def sums_in_float32(total):
    """True if ``total(row)`` of the bf16 row ROW is bf16(float32 sum), not a bf16 sum."""
    got = total(ROW.astype(BF16))
    return got.dtype == BF16 and got == WANT


def test_a_bf16_sum_loses_what_float32_accumulation_keeps():
    assert ROW.astype(BF16).sum() == 1.0                          # NumPy's own bf16 sum
    assert sums_in_float32(lambda r: matmul(r[None], np.ones((8, 1), BF16))[0, 0])
    assert sums_in_float32(lambda r: Tensor(r).sum().data)         # ops.Sum, float32 inside
    assert not sums_in_float32(lambda r: r.sum())                  # the mutant: a bf16 sum
    assert not sums_in_float32(lambda r: r[None] @ np.ones((8, 1), BF16))   # float32 out


def test_the_sum_op_without_float32_inside_is_caught(monkeypatch):
    monkeypatch.setattr(ops.Sum, "float32_inside", False)
    assert not sums_in_float32(lambda r: Tensor(r).sum().data)


def test_matmul_of_float_types_is_numpys_own():
    a, b = np.arange(6.0).reshape(2, 3), np.ones((3, 2))
    for dtype in (np.float16, np.float32, np.float64):
        got = matmul(a.astype(dtype), b.astype(dtype))
        assert got.dtype == dtype and np.array_equal(got, a.astype(dtype) @ b.astype(dtype))


def activations(model, x):
    """dtype of every stage of a forward."""
    h = model.embed(x)
    seen = [h.dtype]
    for block in model.blocks:
        h = block(h)
        seen.append(h.dtype)
    seen.append(model.logits(h).dtype)
    return seen


def test_a_bf16_model_keeps_bf16_activations_and_gradients_and_a_float32_loss():
    model = GPT(BF16_CONFIG)
    x, y = batch(BF16_CONFIG, 4, 0)
    assert all(p.data.dtype == BF16 for p in model.parameters())
    assert set(activations(model, x)) == {BF16}
    loss = model.loss(x, y)
    assert loss.data.dtype == np.float32                    # the logits upcast (cast.py)
    loss.backward()
    assert all(p.grad.dtype == BF16 for p in model.parameters())


def test_without_the_rule_numpy_promotes_bf16_to_float32(monkeypatch):
    """The mutant: ``apply`` without "bf16 in, bf16 out" (0.5 * x is float32 in NumPy)."""
    from minimegatron.autodiff import function
    monkeypatch.setattr(function, "keep_low", lambda out, dtype: out)
    model = GPT(BF16_CONFIG)
    assert np.dtype(np.float32) in activations(model, batch(BF16_CONFIG, 4, 0)[0])


def test_bf16_is_half_precision_with_no_loss_scale():
    assert is_half("bfloat16") and is_half("float16") and not is_half("float32")
    assert is_bf16(BF16) and not is_bf16("float16")
    model = GPT(BF16_CONFIG)
    opt = MixedPrecisionOptimizer(make_optimizer(model.parameters()), None)
    assert isinstance(opt.scaler, NoLossScale) and opt.loss_scale == 1.0
    half = GPT(dataclasses.replace(SMALL_CONFIG, dtype="float16"))
    assert isinstance(MixedPrecisionOptimizer(make_optimizer(half.parameters())).scaler,
                      DynamicLossScaler)


def test_float32_masters_and_adam_state_and_no_found_inf_all_reduce():
    model = GPT(BF16_CONFIG)
    opt = MixedPrecisionOptimizer(make_optimizer(model.parameters()), None)
    trace.reset()
    for step in range(2):
        x, y = batch(BF16_CONFIG, 4, step)
        opt.zero_grad()
        model.loss(x, y).backward()
        assert opt.step() is True
    states = opt.state                                   # one dict per parameter
    assert len(states) == len(model.parameters())
    assert all(sorted(s) == ["m", "master", "v"] for s in states), sorted(states[0])
    assert all(s[k].dtype == np.float32 for s in states for k in s)
    for p, s in zip(model.parameters(), states):
        assert np.array_equal(p.data, s["master"].astype(BF16))    # the model: masters rounded
    assert not [s for s in trace.spans() if s["label"] == "mixed.found_inf"]
    assert opt.skipped_steps == 0


def test_a_non_finite_bf16_gradient_raises_instead_of_being_skipped():
    scaler = NoLossScale()
    assert scaler.update([np.ones(3, BF16)], None) is False
    with pytest.raises(NonFiniteError, match="bf16 has float32's range"):
        scaler.update([np.array([1.0, np.inf], BF16)], None)


def run(dtype, steps=3):
    """(weights, grads of the first step) of SGD training; bf16 with float32 masters."""
    config = dataclasses.replace(SMALL_CONFIG, dtype=dtype)
    model = GPT(config)
    opt = SGD(model.parameters(), lr=LR)
    if dtype == "bfloat16":
        opt = MixedPrecisionOptimizer(opt, None)
    grads = None
    for step in range(steps):
        x, y = batch(config, 8, step)
        opt.zero_grad()
        model.loss(x, y).backward()
        grads = grads or [p.grad.astype(np.float64) for p in model.parameters()]
        opt.step()
    return [p.data.astype(np.float64) for p in model.parameters()], grads


def test_bf16_training_stays_within_its_stated_bound_of_float32():
    """verify's bound (checks/verify.TWIN): 8 bf16 epsilons of the float32 run's largest
    |gradient| and |weight|; observed about a tenth of it."""
    from minimegatron.checks.verify import TWIN
    w16, g16 = run("bfloat16")
    w32, g32 = run("float32")
    bound = TWIN["bfloat16"][1]
    for got, want in ((g16, g32), (w16, w32)):
        gap = max(np.abs(a - b).max() for a, b in zip(got, want))
        scale = max(np.abs(b).max() for b in want)
        assert 0 < gap <= bound * scale, (gap, bound * scale)


def test_the_memory_calculator_equals_measured_bytes_for_bf16_and_fp8():
    from minimegatron.checks.mixed import measured_precisions
    from minimegatron.tools.memory_mixed import BF16_FORMULA, precision_text
    rows = {name: (per, saved) for name, per, saved in measured_precisions()}
    assert list(rows) == ["float16", "bf16", "fp8"]
    for name, (per, (measured, formula)) in rows.items():
        assert per == BF16_FORMULA, (name, per)           # 2 + 2 + 12 + 4, measured
        assert measured == formula > 0, name             # what backward keeps of the matmuls
    d, layers = SMALL_CONFIG.d_model, SMALL_CONFIG.n_layer
    weight_copies = layers * 12 * d * d                   # fp8's e4m3 copy of each W
    assert rows["fp8"][1][0] - weight_copies == rows["bf16"][1][0] // 2   # X: 1 byte, not 2
    text = precision_text(measured_precisions())
    assert "20.0 | 20" in text and f"{rows['fp8'][1][0]} | {rows['fp8'][1][1]}" in text


def test_memory_mixed_prints_the_bf16_and_fp8_rows():
    import subprocess
    import sys
    proc = subprocess.run([sys.executable, "-m", "minimegatron", "memory", "mixed"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    head = next(i for i, line in enumerate(lines) if line.startswith("float16, bf16 and fp8"))
    assert lines[head + 1].split() == ["float16", "bf16", "fp8"]
    assert lines[head + 6].split()[-9:] == ["20.0", "|", "20"] * 3
