"""Runs on every rank: DDP + a flat optimizer (optim/optimizers.py, flat=True) against one process.

The world of N ranks is split into 2 dp groups of N/2 ranks ({0, 2}, {1, 3} on
4), strictly smaller than the world. For each order (the optimizer built
before DDP, or after it) a GPT trains 4 AdamW steps under DDP, and every rank
also trains the same GPT on the whole batch in one process with the
per-parameter optimizer (flat=False). ``check_all()`` returns the largest
differences of loss and weights, and whether the optimizer's flat buffers took
DDP's gradient buffer as their layout (no gradient copied).
"""
import numpy as np

from minimegatron import comm
from minimegatron.data.demo import LR, SMALL_CONFIG, WEIGHT_DECAY, batch
from minimegatron.nn import GPT
from minimegatron.optim import AdamW
from minimegatron.parallel.data_parallel import DistributedDataParallel
from minimegatron.parallel.split import shard_batch

STEPS, BATCH = 4, 8


def dp_group():
    world = comm.world()
    return world.split(world.rank % 2, name=f"dp{world.rank % 2}") if world.size > 1 \
        else world


def train(order, group):
    """(losses, weights) after each step; order: "serial", "before" or "after" DDP."""
    model = GPT(SMALL_CONFIG)
    make = lambda: AdamW(model.parameters(), lr=LR, weight_decay=WEIGHT_DECAY,  # noqa: E731
                         flat=order != "serial")
    opt = make() if order == "before" else None
    ddp = None if order == "serial" else DistributedDataParallel(model, group,
                                                                 bucket_bytes=4096)
    opt = opt or make()
    losses, weights = [], []
    for step in range(STEPS):
        x, y = batch(SMALL_CONFIG, BATCH, step)
        if ddp is None:
            loss = model.loss(x, y)
            loss.backward()
            losses.append(loss.item())
        else:
            loss = model.loss(shard_batch(x, group), shard_batch(y, group))
            ddp.backward(loss)
            losses.append(comm.all_reduce(np.array([loss.item()]), group, op="mean")[0])
        opt.step()
        opt.zero_grad()
        weights.append([p.data.copy() for p in model.parameters()])
    facts = {}
    if ddp is not None:
        flat = opt.groups[0]
        facts = {"adopted": flat.grads.data is ddp.grad_buffer.data,
                 "weights_are_views": all(np.shares_memory(p.data, flat.weights.data)
                                          for p in model.parameters()),
                 "grads_are_views": all(p.grad_view is v for p, v in
                                        zip(flat.params, ddp.grad_buffer.views))}
    return losses, weights, facts


def check_all():
    group = dp_group()
    ref_losses, ref_weights, _ = train("serial", group)
    out = {"group_size": group.size}
    for order in ("before", "after"):
        losses, weights, facts = train(order, group)
        out[order] = {"loss": max(abs(a - b) for a, b in zip(losses, ref_losses)),
                      "weight": max(float(np.abs(a - b).max()) for step, ref in
                                    zip(weights, ref_weights) for a, b in zip(step, ref)),
                      **facts}
    return out
