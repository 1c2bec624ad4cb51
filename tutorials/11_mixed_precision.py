"""Tutorial 11: mixed precision: float16 weights, float32 masters, a dynamic loss scale.

    minimegatron run -n 4 tutorials/11_mixed_precision.py [--steps 8]

Every rank trains a float16 GPT with ZeRO-2 (the float32 master weights and
AdamW's m and v are sharded over the ranks): ``train`` is the whole loop.
Backward starts from S x loss, S the loss scale. At step 2 one gradient element
of rank 1 is set to inf after the reduce-scatter, so only rank 1 sees it: the
found-inf flag is all-reduced (MAX) over every rank, every rank skips that step
and halves S, and after 3 clean steps S doubles. The same loop then runs on one
process (the whole batch, the same inf planted at the same step): its losses,
its gradients (unscaled, g / S) and its weights after every step are compared
with the ZeRO-2 run's. Then the bytes per parameter each kind takes, measured
from the real arrays of that one process, and the same function turning them
into the ZeRO paper's 7.5B-parameter example (N = 64).

Then bf16 and fp8 (``main`` part two): the range and precision of each half format
(ml_dtypes.finfo) and what a 1e-8 gradient becomes in each; an unscaled e4m3 cast of
500 (NaN) and a scaled one; and the same ZeRO-2 loop in bf16 (no loss scale at all) and
in fp8 (the blocks' matmuls), each next to one process and to one float32 process.
Code: minimegatron/mixed_precision/, autodiff/fp8.py, comm/wire.py.
MINIMEGATRON_LANG=ko prints the headings in Korean (minimegatron.i18n).
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# ^ import the minimegatron beside tutorials/ (a student copy's own), not another install

import dataclasses

import numpy as np

from minimegatron import comm
from minimegatron.backend import backend_name, to_numpy, xp
from minimegatron.commands.argtypes import positive_int
from minimegatron.commands.entry import ArgumentParser, run
from minimegatron.data.demo import LR, SMALL_CONFIG, batch, make_optimizer
from minimegatron.i18n import language, text
from minimegatron.mixed_precision.loss_scaler import DynamicLossScaler
from minimegatron.mixed_precision.master_weights import MixedPrecisionOptimizer
from minimegatron.nn import GPT
from minimegatron.parallel.data_parallel.zero3 import zero_optimizer
from minimegatron.parallel.split import shard_batch
from minimegatron.tools.memory import sharded_state_bytes
from minimegatron.tools.memory_measure import measure, per_param_bytes
from minimegatron.autodiff import fp8
import ml_dtypes

CONFIG = dataclasses.replace(SMALL_CONFIG, dtype="float16")    # 2 layers, d_model 16
OVERFLOW_STEP, GROWTH_INTERVAL, BATCH = 2, 3, 8
INIT_SCALE = 2.0 ** 8          # the tiny model overflows at Megatron's 2^16 in its first steps


def flat(arrays):
    """One float32 vector (P,) of a list of arrays, in the model's parameter order."""
    return np.concatenate([to_numpy(a).astype(np.float32).ravel() for a in arrays])


def train(group, steps):
    """float16 AdamW with ZeRO-2 over ``group`` (None: one process, the whole batch).

    Returns (records, model, optimizer, mixed): a record per step holds the loss scale
    S its backward used, whether the step was skipped, this rank's loss, the gradient
    of the mini-batch's loss (unscaled, (P,)) and the weights after the step (P,).
    """
    model = GPT(CONFIG)                                # float16 weights, the same seed
    mixed = MixedPrecisionOptimizer(make_optimizer(model.parameters()), group,
                                    DynamicLossScaler(INIT_SCALE, GROWTH_INTERVAL))
    zero = None if group is None else zero_optimizer(model, group, 2, mixed)
    opt = zero or mixed                                # ZeRO-2: masters, m, v, grads sharded
    plants_inf = group is None or group.rank == min(1, group.size - 1)
    records = []
    for step in range(steps):
        x, y = batch(CONFIG, BATCH, step)                          # (B, T)
        if zero is not None:
            x, y = shard_batch(x, group), shard_batch(y, group)    # (B/N, T): this rank's rows
        opt.zero_grad()
        scale = mixed.loss_scale                                   # S of this backward
        loss = model.loss(x, y)
        mixed.scale_loss(loss).backward()                          # from S x loss (float16)
        if zero is not None:
            zero.reduce_gradients()                    # reduce-scatter: my slice of the mean
            whole = comm.all_gather(zero.grad_shard, group)        # (P_pad,): for the check
            grad = flat([whole[:model.num_parameters()]]) / scale
        else:
            grad = flat([p.grad for p in model.parameters()]) / scale
        if step == OVERFLOW_STEP and plants_inf:                   # only this rank sees it
            (zero.grad_shard if zero is not None else model.parameters()[0].grad)[0] = xp.inf
        opt.step()                         # found-inf MAX all-reduce: every rank skips, or steps
        records.append({"scale": scale, "skipped": mixed.skipped, "loss": loss.item(),
                        "grad": grad, "weights": flat([p.data for p in model.parameters()])})
    return records, model, opt, mixed


def train_low(group, steps, config):
    """The same ZeRO-2 AdamW loop in bf16 (or fp8: ``config.fp8``), with NO loss scale
    (MixedPrecisionOptimizer picks NoLossScale for bf16). Returns (losses, weights (P,))."""
    model = GPT(config)                                # bf16 weights, float32 masters
    mixed = MixedPrecisionOptimizer(make_optimizer(model.parameters()), group)
    opt = mixed if group is None else zero_optimizer(model, group, 2, mixed)
    losses = []
    for step in range(steps):
        x, y = batch(config, BATCH, step)                          # (B, T)
        if group is not None:
            x, y = shard_batch(x, group), shard_batch(y, group)    # (B/N, T)
        opt.zero_grad()
        loss = model.loss(x, y)
        loss.backward()                                            # from the loss itself
        opt.step()
        losses.append(loss.item())
    return losses, flat([p.data for p in model.parameters()])


