"""Runs on 2 ranks (tests/test_agreement.py): ranks that disagree on what message sizes
cannot show (the cp split, the attention variant, the schedule, an MoE's capacity and
``every``, the ep layout, the model's seed) must all raise at construction, naming the
fields and both sides' values.

``check_all()`` returns {case: the CollectiveMismatch message or "no error"}; rank 1 makes
the different choice. ``python agreement_checks.py`` (no function): the cp split case
uncaught, then one training step; under ``minimegatron run`` the job must fail.
"""
import dataclasses

import numpy as np

from minimegatron import comm
from minimegatron.comm.mismatch import CollectiveMismatch
from minimegatron.data.demo import CONTEXT_CONFIG, SMALL_CONFIG, batch, make_optimizer
from minimegatron.nn.moe import MoEConfig, MoEGPT
from minimegatron.parallel.context_parallel.gpt import ContextParallelGPT
from minimegatron.parallel.expert_parallel import MoETrainer
from minimegatron.parallel.grid import ProcessGrid
from minimegatron.parallel.threed import Trainer3D


def outcome(fn):
    try:
        fn()
    except CollectiveMismatch as error:
        return str(error)
    return "no error"


def cases(odd):
    """{case: a zero-argument construction}; rank 1 (odd) differs."""
    world = comm.world()
    moe = MoEConfig(4, 2, 1.0)
    return {
        "cp_split": lambda: ContextParallelGPT(CONTEXT_CONFIG, world, "ring",
                                               "contiguous" if odd else "zigzag"),
        "cp_attention": lambda: Trainer3D(CONTEXT_CONFIG, ProcessGrid(cp=2),
                                          attention="allgather" if odd else "ring",
                                              optimizer_fn=make_optimizer),
        "schedule": lambda: Trainer3D(SMALL_CONFIG, ProcessGrid(pp=2), micro_batches=2,
                                      schedule="gpipe" if odd else "1f1b",
                                          optimizer_fn=make_optimizer),
        "moe_capacity": lambda: MoETrainer(SMALL_CONFIG, dataclasses.replace(
            moe, capacity_factor=2.0 if odd else 1.0), ProcessGrid(dp=2, ep=2),
                optimizer_fn=make_optimizer),
        "moe_every": lambda: MoETrainer(SMALL_CONFIG, dataclasses.replace(
            moe, every=2 if odd else 1), ProcessGrid(dp=2, ep=2), optimizer_fn=make_optimizer),
        "ep_layout": lambda: ProcessGrid(dp=2, ep=1 if odd else 2),
        "moe_two_fields": lambda: MoETrainer(SMALL_CONFIG, dataclasses.replace(
            moe, capacity_factor=2.0 if odd else 1.0, every=2 if odd else 1),
            ProcessGrid(dp=2, ep=2), optimizer_fn=make_optimizer),
        "seed": lambda: Trainer3D(dataclasses.replace(SMALL_CONFIG, seed=int(odd)),
                                  ProcessGrid(dp=2), optimizer_fn=make_optimizer),
    }


def check_all():
    world = comm.world()
    out = {case: outcome(build) for case, build in cases(world.rank == 1).items()}
    moe, (x, y) = MoEConfig(4, 2, 1.0), batch(SMALL_CONFIG, 4, 0)
    trainer = MoETrainer(SMALL_CONFIG, moe, ProcessGrid(dp=2, ep=2),
                         optimizer_fn=make_optimizer)   # agreed: it trains
    serial = MoEGPT(SMALL_CONFIG, moe).loss(x, y).item()              # as one process does
    out["agreed_loss_diff"] = abs(trainer.train_step(x, y) - serial)
    out["after_all"] = float(comm.all_reduce(np.array([1.0]), world)[0])
    return out


if __name__ == "__main__":
    world = comm.world()
    model = ContextParallelGPT(CONTEXT_CONFIG, world, "ring",
                               "contiguous" if world.rank == 1 else "zigzag")
    print(f"rank {world.rank}: built a model, the split was not checked", flush=True)
