"""Checks for exercises 1.x: each backward rule against central differences.

Each case is a scalar function of float64 inputs; ``gradcheck`` compares the
autodiff gradient with (L(x + eps) - L(x - eps)) / (2 eps) entry by entry, the
same test tests/test_autodiff.py runs on every primitive.
"""
import re

import numpy as np

from minimegatron.exercise_checks.common import CheckFailed, expect_close
from minimegatron.gradcheck import gradcheck
from minimegatron.i18n import text
from minimegatron.tensor import Tensor


def _t(*shape, seed=0):
    return Tensor(np.random.default_rng(seed).standard_normal(shape), requires_grad=True)


def _squared(op):
    return lambda a, b: (op(a, b) ** 2).sum()


def _gradchecks(cases):
    """Run (description, fn, inputs) cases; the largest error, or CheckFailed naming the case."""
    worst = 0.0
    for case, fn, inputs in cases:
        shapes = ", ".join(str(tuple(t.shape)) for t in inputs)
        try:
            worst = max(worst, gradcheck(fn, inputs))
        except AssertionError as err:
            message = re.sub(r"np\.float64\(([^)]*)\)", r"\1", str(err))
            raise CheckFailed(text("autodiff.mismatch", case=case, shapes=shapes,
                                   message=message)) from None
        except (ValueError, TypeError, IndexError) as err:
            raise CheckFailed(text("autodiff.raised", case=case, shapes=shapes,
                                   error=type(err).__name__, message=err)) from None
    return text("autodiff.pass", count=len(cases), worst=worst)


def check_matmul():
    matmul = _squared(lambda a, b: a @ b)
    return _gradchecks([
        ("((X @ A)**2).sum()", matmul, [_t(3, 4), _t(4, 5, seed=1)]),
        (text("autodiff.batched"), matmul, [_t(2, 3, 4), _t(4, 5, seed=1)]),
        (text("autodiff.broadcast_both"), matmul, [_t(2, 1, 3, 4), _t(3, 4, 2, seed=1)]),
        (text("autodiff.vector_matrix"), matmul, [_t(4), _t(4, 3, seed=1)]),
        (text("autodiff.matrix_vector"), matmul, [_t(3, 4), _t(4, seed=1)]),
    ])


def check_exp():
    return _gradchecks([("x.exp().sum()", lambda a: a.exp().sum(), [_t(3, 3)]),
                        ("(x.exp() * x).sum()", lambda a: (a.exp() * a).sum(), [_t(2, 4)])])


def check_tanh():
    return _gradchecks([("x.tanh().sum()", lambda a: a.tanh().sum(), [_t(3, 3)]),
                        ("(x.tanh()**2).sum()", lambda a: (a.tanh() ** 2).sum(), [_t(5)])])


def check_max():
    x = Tensor(np.array([[1.0, 3.0, 3.0], [2.0, 0.0, 1.0]]), requires_grad=True)
    x.max(axis=1).sum().backward()
    expect_close(text("autodiff.tied_max"), x.grad, [[0.0, 0.5, 0.5], [1.0, 0.0, 0.0]],
                 atol=1e-12)
    return _gradchecks([
        ("(x.max(axis=1)**2).sum()", lambda a: (a.max(axis=1) ** 2).sum(), [_t(3, 4)]),
        ("(x.max(axis=-1, keepdims=True) * x).sum()",
         lambda a: (a.max(axis=-1, keepdims=True) * a).sum(), [_t(2, 5)]),
        ("x.max()", lambda a: a.max(), [_t(3, 3)]),
    ])


def check_unbroadcast():
    from minimegatron.ops import unbroadcast
    grad = np.arange(24.0).reshape(2, 3, 4)
    for shape in [(3, 4), (4,), (3, 1), (1, 3, 1), (2, 3, 4), (1,)]:
        expected = grad.sum(axis=tuple(range(grad.ndim - len(shape))))
        expected = expected.sum(axis=tuple(i for i, s in enumerate(shape) if s == 1),
                                keepdims=True).reshape(shape)
        expect_close(text("autodiff.unbroadcast", shape=shape), unbroadcast(grad, shape),
                     expected, atol=1e-12)
    add = lambda a, b: ((a + b) ** 2).sum()       # noqa: E731
    return _gradchecks([(text("autodiff.add_rows"), add, [_t(3, 4), _t(4)]),
                        (text("autodiff.add_column"), add, [_t(3, 4), _t(3, 1)]),
                        ("((a * b)**2).sum()", _squared(lambda a, b: a * b),
                         [_t(2, 3, 4), _t(1, 4, seed=1)])])


def check_sum():
    return _gradchecks([
        ("x.sum()", lambda a: a.sum(), [_t(3, 4)]),
        ("(x.sum(axis=1, keepdims=True)**2).sum()",
         lambda a: (a.sum(axis=1, keepdims=True) ** 2).sum(), [_t(3, 4)]),
        ("(x.sum(axis=(0, 2))**2).sum()", lambda a: (a.sum(axis=(0, 2)) ** 2).sum(),
         [_t(2, 3, 4)]),
        ("(x.sum(axis=-1) * w).sum()",
         lambda a: (a.sum(axis=-1) * np.arange(3.0)).sum(), [_t(3, 5)]),
    ])


CHECKS = {"1.1": check_matmul, "1.2": check_exp, "1.3": check_tanh, "1.4": check_max,
          "1.5": check_unbroadcast, "1.6": check_sum}