def formats():
    """The half formats: range, precision, and what a gradient of 1e-8 becomes."""
    comm.print0(text("t11.formats"))
    for name, dtype in (("float16", np.float16), ("bf16", ml_dtypes.bfloat16),
                        ("e4m3", ml_dtypes.float8_e4m3fn), ("e5m2", ml_dtypes.float8_e5m2)):
        info = ml_dtypes.finfo(dtype)
        tiny = float(np.float32(np.array(1e-8, np.float32).astype(dtype)))
        comm.print0(f"{name:8} {float(info.max):10.4g} {float(info.smallest_normal):10.2e} "
                    f"{float(info.smallest_subnormal):10.2e} {float(info.eps):9.2e} {tiny:9.2e}")
    x = np.array([500.0, 3.0], np.float32)
    q, s = fp8.quantize(x, fp8.E4M3)                                # s = 2^floor(log2(448/500))
    comm.print0(text("t11.e4m3", unscaled=float(np.float32(ml_dtypes.float8_e4m3fn(500.0))),
                     scale=float(s), back=", ".join(f"{v:g}" for v in fp8.dequantize(q, s))))


def low_precision(world, steps):
    """bf16 and fp8 ZeRO-2 runs against one process and one float32 process."""
    _, ref32 = train_low(None, steps, dataclasses.replace(CONFIG, dtype="float32"))
    for name, config in (("bf16", dataclasses.replace(CONFIG, dtype="bfloat16")),
                         ("fp8", dataclasses.replace(CONFIG, dtype="bfloat16", fp8=True))):
        losses, weights = train_low(world, steps, config)
        serial_losses, serial = train_low(None, steps, config)     # one process, every rank
        mean = comm.all_reduce(np.array(losses), world, op="mean")
        diffs = [float(np.abs(mean - serial_losses).max()), float(np.abs(weights - serial).max()),
                 float(np.abs(weights - ref32).max())]
        loss, weight, vs32 = comm.all_reduce(np.array(diffs), world, op="max")
        comm.print0(text("t11.low", name=name, steps=steps, loss=loss, weight=weight,
                         vs32=vs32, ulp=2.0 ** -7))


def max_diff(records, serial, key):
    """max |ZeRO-2 - one process| of ``key`` over the steps (an overflow step's grad: no)."""
    return max(float(np.abs(r[key] - s[key]).max()) for r, s in zip(records, serial)
               if key != "grad" or np.isfinite(s[key]).all())


def main(steps):
    language()                  # an unknown MINIMEGATRON_LANG: one line, before any collective
    world = comm.world()
    records, _, _, mixed = train(world, steps)
    flags = np.array([float(r["skipped"]) for r in records])
    skipped = comm.all_gather(flags, world)                     # (ranks * steps,)
    comm.print0(text("t11.heading", n=world.size, rank=min(1, world.size - 1),
                     step=OVERFLOW_STEP, interval=GROWTH_INTERVAL))
    comm.print0(text("t11.columns"))
    for step, record in enumerate(records):
        ranks = [r for r in range(world.size) if skipped[r * steps + step]]
        comm.print0(f"{step:4d} {record['scale']:10.0f} {record['loss']:8.4f}  "
                    f"{ranks if ranks else '-'}"
                    + (text("t11.overflow") if ranks else ""))
    comm.print0(text("t11.skipped", count=mixed.skipped_steps, steps=steps))

    serial, model, opt, _ = train(None, steps)                  # one process, on every rank
    mean = comm.all_reduce(np.array([r["loss"] for r in records]), world, op="mean")
    diffs = {"loss": float(np.abs(mean - [s["loss"] for s in serial]).max()),
             "grad": max_diff(records, serial, "grad"),
             "weight": max_diff(records, serial, "weights")}
    same = [(r["skipped"], r["scale"]) for r in records] == [(s["skipped"], s["scale"])
                                                              for s in serial]
    same = comm.all_reduce(np.array([float(same)]), world, op="min")[0] == 1.0
    diffs = {k: comm.all_reduce(np.array([v]), world, op="max")[0] for k, v in diffs.items()}
    comm.print0(text("t11.compare", steps=steps, verdict=text("t11.yes" if same else "t11.no"),
                     loss=diffs["loss"], grad=diffs["grad"], weight=diffs["weight"],
                     two_lr=2 * LR))

    per_param = per_param_bytes(measure(model.parameters(), opt), model.num_parameters())
    comm.print0(text("t11.bytes", params=model.num_parameters(), total=sum(per_param.values()),
                     kinds=", ".join(f"{k} {v:g}" for k, v in per_param.items())))
    totals = [sharded_state_bytes(per_param, 7.5e9, 64, z)["total"] / 1e9 for z in range(4)]
    comm.print0(text("t11.zero", totals=", ".join(f"ZeRO-{z} {t:.1f}"
                                                  for z, t in enumerate(totals))))
    formats()                                     # part two: bf16 and fp8
    if backend_name() == "cupy":          # ml_dtypes' bf16 and fp8 are NumPy types
        comm.print0(text("t11.numpy_only"))
        return
    low_precision(world, steps)


if __name__ == "__main__":
    parser = ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=positive_int, default=8)
    run(main, "tutorials/11_mixed_precision.py", parser.parse_args().steps)
