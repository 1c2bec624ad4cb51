"""float64 central-difference gradcheck for every primitive and composite."""
import numpy as np
import pytest

import minimegatron as mm
import minimegatron.autodiff.functional as F
from minimegatron.autodiff.gradcheck import gradcheck


def T(*shape, seed=0, positive=False):
    a = np.random.default_rng(seed).standard_normal(shape)
    return mm.Tensor(np.abs(a) + 0.5 if positive else a, requires_grad=True)


# (name, function to a scalar, inputs) -- broadcasting cases included on purpose
CASES = [
    ("add broadcast", lambda a, b: (a + b).sum(), [T(3, 4), T(4, seed=1)]),
    ("add keepdim-broadcast", lambda a, b: ((a + b) ** 2).sum(), [T(3, 4), T(3, 1, seed=1)]),
    ("sub scalar", lambda a: ((2.0 - a) * a).sum(), [T(2, 3)]),
    ("mul broadcast", lambda a, b: (a * b).sum(), [T(2, 3, 4), T(1, 4, seed=1)]),
    ("div", lambda a, b: (a / b).sum(), [T(3, 4), T(3, 4, seed=1, positive=True)]),
    ("neg", lambda a: (-a * a).sum(), [T(5)]),
    ("pow scalar", lambda a: (a ** 3).sum(), [T(3, 2)]),
    ("pow tensor", lambda a, b: (a ** b).sum(), [T(3, positive=True), T(3, seed=1)]),
    ("matmul 2d", lambda a, b: ((a @ b) ** 2).sum(), [T(3, 4), T(4, 5, seed=1)]),
    ("matmul batched broadcast", lambda a, b: ((a @ b) ** 2).sum(),
     [T(2, 3, 4), T(4, 5, seed=1)]),
    ("matmul batch both", lambda a, b: ((a @ b) ** 2).sum(), [T(2, 1, 3, 4), T(3, 4, 2, seed=1)]),
    ("matmul vector", lambda a, b: ((a @ b) ** 2).sum(), [T(4), T(4, 3, seed=1)]),
    ("matmul matrix-vector", lambda a, b: ((a @ b) ** 2).sum(), [T(3, 4), T(4, seed=1)]),
    ("sum axis keepdims", lambda a: (a.sum(axis=1, keepdims=True) ** 2).sum(), [T(3, 4)]),
    ("sum tuple axes", lambda a: (a.sum(axis=(0, 2)) ** 2).sum(), [T(2, 3, 4)]),
    ("mean axis", lambda a: (a.mean(axis=0) ** 2).sum(), [T(3, 4)]),
    ("mean all", lambda a: a.mean() ** 2, [T(3, 4)]),
    ("max axis", lambda a: (a.max(axis=1) ** 2).sum(), [T(3, 4)]),
    ("max keepdims", lambda a: (a.max(axis=-1, keepdims=True) * a).sum(), [T(2, 5)]),
    ("exp", lambda a: a.exp().sum(), [T(3, 3)]),
    ("log", lambda a: a.log().sum(), [T(3, 3, positive=True)]),
    ("tanh", lambda a: a.tanh().sum(), [T(3, 3)]),
    ("sqrt", lambda a: a.sqrt().sum(), [T(3, 3, positive=True)]),
    ("reshape", lambda a: (a.reshape(4, 6) @ a.reshape(6, 4)).sum(), [T(2, 3, 4)]),
    ("transpose axes", lambda a: (a.transpose(2, 0, 1) * np.arange(24.0).reshape(4, 2, 3)).sum(),
     [T(2, 3, 4)]),
    ("getitem slice", lambda a: (a[1:, ::2] ** 2).sum(), [T(4, 5)]),
    ("getitem int array repeats", lambda a: (a[np.array([0, 2, 0, 3])] ** 2).sum(), [T(4, 3)]),
    ("getitem pairs", lambda a: (a[np.arange(3), np.array([1, 0, 1])] ** 2).sum(), [T(3, 2)]),
    ("concatenate", lambda a, b: (mm.concatenate([a, b], axis=1) ** 2).sum(),
     [T(2, 3), T(2, 2, seed=1)]),
    ("split", lambda a: (lambda p: (p[0] * p[1] + p[2]).sum())(mm.split(a, 3, axis=-1)),
     [T(2, 6)]),
    ("where", lambda a, b: (mm.where(a.data > 0, a, b) ** 2).sum(), [T(3, 4), T(4, seed=1)]),
    ("embedding repeats", lambda w: (mm.embedding(w, np.array([[1, 2], [1, 1]])) ** 2).sum(),
     [T(4, 3)]),
    # composites
    ("relu", lambda a: (F.relu(a) ** 2).sum(), [T(4, 5)]),
    ("gelu", lambda a: F.gelu(a).sum(), [T(4, 5)]),
    ("softmax", lambda a: (F.softmax(a, axis=-1) * np.arange(5.0)).sum(), [T(3, 5)]),
    ("log_softmax axis 0", lambda a: (F.log_softmax(a, axis=0) * np.arange(5.0)).sum(), [T(3, 5)]),
    ("cross_entropy", lambda a: F.cross_entropy(a, np.array([[1, 0], [4, 2]])), [T(2, 2, 5)]),
    ("layer_norm", lambda a, w, b: (F.layer_norm(a, w, b) * np.arange(6.0)).sum(),
     [T(2, 3, 6), T(6, seed=1), T(6, seed=2)]),
    ("dropout", lambda a: (F.dropout(a, 0.5, True, np.random.default_rng(0)) ** 2).sum(),
     [T(4, 4)]),
]


