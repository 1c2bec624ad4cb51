"""Sampling: the draw, reproducibility, no graph, and every grid writes the serial tokens.

One 4-rank launch (tests/workers/generate_checks.py) samples from tp 2 (a strict
subset of the world), tp 4, pp 4, dp 2 x tp 2, pp 2 x tp 2, dp 2 x pp 2 and dp 4
with the same scrambled weights and seed as one process. About 10 s.
"""
import numpy as np
import pytest

from mpi_harness import run_mpi

from minimegatron.autodiff import function
from minimegatron.nn import GPT, GPTConfig
from minimegatron.nn.generate import sample

CONFIG = GPTConfig(vocab_size=11, seq_len=8, n_layer=2, n_head=2, d_model=16, seed=0)
PROMPT = np.array([[1, 2, 3], [4, 5, 6]])


def test_sample_is_the_inverse_cdf():
    logits = np.log(np.array([[0.1, 0.2, 0.3, 0.4]]))
    # cdf = 0.1, 0.3, 0.6, 1.0: u picks the first token whose cdf reaches it
    picks = [int(sample(logits, np.array([u]))[0]) for u in (1e-9, 0.1, 0.1001, 0.3, 0.61, 1.0)]
    assert picks == [0, 0, 1, 1, 3, 3]


def test_sample_frequencies_temperature_and_top_k():
    rng = np.random.default_rng(0)
    logits = np.tile(np.log([0.1, 0.2, 0.3, 0.4]), (40000, 1))          # (N, 4)
    u = 1.0 - rng.random(len(logits))
    freq = np.bincount(sample(logits, u), minlength=4) / len(logits)
    assert np.abs(freq - [0.1, 0.2, 0.3, 0.4]).max() < 0.01
    cold = np.bincount(sample(logits, u, temperature=0.5), minlength=4) / len(logits)
    assert np.abs(cold - np.array([1, 4, 9, 16]) / 30).max() < 0.01    # p^(1/T), renormalised
    top2 = np.bincount(sample(logits, u, top_k=2), minlength=4) / len(logits)
    assert top2[:2].sum() == 0 and abs(top2[3] - 4 / 7) < 0.01
    assert (sample(logits[:5], u[:5], top_k=1) == 3).all()              # top_k=1 is argmax


def test_generate_is_seeded_crops_the_context_and_records_no_graph(monkeypatch):
    model = GPT(CONFIG)
    recorded = []
    original = model.last_logits
    monkeypatch.setattr(model, "last_logits",
                        lambda x: recorded.append((x.requires_grad, x._node,
                                                   function.is_grad_enabled(),
                                                   model.training)) or original(x))
    out = model.generate(PROMPT, 12, temperature=0.8, top_k=5, seed=3)  # 3 + 12 > seq_len 8
    assert out.shape == (2, 15) and (out[:, :3] == PROMPT).all()
    assert (out == model.generate(PROMPT, 12, temperature=0.8, top_k=5, seed=3)).all()
    assert (out != model.generate(PROMPT, 12, temperature=0.8, top_k=5, seed=4)).any()
    assert recorded[0] == (False, None, False, False) and len(set(recorded)) == 1
    assert model.training and function.is_grad_enabled()               # restored after
    assert all(p.grad is None for p in model.parameters())


def test_generate_rejects_bad_arguments():
    model = GPT(CONFIG)
    for kwargs, words in [({"idx": PROMPT + 9}, "outside the vocabulary"),
                          ({"idx": np.zeros((1, 0), int)}, "B, T >= 1"),
                          ({"temperature": 0.0}, "temperature must be > 0"),
                          ({"top_k": 0}, "top_k must be None or an int >= 1"),
                          ({"max_new_tokens": -1}, "max_new_tokens")]:
        args = {"idx": PROMPT, "max_new_tokens": 2, **kwargs}
        with pytest.raises(ValueError, match=words):
            model.generate(**args)


@pytest.fixture(scope="module")
def results():
    return run_mpi(4, "workers/generate_checks.py:check_all", timeout=180)


def test_every_grid_writes_the_serial_tokens(results):
    want = results[0]["serial"]
    assert want != results[0]["other_seed"]                          # the seed matters
    assert len(want[0]) == 13 and want[0][:3] == [1, 2, 3]
    for rank, res in enumerate(results):
        assert res["serial"] == want
        assert sorted(res["grids"]) == sorted(["tp2 ParallelGPT", "1x1x4", "1x4x1", "2x1x2",
                                               "1x2x2", "2x2x1", "4x1x1"])
        for grid, tokens in res["grids"].items():
            assert tokens == want, (rank, grid)
        assert res["after_errors"] == want
        assert res["tp_logits_diff"] < 1e-12


def test_bad_arguments_fail_on_every_rank_of_a_pipeline(results):
    for res in results:
        assert "top_k must be" in res["errors"]["top_k"]
        assert "outside the vocabulary" in res["errors"]["vocab"]
        assert "temperature must be > 0" in res["errors"]["temperature"]
        for refused in ("sequence_parallel", "interleaved"):       # told, not a wrong text
            assert "minimegatron sample --checkpoint FILE" in res["errors"][refused]
