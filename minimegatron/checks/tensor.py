"""Tensor parallelism checked against one process, run on every rank of a tp group.

- ``check_mappings``: the adjoint identity <f(x), y> = <x, f^T(y)> for copy (f),
  reduce (g), gather and scatter, with f^T taken from the real backward; inner
  products on sharded spaces are summed over ranks, on replicated spaces not.
- ``check_linears``: Column/RowParallelLinear vs nn.Linear (same seed): Y, dL/dX,
  gathered dL/dW and dL/db, relative error (float64: ~1e-15, tolerance 1e-12).
- ``check_gpt``: ParallelGPT vs ``serial_reference``: loss, every gradient (local
  shard vs shard_of(serial grad)) and every weight after each AdamW step, max
  abs difference (float64: ~1e-15, tolerance 1e-10; in float32 expect ~1e-5).
- ``count_all_reduces``: the tp all-reduces of one training step, by label.
"""
import numpy as np

from minimegatron import comm, nn
from minimegatron.comm import trace
from minimegatron.backend import asarray, to_numpy
from minimegatron.checks.common import max_abs_diff, serial_reference
from minimegatron.checks.precision import backward, check_optimizer, unscaled
from minimegatron.data.demo import batch
from minimegatron.parallel.split import rows_of
from minimegatron.parallel.tensor_parallel.gpt import ParallelGPT
from minimegatron.parallel.tensor_parallel.linear import ColumnParallelLinear, RowParallelLinear
from minimegatron.parallel.tensor_parallel.mappings import (copy_to_tp, gather_from_tp,
                                                            reduce_from_tp, scatter_to_tp)
from minimegatron.parallel.tensor_parallel.shards import shard_of
from minimegatron.autodiff.tensor import Tensor


def _rand(shape, seed, rank=0):
    return asarray(np.random.default_rng([seed, rank]).standard_normal(shape))


def _chunk(a, group):
    return rows_of(a, group.rank, group.size, axis=-1)


def _global_dot(a, b, group):
    """<a, b> summed over the ranks (the inner product of a sharded / per-rank space)."""
    return float(comm.all_reduce(asarray([float((a * b).sum())]), group)[0])


def _adjoint(fn, x, y, x_sharded, y_sharded, group):
    """|<fn(x), y> - <x, fn^T(y)>| / |<fn(x), y>|, fn^T from autograd."""
    t = Tensor(x, requires_grad=True)
    out = fn(t, group)
    (out * Tensor(y)).sum().backward()
    dot = _global_dot if y_sharded else (lambda a, b, g: float((a * b).sum()))
    lhs = dot(out.data, y, group)
    dot = _global_dot if x_sharded else (lambda a, b, g: float((a * b).sum()))
    rhs = dot(x, t.grad, group)
    return abs(lhs - rhs) / max(abs(lhs), 1e-300), out.data


def check_mappings(group, shape=(3, 8), seed=0):
    """{"<mapping>_adjoint": rel err, "<mapping>_forward": abs err} on this rank."""
    r, n = group.rank, group.size
    full = shape[:-1] + (shape[-1] * n,)
    rep_x, rep_y = _rand(shape, seed), _rand(shape, seed + 1)          # same on every rank
    own_x, own_y = _rand(shape, seed + 2, r), _rand(shape, seed + 3, r)  # rank's own
    out = {}
    err, y = _adjoint(copy_to_tp, rep_x, own_y, False, True, group)
    out["copy_adjoint"], out["copy_forward"] = err, max_abs_diff(y, rep_x)
    err, y = _adjoint(reduce_from_tp, own_x, rep_y, True, False, group)
    want = sum(_rand(shape, seed + 2, q) for q in range(n))
    out["reduce_adjoint"], out["reduce_forward"] = err, max_abs_diff(y, want)
    full_y = _rand(full, seed + 4)
    err, y = _adjoint(gather_from_tp, own_x, full_y, True, False, group)
    want = np.concatenate([to_numpy(_rand(shape, seed + 2, q)) for q in range(n)], axis=-1)
    out["gather_adjoint"], out["gather_forward"] = err, max_abs_diff(y, want)
    full_x = _rand(full, seed + 5)
    err, y = _adjoint(scatter_to_tp, full_x, own_y, False, True, group)
    out["scatter_adjoint"], out["scatter_forward"] = err, max_abs_diff(y, _chunk(full_x, group))
    return out


def _rel(a, b):
    scale = float(np.abs(to_numpy(b)).max()) or 1.0
    return max_abs_diff(a, b) / scale


def _serial_linear(in_f, out_f, x, g, seed):
    lin = nn.Linear(in_f, out_f, seed=seed)
    xt = Tensor(x, requires_grad=True)
    y = lin(xt)
    (y * Tensor(g)).sum().backward()
    return y.data, xt.grad, lin.weight.grad, lin.bias.grad


