"""The same computations on every backend: NumPy always, CuPy where a GPU is present.

Each case builds its inputs with ``xp`` of the active backend and compares with
a NumPy reference, so a GPU run checks the CuPy path against the CPU numbers.
Multi-rank CuPy runs (comm staging, tensor parallel, verify) are launched with
MINIMEGATRON_BACKEND=cupy in the same way.
"""
import numpy as np
import pytest

import minimegatron as mm
import minimegatron.autodiff.functional as F
from minimegatron import nn
from minimegatron.backend import to_numpy, xp
from minimegatron.data.datasets import repeat_task
from minimegatron.autodiff.gradcheck import gradcheck
from mpi_harness import run_mpi
from conftest import cupy_skip_reason


def _tensor(shape, seed, positive=False):
    a = np.random.default_rng(seed).standard_normal(shape)
    return mm.Tensor(xp.asarray(np.abs(a) + 0.5 if positive else a), requires_grad=True)


CASES = {
    "matmul batched": (lambda a, b: ((a @ b) ** 2).sum(), [(2, 3, 4), (4, 5)]),
    "broadcast add-mul": (lambda a, b: ((a + b) * a).sum(), [(3, 4), (4,)]),
    "max and mean": (lambda a: (a.max(axis=1) ** 2).mean(), [(3, 4)]),
    "getitem int array": (lambda a: (a[xp.asarray([0, 2, 0])] ** 2).sum(), [(4, 3)]),
    "softmax": (lambda a: (F.softmax(a) * a).sum(), [(3, 5)]),
    "layer_norm": (lambda a, w, b: (F.layer_norm(a, w, b) ** 2).sum(), [(2, 6), (6,), (6,)]),
    "embedding": (lambda w: (mm.embedding(w, xp.asarray([[1, 2], [1, 1]])) ** 2).sum(),
                  [(4, 3)]),
    "cross_entropy": (lambda a: F.cross_entropy(a, xp.asarray([1, 0, 4])), [(3, 5)]),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_gradcheck_on_each_backend(backend_name, case):
    fn, shapes = CASES[case]
    inputs = [_tensor(s, seed) for seed, s in enumerate(shapes)]
    assert gradcheck(fn, inputs) < 1e-6


def test_gpt_loss_and_grads_equal_numpy(backend_name):
    cfg = nn.GPTConfig(vocab_size=11, seq_len=8, n_layer=2, n_head=2, d_model=16)
    x, y = repeat_task(4, 8, 11)
    model = nn.GPT(cfg)
    loss = model.loss(x, y)
    loss.backward()
    grads = {n: to_numpy(p.grad) for n, p in model.named_parameters()}
    mm.use_backend("numpy")
    ref = nn.GPT(cfg)
    ref_loss = ref.loss(*map(to_numpy, (x, y)))
    ref_loss.backward()
    mm.use_backend(backend_name)
    assert abs(loss.item() - ref_loss.item()) < 1e-12
    for name, p in ref.named_parameters():
        np.testing.assert_allclose(grads[name], p.grad, atol=1e-12, err_msg=name)


@pytest.mark.skipif(cupy_skip_reason() is not None, reason=cupy_skip_reason() or "")
def test_multi_rank_cupy_worked_example_and_verify():
    results = run_mpi(2, "workers/backend_checks.py:cupy_checks", timeout=300,
                      env={"MINIMEGATRON_BACKEND": "cupy"})
    for rank, r in enumerate(results):
        assert r["backend"] == "cupy", rank
        assert r["all_reduce_ok"], rank
        assert r["worked_example_Y"] == [[74.0, 98.0], [258.0, 346.0]], rank
        assert r["verify_failures"] == [], (rank, r["verify_failures"])
