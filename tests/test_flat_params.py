"""Flat parameters (optim/optimizers.py flat=True, minimegatron/optim/flat.py): one update for all parameters.

The per-parameter update (flat=False) is the reference: the flat one must give
the same weights and state, bitwise, in float64 and float32, for SGD (momentum,
weight decay) and AdamW (fused and readable), over several steps of a GPT, and
in every case the flat path handles differently: a parameter without a
gradient (untouched, weight decay included), a reassigned ``p.data``, a
gradient set by hand, a replaced or reloaded state, DDP's gradient buffer
attached after a step. On 2 and 4 ranks (tests/workers/flatparams_checks.py,
dp groups of N/2): DDP + the flat optimizer, built before or after DDP, equals
one process, and takes DDP's gradient buffer as its layout.
"""
import numpy as np
import pytest

from conftest import cupy_skip_reason
from mpi_harness import run_mpi

import minimegatron as mm
from minimegatron import optim
from minimegatron.data.demo import batch
from minimegatron.optim.flat import FlatBuffer
from minimegatron.autodiff.guards import NonFiniteError
from minimegatron.nn import GPT, GPTConfig, Linear

CONFIG = dict(vocab_size=16, seq_len=8, n_layer=2, n_head=2, d_model=16, seed=0)
RULES = {"sgd": (optim.SGD, dict(lr=0.1, momentum=0.9, weight_decay=0.05)),
         "sgd-readable": (optim.SGD, dict(lr=0.1, momentum=0.9, weight_decay=0.05,
                                          fused=False)),
         "sgd-plain": (optim.SGD, dict(lr=0.1)),
         "adamw": (optim.AdamW, dict(lr=1e-2, weight_decay=0.1)),
         "adamw-readable": (optim.AdamW, dict(lr=1e-2, weight_decay=0.1, fused=False))}


def train(flat, rule="adamw", dtype="float64", steps=4, tweak=None):
    """(model, optimizer) after ``steps`` GPT steps; tweak(step, model) runs after backward."""
    config = GPTConfig(dtype=dtype, **CONFIG)
    model = GPT(config)
    cls, kwargs = RULES[rule]
    opt = cls(model.parameters(), flat=flat, **kwargs)
    for step in range(steps):
        x, y = batch(config, 4, step)
        model.loss(x, y).backward()
        if tweak:
            tweak(step, model)
        opt.step()
        opt.zero_grad()
    return model, opt


def assert_same(a, b):
    """Two (model, optimizer) pairs hold bitwise the same weights and state."""
    for p, q in zip(a[0].parameters(), b[0].parameters()):
        np.testing.assert_array_equal(p.data, q.data)
    for s, t in zip(a[1].state, b[1].state):
        for name in s.keys() & t.keys():
            np.testing.assert_array_equal(s[name], t[name])


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("rule", list(RULES))
def test_flat_equals_the_per_parameter_update(rule, dtype):
    ref, flat = train(False, rule, dtype), train(True, rule, dtype)
    assert flat[1].groups is not None and ref[1].groups is None
    assert_same(ref, flat)
    start = GPT(GPTConfig(dtype=dtype, **CONFIG)).parameters()
    assert all(not np.array_equal(p.data, q.data) for p, q in zip(start, flat[0].parameters()))


def test_weights_gradients_and_state_are_views_of_one_buffer_per_dtype():
    model, opt = train(True, steps=1)
    x, y = batch(GPTConfig(**CONFIG), 4, 1)
    model.loss(x, y).backward()
    (group,) = opt.groups
    params = model.parameters()
    assert group.weights.data.size == sum(p.size for p in params)
    for i, p in enumerate(opt.params):
        assert np.shares_memory(p.data, group.weights.data)
        assert p.grad is p.grad_view and np.shares_memory(p.grad, group.grads.data)
        for name in ("m", "v"):
            assert np.shares_memory(opt.state[i][name], group.state[name])
    mixed = [Linear(3, 2, dtype="float64"), Linear(2, 2, dtype="float32")]
    opt = optim.SGD([p for layer in mixed for p in layer.parameters()], lr=0.1, flat=True)
    for layer in mixed:
        layer(mm.Tensor(np.ones((1, layer.weight.shape[0]), layer.weight.dtype))).sum().backward()
    opt.step()
    assert sorted(str(g.weights.data.dtype) for g in opt.groups) == ["float32", "float64"]


def _drop_grad(step, model):
    """From step 1 on, the first block's attention weight has no gradient (its view keeps one)."""
    if step >= 1:
        model.blocks[0].attn.qkv.weight.grad = None


def test_a_parameter_without_gradient_is_untouched():
    flat = train(True, steps=1)
    frozen = flat[0].blocks[0].attn.qkv.weight
    index = [id(p) for p in flat[1].params].index(id(frozen))
    w, m = frozen.data.copy(), flat[1].state[index]["m"].copy()
    config = GPTConfig(**CONFIG)
    x, y = batch(config, 4, 1)
    flat[0].loss(x, y).backward()
    assert np.abs(frozen.grad_view).max() > 0            # a stale gradient a bug would use
    frozen.grad = None
    flat[1].step()
    np.testing.assert_array_equal(frozen.data, w)          # weight decay 0.1 did not touch it
    np.testing.assert_array_equal(flat[1].state[index]["m"], m)
    assert_same(train(False, steps=4, tweak=_drop_grad), train(True, steps=4, tweak=_drop_grad))


