"""Runs on every rank of 4 (tests/test_checkpoint_moe_zero.py): MoE checkpoints with ZeRO-1/2,
optimizer kinds compared on load, numpy integers in configs.

``check_moe_zero(directory)`` returns this rank's {check: value}:

- MoE (E = 8, top-2) chain next to one process that never stopped (moe_reference):
  dp 4 x ep 2 with ZeRO-1 for 2 steps, saved; loaded on the same grid (every weight and
  state slice to the bit) and on dp 2 x pp 2 x ep 2 with ZeRO-2 (2 steps, saved); that
  file on one process without ZeRO (2 steps, saved); that file on dp 4 x ep 4 with ZeRO-2
  and on dp 2 x tp 2 x ep 2 with ZeRO-1 (2 steps each).
- kinds: float16 with float32 masters, SGD with momentum (state master, momentum) on dp 4
  with ZeRO-1, saved. Loaded by a float16 AdamW run (ZeRO-1, and plain): refused, no weight
  touched; by a float16 SGD without momentum: refused; by the same SGD with momentum on
  dp 2 x tp 2: loaded.
- numpy integers: GPTConfig and MoEConfig built from np.int64, ZeRO stage and micro-batches
  np.int64: trains, saves (meta holds plain ints), a plain-int run loads it exactly.
"""
import dataclasses
import os

import numpy as np

from minimegatron import comm
from minimegatron.checks.mixed import HALF_CONFIG
from minimegatron.checks.moe import MOE, MOE_CONFIG, moe_reference
from minimegatron.data.demo import batch, make_optimizer
from minimegatron.mixed_precision.loss_scaler import DynamicLossScaler
from minimegatron.mixed_precision.master_weights import MixedPrecisionOptimizer
from minimegatron.nn.gpt import GPTConfig
from minimegatron.nn.moe import MoEConfig
from minimegatron.optim import SGD
from minimegatron.parallel.threed import Trainer3D
from minimegatron.tools.checkpoint import load_checkpoint, read_checkpoint, save_checkpoint
from minimegatron.checks.precision import check_optimizer
from minimegatron.parallel.expert_parallel.trainer import MoETrainer
from ckpt_axes import BATCH, exact, grid_of, leg, rejected, resume, saved_from


def moe_trainer(grid, moe=MOE, config=MOE_CONFIG, **settings):
    return MoETrainer(config, moe, grid, **settings, optimizer_fn=lambda ps: check_optimizer(
        ps, config, grid.world))


def zero_trainer(zero_stage, **grid):
    return moe_trainer(grid_of(**grid), zero_stage=zero_stage)


def moe_zero_chain(directory, out):
    ref = moe_reference(MOE_CONFIG, MOE, 10, BATCH)
    path = os.path.join(directory, "moe_zero1.npz")
    first = zero_trainer(1, dp=4, ep=2)
    leg(out, "z1_ep2", first, ref, MOE_CONFIG, 0)
    out["error_z1_save"] = rejected(lambda: save_checkpoint(
        first, first.optimizer, path, first.grid, rng_state={"next_step": 2}))
    same = zero_trainer(1, dp=4, ep=2)
    out["exact_z1_same"] = exact(first, same, path)
    resume(out, "z1_same", same, path, ref, MOE_CONFIG)
    pp2 = zero_trainer(2, dp=2, pp=2, ep=2)
    resume(out, "z2_pp2", pp2, path, ref, MOE_CONFIG)
    saved_from(out, "z0_one", pp2, os.path.join(directory, "moe_zero2.npz"), 4,
               zero_trainer(0), ref, MOE_CONFIG)
    comm.barrier(comm.world())
    one = zero_trainer(0)                            # the file of one process, no ZeRO
    resume(out, "z0_again", one, os.path.join(directory, "0_moe_zero2.npz"), ref, MOE_CONFIG)
    path0 = os.path.join(directory, f"moe_zero0_{comm.world().rank}.npz")
    save_checkpoint(one, one.optimizer, path0, one.grid, rng_state={"next_step": 6})
    comm.barrier(comm.world())
    path0 = os.path.join(directory, "moe_zero0_0.npz")
    resume(out, "z2_ep4", zero_trainer(2, dp=4, ep=4), path0, ref, MOE_CONFIG)
    resume(out, "z1_tp2", zero_trainer(1, dp=2, tp=2, ep=2), path0, ref, MOE_CONFIG)
    if comm.world().rank == 0:
        meta = read_checkpoint(path)[1]
        out["meta_z1"] = {"grid": meta["grid"], "optimizer": {
            k: meta["optimizer"][k] for k in ("class", "kind", "fields", "keys")}}