@pytest.mark.parametrize("name, fn, inputs", CASES, ids=[c[0] for c in CASES])
def test_gradcheck(name, fn, inputs):
    if name == "dropout":   # the same mask in every call: reseed inside
        fn = (lambda a: (F.dropout(a, 0.5, True, np.random.default_rng(0)) ** 2).sum())
    assert gradcheck(fn, inputs) < 1e-6


def test_gradients_accumulate_and_reuse_of_a_leaf():
    x = mm.Tensor(np.array([1.0, 2.0]), requires_grad=True)
    (x * x + x).sum().backward()          # d/dx = 2x + 1
    (x * 3.0).sum().backward()            # + 3
    np.testing.assert_array_equal(x.grad, [6.0, 8.0])


def test_diamond_graph_order():
    x = mm.Tensor(np.array([3.0]), requires_grad=True)
    c = x * 2.0
    a = c * c                             # uses c, and the root uses both a and c
    (c + a).sum().backward()              # d/dx (2x + 4x^2) = 2 + 8x = 26
    assert x.grad[0] == 26.0


def test_grad_hook_fires_once_after_all_paths():
    x = mm.Tensor(np.ones(3), requires_grad=True)
    seen = []
    x.register_grad_hook(lambda t: seen.append(t.grad.copy()))
    (x * x + x * 2.0 + x).sum().backward()
    assert len(seen) == 1 and np.allclose(seen[0], 5.0)


def test_no_grad_and_detach():
    x = mm.Tensor(np.ones(2), requires_grad=True)
    with mm.no_grad():
        y = x * 2
    assert not y.requires_grad
    assert not (x.detach() * 2).requires_grad


def test_errors_are_clear():
    with pytest.raises(ValueError, match=r"\(2, 3\).*\(4, 5\)"):
        mm.Tensor(np.ones((2, 3))) @ mm.Tensor(np.ones((4, 5)))
    y = mm.Tensor(np.ones(3), requires_grad=True) * 2
    with pytest.raises(RuntimeError, match="non-scalar.*explicit gradient"):
        y.backward()
    loss = (mm.Tensor(np.ones(2), requires_grad=True) * 2).sum()
    loss.backward()
    with pytest.raises(RuntimeError, match="second time"):
        loss.backward()


def test_numpy_style_methods():
    x = mm.Tensor(np.arange(24.0).reshape(2, 3, 4))
    assert x.sum(axis=1, keepdims=True).shape == (2, 1, 4)
    assert x.max(axis=1).shape == (2, 4)
    assert x.transpose(2, 0, 1).shape == (4, 2, 3)
    assert x.reshape(4, 6).shape == (4, 6)
    assert x[np.array([1, 0])].shape == (2, 3, 4)
    np.testing.assert_allclose(x.exp().data, np.exp(x.data))
