"""The fused ops (fused.py) against gradcheck and against their composites, in float64.

Also the engine's shortcuts: a leaf's first gradient taken without a copy must
never alias two leaves, the caller's seed, or a read-only broadcast view; and
the fused AdamW update equals the readable one.
"""
import numpy as np
import pytest

import minimegatron as mm
import minimegatron.autodiff.functional as F
from minimegatron import optim
from minimegatron.autodiff import ops
from minimegatron.backend import asarray, to_numpy
from minimegatron.autodiff.gradcheck import gradcheck

from conftest import cupy_skip_reason


def T(*shape, seed=0):
    return mm.Tensor(np.random.default_rng(seed).standard_normal(shape), requires_grad=True)


TARGETS = np.array([[1, 0, 4], [4, 2, 3]])
W = np.random.default_rng(9).standard_normal((2, 3, 6))     # weights the output by position
# (name, fused, composite, input shapes): each a function of Tensors to a Tensor
PAIRS = [
    ("relu", F.relu, lambda a: mm.where(a.data > 0, a, 0.0), [(4, 5)]),
    ("gelu", F.gelu, F.gelu_composite, [(2, 3, 6)]),
    ("softmax", lambda a: F.softmax(a, axis=-1), F.softmax_composite, [(2, 3, 6)]),
    ("softmax axis 0", lambda a: F.softmax(a, axis=0),
     lambda a: F.softmax_composite(a, axis=0), [(2, 3, 6)]),
    ("scaled causal softmax", lambda a: F.softmax(a, scale=0.3, causal=True),
     lambda a: F.softmax_composite(a, scale=0.3, causal=True), [(2, 2, 5, 5)]),
    ("layer_norm", F.layer_norm, F.layer_norm_composite, [(2, 3, 6), (6,), (6,)]),
    ("cross_entropy", lambda a: F.cross_entropy(a, TARGETS),
     lambda a: F.cross_entropy_composite(a, TARGETS), [(2, 3, 5)]),
]


def _weighted(fn):
    """A scalar that weights every output entry differently, so no gradient cancels."""
    def loss(*xs):
        y = fn(*xs)
        return (y * np.random.default_rng(7).standard_normal(y.shape)).sum()
    return loss


@pytest.mark.parametrize("name, fused, composite, shapes", PAIRS, ids=[p[0] for p in PAIRS])
def test_fused_matches_gradcheck_and_its_composite(name, fused, composite, shapes):
    inputs = [T(*s, seed=i) for i, s in enumerate(shapes)]
    assert gradcheck(_weighted(fused), inputs) < 1e-6
    results = []
    for fn in (fused, composite):
        xs = [mm.Tensor(t.data.copy(), requires_grad=True) for t in inputs]
        out = _weighted(fn)(*xs)
        out.backward()
        results.append((out.data, fn(*xs).data, [x.grad for x in xs]))
    (loss_f, y_f, g_f), (loss_c, y_c, g_c) = results
    np.testing.assert_allclose(y_f, y_c, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(loss_f, loss_c, rtol=1e-12, atol=1e-14)
    for a, b in zip(g_f, g_c):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-13)


def test_the_causal_softmax_gives_later_keys_nothing():
    p = F.softmax(T(1, 1, 4, 4), causal=True).data[0, 0]
    np.testing.assert_array_equal(np.triu(p, 1), 0.0)
    np.testing.assert_allclose(p.sum(axis=-1), 1.0, rtol=1e-14)


def test_fused_ops_keep_float32():
    x = mm.Tensor(np.ones((2, 4), dtype="float32"), requires_grad=True)
    w, b = (mm.Tensor(np.ones(4, dtype="float32"), requires_grad=True) for _ in range(2))
    for y in (F.gelu(x), F.relu(x), F.softmax(x, scale=0.5), F.layer_norm(x, w, b),
              F.cross_entropy(x, np.array([0, 3]))):
        assert y.dtype == np.float32, y
        y.sum().backward()
        assert x.grad.dtype == np.float32


# ---- a leaf's first gradient without a copy: never shared ---------------------------------
def test_one_gradient_array_reaching_two_leaves_is_not_shared():
    """a + b hands the SAME grad_out array to both leaves; an in-place clip of one
    .grad (as a loss-scale unscale does) must leave the other untouched."""
    a, b = T(3, 4), T(3, 4, seed=1)
    (a + b).backward(np.ones((3, 4)))
    assert a.grad is not b.grad and not np.shares_memory(a.grad, b.grad)
    a.grad *= 0.5
    np.testing.assert_array_equal(b.grad, 1.0)


def test_views_of_one_gradient_reaching_two_leaves_are_not_shared():
    a, b = T(6), T(2, 3, seed=1)
    (a.reshape(2, 3) + b).backward(np.ones((2, 3)))      # a gets a view, b the array itself
    assert not np.shares_memory(a.grad, b.grad)


def test_the_callers_seed_gradient_is_copied():
    a = T(3)
    seed = np.ones(3)
    (a * 1.0).backward(seed)          # Mul's grad is fresh, but check the direct leaf case too
    a2 = T(3)
    a2.backward(seed)
    seed[:] = 7.0                      # the caller reuses its array
    np.testing.assert_array_equal(a2.grad, 1.0)
    np.testing.assert_array_equal(a.grad, 1.0)


