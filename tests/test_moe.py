"""The serial mixture of experts: top-k with its tie-break, the capacity queue, the row plan,
the layer against a plain loop over tokens (outputs and both aux losses), gradchecks of the
row moves, the aux-loss scaler and the whole layer (capacity and dropless), MoEGPT in every
or every other block, and the bad configurations.
"""
import math

import numpy as np
import pytest

from minimegatron.data.demo import SMALL_CONFIG, batch
from minimegatron.autodiff.gradcheck import gradcheck
from minimegatron.nn.moe import (MoE, MoEConfig, MoEGPT, attach_aux_loss, gather_rows,
                                 moe_layers, choose_experts, route, scatter_rows, top_k)
from minimegatron.nn.moe.routing import assignment_counts
from minimegatron.tools.memory_moe import moe_layer_indices
from minimegatron.autodiff.tensor import Tensor


def gelu(x):
    return 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))


def loop_moe(layer, x):
    """One token at a time: (y, load-balancing loss, z-loss) of an MoE layer in numpy."""
    moe = layer.moe
    E, k = moe.num_experts, moe.top_k
    b, T, D = x.shape
    C = moe.capacity(T)
    W1, b1 = layer.experts.fc1.weight.data, layer.experts.fc1.bias.data
    W2, b2 = layer.experts.fc2.weight.data, layer.experts.fc2.bias.data
    y, aux, z = np.zeros_like(x), 0.0, 0.0
    for s in range(b):
        logits = x[s] @ layer.router.weight.data                  # (T, E)
        probs = np.exp(logits - logits.max(-1, keepdims=True))
        probs /= probs.sum(-1, keepdims=True)
        picks = [sorted(range(E), key=lambda e: (-probs[t, e], e))[:k] for t in range(T)]
        used, count = [0] * E, [0] * E
        for j in range(k):                                         # first choices first
            for t in range(T):
                e = picks[t][j]
                count[e] += 1
                if C is not None and used[e] >= C:
                    continue                                       # dropped
                used[e] += 1
                h = gelu(x[s, t] @ W1[e] + b1[e]) @ W2[e] + b2[e]
                y[s, t] += probs[t, e] * h
        f = np.array(count) / (k * T)
        aux += moe.aux_loss_coeff * E * (f * probs.mean(0)).sum() / b
        lse = logits.max(-1) + np.log(np.exp(logits - logits.max(-1, keepdims=True)).sum(-1))
        z += moe.z_loss_coeff * (lse ** 2).mean() / b
    return y, aux, z


def make_layer(moe, d=8, seed=0):
    layer = MoE(d, moe)
    rng = np.random.default_rng(seed)
    for p in layer.parameters():
        p.data[...] = rng.normal(0, 0.5, p.shape)
    return layer


def test_top_k_takes_the_largest_and_breaks_ties_to_the_lower_expert():
    probs = np.array([[0.1, 0.4, 0.1, 0.4], [0.25, 0.25, 0.25, 0.25], [0.5, 0.1, 0.3, 0.1]])
    assert top_k(probs, 2).tolist() == [[1, 3], [0, 1], [0, 2]]
    assert top_k(probs, 1).tolist() == [[1], [0], [0]]


def test_capacity_queue_is_slot_major_then_token_order():
    probs = np.array([[[.5, .3, .2], [.6, .1, .3], [.7, .2, .1], [.3, .6, .1]]])  # (1, 4, 3)
    choice, slot, kept = choose_experts(probs, 2, 3)
    assert choice[0].tolist() == [[0, 1], [0, 2], [0, 1], [1, 0]]
    # queue: first choices 0,0,0,1 then second choices 1,2,1,0
    assert slot[0].tolist() == [[0, 1], [1, 0], [2, 2], [0, 3]]
    assert kept[0].tolist() == [[True, True], [True, True], [True, True], [True, False]]
    assert MoEConfig(4, 2, 1.0).capacity(8) == 4 and MoEConfig(8, 2, 1.25).capacity(8) == 3
    assert MoEConfig(8, 1, 0.1).capacity(8) == 1 and MoEConfig(8, 2, None).capacity(8) is None


