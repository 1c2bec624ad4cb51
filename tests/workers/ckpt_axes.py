"""Runs on every rank of 4 (tests/test_checkpoint.py): checkpoints across tp, cp, ep, dp, pp, ZeRO.

``check_axes(directory)`` returns this rank's {check: value}:

- MoE (E = 8, top-2, capacity) chain: trained on dp 4 x ep 2 for 2 steps, saved;
  loaded on the same grid; on ep 4 (2 steps, saved); on one process (2 steps,
  saved); on tp 2 x ep 2 (2 steps, saved); on one process; and from the first file
  on pp 2 x ep 2. Every loss and the weights after each leg next to one process that
  never stopped (moe_reference, 10 steps): AdamW's m and v must have travelled too.
- context parallel (dense, 16 tokens): dp 2 x cp 2 for 2 steps, saved; loaded on
  the same grid, on one process, on tp 2 x cp 2 (2 steps, saved, loaded on one
  process) and on dp 2 x pp 2 with ZeRO-2; and with ZeRO-1,
  saved, loaded on the same grid and on one process: 2 steps each, next to
  serial_reference. Loaded on the grid that saved: every array equal to the bit.
- MoE with cp (dropless): dp 2 x cp 2 x ep 2, saved; loaded on one process.
- pipelines: interleaved on dp 2 x pp 2, saved; loaded on zbv and on pp 2 x tp 2 with
  sequence parallelism.
- float16 with float32 masters: resumed on the grid that saved it, to the bit; loaded
  by ZeRO-1 and saved again.
- refusals (the same message on every rank, no weight touched): another MoE
  config, a dense model for an MoE file, a file missing experts, a corrupt file.
- an MoE checkpoint of the text vocabulary for ``minimegatron sample``.
"""
import dataclasses
import json
import os

import numpy as np

from minimegatron import comm
from minimegatron.checks.common import serial_reference
from minimegatron.checks.moe import DROPLESS, MOE, MOE_CONFIG, expected, moe_reference
from minimegatron.checks.precision import check_optimizer
from minimegatron.data.datasets import CharTokenizer, tiny_corpus
from minimegatron.checks.mixed import HALF_CONFIG
from minimegatron.data.demo import CONTEXT_CONFIG, SMALL_CONFIG, batch, make_optimizer
from minimegatron.mixed_precision.loss_scaler import DynamicLossScaler
from minimegatron.mixed_precision.master_weights import MixedPrecisionOptimizer
from minimegatron.parallel.expert_parallel.gpt import expert_parallel_gpt
from minimegatron.parallel.expert_parallel.trainer import MoETrainer
from minimegatron.parallel.grid import ProcessGrid
from minimegatron.parallel.threed import Trainer3D
from minimegatron.tools import checkpoint_format
from minimegatron.tools.checkpoint import (CheckpointError, load_checkpoint, read_checkpoint,
                                           save_checkpoint)

BATCH = 8
PIPE_CONFIG = dataclasses.replace(SMALL_CONFIG, n_layer=4)   # pp 2 x 2 chunks


