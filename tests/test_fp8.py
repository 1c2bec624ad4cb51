"""fp8 matmuls (autodiff/fp8.py): per-tensor scales, e4m3 forward, e5m2 gradients.

The mutant that must fail: an fp8 cast without its scale (an unscaled e4m3fn(500.0) is
NaN; a gradient of 1e-5 is below e4m3's and e5m2's smallest values and becomes 0).
"""
import dataclasses

import ml_dtypes
import numpy as np
import pytest

from minimegatron.autodiff import fp8
from minimegatron.autodiff.tensor import Tensor
from minimegatron.data.demo import SMALL_CONFIG, batch
from minimegatron.nn import GPT

E4M3, E5M2 = fp8.E4M3, fp8.E5M2
FP8_CONFIG = dataclasses.replace(SMALL_CONFIG, dtype="bfloat16", fp8=True)


def test_an_unscaled_e4m3_cast_of_500_is_nan_and_the_scale_prevents_it():
    assert np.isnan(np.float32(ml_dtypes.float8_e4m3fn(500.0)))      # no inf in e4m3fn
    assert fp8.FMAX == {E4M3: 448.0, E5M2: 57344.0}
    q, s = fp8.quantize(np.array([500.0, -3.0, 0.01], np.float32), E4M3)
    assert s == 0.5 and np.all(np.isfinite(q.astype(np.float32)))
    assert fp8.dequantize(q, s)[0] == 512.0          # 250 rounds to 256: 3 mantissa bits


@pytest.mark.parametrize("amax", [1e-6, 3e-3, 1.0, 500.0, 4e6])
def test_the_scale_is_a_power_of_two_putting_amax_in_the_top_binade(amax):
    for fmt in (E4M3, E5M2):
        x = np.array([amax, -amax / 7, amax / 1000], np.float32)
        s = fp8.scale_for(x, fmt)
        assert np.log2(s) == np.round(np.log2(s))                   # exact scaling
        assert fp8.FMAX[fmt] / 2 < amax * s <= fp8.FMAX[fmt]
        q, s = fp8.quantize(x, fmt)
        back = fp8.dequantize(q, s)
        ulp = 2.0 ** -3 if fmt == E4M3 else 2.0 ** -2              # 3 or 2 mantissa bits
        assert np.abs(back[:2] - x[:2]).max() <= ulp / 2 * amax     # the large values


def test_an_all_zero_tensor_scales_by_one_and_a_nan_amax_raises():
    assert fp8.scale_for(np.zeros(3, np.float32), E4M3) == 1.0
    with pytest.raises(FloatingPointError, match="amax"):
        fp8.scale_for(np.array([1.0, np.nan], np.float32), E4M3)


def test_scales_taken_from_an_agreed_amax():
    x = np.array([1.0, -2.0], np.float32)
    assert fp8.scale_for(x, E4M3, agree=lambda amax: amax * 64) == 2.0 ** 1  # 448/128
    assert fp8.scale_for(x, E4M3) == 2.0 ** 7                               # 448/2


def fp8_matmul_holds(seed=0):
    """Fp8Matmul against float64 on inputs of very different sizes: forward and both
    gradients within fp8's error (a few e4m3 / e5m2 roundings), everything finite."""
    rng = np.random.default_rng(seed)
    x = (rng.normal(size=(2, 5, 16)) * 300).astype(np.float32)      # amax ~1000 > 448
    w = (rng.normal(size=(16, 8)) * 0.02).astype(np.float32)
    g = (rng.normal(size=(2, 5, 8)) * 1e-5).astype(np.float32)      # below fp8's range
    xt, wt = Tensor(x, requires_grad=True), Tensor(w, requires_grad=True)
    y = fp8.fp8_matmul(xt, wt)
    y.backward(g)
    x64, w64, g64 = x.astype(np.float64), w.astype(np.float64), g.astype(np.float64)
    want = {"y": x64 @ w64, "dx": g64 @ w64.T,
            "dw": x64.reshape(-1, 16).T @ g64.reshape(-1, 8)}
    got = {"y": y.data, "dx": xt.grad, "dw": wt.grad}
    for k in want:
        if not np.all(np.isfinite(got[k])):
            return False
        err = np.abs(got[k] - want[k]).max() / np.abs(want[k]).max()
        if err > 0.1:                                 # e5m2: 2 mantissa bits, sums of 16
            return False
    return True


def test_the_fp8_matmul_is_close_and_an_unscaled_cast_is_not(monkeypatch):
    assert fp8_matmul_holds()
    monkeypatch.setattr(fp8, "scale_for", lambda x, fmt, agree=None: np.float32(1.0))
    assert not fp8_matmul_holds()                     # NaN forward, 0 gradients


def test_fp8_keeps_one_byte_per_saved_input_and_returns_the_input_dtype():
    x = Tensor(np.ones((3, 4), ml_dtypes.bfloat16), requires_grad=True)
    w = Tensor(np.ones((4, 2), ml_dtypes.bfloat16), requires_grad=True)
    y = fp8.fp8_matmul(x, w)
    qx, qw = y._node.ctx.saved
    assert qx.dtype == E4M3 and qw.dtype == E4M3 and qx.nbytes == x.data.nbytes // 2
    assert y.dtype == np.dtype(ml_dtypes.bfloat16) and np.all(y.data == 4.0)