def test_route_plan_padded_rows_are_expert_major_and_dropless_keeps_every_choice():
    rng = np.random.default_rng(1)
    probs = rng.dirichlet(np.ones(4), size=(2, 6))                # (b=2, T=6, E=4)
    plan = route(probs, 2, 2)
    assert plan.token.shape == (4 * 2 * 2,) and plan.counts.tolist() == [4] * 4
    table = plan.token.reshape(4, 2, 2)                          # (E, b, C)
    for e in range(4):
        for s in range(2):
            for token in table[e, s][table[e, s] >= 0]:
                assert token // 6 == s and e in plan.choice[s, token % 6]
    assert plan.dropped == 2 * 6 * 2 - (plan.token >= 0).sum() > 0
    assert plan.kept_load(4).sum() == 24 - plan.dropped and plan.load(4).sum() == 24
    assert (plan.kept_load(4) <= 2 * 2).all()                     # C per sequence, b = 2
    free = route(probs, 2, None)
    assert free.dropped == 0 and free.counts.sum() == 24 and (np.diff(free.expert) >= 0).all()
    assert free.counts.tolist() == assignment_counts(free.choice, 4).sum(0).tolist()


@pytest.mark.parametrize("factor", [1.0, 0.5, None])
def test_layer_equals_a_plain_loop_over_tokens(factor):
    moe = MoEConfig(num_experts=4, top_k=2, capacity_factor=factor, aux_loss_coeff=0.1,
                    z_loss_coeff=0.01)
    layer = make_layer(moe)
    x = np.random.default_rng(2).normal(size=(3, 8, 8))
    y = layer(Tensor(x)).data
    want, aux, z = loop_moe(layer, x)
    assert np.abs(y - want).max() < 1e-12
    assert abs(layer.aux_log[-1] - (aux + z)) < 1e-12
    if factor == 0.5:
        assert layer.last_plan.dropped > 0
    # a changed tie-break or queue order would change which tokens the experts see
    assert np.abs(y).max() > 0.1


def test_gather_and_scatter_rows_are_adjoint_and_gradcheck():
    rng = np.random.default_rng(3)
    index = np.array([2, -1, 0, 2, 4])
    x, y = rng.normal(size=(5, 3)), rng.normal(size=(5, 3))
    lhs = (gather_rows(Tensor(x), index).data * y).sum()
    rhs = (x * scatter_rows(Tensor(y), index, 5).data).sum()
    assert abs(lhs - rhs) < 1e-12
    w = Tensor(rng.normal(size=(5, 3)))
    gradcheck(lambda a: (gather_rows(a, index) * w).sum(), [Tensor(x, requires_grad=True)])
    gradcheck(lambda a: (scatter_rows(a, index, 5) * w).sum(), [Tensor(y, requires_grad=True)])


def test_attach_aux_loss_passes_y_and_gives_aux_its_scale():
    y = Tensor(np.ones((2, 2)), requires_grad=True)
    a = Tensor(np.array(3.0), requires_grad=True)
    aux = a * a
    out = attach_aux_loss(y, aux, 0.5)
    assert (out.data == y.data).all()
    out.sum().backward()
    assert (y.grad == 1).all() and abs(float(a.grad) - 0.5 * 6.0) < 1e-15


@pytest.mark.parametrize("factor", [1.0, None])
def test_layer_gradcheck_with_its_aux_losses(factor):
    moe = MoEConfig(num_experts=4, top_k=2, capacity_factor=factor, aux_loss_coeff=0.3,
                    z_loss_coeff=0.1)
    layer = make_layer(moe, d=4, seed=4)
    x = Tensor(np.random.default_rng(5).normal(size=(2, 4, 4)), requires_grad=True)
    w = Tensor(np.random.default_rng(6).normal(size=(2, 4, 4)))

    def loss(*_):
        out = (layer(x) * w).sum()
        return out + layer.aux_log[-1]                      # aux: value here, grad inside
    worst = gradcheck(loss, [x] + layer.parameters(), atol=1e-6)
    assert worst < 1e-6
    assert layer.experts.fc1.weight.grad is not None and layer.router.weight.grad.any()


