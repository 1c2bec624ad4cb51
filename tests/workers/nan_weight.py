"""A NaN weight on one rank: the error must name that weight and that rank, found before
DDP's all-reduce spreads the NaN to every rank (tests/test_guards.py).

    python -m minimegatron run -n N tests/workers/nan_weight.py CASE

    ddp     2 ranks, DistributedDataParallel(GPT) + AdamW in float64, NaN on rank 1
    dp_tp   4 ranks, Trainer3D dp=2 x tp=2 in float64, NaN on rank 0 (its tp peer, rank 1,
            then holds NaN gradients: a consequence, named after the cause)
    mixed   2 ranks, Trainer3D dp=2 in float16 with float32 masters, NaN on rank 1 (before
            the fix every step was skipped as an overflow and the job exited 0)
    activation  2 ranks, DistributedDataParallel(GPT) in float64, every weight finite: on
            rank 1 block 1's attention overflows to inf (before: named as a gradient)
"""
import sys
from dataclasses import replace

import numpy as np

import minimegatron.runtime
minimegatron.runtime.setup()      # a script of one's own under plain mpirun: the abort hook
from minimegatron import comm
from minimegatron.checks.mixed import HALF_CONFIG
from minimegatron.checks.precision import check_optimizer
from minimegatron.data.demo import SMALL_CONFIG, batch, make_optimizer
from minimegatron.nn import GPT, gpt
from minimegatron.parallel.data_parallel import DistributedDataParallel
from minimegatron.parallel.grid import ProcessGrid
from minimegatron.parallel.threed import Trainer3D

case, world = sys.argv[1], comm.world()
BAD_RANK = 0 if case == "dp_tp" else 1


def overflow_in_block_1():
    """From now on block 1's attention (the 2nd call per forward) overflows on BAD_RANK."""
    attention, calls = gpt.causal_attention, [0]

    def overflowing(*args):
        calls[0] += 1
        out = attention(*args)
        return out * 1e300 * 1e300 if calls[0] % 2 == 0 else out   # float64 overflow: inf
    if world.rank == BAD_RANK:
        gpt.causal_attention = overflowing


def poison(named):
    if world.rank == BAD_RANK:
        dict(named)["blocks.0.ln1.weight"].data[0] = np.nan


if case in ("ddp", "activation"):
    model = GPT(SMALL_CONFIG)
    ddp, opt = DistributedDataParallel(model, world), make_optimizer(model.parameters())
    for step in range(4):
        if step == 1 and case == "ddp":
            poison(model.named_parameters())
        elif step == 1:
            overflow_in_block_1()
        x, y = batch(SMALL_CONFIG, 4, step)
        opt.zero_grad()
        ddp.backward(model.loss(x[2 * world.rank:][:2], y[2 * world.rank:][:2]))
        opt.step()
else:
    config = HALF_CONFIG if case == "mixed" else replace(SMALL_CONFIG, vocab_size=16)
    grid = ProcessGrid(2, 1, 2 if case == "dp_tp" else 1)
    trainer = Trainer3D(config, grid,
                        optimizer_fn=lambda ps: check_optimizer(ps, config, grid.world))
    for step in range(40):
        if step == 1:
            poison(trainer.named_parameters())
        loss = trainer.train_step(*batch(config, 4, step))
print(f"rank {world.rank}: trained on", flush=True)
