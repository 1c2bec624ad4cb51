"""Runs on every rank (via tests/mpi_harness.run_mpi): every sequence-parallel check, batched.

``check_all()`` returns one dict of measurements per rank; tests/test_sequence_parallel.py
asserts each value. The tp group is the whole world; tp = 1 runs on a one-rank split.
"""
import dataclasses

import numpy as np

from minimegatron import comm
from minimegatron.comm import trace
from minimegatron.backend import asarray, to_numpy
from minimegatron.checks.common import max_abs_diff
from minimegatron.checks.sequence import layer_activation_bytes, tp_collectives
from minimegatron.checks.tensor import _adjoint, check_gpt
from minimegatron.checks.threed import check_3d, measured_vs_predicted
from minimegatron.data.demo import VERIFY_CONFIG, batch, make_optimizer
from minimegatron.autodiff.gradcheck import gradcheck
from minimegatron.parallel.grid import ProcessGrid
from minimegatron.parallel.tensor_parallel import ParallelGPT, sequence as sq
from minimegatron.parallel.threed import Trainer3D
from minimegatron.autodiff.tensor import Tensor

CONFIG = dataclasses.replace(VERIFY_CONFIG, n_layer=2)


def _rand(shape, seed, rank=0):
    return asarray(np.random.default_rng([seed, rank]).standard_normal(shape))


def operators(group, shape=(2, 4, 6)):
    """{"<op>_adjoint": rel err, "<op>_forward": abs err} for g, g-bar, scatter, gather_matmul."""
    r, t = group.rank, group.size
    full = (shape[0], shape[1] * t, shape[2])
    own = [_rand(shape, 1, q) for q in range(t)]                  # every rank's X_q
    gathered = np.concatenate([to_numpy(a) for a in own], axis=1)
    out = {}
    err, y = _adjoint(sq.gather_from_sequence, own[r], _rand(full, 2, r), True, True, group)
    out["g_adjoint"], out["g_forward"] = err, max_abs_diff(y, gathered)
    partial = [_rand(full, 3, q) for q in range(t)]
    err, y = _adjoint(sq.reduce_scatter_to_sequence, partial[r], _rand(shape, 4, r), True, True,
                      group)
    out["gbar_adjoint"] = err
    out["gbar_forward"] = max_abs_diff(y, sq.seq_chunk(sum(partial), group))
    x_full = _rand(full, 5)
    err, y = _adjoint(sq.scatter_to_sequence, x_full, _rand(shape, 6, r), False, True, group)
    out["scatter_adjoint"], out["scatter_forward"] = err, max_abs_diff(y, sq.seq_chunk(x_full,
                                                                                        group))
    weight = _rand((shape[2], 5), 7, r)                           # this rank's columns A_r
    err, y = _adjoint(lambda x, g: sq.gather_matmul(x, weight, g), own[r],
                      _rand(full[:2] + (5,), 8, r), True, True, group)
    out["matmul_adjoint"], out["matmul_forward"] = err, max_abs_diff(y, gathered @ weight)
    return out


def fused_gradcheck(world):
    """float64 central differences of gather_matmul's own backward (dX and dA) on one rank."""
    one = world.split(color=world.rank, name="sp_grad")
    x = Tensor(_rand((2, 3, 4), 9), requires_grad=True)
    weight = Tensor(_rand((4, 5), 10), requires_grad=True)
    g = Tensor(_rand((2, 3, 5), 11))
    return gradcheck(lambda a, w: (sq.gather_matmul(a, w, one) * g).sum(), [x, weight])


def tp1_is_plain(world):
    """tp = 1 with the flag on vs off: max |difference| of loss and every gradient (0.0)."""
    one = world.split(color=world.rank, name="sp_one")
    diffs = []
    for flag in (False, True):
        model = ParallelGPT(CONFIG, one, sequence_parallel=flag)
        loss = model.loss(*batch(CONFIG, 2, 0))
        loss.backward()
        diffs.append([loss.data] + [p.grad for p in model.parameters()])
    return max(max_abs_diff(a, b) for a, b in zip(*diffs))


def dropout_matches_plain_tp(group):
    """With dropout 0.2: the sp model vs the plain tp model (its region masks are serial's)."""
    config = dataclasses.replace(CONFIG, dropout=0.2)
    runs = []
    for flag in (False, True):
        model = ParallelGPT(config, group, sequence_parallel=flag)
        loss = model.loss(*batch(config, 2, 0))
        loss.backward()
        runs.append((float(loss.item()), [p.grad for p in model.parameters()]))
    (loss_a, grads_a), (loss_b, grads_b) = runs
    no_dropout = ParallelGPT(CONFIG, group, sequence_parallel=True).loss(*batch(config, 2, 0))
    return {"loss": abs(loss_a - loss_b), "effect": abs(loss_b - float(no_dropout.item())),
            "grad": max(max_abs_diff(a, b) for a, b in zip(grads_a, grads_b))}


def bad_length(group):
    """A sequence of 7 tokens on tp > 1: the error text and how many spans were traced."""
    model = ParallelGPT(CONFIG, group, sequence_parallel=True)
    x, y = batch(CONFIG, 2, 0)
    out = {}
    comm.barrier(group)
    trace.reset()
    try:
        model.loss(x[:, :7], y[:, :7])
    except ValueError as err:
        out["gpt"] = str(err)
    grid = ProcessGrid(1, 1, group.size)
    trainer = Trainer3D(CONFIG, grid, sequence_parallel=True, optimizer_fn=make_optimizer)
    comm.barrier(group)
    trace.reset()
    try:
        trainer.forward_backward(x[:, :7], y[:, :7])
    except ValueError as err:
        out["3d"] = str(err)
    out["spans"] = len(trace.spans())
    return out


def check_all():
    world = comm.world()
    out = {"tp": world.size, "operators": operators(world), "tp1": tp1_is_plain(world),
           "gradcheck": fused_gradcheck(world),
           "gpt": check_gpt(world, CONFIG, steps=3, batch_size=4, sequence_parallel=True),
           "dropout": dropout_matches_plain_tp(world),
           "spans": {str(flag): tp_collectives(world, CONFIG, flag) for flag in (False, True)},
           "memory": {"serial": layer_activation_bytes(None, CONFIG, False),
                      "tp": layer_activation_bytes(world, CONFIG, False),
                      "sp": layer_activation_bytes(world, CONFIG, True)}}
    if world.size > 1:
        out["bad"] = bad_length(world)
    if world.size == 4:
        for dims in ((2, 1, 2), (1, 2, 2)):
            d = check_3d(dims, steps=2, micro_batches=2, batch_size=8, config=CONFIG,
                         sequence_parallel=True)
            out[f"3d_{dims}"] = {k: d[k] for k in ("loss", "grad", "weight", "compared")}
            out[f"bytes_{dims}"] = measured_vs_predicted(dims, sequence_parallel=True)
        out["bytes_recompute"] = measured_vs_predicted((1, 2, 2), sequence_parallel=True,
                                                       checkpoint_activations=True)
    return out
