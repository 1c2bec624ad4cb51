"""Ranks that differ in what decides the numbers but moves no message of another size
(tests/test_agreement_settings.py): each case trained with exit 0 before, the replicas
apart; now every rank raises the same CollectiveMismatch naming the field, both values
and the ranks.

``construction()`` (8 ranks, dp 2 x pp 2 x tp 2): one rank builds its optimizer or loss
scaler differently; the grid's agreement (one 8-byte Allgather over the world) names it
before any weight moves. {case: the message on this rank}.

``steps()`` (4 ranks): a step whose ranks differ: the learning rate set by a schedule on
one rank, batch rows that differ with equal shapes on a tp rank or on the last stage (in
both checking modes), a user's own collective inside an agreed step that is shorter or
longer on one rank. Every group of every rank holds a differing rank, so every rank
raises at its first collective of the step, and the next case can start.
"""
from dataclasses import replace

import numpy as np

from minimegatron import comm
from minimegatron.comm import comm_check
from minimegatron.data.demo import SMALL_CONFIG, batch, make_optimizer
from minimegatron.mixed_precision.loss_scaler import DynamicLossScaler
from minimegatron.mixed_precision.master_weights import MixedPrecisionOptimizer
from minimegatron.nn import GPT
from minimegatron.nn.moe import MoEConfig
from minimegatron.optim import SGD, AdamW
from minimegatron.parallel.data_parallel import ShardedOptimizer
from minimegatron.parallel.expert_parallel import MoETrainer
from minimegatron.parallel.grid import ProcessGrid
from minimegatron.parallel.threed import Trainer3D
from mismatch_checks import outcome            # the CollectiveMismatch text, or "no error"

HALF = replace(SMALL_CONFIG, dtype="float16")


def adamw(lr=1e-2, weight_decay=0.01, betas=(0.9, 0.999)):
    return lambda params: AdamW(params, lr=lr, weight_decay=weight_decay, betas=betas)


def mixed(group, init_scale=2.0 ** 8, growth_interval=1000):
    return lambda params: MixedPrecisionOptimizer(
        make_optimizer(params), group, DynamicLossScaler(init_scale, growth_interval))


def construction():
    world = comm.world()
    grid = ProcessGrid(2, 2, 2)
    r = world.rank

    def odd(rank, value, usual):
        return value if r == rank else usual
    cases = {
        "lr_dp": lambda: Trainer3D(SMALL_CONFIG, grid, optimizer_fn=adamw(
            lr=odd(2, 2e-2, 1e-2))),                             # rank 2: rank 0's dp partner
        "weight_decay_zero2": lambda: Trainer3D(SMALL_CONFIG, grid, zero_stage=2,
                                                optimizer_fn=adamw(
                                                    weight_decay=odd(3, 0.1, 0.01))),
        "betas_zero1": lambda: Trainer3D(SMALL_CONFIG, grid, zero_stage=1, optimizer_fn=adamw(
            betas=odd(6, (0.9, 0.95), (0.9, 0.999)))),
        "momentum": lambda: Trainer3D(SMALL_CONFIG, grid, optimizer_fn=lambda ps: SGD(
            ps, lr=0.1, momentum=odd(1, 0.5, 0.9))),
        "scaler_init": lambda: Trainer3D(HALF, grid, optimizer_fn=mixed(
            world, init_scale=odd(5, 2.0 ** 10, 2.0 ** 8))),
        "scaler_growth": lambda: Trainer3D(HALF, grid, zero_stage=1, optimizer_fn=mixed(
            world, growth_interval=odd(6, 500, 1000))),
        "scaler_group": lambda: Trainer3D(HALF, grid, optimizer_fn=mixed(
            odd(7, None, grid.world))),                          # hung before: named now
        "zero_alone": lambda: _zero_alone(world, odd(4, 3e-2, 1e-2)),
    }
    out = {case: outcome(build) for case, build in cases.items()}
    trainer = Trainer3D(HALF, grid, optimizer_fn=mixed(grid.world))   # agreed: it trains
    x, y = batch(SMALL_CONFIG, 4, 0)
    out["agreed_loss"] = trainer.train_step(x, y)
    return out


