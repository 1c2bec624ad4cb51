"""A backward split into B (input gradients) and W (weight gradients) equals the whole one.

Bit for bit on a Linear, a LayerNorm, an embedding, a weight used twice and
the serial GPT (whole and cut into pipeline stages); by central differences
(gradcheck's numerical_grad) on each op with a weight. B leaves every weight's
.grad untouched and W adds exactly the part the whole backward adds.
"""
import numpy as np
import pytest

from minimegatron.autodiff import functional as F
from minimegatron import nn
from minimegatron.data.demo import VERIFY_CONFIG, batch
from minimegatron.autodiff.gradcheck import numerical_grad
from minimegatron.nn.module import Parameter
from minimegatron.autodiff.ops import embedding
from minimegatron.parallel.pipeline_parallel.stage import PipelineStage
from minimegatron.autodiff.tensor import Tensor

RNG = np.random.default_rng(0)


def grads(tensors):
    return [None if t.grad is None else t.grad.copy() for t in tensors]


def whole_and_split(make, leaves, seed_grad=None):
    """(grads after the whole backward, after B only, after B then W) for ``make()``."""
    for t in leaves:
        t.grad = None
    make().backward(seed_grad)
    whole = grads(leaves)
    for t in leaves:
        t.grad = None
    weights = make().backward(seed_grad, defer_weight_grads=True)
    after_b = grads(leaves)
    weights()
    return whole, after_b, grads(leaves)


def assert_same(a, b):
    assert len(a) == len(b)
    for x, y in zip(a, b):
        assert (x is None) == (y is None)
        if x is not None:
            assert x.dtype == y.dtype and np.array_equal(x, y)       # bit for bit


def test_linear_b_is_dy_w_transposed_and_w_is_x_transposed_dy():
    x = Tensor(RNG.standard_normal((3, 5, 4)), requires_grad=True)     # (B, T, in)
    layer = nn.Linear(4, 6, seed=1)
    dy = RNG.standard_normal((3, 5, 6))                                 # (B, T, out)
    leaves = [x, layer.weight, layer.bias]
    whole, after_b, after_w = whole_and_split(lambda: layer(x), leaves, dy)
    assert_same(whole, after_w)
    assert after_b[1] is None and after_b[2] is None                   # B: no weight touched
    np.testing.assert_allclose(after_b[0], dy @ layer.weight.data.T, rtol=1e-14)   # dY W^T
    rows = x.data.reshape(-1, 4)
    np.testing.assert_allclose(after_w[1], rows.T @ dy.reshape(-1, 6), rtol=1e-13)  # X^T dY
    np.testing.assert_allclose(after_w[2], dy.sum(axis=(0, 1)), rtol=1e-13)


def test_a_weight_used_twice_and_a_layer_norm_and_an_embedding():
    emb = nn.Embedding(7, 4)
    emb.weight.data[...] = RNG.standard_normal((7, 4))
    norm, layer = nn.LayerNorm(4), nn.Linear(4, 4, seed=2)
    norm.weight.data[...] = RNG.standard_normal(4)
    ids = RNG.integers(0, 7, size=(2, 3))

    def model():
        h = norm(emb(ids))
        return (layer(F.gelu(layer(h))) * h).sum()                      # layer used twice
    leaves = [emb.weight, norm.weight, norm.bias, layer.weight, layer.bias]
    whole, after_b, after_w = whole_and_split(model, leaves)
    assert_same(whole, after_w)
    assert after_b == [None] * len(leaves)          # only weights here: all of it is W


@pytest.mark.parametrize("op", ["linear", "layer_norm", "mul", "embedding"])
def test_split_gradients_match_central_differences(op):
    x = Tensor(RNG.standard_normal((2, 3, 4)), requires_grad=True)
    w = Parameter(RNG.standard_normal((4, 4) if op in ("linear", "embedding") else (4,)))
    b = Parameter(RNG.standard_normal(4))
    ids = RNG.integers(0, 4, size=(2, 3))
    fn = {"linear": lambda x, w, b: ((x @ w + b) ** 2).sum(),
          "layer_norm": lambda x, w, b: (F.layer_norm(x, w, b) ** 3).sum(),
          "mul": lambda x, w, b: ((x * w).tanh() + b).sum(),
          "embedding": lambda x, w, b: ((F.gelu(x) + embedding(w, ids)) * b).sum()}[op]
    inputs = [x, w, b]
    for t in inputs:
        t.grad = None
    weights = fn(*inputs).backward(defer_weight_grads=True)
    assert w.grad is None and b.grad is None and x.grad is not None and len(weights) > 0
    weights()
    for i, t in enumerate(inputs):
        expected = numerical_grad(fn, inputs, i)
        np.testing.assert_allclose(t.grad, expected, atol=1e-7, rtol=1e-6)
    with pytest.raises(RuntimeError, match="W runs once"):
        weights()


def test_the_serial_gpt_whole_and_split_agree_bit_for_bit():
    model = nn.GPT(VERIFY_CONFIG)
    inputs, targets = batch(VERIFY_CONFIG, 4, 0)
    params = model.parameters()
    whole, after_b, after_w = whole_and_split(lambda: model.loss(inputs, targets), params)
    assert_same(whole, after_w)
    assert after_b == [None] * len(params)


def test_a_pipeline_stage_sends_its_input_gradient_after_b_alone():
    """A middle stage: dL/dX (what the previous stage waits for) is complete after B."""
    stage = PipelineStage(nn.GPT(VERIFY_CONFIG), 1, 3)
    x = Tensor(RNG.standard_normal((2, VERIFY_CONFIG.seq_len, VERIFY_CONFIG.d_model)),
               requires_grad=True)                                     # (B, T, D) received
    dy = RNG.standard_normal(x.shape)
    leaves = [x] + stage.parameters()
    whole, after_b, after_w = whole_and_split(lambda: stage(x), leaves, dy)
    assert_same(whole, after_w)
    assert np.array_equal(after_b[0], whole[0])                        # B: dL/dX, final
    assert after_b[1:] == [None] * len(stage.parameters())


def test_skipping_w_or_running_it_twice_is_seen():
    layer = nn.Linear(3, 2, seed=0)
    x = Tensor(RNG.standard_normal((4, 3)), requires_grad=True)
    layer(x).sum().backward(defer_weight_grads=True)                   # W never run
    assert layer.weight.grad is None
    weights = layer(x).sum().backward(defer_weight_grads=True)
    weights()
    once = layer.weight.grad.copy()
    layer.weight.grad = None
    layer(x).sum().backward()
    assert np.array_equal(once, layer.weight.grad)