def grid_of(dp=1, pp=1, tp=1, cp=1, ep=1):
    """A ProcessGrid of dp*pp*tp*cp ranks; the world is split into copies of it."""
    world, size = comm.world(), dp * pp * tp * cp
    sub = world.split(color=world.rank // size)
    return ProcessGrid(dp, pp, tp, comm=sub.comm, cp=cp, ep=ep)


def moe_trainer(grid, moe=MOE, config=MOE_CONFIG):
    return MoETrainer(config, moe, grid, optimizer_fn=lambda ps: check_optimizer(ps, config,
                                                                                  grid.world))


def weight_diff(trainer, weights):
    """max |this rank's weights - its part of one process's|."""
    return max(float(np.abs(p.data - expected(n, weights[n], trainer.grid)).max())
               for n, p in trainer.named_parameters())


def exact(saved, loaded, path):
    """Load ``path`` into ``loaded``: max |saved - loaded| over this rank's weights and
    optimizer state (the same grid), 0.0 when each rank gets its piece back (inf: refused)."""
    if rejected(lambda: load_checkpoint(loaded, loaded.optimizer, path, loaded.grid)):
        return float("inf")
    mine, theirs = held(saved), held(loaded)
    if len(mine) != len(theirs):
        return float("inf")
    return max(float(np.abs(a - b).max()) for a, b in zip(mine, theirs))


def held(trainer):
    """This rank's weights, then its optimizer state arrays (ZeRO: its flat slices)."""
    opt = trainer.optimizer
    states = [a for flat, _, _ in opt.local_shards() for a in flat.state.values()] \
        if hasattr(opt, "local_shards") else [a for s in opt.state for a in s.values()]
    return [p.data for p in trainer.parameters()] + states


def leg(out, key, trainer, ref, config, start, steps=2):
    """Train ``steps`` steps from ``start``; losses and weights next to the reference."""
    losses = [trainer.train_step(*batch(config, BATCH, s)) for s in range(start, start + steps)]
    out[f"loss_{key}"] = max(abs(a - b) for a, b in zip(losses, ref["loss"][start:]))
    out[f"weight_{key}"] = weight_diff(trainer, ref["weights"][start + steps - 1])
    out[f"step_{key}"] = trainer.optimizer.step_count


def resume(out, key, trainer, path, ref, config, steps=2):
    """Load ``path`` into ``trainer``: the loaded weights, then ``steps`` more steps (a
    refused load: every measure inf, and its message, so each leg fails on its own)."""
    try:
        meta = load_checkpoint(trainer, trainer.optimizer, path, trainer.grid)
    except CheckpointError as err:
        out.update({f"{what}_{key}": float("inf") for what in ("loss", "weight", "loaded")})
        out[f"step_{key}"], out[f"error_{key}"] = str(err), str(err)
        return
    start = meta["rng"]["user"]["next_step"]
    out[f"loaded_{key}"] = weight_diff(trainer, ref["weights"][start - 1])
    leg(out, key, trainer, ref, config, start, steps)


def saved_from(out, key, trainer, path, next_step, other, ref, config):
    """``trainer`` saves to ``path`` (one file per world rank: a grid smaller than the world
    runs in copies); ``other`` resumes from world rank 0's file."""
    root = os.path.join(os.path.dirname(path), f"{comm.world().rank}_" + os.path.basename(path))
    out[f"error_{key}"] = rejected(lambda: save_checkpoint(
        trainer, trainer.optimizer, root, trainer.grid, rng_state={"next_step": next_step}))
    comm.barrier(comm.world())
    resume(out, key, other, os.path.join(os.path.dirname(path), "0_" + os.path.basename(path)),
           ref, config)


def moe_chain(directory, out):
    ref = moe_reference(MOE_CONFIG, MOE, 10, BATCH)
    path = os.path.join(directory, "moe_ep2.npz")
    first = moe_trainer(grid_of(dp=4, ep=2))
    leg(out, "moe_ep2", first, ref, MOE_CONFIG, 0)
    save_checkpoint(first, first.optimizer, path, first.grid, rng_state={"next_step": 2})
    same = moe_trainer(grid_of(dp=4, ep=2))
    out["exact_moe_same"] = exact(first, same, path)
    resume(out, "moe_same", same, path, ref, MOE_CONFIG)
    resume(out, "moe_pp2", moe_trainer(grid_of(dp=2, pp=2, ep=2)), path, ref, MOE_CONFIG)
    ep4 = moe_trainer(grid_of(dp=4, ep=4))
    resume(out, "moe_ep4", ep4, path, ref, MOE_CONFIG)
    path4 = os.path.join(directory, "moe_ep4.npz")
    save_checkpoint(ep4, ep4.optimizer, path4, ep4.grid, rng_state={"next_step": 4})
    one = moe_trainer(grid_of())
    resume(out, "moe_one", one, path4, ref, MOE_CONFIG)
    path1 = os.path.join(directory, f"moe_one_{comm.world().rank}.npz")   # one per process
    save_checkpoint(one, one.optimizer, path1, one.grid, rng_state={"next_step": 6})
    comm.barrier(comm.world())
    tp2 = moe_trainer(grid_of(dp=2, tp=2, ep=2))
    resume(out, "moe_tp2_ep2", tp2, os.path.join(directory, "moe_one_0.npz"), ref, MOE_CONFIG)
    saved_from(out, "moe_tp2_ep2_one", tp2, os.path.join(directory, "moe_tp2.npz"), 8,
               moe_trainer(grid_of()), ref, MOE_CONFIG)
    return path


def cp_runs(directory, out):
    ref = serial_reference(CONTEXT_CONFIG, steps=6, batch_size=BATCH)

    def trainer(zero_stage=0, **dims):
        return Trainer3D(CONTEXT_CONFIG, grid_of(**dims), zero_stage=zero_stage,
                         optimizer_fn=make_optimizer)

    def first(key, zero_stage):
        """dp 2 x cp 2 for 2 steps, saved to <key>.npz; the same grid loads it back."""
        path, run = os.path.join(directory, f"{key}.npz"), trainer(zero_stage, dp=2, cp=2)
        leg(out, key, run, ref, CONTEXT_CONFIG, 0)
        out[f"error_{key}"] = rejected(lambda: save_checkpoint(
            run, run.optimizer, path, run.grid, rng_state={"next_step": 2}))
        out[f"exact_{key}_same"] = exact(run, trainer(zero_stage, dp=2, cp=2), path)
        return path
    path, zero_path = first("cp", 0), first("cp_zero1", 1)
    tp2 = trainer(tp=2, cp=2)
    for key, t in (("cp_same", trainer(dp=2, cp=2)), ("cp_tp2", tp2), ("cp_one", trainer()),
                   ("cp_pp2_zero2", trainer(zero_stage=2, dp=2, pp=2))):
        resume(out, key, t, path, ref, CONTEXT_CONFIG)
    saved_from(out, "cp_tp2_one", tp2, os.path.join(directory, "cp_tp2.npz"), 4, trainer(),
               ref, CONTEXT_CONFIG)
    for key, t in (("cp_zero1_same", trainer(zero_stage=1, dp=2, cp=2)),
                   ("cp_zero1_one", trainer())):
        resume(out, key, t, zero_path, ref, CONTEXT_CONFIG)

    moe_ref = moe_reference(CONTEXT_CONFIG, DROPLESS, 4, BATCH)
    moe_path = os.path.join(directory, "moe_cp.npz")
    cp_ep = moe_trainer(grid_of(dp=2, cp=2, ep=2), DROPLESS, CONTEXT_CONFIG)
    leg(out, "moe_cp", cp_ep, moe_ref, CONTEXT_CONFIG, 0)
    out["error_moe_cp"] = rejected(lambda: save_checkpoint(
        cp_ep, cp_ep.optimizer, moe_path, cp_ep.grid, rng_state={"next_step": 2}))
    resume(out, "moe_cp_one", moe_trainer(grid_of(), DROPLESS, CONTEXT_CONFIG), moe_path,
           moe_ref, CONTEXT_CONFIG)


def pipeline_runs(directory, out):
    """Interleaved (2 chunks) on dp 2 x pp 2, saved; loaded on zbv (dp 2 x pp 2) and on
    pp 2 x tp 2 with sequence parallelism: each rank's blocks differ, the names do not."""
    ref = serial_reference(PIPE_CONFIG, steps=4, batch_size=BATCH)
    path = os.path.join(directory, "interleaved.npz")
    first = Trainer3D(PIPE_CONFIG, grid_of(dp=2, pp=2), "interleaved", micro_batches=2,
                      chunks=2, optimizer_fn=make_optimizer)
    leg(out, "interleaved", first, ref, PIPE_CONFIG, 0)
    out["error_interleaved"] = rejected(lambda: save_checkpoint(
        first, first.optimizer, path, first.grid, rng_state={"next_step": 2}))
    for key, t in (("zbv", Trainer3D(PIPE_CONFIG, grid_of(dp=2, pp=2), "zbv",
                                     micro_batches=4, optimizer_fn=make_optimizer)),
                   ("sp_tp2_pp2", Trainer3D(PIPE_CONFIG, grid_of(pp=2, tp=2), "1f1b",
                                            micro_batches=2, sequence_parallel=True,
                                                optimizer_fn=make_optimizer))):
        resume(out, key, t, path, ref, PIPE_CONFIG)


def mixed_runs(directory, out):
    """float16 with float32 masters (AdamW, a loss scale that doubles every clean step) on
    dp 2 x tp 2 for 2 steps, saved, then 2 more steps. A fresh trainer on the same grid loads
    the file: its 2 steps must give the same losses to the bit (masters, m, v, the scale and
    AdamW's t all restored). ZeRO-1 on dp 4 loads it and saves it again (the test compares
    the two files)."""
    def trainer(grid, zero_stage=0):
        return Trainer3D(HALF_CONFIG, grid, zero_stage=zero_stage, optimizer_fn=lambda ps:
                         MixedPrecisionOptimizer(make_optimizer(ps), grid.world,
                                                 DynamicLossScaler(2.0 ** 8, growth_interval=1)))
    path = os.path.join(directory, "half.npz")
    first = trainer(grid_of(dp=2, tp=2))
    for s in range(2):
        first.train_step(*batch(HALF_CONFIG, BATCH, s))
    out["error_half"] = rejected(lambda: save_checkpoint(first, first.optimizer, path,
                                                         first.grid))
    went_on = [first.train_step(*batch(HALF_CONFIG, BATCH, s)) for s in (2, 3)]
    same = trainer(grid_of(dp=2, tp=2))
    out["error_half_same"] = rejected(lambda: load_checkpoint(same, same.optimizer, path,
                                                              same.grid))
    loaded_scale = same.rule.loss_scale
    resumed = [same.train_step(*batch(HALF_CONFIG, BATCH, s)) for s in (2, 3)]
    out["scale_half_same"] = [loaded_scale, same.rule.loss_scale, first.rule.loss_scale]
    out["loss_half_same"] = max(abs(a - b) for a, b in zip(resumed, went_on))
    zero = trainer(grid_of(dp=4), zero_stage=1)
    out["error_half_zero"] = rejected(lambda: load_checkpoint(zero, zero.optimizer, path,
                                                              zero.grid)) or \
        rejected(lambda: save_checkpoint(zero, zero.optimizer, os.path.join(
            directory, "half_zero.npz"), zero.grid))


def rejected(fn):
    """The CheckpointError message on this rank ("" if nothing was raised)."""
    try:
        fn()
    except CheckpointError as err:
        return str(err)
    return ""


def without_experts(source, target):
    """Rank 0: ``target`` = ``source`` with experts 4..7 cut away (a valid, consistent file)."""
    arrays, meta = read_checkpoint(source)
    for key in [k for k in arrays if ".experts." in k]:
        arrays[key] = arrays[key][:4].copy()
        meta["arrays"][key]["shape"] = list(arrays[key].shape)
        meta["arrays"][key]["crc32"] = checkpoint_format.crc32(arrays[key])
    np.savez(target, meta=np.array(json.dumps(meta)), **arrays)


def refusals(directory, path, out):
    grid = grid_of(dp=4, ep=2)
    trainer = moe_trainer(grid)
    missing, corrupt = (os.path.join(directory, f) for f in ("missing.npz", "corrupt.npz"))
    if comm.world().rank == 0:
        without_experts(path, missing)
        data = bytearray(open(path, "rb").read())
        data[len(data) // 2] ^= 0xFF
        open(corrupt, "wb").write(bytes(data))
    comm.barrier(comm.world())
    before = {n: p.data.copy() for n, p in trainer.named_parameters()}
    top1 = moe_trainer(grid, dataclasses.replace(MOE, top_k=1))
    dense = Trainer3D(MOE_CONFIG, grid_of(dp=4), optimizer_fn=make_optimizer)
    out["refuse_moe_config"] = rejected(lambda: load_checkpoint(top1, top1.optimizer, path,
                                                                grid))
    out["refuse_dense"] = rejected(lambda: load_checkpoint(dense, dense.optimizer, path,
                                                           dense.grid))
    for case, bad in (("refuse_missing", missing), ("refuse_corrupt", corrupt)):
        out[case] = rejected(lambda: load_checkpoint(trainer, trainer.optimizer, bad, grid))
    out["untouched"] = max(float(np.abs(p.data - before[n]).max())
                           for n, p in trainer.named_parameters())
    alone = expert_parallel_gpt(MOE_CONFIG, MOE, grid)          # experts over ep 2: a grid
    out["refuse_ep_group"] = rejected(lambda: save_checkpoint(  # without ep cannot place them
        alone, make_optimizer(alone.parameters()), os.path.join(directory, "no.npz"),
        grid_of(dp=4)))
    stage_path = os.path.join(directory, "stage.npz")           # a bare stage: MoE found inside
    save_checkpoint(trainer.stage, trainer.optimizer, stage_path, grid, config=MOE_CONFIG)
    out["stage_moe"] = read_checkpoint(stage_path)[1]["moe"] if comm.world().rank == 0 else None


def text_model(directory):
    """An MoE GPT of the corpus' vocabulary, 1 step on dp 2 x ep 2, saved for ``sample``."""
    config = dataclasses.replace(MOE_CONFIG, vocab_size=CharTokenizer(tiny_corpus()).vocab_size)
    trainer = moe_trainer(grid_of(dp=4, ep=2), MOE, config)
    trainer.train_step(*batch(config, BATCH, 0))
    save_checkpoint(trainer, trainer.optimizer, os.path.join(directory, "moe_text.npz"),
                    trainer.grid)


def check_axes(directory):
    out = {}
    path = moe_chain(directory, out)
    cp_runs(directory, out)
    pipeline_runs(directory, out)
    mixed_runs(directory, out)
    refusals(directory, path, out)
    text_model(directory)
    return out
