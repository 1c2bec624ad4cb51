"""Runs on every rank: DDP's flat gradient buffer on dp groups strictly smaller than the world.

The world of N ranks is split into 2 dp groups of N/2 ranks ({0, 2}, {1, 3} on 4).
``check_all()`` returns, per configuration, the differences from one process
(minimegatron/checks/data.py:check_ddp) and what the flat buffer looks like
after a synced backward: whether every ``.grad`` is its view of the buffer,
whether each bucket's all-reduce got a slice of the buffer with
``inplace=True`` and handed back that same slice, and the bytes allocated
(tracemalloc peak) while ``finish()`` all-reduced every bucket.
"""
import tracemalloc

import numpy as np

from minimegatron import comm
from minimegatron.checks.data import check_ddp
from minimegatron.checks.mixed import HALF_CONFIG
from minimegatron.data.demo import SMALL_CONFIG, batch
from minimegatron.nn import GPT
from minimegatron.parallel.data_parallel import DistributedDataParallel
from minimegatron.parallel.split import shard_batch


def dp_group():
    world = comm.world()
    return world.split(world.rank % 2, name=f"dp{world.rank % 2}") if world.size > 1 \
        else world


def buffer_facts(group, config, bucket_bytes):
    """One backward of GPT(config) under DDP (overlap off: every bucket starts in finish)."""
    model = GPT(config)
    ddp = DistributedDataParallel(model, group, bucket_bytes=bucket_bytes, overlap=False,
                                  bound=True)
    calls = []

    def spy(bound):                       # a bucket's all-reduce, bound once (bound.py)
        start = bound.start

        def started():
            calls.append((bound.x, bound.result is bound.x, start()))
            return calls[-1][2]
        return started
    for bucket in ddp.buckets:
        bucket.all_reduce.start = spy(bucket.all_reduce)
    x, y = batch(config, 8, 0)
    loss = model.loss(shard_batch(x, group), shard_batch(y, group))
    loss.backward()
    tracemalloc.start()
    try:
        ddp.finish()
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    reduce = ddp.buffers()[0] if ddp.buffers() else ddp.grad_buffer.data
    views = ddp.grad_buffer.views
    order = [p for b in ddp.buckets for p in b.params]
    return {"buckets": len(ddp.buckets), "calls": len(calls),
            "grads_are_views": all(p.grad is v and np.shares_memory(p.grad, ddp.grad_buffer.data)
                                   for p, v in zip(order, views)),
            "grad_dtype": str(ddp.grad_buffer.data.dtype), "reduce_dtype": str(reduce.dtype),
            "slices_in_place": all(inplace and np.shares_memory(x, reduce)
                                   and h.wait() is x for x, inplace, h in calls),
            "slices_cover_buffer": sum(x.size for x, _, _ in calls) == reduce.size,
            "finish_peak_bytes": peak, "buffer_bytes": int(reduce.nbytes)}


def bound_equals_readable(config, steps=2):
    """The gradients and weights of ``steps`` AdamW steps of DDP, buckets all-reduced by
    ``comm.iall_reduce`` (exercise 4.1) and by the bound all-reduce (``bound=True``):
    bitwise equal? Returns {"grads_equal", "weights_equal", "buckets"}."""
    from minimegatron.data.demo import make_optimizer
    group = dp_group()
    runs = []
    for bound in (False, True):
        model = GPT(config)
        ddp = DistributedDataParallel(model, group, bucket_bytes=2048, bound=bound)
        opt = make_optimizer(model.parameters())
        grads, weights = [], []
        for step in range(steps):
            x, y = batch(config, 8, step)
            opt.zero_grad()
            ddp.backward(model.loss(shard_batch(x, group), shard_batch(y, group)))
            grads.append([p.grad.copy() for p in model.parameters()])
            if config.dtype != "float16":        # float16: the gradients (reduced in float32)
                opt.step()
            weights.append([p.data.copy() for p in model.parameters()])
        runs.append((grads, weights, len(ddp.buckets)))
    (g0, w0, buckets), (g1, w1, _) = runs
    same = lambda a, b: all(np.array_equal(u, v) for s, t in zip(a, b) for u, v in zip(s, t))
    return {"grads_equal": same(g0, g1), "weights_equal": same(w0, w1), "buckets": buckets}


def bound_equals_readable_named(config):
    """bound_equals_readable of ``SMALL_CONFIG`` or ``HALF_CONFIG`` (by name)."""
    configs = {"SMALL_CONFIG": SMALL_CONFIG, "HALF_CONFIG": HALF_CONFIG}
    return bound_equals_readable(configs[config])


def check_all():
    group = dp_group()
    out = {"group_size": group.size}
    for name, kwargs in {"flat_4k": dict(bucket_bytes=4096, overlap=True),
                         "flat_no_overlap": dict(bucket_bytes=4096, overlap=False),
                         "flat_accumulate": dict(bucket_bytes=4096, overlap=True, accumulate=2,
                                                 batch_size=16)}.items():
        out[name] = check_ddp(group, **kwargs)
    out["facts64"] = buffer_facts(group, SMALL_CONFIG, 4096)
    out["facts16"] = buffer_facts(group, HALF_CONFIG, 4096)
    return out
