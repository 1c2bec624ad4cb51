"""The serial GPT: finite-difference gradients, learning, state dicts, config errors."""
import numpy as np
import pytest

from minimegatron import nn, optim
from minimegatron.data.datasets import repeat_task
from minimegatron.autodiff.function import no_grad

CFG = nn.GPTConfig(vocab_size=11, seq_len=8, n_layer=2, n_head=2, d_model=16, seed=3)


def test_gpt_gradients_match_finite_differences_on_sampled_entries():
    model = nn.GPT(CFG)
    x, y = repeat_task(3, 8, 11, seed=1)
    model.loss(x, y).backward()
    rng = np.random.default_rng(0)
    eps, checked = 1e-6, 0
    for name, p in model.named_parameters():
        for j in rng.choice(p.size, size=min(3, p.size), replace=False):
            flat = p.data.reshape(-1)
            old = flat[j]
            with no_grad():
                flat[j] = old + eps
                plus = model.loss(x, y).item()
                flat[j] = old - eps
                minus = model.loss(x, y).item()
            flat[j] = old
            numerical = (plus - minus) / (2 * eps)
            assert abs(p.grad.reshape(-1)[j] - numerical) < 1e-7 + 1e-5 * abs(numerical), name
            checked += 1
    assert checked > 40


def test_gpt_learns_the_repeat_task():
    cfg = nn.GPTConfig(vocab_size=10, seq_len=16, n_layer=2, n_head=2, d_model=32, seed=0)
    model = nn.GPT(cfg)
    opt = optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.0)
    losses = []
    for step in range(200):
        x, y = repeat_task(16, 16, 10, seed=0, step=step)
        loss = model.loss(x, y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert losses[0] > 2.2                       # about log(10) = 2.30 at the start
    assert np.mean(losses[-10:]) < 0.6           # the floor is 3/16 log 10 = 0.43


def test_initialisation_is_deterministic_and_keyed_by_name():
    a, b = nn.GPT(CFG), nn.GPT(CFG)
    for (name, p), (_, q) in zip(a.named_parameters(), b.named_parameters()):
        np.testing.assert_array_equal(p.data, q.data)
    w = nn.gpt_init("blocks.1.mlp.fc1.weight", (16, 64), CFG)
    np.testing.assert_array_equal(w, dict(a.named_parameters())["blocks.1.mlp.fc1.weight"].data)
    assert np.all(dict(a.named_parameters())["blocks.0.ln1.weight"].data == 1.0)
    c = nn.GPT(nn.GPTConfig(**{**CFG.__dict__, "seed": 4}))
    assert not np.allclose(c.wte.weight.data, a.wte.weight.data)


def test_state_dict_round_trip_and_mismatch_errors():
    a = nn.GPT(CFG)
    b = nn.GPT(nn.GPTConfig(**{**CFG.__dict__, "seed": 9}))
    b.load_state_dict(a.state_dict())
    np.testing.assert_array_equal(a.head.weight.data, b.head.weight.data)
    state = a.state_dict()
    state["head.weight"] = np.zeros((3, 3))
    with pytest.raises(ValueError, match="head.weight has shape"):
        b.load_state_dict(state)
    del state["head.weight"]
    with pytest.raises(ValueError, match="missing"):
        b.load_state_dict(state)


def test_dropout_is_seeded_and_identity_in_eval():
    cfg = nn.GPTConfig(**{**CFG.__dict__, "dropout": 0.2})
    x, _ = repeat_task(2, 8, 11)
    a, b = nn.GPT(cfg), nn.GPT(cfg)
    np.testing.assert_array_equal(a(x).data, b(x).data)
    a.eval()
    np.testing.assert_allclose(a(x).data, nn.GPT(CFG)(x).data)


@pytest.mark.parametrize("kwargs, message", [
    ({"d_model": 30, "n_head": 4}, "not divisible"),
    ({"n_layer": 0}, "must be an int >= 1"),
    ({"dropout": 1.0}, "dropout"),
])
def test_config_errors(kwargs, message):
    with pytest.raises(ValueError, match=message):
        nn.GPTConfig(**kwargs)


def test_sequence_longer_than_seq_len_is_rejected():
    with pytest.raises(ValueError, match="seq_len"):
        nn.GPT(CFG)(np.zeros((1, 9), dtype=int))
