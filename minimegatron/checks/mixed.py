"""Mixed precision next to one process: DDP and ZeRO 1-3 in float16, an overflow forced.

``check_mixed(group, scheme, steps, overflow=(step, rank))`` trains
demo.SMALL_CONFIG in float16 with float32 master weights (MixedPrecisionOptimizer)
and a dynamic loss scale, under ``scheme`` ("serial", "ddp", "zero1", "zero2",
"zero3") on ``group``. With ``overflow``, at that step ONE rank's gradient gets
an inf after the gradients were reduced (so only that rank sees it: the found-inf
all-reduce must tell the others). Returned for this rank, per step:

    scale     the loss scale the backward used
    skipped   whether the step was skipped (must agree on every rank)
    unchanged whether every weight this rank holds is bitwise unchanged by the step
    weight    max |w - w_serial| against the one-process mixed run with the same overflow
and ``memory``: tools/memory_measure.measure of the model state held between the
last backward (gradients reduced) and its step. ``measured_per_param()`` is that
per parameter for one process (``minimegatron memory mixed`` prints it).

``skip_together(kind, group)`` does the same for a model split over ranks
("pp": one stage per rank of ``group``, "tp": ParallelGPT over ``group``, "3d":
a dp x pp x tp grid of the world, found-inf over ALL its ranks): an inf in one
rank's gradient must make every rank of the model skip.
"""
import dataclasses

import numpy as np

from minimegatron.comm import trace
from minimegatron.backend import to_numpy, xp
from minimegatron.checks.common import max_abs_diff
from minimegatron.checks.pipeline import build
from minimegatron.checks.precision import INIT_SCALE, backward, check_optimizer
from minimegatron.data.demo import DEMO_CONFIG, SMALL_CONFIG, batch, make_optimizer
from minimegatron.mixed_precision.loss_scaler import DynamicLossScaler
from minimegatron.mixed_precision.master_weights import MixedPrecisionOptimizer
from minimegatron.nn import GPT
from minimegatron.parallel.data_parallel.ddp import DistributedDataParallel
from minimegatron.parallel.data_parallel.zero3 import zero_optimizer
from minimegatron.parallel.grid import ProcessGrid
from minimegatron.parallel.tensor_parallel.gpt import ParallelGPT
from minimegatron.parallel.threed import Trainer3D
from minimegatron.parallel.split import shard_batch
from minimegatron.tools.memory_measure import measure

HALF_CONFIG = dataclasses.replace(SMALL_CONFIG, dtype="float16")
HALF_DEMO = dataclasses.replace(DEMO_CONFIG, dtype="float16")    # 4 layers, 4 heads
BF16_CONFIG = dataclasses.replace(SMALL_CONFIG, dtype="bfloat16")
FP8_CONFIG = dataclasses.replace(BF16_CONFIG, fp8=True)


def _held(model, opt):
    """This rank's persistent weights, copied (the ZeRO shards, or every parameter)."""
    if hasattr(opt, "local_shards"):
        return [to_numpy(w).copy() for _, w, _ in opt.local_shards()]
    return [to_numpy(p.data).copy() for p in model.parameters()]


def _poison(model, opt, scheme):
    """Set one reduced gradient element of this rank to inf (after any dp reduction)."""
    if scheme.startswith("zero"):
        opt.reduce_gradients()
        _, _, grad = opt.local_shards()[0]
        grad[0] = xp.inf
    else:
        model.parameters()[0].grad[0] = xp.inf


def run_mixed(group, scheme="serial", steps=4, overflow=None, growth_interval=1000,
              config=HALF_CONFIG, batch_size=8, init_scale=INIT_SCALE):
    """Train; returns {"model", "zero", "mixed", "names", "records"} (see the docstring)."""
    model = GPT(config)
    names = {id(p): n for n, p in model.named_parameters()}   # before ZeRO-3 rewires it
    scaler = (DynamicLossScaler(init_scale, growth_interval) if config.dtype == "float16"
              else None)                                           # bf16: NoLossScale
    mixed = MixedPrecisionOptimizer(make_optimizer(model.parameters()), group, scaler)
    ddp = DistributedDataParallel(model, group) if scheme == "ddp" else None
    zero = (zero_optimizer(model, group, int(scheme[-1]), mixed)
            if scheme.startswith("zero") else None)
    opt = zero or mixed
    records = []
    for step in range(steps):
        x, y = batch(config, batch_size, step)
        if group is not None:
            x, y = shard_batch(x, group), shard_batch(y, group)           # (B/N, T)
        opt.zero_grad()
        scale, before = mixed.loss_scale, _held(model, opt)
        loss = model.loss(x, y)
        mixed.scale_loss(loss).backward()                                  # from S x loss
        if ddp is not None:
            ddp.finish()
        if overflow is not None and overflow[0] == step and \
                (group is None or group.rank == overflow[1]):
            _poison(model, opt, scheme)
        if step == steps - 1:                       # the state held between backward and step
            if zero is not None:
                zero.reduce_gradients()
            memory = measure(model.parameters(), opt, ddp.buffers() if ddp else ())
        opt.step()
        records.append({"scale": scale, "skipped": mixed.skipped, "loss": float(loss.item()),
                        "unchanged": all(np.array_equal(a, b) for a, b in
                                         zip(before, _held(model, opt)))})
    return {"model": model, "zero": zero, "mixed": mixed, "names": names, "records": records,
            "memory": memory}