def _zero_alone(group, lr):
    """ZeRO-2 built by hand over ``group``, its rule's learning rate ``lr``."""
    model = GPT(SMALL_CONFIG)
    return ShardedOptimizer(model, group, 2, AdamW(model.parameters(), lr=lr))


def _schedule(trainer, x, y, odd):
    """Two steps; before the second, rank ``odd``'s schedule sets another learning rate."""
    trainer.train_step(x, y)
    trainer.rule.lr = 5e-3 if odd else 1e-2
    trainer.train_step(x, y)


def _user_call(trainer, x, y, group, length):
    """A step with the user's own all_reduce inside it, ``length`` values long."""
    with trainer.agreed_step(x, y):
        trainer.forward_backward(x, y)
        comm.all_reduce(np.ones(length), group)
        trainer.step()


def steps():
    """4 ranks. dp 2 x tp 2: tp groups [0, 1] [2, 3], dp groups [0, 2] [1, 3]; pp 2 x dp 2:
    stage 0 = ranks 0, 1, stage 1 (the last) = ranks 2, 3."""
    world = comm.world()
    r = world.rank
    x, y = batch(SMALL_CONFIG, 4, 0)
    other_x, other_y = x.copy(), y.copy()
    other_x[:, 0] = (x[:, 0] + 1) % SMALL_CONFIG.vocab_size      # same shapes, one id apart
    other_y[:, -1] = (y[:, -1] + 1) % SMALL_CONFIG.vocab_size     # in each row
    dp_tp, pp_dp = ProcessGrid(dp=2, tp=2), ProcessGrid(dp=2, pp=2)
    tp_odd = dp_tp.tp_rank == 1              # one rank of every tp and dp group
    out = {}
    for mode, steps_on in (("agreed", True), ("all", False)):
        with comm_check.checking(True, steps=steps_on):
            cases = {
                "schedule": lambda: _schedule(Trainer3D(SMALL_CONFIG, dp_tp, optimizer_fn=adamw()), x, y,
                                              r in (1, 2)),
                "rows_tp": lambda: Trainer3D(SMALL_CONFIG, dp_tp, optimizer_fn=adamw()).train_step(
                    other_x if tp_odd else x, y),
                "rows_last_stage": lambda: Trainer3D(SMALL_CONFIG, pp_dp, micro_batches=2, optimizer_fn=adamw())
                .train_step(x, other_y if r >= 2 else y),
                "user_shorter": lambda: _user_call(Trainer3D(SMALL_CONFIG, dp_tp, optimizer_fn=adamw()), x, y,
                                                   dp_tp.dp, 3 if r >= 2 else 4),
                "user_longer": lambda: _user_call(Trainer3D(SMALL_CONFIG, dp_tp, optimizer_fn=adamw()), x, y,
                                                  dp_tp.dp, 5 if r >= 2 else 4),
            }
            out[mode] = {case: outcome(run) for case, run in cases.items()}
    moe = MoETrainer(SMALL_CONFIG, MoEConfig(4, 2, 1.0), ProcessGrid(dp=4, ep=2),
                     optimizer_fn=adamw())
    out["moe_schedule"] = outcome(lambda: _schedule(moe, x, y, r in (1, 2)))
    out["moe_lr"] = outcome(lambda: MoETrainer(
        SMALL_CONFIG, MoEConfig(4, 2, 1.0), ProcessGrid(dp=4, ep=2),
        optimizer_fn=adamw(lr=2e-2 if r == 3 else 1e-2)))
    trainer = Trainer3D(SMALL_CONFIG, dp_tp, optimizer_fn=adamw())                    # agreed: it still trains
    out["agreed_loss"] = trainer.train_step(x, y)
    comm.barrier(world)
    return out