def test_a_gpt_with_fp8_marks_the_blocks_linears_only_and_trains():
    model = GPT(FP8_CONFIG)
    marked = sorted(n for n, p in model.named_parameters() if getattr(p, "fp8", False))
    assert marked == sorted(f"blocks.{i}.{m}.weight" for i in range(FP8_CONFIG.n_layer)
                            for m in ("attn.qkv", "attn.proj", "mlp.fc1", "mlp.fc2"))
    x, y = batch(FP8_CONFIG, 4, 0)
    loss = model.loss(x, y)
    plain = GPT(dataclasses.replace(FP8_CONFIG, fp8=False)).loss(x, y)
    assert loss.item() != plain.item() and abs(loss.item() - plain.item()) < 1e-2
    loss.backward()
    assert all(np.all(np.isfinite(p.grad.astype(np.float32))) for p in model.parameters())


def experts_data(seed=0):
    """4 experts of very different sizes: expert 0's activations ~1000, expert 3's ~1e-3."""
    rng = np.random.default_rng(seed)
    size = np.array([1000.0, 3.0, 0.1, 1e-3]).reshape(4, 1, 1)
    x = (rng.normal(size=(4, 6, 16)) * size).astype(np.float32)       # (E, c, k)
    w = (rng.normal(size=(4, 16, 8)) * 0.05).astype(np.float32)       # (E, k, m)
    g = (rng.normal(size=(4, 6, 8)) * 1e-2).astype(np.float32)        # (E, c, m)
    return x, w, g


def grouped_errors():
    """Per expert, the worst relative error of Y, dX, dW of the grouped fp8 matmul."""
    x, w, g = experts_data()
    xt, wt = Tensor(x, requires_grad=True), Tensor(w, requires_grad=True)
    y = fp8.fp8_matmul(xt, wt)                      # a 3-D weight: the grouped matmul
    y.backward(g)
    x64, w64, g64 = x.astype(np.float64), w.astype(np.float64), g.astype(np.float64)
    want = {"y": x64 @ w64, "dx": g64 @ w64.transpose(0, 2, 1),
            "dw": x64.transpose(0, 2, 1) @ g64}
    got = {"y": y.data, "dx": xt.grad, "dw": wt.grad}
    return [max(np.abs(got[k][e] - want[k][e]).max() / np.abs(want[k][e]).max()
                if np.all(np.isfinite(got[k][e])) else np.inf for k in want) for e in range(4)]


def test_the_grouped_fp8_matmul_scales_each_expert_on_its_own(monkeypatch):
    assert max(grouped_errors()) < 0.2       # every expert within fp8's error (e5m2: 2^-3)
    one_scale = lambda x, fmt: fp8.quantize(x, fmt)    # noqa: E731 - one scale for the stack
    monkeypatch.setattr(fp8, "quantize_grouped", one_scale)
    errors = grouped_errors()
    assert errors[0] < 0.2 and errors[3] > 0.9         # the small expert underflows to 0
    monkeypatch.setattr(fp8, "quantize_grouped", lambda x, fmt: (
        x.astype(fmt), np.ones((len(x), 1, 1), np.float32)))              # no scale at all
    assert grouped_errors()[0] == np.inf               # 1000 x 3: past e4m3's 448, NaN


def test_grouped_experts_equal_the_expert_by_expert_path_bit_for_bit():
    """ExpertMLPs' fast path (one grouped fp8 matmul) and the readable one (expert by expert,
    as dropless runs them): the same scales, the same bits, forward and backward."""
    from minimegatron.autodiff import functional as F
    from minimegatron.autodiff.ops import concatenate
    from minimegatron.nn.moe.experts import ExpertMLPs
    rng = np.random.default_rng(1)
    experts = ExpertMLPs(4, 8, "bfloat16")
    for p in experts.parameters():
        p.data = (rng.normal(size=p.shape) * 0.3).astype(ml_dtypes.bfloat16)
    assert fp8.mark_experts(experts) == ["fc1.weight", "fc2.weight"]
    rows = (rng.normal(size=(12, 8)) * 3).astype(ml_dtypes.bfloat16)
    runs = []
    for grouped in (True, False):
        x = Tensor(rows.copy(), requires_grad=True)
        for p in experts.parameters():
            p.grad = None
        y = experts(x, [3] * 4) if grouped else concatenate(
            [experts.fc2.one(F.gelu(experts.fc1.one(x[3 * e:3 * e + 3], e)), e)
             for e in range(4)], axis=0)
        y.backward(np.ones_like(y.data))
        runs.append([y.data, x.grad] + [p.grad for p in experts.parameters()])
    assert all(np.array_equal(a.view(np.uint16), b.view(np.uint16)) for a, b in zip(*runs))


def test_a_moe_gpt_in_fp8_marks_the_experts_and_not_the_router():
    from minimegatron.checks.moe import MOE
    from minimegatron.nn.moe import MoEGPT
    model = MoEGPT(FP8_CONFIG, MOE)
    marked = {n for n, p in model.named_parameters() if getattr(p, "fp8", False)}
    experts = {n for n in marked if ".experts." in n}
    assert experts == {f"blocks.{i}.mlp.experts.fc{j}.weight" for i in range(2)
                       for j in (1, 2)} and model.moe.every == 1
    assert not any("router" in n or n.endswith("bias") for n in marked)
    x, y = batch(FP8_CONFIG, 4, 0)
    model.loss(x, y).backward()
    assert all(np.all(np.isfinite(p.grad.astype(np.float32))) for p in model.parameters())