def test_a_broadcast_view_gradient_becomes_a_writable_array():
    w = T(2, 3)
    w.sum().backward()                 # Sum's backward is a read-only broadcast view
    assert w.grad.flags.writeable and w.grad.flags.c_contiguous
    w.grad *= 2.0
    np.testing.assert_array_equal(w.grad, 2.0)


def test_a_fresh_gradient_is_taken_without_a_copy():
    x, w = T(4, 3), T(3, 5, seed=1)
    grads = []
    orig = ops.MatMul.backward

    def spy(ctx, grad_out):
        out = orig(ctx, grad_out)
        grads.append(out[1])
        return out
    ops.MatMul.backward = staticmethod(spy)
    try:
        (x @ w).backward(np.ones((4, 5)))
    finally:
        ops.MatMul.backward = staticmethod(orig)
    assert w.grad is grads[0]


# ---- AdamW: the fused update equals the readable one ---------------------------------------
@pytest.mark.parametrize("dtype, rtol", [("float64", 1e-12), ("float32", 1e-5)])
def test_fused_adamw_equals_the_readable_update(dtype, rtol):
    rng = np.random.default_rng(0)
    shapes = [(5, 3), (7,)]
    start = [rng.standard_normal(s).astype(dtype) for s in shapes]
    grads = [[rng.standard_normal(s).astype(dtype) for s in shapes] for _ in range(4)]
    finals = []
    for fused in (True, False):
        params = [mm.Tensor(p.copy(), requires_grad=True) for p in start]
        opt = optim.AdamW(params, lr=0.05, weight_decay=0.1, fused=fused)
        for step_grads in grads:
            for p, g in zip(params, step_grads):
                p.grad = g.copy()
            opt.step()
        finals.append([p.data for p in params] + [s[k] for s in opt.state for k in "mv"])
    for a, b in zip(*finals):
        assert a.dtype == np.dtype(dtype)
        np.testing.assert_allclose(a, b, rtol=rtol, atol=rtol * 1e-2)


@pytest.mark.skipif(cupy_skip_reason() is not None, reason=cupy_skip_reason() or "")
@pytest.mark.parametrize("dtype, rtol", [("float64", 1e-12), ("float32", 2e-5)])
def test_the_cupy_kernels_match_numpy(dtype, rtol):
    """Every fused op (forward and gradients) and AdamW's kernel on CuPy against NumPy."""
    rng = np.random.default_rng(3)
    cases = [(fused, [rng.standard_normal(s).astype(dtype) for s in shapes])
             for _, fused, _, shapes in PAIRS]
    g, p, m = (rng.standard_normal((4, 8)).astype(dtype) for _ in range(3))
    v = rng.random((4, 8)).astype(dtype)
    results = {}
    for backend in ("numpy", "cupy"):
        mm.use_backend(backend)
        try:
            out = []
            for fn, arrays in cases:
                xs = [mm.Tensor(asarray(a), requires_grad=True) for a in arrays]
                y = fn(*xs)
                (y * asarray(np.linspace(-1, 1, y.size).reshape(y.shape).astype(dtype))
                 ).sum().backward()
                out += [y.data] + [x.grad for x in xs]
            state = [asarray(a.copy()) for a in (p, m, v)]
            optim.adamw_fused(state[0], asarray(g), state[1], state[2], 0.01, 0.1,
                              (0.9, 0.999), 1e-8, 3)
            results[backend] = [to_numpy(a) for a in out + state]
        finally:
            mm.use_backend("numpy")
    for a, b in zip(results["numpy"], results["cupy"]):
        assert b.dtype == np.dtype(dtype)
        np.testing.assert_allclose(b, a, rtol=rtol, atol=rtol)


def test_a_float32_gpt_step_makes_no_float64_array(monkeypatch):
    """A float64 constant or a promotion anywhere in the step would make float32 run at
    float64's speed: every op output, gradient and optimizer state stays float32."""
    from minimegatron import nn
    from minimegatron.autodiff import function
    from minimegatron.data.datasets import repeat_task
    seen = []
    apply = function.Function.apply.__func__

    def recording(cls, *args, **kwargs):
        out = apply(cls, *args, **kwargs)
        seen.extend((cls.__name__, t.dtype) for t in (out if isinstance(out, tuple) else (out,)))
        return out
    monkeypatch.setattr(function.Function, "apply", classmethod(recording))
    cfg = nn.GPTConfig(vocab_size=16, seq_len=8, n_layer=2, n_head=2, d_model=16, dropout=0.1,
                       dtype="float32")
    model = nn.GPT(cfg)
    opt = optim.AdamW(model.parameters())
    for step in range(2):
        loss = model.loss(*repeat_task(2, cfg.seq_len, cfg.vocab_size, step=step))
        opt.zero_grad()
        loss.backward()
        opt.step()
    assert {dtype for _, dtype in seen} == {np.dtype("float32")}, set(seen)
    arrays = [p.grad for p in opt.params] + [a for s in opt.state for a in s.values()]
    assert {a.dtype for a in arrays} == {np.dtype("float32")}
