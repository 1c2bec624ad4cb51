"""SGD and AdamW against the update formulas written out by hand."""
import numpy as np

import minimegatron as mm
from minimegatron import optim


def _param(values, grads):
    p = mm.nn.Parameter(np.array(values, dtype=float))
    p.grad = np.array(grads, dtype=float)
    return p


def test_sgd_momentum_and_weight_decay_by_hand():
    p = _param([1.0, -2.0], [0.5, 0.25])
    opt = optim.SGD([p], lr=0.1, momentum=0.9, weight_decay=0.01)
    opt.step()
    # g = grad + wd p = [0.51, 0.23]; b = g; p = p - lr b
    np.testing.assert_allclose(p.data, [1.0 - 0.1 * 0.51, -2.0 - 0.1 * 0.23])
    p1 = p.data.copy()
    opt.step()
    g2 = np.array([0.5, 0.25]) + 0.01 * p1
    b2 = 0.9 * np.array([0.51, 0.23]) + g2
    np.testing.assert_allclose(p.data, p1 - 0.1 * b2, rtol=1e-15)


def test_plain_sgd():
    p = _param([1.0], [2.0])
    optim.SGD([p], lr=0.5).step()
    assert p.data[0] == 0.0


def test_adamw_two_steps_by_hand():
    p = _param([1.0, -1.0], [0.2, -0.4])
    lr, b1, b2, eps, wd = 0.01, 0.9, 0.999, 1e-8, 0.1
    opt = optim.AdamW([p], lr=lr, betas=(b1, b2), eps=eps, weight_decay=wd)
    w, m, v = np.array([1.0, -1.0]), np.zeros(2), np.zeros(2)
    for t, g in ((1, np.array([0.2, -0.4])), (2, np.array([-0.1, 0.3]))):
        p.grad = g.copy()
        opt.step()
        w = w * (1 - lr * wd)
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g * g
        w = w - lr * (m / (1 - b1 ** t)) / (np.sqrt(v / (1 - b2 ** t)) + eps)
        np.testing.assert_allclose(p.data, w, rtol=1e-14)
    np.testing.assert_allclose(opt.state[0]["m"], m)


def test_optimizer_state_dict_round_trip():
    p = _param([1.0, 2.0], [0.1, 0.1])
    opt = optim.AdamW([p], lr=0.1)
    opt.step()
    q = _param([1.0, 2.0], [0.1, 0.1])
    opt2 = optim.AdamW([q], lr=0.1)
    opt2.load_state_dict(opt.state_dict())
    assert opt2.step_count == 1
    np.testing.assert_array_equal(opt2.state[0]["v"], opt.state[0]["v"])