def test_a_reassigned_weight_and_a_gradient_set_by_hand_still_update():
    arrays = []                                          # the reassigned p.data of each run

    def tweak(step, model):
        p, q = model.blocks[1].mlp.fc1.weight, model.head.weight
        if step == 1:
            p.data = p.data.copy()                       # someone points p.data elsewhere
            arrays.append(p.data)
        q.grad = q.grad * 0.5                            # a new array, not the view
    ref = train(False, tweak=tweak)
    flat = train(True, tweak=tweak)
    assert_same(ref, flat)
    assert flat[0].blocks[1].mlp.fc1.weight.data is arrays[-1]  # still the array it was given
    shape = flat[0].blocks[1].mlp.fc1.weight
    shape.data = np.zeros(3)
    shape.grad = np.zeros(3)
    with pytest.raises(ValueError, match="build the optimizer after changing the model"):
        flat[1].step()


def test_state_dict_round_trip_and_a_replaced_state():
    whole = train(True, steps=4)
    first = train(True, steps=2)
    saved = first[1].state_dict()
    for to_flat in (True, False):
        model = GPT(GPTConfig(**CONFIG))
        model.load_state_dict(first[0].state_dict())
        opt = optim.AdamW(model.parameters(), lr=1e-2, weight_decay=0.1, flat=to_flat)
        opt.load_state_dict(saved)
        for step in (2, 3):
            x, y = batch(GPTConfig(**CONFIG), 4, step)
            model.loss(x, y).backward()
            opt.step()
            opt.zero_grad()
        assert_same(whole, (model, opt))
    first[1].state[0]["m"] = np.ones((3,))
    with pytest.raises(ValueError, match="optimizer state 'm' of parameter 0 has shape"):
        first[1].step()


def test_a_gradient_buffer_attached_after_a_step_becomes_the_layout():
    """DDP built after the optimizer's first step: its buffer (reverse order) is adopted."""
    buffers = {}                                           # id(model) -> its buffer

    def tweak(step, model):
        if step == 1:
            params = model.parameters()
            buffers[id(model)] = FlatBuffer(params[::-1], params[0].dtype)
            buffers[id(model)].attach()                    # what DDP's constructor does
    ref, flat = train(False, tweak=tweak), train(True, tweak=tweak)
    assert_same(ref, flat)
    assert flat[1].groups[0].grads.data is buffers[id(flat[0])].data
    assert flat[1].groups[0].params[0] is flat[0].parameters()[-1]
    assert all(np.shares_memory(p.data, flat[1].groups[0].weights.data)
               for p in flat[0].parameters())


def test_a_non_finite_gradient_stops_before_any_weight_changes():
    model, opt = train(True, steps=1)
    x, y = batch(GPTConfig(**CONFIG), 4, 1)
    model.loss(x, y).backward()
    before = [p.data.copy() for p in model.parameters()]
    model.parameters()[3].grad[0] = np.nan
    with pytest.raises(NonFiniteError, match=r"^non-finite gradient 'parameter 3 \(.*\)' at step 2 "):
        opt.step()
    for p, w in zip(model.parameters(), before):
        np.testing.assert_array_equal(p.data, w)


@pytest.fixture(scope="module", params=[2, 4])
def launch(request):
    return request.param, run_mpi(request.param, "workers/flatparams_checks.py:check_all",
                                  timeout=300)


@pytest.mark.parametrize("order", ["before", "after"])
def test_ddp_and_a_flat_optimizer_equal_one_process(launch, order):
    nprocs, results = launch
    for rank, res in enumerate(results):
        assert res["group_size"] == nprocs // 2 < nprocs
        r = res[order]
        assert max(r["loss"], r["weight"]) < 1e-10, (rank, order, r)
        assert r["adopted"] and r["weights_are_views"] and r["grads_are_views"], (rank, r)


@pytest.mark.skipif(cupy_skip_reason() is not None, reason=cupy_skip_reason() or "")
@pytest.mark.parametrize("rule", ["sgd", "sgd-plain", "adamw"])
def test_the_cupy_flat_kernels_match_numpy(rule):
    """On a GPU the flat update is one kernel per dtype: it matches the NumPy update."""
    results = {}
    for backend in ("numpy", "cupy"):
        mm.use_backend(backend)
        try:
            results[backend] = [mm.backend.to_numpy(p.data) for p in
                                train(True, rule, "float32", steps=3)[0].parameters()]
        finally:
            mm.use_backend("numpy")
    for a, b in zip(results["numpy"], results["cupy"]):
        np.testing.assert_allclose(a, b, rtol=2e-4, atol=2e-5)