def measured_per_param(config=HALF_CONFIG):
    """(bytes per parameter by kind, parameter count) of a real float16 (or bf16, fp8:
    ``config``) run: this process alone, DDP over a group of one (its float32 reduce buffer
    exists), two AdamW steps."""
    from minimegatron import comm
    from minimegatron.tools.memory_measure import per_param_bytes
    run = run_mixed(comm.world().split(comm.world().rank, name="self"), "ddp", steps=2,
                    config=config)
    params = run["model"].num_parameters()
    return per_param_bytes(run["memory"], params), params


def measured_precisions(batch_size=4):
    """[(name, bytes per parameter, (matmul bytes measured, formula))] for float16, bf16
    and fp8 (``minimegatron memory mixed``; tools/memory_mixed.precision_text)."""
    from minimegatron.tools.memory_mixed import matmul_saved_bytes, matmul_saved_formula
    rows = []
    for name, config in (("float16", HALF_CONFIG), ("bf16", BF16_CONFIG),
                         ("fp8", FP8_CONFIG)):
        per_param, _ = measured_per_param(config)
        model = GPT(config)
        x, y = batch(config, batch_size, 0)
        saved = matmul_saved_bytes(model, model.loss(x, y))
        rows.append((name, per_param, (saved, matmul_saved_formula(config, x.size))))
    return rows


def check_mixed(group, scheme, steps=4, overflow=None, growth_interval=1000):
    """``run_mixed``'s records on this rank, and ``weight``: max |w - one process's w|."""
    ref = run_mixed(None, "serial", steps, overflow, growth_interval)
    trace.reset()
    run = run_mixed(group, scheme, steps, overflow, growth_interval)
    zero, names = run["zero"], run["names"]
    want = dict(ref["model"].named_parameters())
    if zero is not None:
        with trace.label("check"):
            full = zero.full_weights()
    else:
        full = {id(p): p.data for p in run["model"].parameters()}
    weight = max(max_abs_diff(value, want[names[pid]].data) for pid, value in full.items())
    found = sum(1 for s in trace.spans() if (s["label"] or "") == "mixed.found_inf")
    return {"records": run["records"], "ref": ref["records"], "weight": weight,
            "found_inf_calls": found, "params": len(full) and sum(
                int(np.prod(want[names[pid]].shape)) for pid in full),
            "memory": run["memory"]}


def skip_together(kind, group, steps=3, overflow=(1, 1), dims=(2, 2, 1)):
    """Records {"scale", "skipped", "unchanged"} per step of a float16 pp / tp / 3d model.

    ``overflow=(step, rank)``: that rank of ``group`` (the world rank for "3d")
    plants an inf in its first gradient after backward (and after the dp
    all-reduce in 3D). pp: checks/precision's optimizer over the pp group and the
    engine seeded with S; tp: over the tp group; 3d: Trainer3D over grid.world.
    """
    if kind == "3d":
        grid = ProcessGrid(*dims, comm=None if group is None else group.comm)
        trainer = Trainer3D(HALF_DEMO, grid, micro_batches=2,
                            optimizer_fn=lambda ps: check_optimizer(ps, HALF_DEMO, grid.world))
        params, opt, rank = trainer.parameters(), trainer.rule, grid.world.rank
    elif kind == "pp":
        stage, engine = build(group, HALF_DEMO, "1f1b", 2, False)
        params, rank = stage.parameters(), group.rank
        opt = check_optimizer(params, HALF_DEMO, group)
    else:
        model = ParallelGPT(HALF_DEMO, group)
        params, rank = model.parameters(), group.rank
        opt = check_optimizer(params, HALF_DEMO, group)
    records = []
    for step in range(steps):
        x, y = batch(HALF_DEMO, 8, step)
        scale, before = opt.loss_scale, [np.copy(to_numpy(p.data)) for p in params]
        opt.zero_grad()
        if kind == "3d":
            trainer.forward_backward(x, y)
        elif kind == "pp":
            engine.loss_scale = scale                        # the last stage seeds with S
            engine.train_step(x, y)
        else:
            backward(model.loss(x, y), opt)
        if (step, rank) == tuple(overflow):
            params[0].grad[(0,) * params[0].grad.ndim] = xp.inf
        opt.step()
        records.append({"scale": scale, "skipped": opt.skipped, "unchanged": all(
            np.array_equal(a, to_numpy(p.data)) for a, p in zip(before, params))})
    return records