def check_linears(group, shapes=((8, 16, (3,)), (16, 8, (2, 5)), (24, 32, (4,))), seed=0):
    """{"column_y": rel err, ...}: max over shapes of the relative error vs nn.Linear."""
    out = {}

    def note(key, a, b):
        out[key] = max(out.get(key, 0.0), _rel(a, b))
    for in_f, out_f, lead in shapes:
        x, g = _rand(lead + (in_f,), seed + in_f), _rand(lead + (out_f,), seed + out_f)
        y_s, dx_s, dw_s, db_s = _serial_linear(in_f, out_f, x, g, seed)
        for gather in (True, False):
            col = ColumnParallelLinear(in_f, out_f, group, gather_output=gather, seed=seed)
            xt = Tensor(x, requires_grad=True)
            y = col(xt)
            (y * Tensor(g if gather else _chunk(g, group))).sum().backward()
            tag = "column" + ("_gathered" if gather else "")
            note(f"{tag}_y", y.data, y_s if gather else _chunk(y_s, group))
            note(f"{tag}_dx", xt.grad, dx_s)
            note(f"{tag}_dw", comm.all_gather(col.weight.grad, group, axis=1), dw_s)
            note(f"{tag}_db", comm.all_gather(col.bias.grad, group, axis=0), db_s)
        for parallel_in in (False, True):
            row = RowParallelLinear(in_f, out_f, group, input_is_parallel=parallel_in, seed=seed)
            xt = Tensor(_chunk(x, group).copy() if parallel_in else x, requires_grad=True)
            y = row(xt)
            (y * Tensor(g)).sum().backward()
            tag = "row" + ("_parallel_in" if parallel_in else "")
            note(f"{tag}_y", y.data, y_s)
            note(f"{tag}_dx", xt.grad, _chunk(dx_s, group) if parallel_in else dx_s)
            note(f"{tag}_dw", comm.all_gather(row.weight.grad, group, axis=0), dw_s)
            note(f"{tag}_db", row.bias.grad, db_s)
    return out


def check_gpt(group, config, steps=3, batch_size=4, pad_vocab=True, sequence_parallel=False):
    """{"loss", "grad", "weight"}: max abs diff of this rank's shards vs the serial GPT."""
    ref = serial_reference(config, steps, batch_size)
    model = ParallelGPT(config, group, pad_vocab=pad_vocab, sequence_parallel=sequence_parallel)
    opt = check_optimizer(model.parameters(), config, group)     # float16: found-inf over tp
    diffs = {"loss": 0.0, "grad": 0.0, "weight": 0.0}

    def worst(key, value):
        diffs[key] = max(diffs[key], value)
    for step in range(steps):
        x, y = batch(config, batch_size, step)
        loss = model.loss(x, y)
        opt.zero_grad()
        backward(loss, opt)
        worst("loss", abs(loss.item() - ref["loss"][step]))
        for name, p in model.named_parameters():
            full = ref["grads"][step][name]
            want = shard_of(name, full, group.rank, group.size)
            worst("grad", max_abs_diff(unscaled(p.grad, opt), want))
        opt.step()
        for name, p in model.named_parameters():
            full = ref["weights"][step][name]
            worst("weight", max_abs_diff(p.data, shard_of(name, full, group.rank, group.size)))
    return diffs


def traced_step(model, group, config, batch_size=2):
    """[("forward" or "backward", span)] of the collectives over ``group`` in one training
    step of ``model`` (a loss, then backward), in the order they ran."""
    x, y = batch(config, batch_size, 0)
    comm.barrier(group)
    trace.reset()
    loss = model.loss(x, y)
    forward_spans = len(trace.spans())
    loss.backward()
    return [("forward" if i < forward_spans else "backward", s)
            for i, s in enumerate(trace.spans())
            if s["kind"] == "comm" and s["group"] == group.name]


def count_all_reduces(group, config, batch_size=2):
    """One training step's tp all-reduces: {"forward"/"backward": n, "labels": {label: [nbytes]}}.

    Labels come from the model ("embed", "blocks.i", "head") and the backward
    collectives carry "<forward label>.backward". Also the logits shape seen by the loss.
    """
    model = ParallelGPT(config, group)
    spans = traced_step(model, group, config, batch_size)
    out = {"forward": 0, "backward": 0, "labels": {},
           "logits_shape": list(model.last_logits_shape)}
    for phase, s in spans:
        if s["op"] == "all_reduce":
            out[phase] += 1
            out["labels"].setdefault(s["label"], []).append(s["nbytes"])
    return out