def test_moegpt_every_and_every_other_block_and_loss_includes_aux():
    x, y = batch(SMALL_CONFIG, 4, 0)
    every = MoEGPT(SMALL_CONFIG, MoEConfig(4, 2, 1.0))
    other = MoEGPT(SMALL_CONFIG, MoEConfig(4, 2, 1.0, every=2))
    assert len(moe_layers(every)) == 2 and len(moe_layers(other)) == 1
    # Megatron's moe_layer_freq: [1 if i % k == 0 else 0 for i in range(L)] -> block 0, not 1
    assert type(other.blocks[1].mlp).__name__ == "MLP"
    assert type(other.blocks[0].mlp).__name__ == "MoE"
    pattern = [1 if i % 2 == 0 else 0 for i in range(5)]
    assert [int(MoEConfig(4, 2, 1.0, every=2).is_moe_layer(i)) for i in range(5)] == pattern
    assert moe_layer_indices(5, 2) == [0, 2, 4] and moe_layer_indices(6, 3) == [0, 3]
    loss = every.loss(x, y)
    ce = every.head_loss(_hidden(every, x), y).item()
    aux = sum(layer.aux_log[-1] for layer in moe_layers(every))
    assert abs(loss.item() - (ce + aux)) < 1e-14
    assert aux > 0.01 * 0.9 * 2                     # ~alpha per layer: a balanced router
    names = dict(every.named_parameters())
    assert names["blocks.0.mlp.experts.fc1.weight"].shape == (4, 16, 64)
    assert not names["blocks.0.mlp.experts.fc1.bias"].data.any()


def _hidden(model, x):
    h = model.embed(x)
    for block in model.blocks:
        h = block(h)
    return h


@pytest.mark.parametrize("kwargs, words", [
    (dict(num_experts=0), "num_experts"), (dict(num_experts=4, top_k=5), "top_k=5 > "),
    (dict(capacity_factor=0.0), "capacity_factor must be a finite number > 0"),
    (dict(capacity_factor=-1), "capacity_factor"), (dict(every=0), "every"),
    (dict(capacity_factor=float("inf")), "capacity_factor must be a finite number"),
    (dict(capacity_factor=float("nan")), "capacity_factor must be a finite number"),
    (dict(aux_loss_coeff=float("inf")), "aux_loss_coeff must be a finite number"),
    (dict(aux_loss_coeff=float("nan")), "aux_loss_coeff must be a finite number"),
    (dict(z_loss_coeff=float("inf")), "z_loss_coeff must be a finite number"),
    (dict(z_loss_coeff=-float("inf")), "z_loss_coeff must be a finite number")])
def test_bad_moe_configs_raise_one_clear_error(kwargs, words):
    with pytest.raises(ValueError, match=words):
        MoEConfig(**kwargs)


def test_calculator_counts_total_and_active_parameters_and_the_cli_prints_them(capsys):
    from minimegatron.nn import GPT
    from minimegatron.commands.memory import main
    from minimegatron.tools.memory_moe import expert_size, moe_param_counts
    model = MoEGPT(SMALL_CONFIG, MoEConfig(8, 2, 1.0, every=2))
    counts = moe_param_counts(SMALL_CONFIG, 8, 2, every=2)
    assert counts["total"] == model.num_parameters()
    h = SMALL_CONFIG.d_model
    assert counts["active"] == GPT(SMALL_CONFIG).num_parameters() + expert_size(h) + 8 * h
    assert main(["moe", "--layers", "2", "--hidden", "16", "--heads", "4", "--vocab", "16",
                 "--seq", "8", "--experts", "8", "--ep", "4", "--dp", "8",
                 "--micro-batch", "1", "--precision", "float64"]) == 0
    out = capsys.readouterr().out
    assert "total 37,280, active per token 11,744" in out and "8,512" in out
    assert "dispatch buffer (E b C h, capacity factor 1): 2,048 bytes" in out
    with pytest.raises(SystemExit):
        main(["moe", "--experts", "6", "--ep", "4", "--dp", "8"])