def half_trainer(grid, zero_stage, rule):
    def optimizer(params):
        inner = {"sgd_momentum": lambda: SGD(params, lr=1e-2, momentum=0.9),
                 "sgd": lambda: SGD(params, lr=1e-2),
                 "adamw": lambda: make_optimizer(params)}[rule]()
        return MixedPrecisionOptimizer(inner, grid.world, DynamicLossScaler(2.0 ** 8))
    return Trainer3D(HALF_CONFIG, grid, zero_stage=zero_stage, optimizer_fn=optimizer)


def kinds(directory, out):
    """A float16 SGD-with-momentum file offered to other rules: refused, weights untouched."""
    path = os.path.join(directory, "half_sgd.npz")
    saver = half_trainer(grid_of(dp=4), 1, "sgd_momentum")
    for step in range(2):
        saver.train_step(*batch(HALF_CONFIG, BATCH, step))
    save_checkpoint(saver, saver.optimizer, path, saver.grid)
    for case, zero, rule in (("adamw_zero1", 1, "adamw"), ("adamw", 0, "adamw"),
                             ("sgd_plain", 1, "sgd"), ("sgd_momentum", 0, "sgd_momentum")):
        grid = grid_of(dp=4) if zero else grid_of(dp=2, tp=2)
        trainer = half_trainer(grid, zero, rule)
        before = [p.data.copy() for p in trainer.parameters()]
        out[f"kind_{case}"] = rejected(lambda: load_checkpoint(trainer, trainer.optimizer,
                                                               path, grid))
        out[f"kind_{case}_moved"] = sum(int((p.data != b).sum())
                                        for p, b in zip(trainer.parameters(), before))
        if not out[f"kind_{case}"]:                          # loaded: it trains on
            out[f"kind_{case}_loss"] = trainer.train_step(*batch(HALF_CONFIG, BATCH, 2))
    if comm.world().rank == 0:
        opt = read_checkpoint(path)[1]["optimizer"]
        out["kind_meta"] = {k: opt[k] for k in ("class", "kind", "fields", "keys")}


def numpy_ints(directory, out):
    """Configs of np.int64: trains, saves plain ints, a plain-int run loads it exactly."""
    i = np.int64
    config = GPTConfig(vocab_size=i(16), seq_len=i(8), n_layer=i(2), n_head=i(4),
                       d_model=i(16), seed=i(0))
    moe = MoEConfig(num_experts=i(8), top_k=i(2), capacity_factor=1.0, every=i(1))
    grid = grid_of(dp=4, ep=2)
    trainer = moe_trainer(grid, moe, config, zero_stage=i(2), micro_batches=i(2))
    trainer.train_step(*batch(MOE_CONFIG, BATCH, 0))
    path = os.path.join(directory, "numpy_ints.npz")
    out["ints_save"] = rejected(lambda: save_checkpoint(trainer, trainer.optimizer, path, grid))
    plain = moe_trainer(grid, MOE, MOE_CONFIG, zero_stage=2, micro_batches=2)
    out["ints_exact"] = exact(trainer, plain, path) if not out["ints_save"] else -1.0
    if comm.world().rank == 0 and not out["ints_save"]:
        meta = read_checkpoint(path)[1]
        out["ints_meta"] = [meta["moe"], meta["config"], meta["grid"]]
        out["ints_types"] = sorted({type(v).__name__ for d in out["ints_meta"]
                                    for v in d.values()})
    out["ints_config"] = [dataclasses.asdict(config) == dataclasses.asdict(MOE_CONFIG),
                          type(config.n_layer).__name__, type(moe.num_experts).__name__]


def check_moe_zero(directory):
    out = {}
    moe_zero_chain(directory, out)
    kinds(directory, out)
    numpy_ints(directory, out)
    return out
