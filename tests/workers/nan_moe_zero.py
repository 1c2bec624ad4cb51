"""A NaN on rank 1 of 2 in an MoE or a ZeRO run: the error must name the weight (or the
activation, or the aux loss) and the rank, before a reduction spreads it
(tests/test_guards.py). Before, each ended "non-finite loss at step 2 on rank 0".

    python -m minimegatron run -n 2 tests/workers/nan_moe_zero.py CASE

    moe_router   MoETrainer dp=2, ep=2: NaN in rank 1's blocks.0.mlp.router.weight
    moe_expert   the same, NaN in rank 1's own experts (blocks.0.mlp.experts.fc1.weight)
    moe_aux      every weight finite, rank 1's z-loss of block 1 is inf
    zero1, zero2 Trainer3D dp=2 with ZeRO-1 / ZeRO-2: NaN in rank 1's blocks.0.ln1.weight
    zero2_act    ZeRO-2, every weight finite: rank 1's attention in block 1 overflows
    zero1_half, zero2_half  the same in float16 (a MixedPrecisionOptimizer over the grid's
                 world, its own finiteness check off): an inf in rank 1's blocks.0.ln1.weight
    zero3        Zero3(GPT): NaN in rank 1's shard of blocks.0.ln1 (its half: the bias)
    zero3_half   the same in float16 with a MixedPrecisionOptimizer: an inf there
"""
import sys
from dataclasses import replace

import numpy as np

import minimegatron  # noqa: F401  (under mpirun: installs the fault hooks)
from minimegatron import comm
from minimegatron.data.demo import SMALL_CONFIG, batch, make_optimizer
from minimegatron.mixed_precision.loss_scaler import DynamicLossScaler
from minimegatron.mixed_precision.master_weights import MixedPrecisionOptimizer
from minimegatron.nn import GPT, gpt
from minimegatron.nn.moe import MoEConfig, layer as moe_layer
from minimegatron.parallel.data_parallel import Zero3
from minimegatron.parallel.expert_parallel import MoETrainer
from minimegatron.parallel.grid import ProcessGrid
from minimegatron.parallel.threed import Trainer3D

case, world = sys.argv[1], comm.world()
BAD, HALF = world.rank == 1, case.endswith("_half")


def overflow_in_block_1():
    """From now on block 1's attention (the 2nd call per forward) overflows on rank 1."""
    attention, calls = gpt.causal_attention, [0]

    def overflowing(*args):
        calls[0] += 1
        out = attention(*args)
        return out * 1e300 * 1e300 if calls[0] % 2 == 0 else out   # float64 overflow: inf
    gpt.causal_attention = overflowing


def infinite_z_loss_in_block_1():
    """From now on the z-loss of block 1 (the 2nd MoE call per forward) is inf on rank 1."""
    z_loss, calls = moe_layer.z_loss, [0]

    def infinite(logits, coeff):
        calls[0] += 1
        return z_loss(logits, coeff) * (np.inf if calls[0] % 2 == 0 else 1.0)
    moe_layer.z_loss = infinite


def poison(step):
    if step != 1 or not BAD:
        return
    if case == "moe_aux":
        return infinite_z_loss_in_block_1()
    if case == "zero2_act":
        return overflow_in_block_1()
    if case.startswith("zero3"):
        unit = next(u for u in model.units if u.name == "blocks.0.ln1")
        unit.shard.data[0] = np.inf if HALF else np.nan   # rank 1 owns the bias half
        return
    name = {"moe_router": "blocks.0.mlp.router.weight",
            "moe_expert": "blocks.0.mlp.experts.fc1.weight"}.get(case, "blocks.0.ln1.weight")
    dict(trainer.named_parameters())[name].data.flat[0] = np.inf if HALF else np.nan


if case.startswith("moe"):
    trainer = MoETrainer(SMALL_CONFIG, MoEConfig(4, 2, 1.0), ProcessGrid(dp=2, ep=2),
                         optimizer_fn=make_optimizer)
elif case == "zero3_half":
    serial = GPT(replace(SMALL_CONFIG, dtype="float16"))
    model = Zero3(serial, world, MixedPrecisionOptimizer(make_optimizer(serial.parameters()),
                                                         world, DynamicLossScaler(2.0 ** 8)))
elif case == "zero3":
    serial = GPT(SMALL_CONFIG)
    model = Zero3(serial, world, make_optimizer(serial.parameters()))
elif HALF:
    trainer = Trainer3D(replace(SMALL_CONFIG, dtype="float16"), ProcessGrid(dp=2),
                        zero_stage=int(case[4]), optimizer_fn=lambda ps: MixedPrecisionOptimizer(
                            make_optimizer(ps), world, DynamicLossScaler(2.0 ** 8)))
else:
    trainer = Trainer3D(SMALL_CONFIG, ProcessGrid(dp=2), zero_stage=int(case[4]),
                        optimizer_fn=make_optimizer)
for step in range(4):
    poison(step)
    x, y = batch(SMALL_CONFIG, 4, step)
    if case.startswith("zero3"):
        model.model.loss(x[2 * world.rank:][:2], y[2 * world.rank:][:2]).backward()
        model.step()
        for p in model.parameters():
            p.grad = None
    else:
        trainer.train_step(x, y)
print(f"rank {world.rank}: trained on", flush=True)
