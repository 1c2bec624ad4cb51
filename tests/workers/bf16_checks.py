"""Runs on every rank (tests/test_bf16_parallel.py): bf16 and fp8 training next to one process.

World of 4 ranks, split into two groups of 2 (strict subsets). Returned per rank:

- "bitwise": DDP over 2 ranks, AdamW with float32 masters, 3 steps, in bf16 and in fp8:
  every weight bit-for-bit equal to ONE process that takes the same two half-batches
  (so the same fp8 amax per half) and sums their gradients in float32 in the same
  order, (g_0 + g_1) / 2, rounded once; and NOT equal to the usual one-process run over
  the whole batch (another order: the contract's "same reduction order" is what makes
  it bitwise). Two terms round once in bf16 too, so the bf16-sum mutant is tested on 4
  ranks (tests/test_wire.py).
- "bytes": the trace's bytes per step of a 2-stage 1F1B pipeline (the activations and
  their gradients, send + recv) and of ZeRO-3's parameter all-gathers, in float32 and
  in bf16; and DDP's gradient all-reduce (bf16 reduces in float32: the same bytes).
"""
import dataclasses

import ml_dtypes
import numpy as np

from minimegatron import comm
from minimegatron.comm import trace
from minimegatron.checks.pipeline import build
from minimegatron.data.demo import SMALL_CONFIG, batch, make_optimizer
from minimegatron.mixed_precision.master_weights import MixedPrecisionOptimizer
from minimegatron.nn import GPT
from minimegatron.parallel.data_parallel.ddp import DistributedDataParallel
from minimegatron.parallel.data_parallel.zero3 import zero_optimizer
from minimegatron.parallel.split import shard_batch

BF16 = np.dtype(ml_dtypes.bfloat16)
STEPS, BATCH = 3, 8


def config_of(precision):
    fp8 = precision == "fp8"
    return dataclasses.replace(SMALL_CONFIG, dtype="bfloat16" if fp8 else precision, fp8=fp8)


def bits(arrays):
    return [np.asarray(a).view(np.uint16).copy() for a in arrays]


def ddp_weights(group, config):
    """Every weight after STEPS steps of DDP over ``group`` (bf16 gradients reduced in
    float32 by DDP's reduce buffer, the mean rounded once)."""
    model = GPT(config)
    opt = MixedPrecisionOptimizer(make_optimizer(model.parameters()), group)
    ddp = DistributedDataParallel(model, group)
    for step in range(STEPS):
        x, y = batch(config, BATCH, step)
        x, y = shard_batch(x, group), shard_batch(y, group)                 # (B/2, T)
        opt.zero_grad()
        model.loss(x, y).backward()
        ddp.finish()
        opt.step()
    return bits(p.data for p in model.parameters())


def one_process_weights(config, whole_batch=False):
    """The same steps on one process: each half-batch's gradient, then (g_0 + g_1) / 2 in
    float32, rounded to bf16 once. ``whole_batch``: the usual one-process run instead (one
    backward over all rows: another reduction order, and in fp8 other amaxes)."""
    model = GPT(config)
    params = model.parameters()
    opt = MixedPrecisionOptimizer(make_optimizer(params), None)
    for step in range(STEPS):
        x, y = batch(config, BATCH, step)
        opt.zero_grad()
        if whole_batch:
            model.loss(x, y).backward()
            opt.step()
            continue
        halves = []
        for rows in (slice(0, BATCH // 2), slice(BATCH // 2, BATCH)):
            opt.zero_grad()
            model.loss(x[rows], y[rows]).backward()
            halves.append([p.grad.copy() for p in params])
        for p, g0, g1 in zip(params, *halves):
            p.grad = ((g0.astype(np.float32) + g1.astype(np.float32)) / 2
                      ).astype(p.data.dtype)
        opt.step()
    return bits(p.data for p in params)


def same(a, b):
    return all(np.array_equal(x, y) for x, y in zip(a, b))


def bitwise(group):
    out = {}
    for precision in ("bfloat16", "fp8"):
        config = config_of(precision)
        parallel = ddp_weights(group, config)
        out[precision] = same(parallel, one_process_weights(config))
        out[f"{precision}_whole_batch"] = same(parallel, one_process_weights(config, True))
    return out


def traced_bytes(group, fn):
    """{op: bytes sent} of the collectives over ``group`` while ``fn()`` runs."""
    comm.barrier(group)
    trace.reset()
    fn()
    total = {}
    for s in trace.spans():
        if s["kind"] == "comm" and s["group"] == group.name:
            total[s["op"]] = total.get(s["op"], 0) + s["bytes_sent"]
    return total


def pipeline_step(group, config):
    _, engine = build(group, config, "1f1b", 2, False)
    x, y = batch(config, BATCH, 0)
    return lambda: engine.train_step(x, y)


def zero3_step(group, config):
    model = GPT(config)
    opt = zero_optimizer(model, group, 3, MixedPrecisionOptimizer(
        make_optimizer(model.parameters()), group))
    x, y = batch(config, BATCH, 0)
    x, y = shard_batch(x, group), shard_batch(y, group)

    def step():
        opt.zero_grad()
        model.loss(x, y).backward()
        opt.step()
    return step


def ddp_step(group, config):
    model = GPT(config)
    ddp = DistributedDataParallel(model, group)
    x, y = batch(config, BATCH, 0)
    x, y = shard_batch(x, group), shard_batch(y, group)

    def step():
        model.loss(x, y).backward()
        ddp.finish()
    return step


def wire_bytes(group):
    out = {}
    for precision in ("float32", "bfloat16"):
        config = config_of(precision)
        out[precision] = {
            "pipeline": traced_bytes(group, pipeline_step(group, config)),
            "zero3": traced_bytes(group, zero3_step(group, config)),
            "ddp": traced_bytes(group, ddp_step(group, config))}
    return out


def check_all():
    world = comm.world()
    pair = world.split(world.rank // 2, name="pair")
    return {"bitwise": bitwise(pair), "bytes": wire_bytes(pair)}
