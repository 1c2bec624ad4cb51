"""FSDP2 (per-parameter sharding) and HSDP next to one process, for tests/test_fsdp2.py."""
import dataclasses

import numpy as np

from minimegatron import comm
from minimegatron.comm import trace
from minimegatron.data.demo import SMALL_CONFIG, batch, make_optimizer
from minimegatron.nn import GPT
from minimegatron.parallel.data_parallel.fsdp2 import (ShardedUnit, full_state, fully_shard,
                                                       hsdp_groups, load_full_state,
                                                       shard_rows)
from minimegatron.parallel.split import shard_batch
from minimegatron.tools.memory_fsdp import fsdp2_bytes, units_of

CONFIG = dataclasses.replace(SMALL_CONFIG, vocab_size=13)    # 13 rows: padding on N > 1
BATCH = 8


def _setup(model, frozen, float32):
    if frozen:
        model.wpe.weight.requires_grad = False                 # a frozen weight
    if float32:
        for name, p in model.named_parameters():               # LayerNorms in float32
            if ".ln" in name or name.startswith("ln_f"):
                p.data = p.data.astype(np.float32)
    return model


def one_case(shard, replicate=1, steps=3, frozen=False, float32=False, prefetch=True,
             keep_gathered=False):
    """Train a GPT with FSDP2 (HSDP: replicate x shard) next to one process: max |diff| of
    the loss, the shard gradients and the shard weights per step, the bytes each rank sent
    (trace) and the calculator's, the peak gathered and model state against it, and whether
    every weight was freed after each backward."""
    world = comm.world()
    dp = world.split(color=world.rank // (shard * replicate), name="dp")
    shard_group, rep = hsdp_groups(dp, shard) if replicate > 1 else (dp, None)
    serial = _setup(GPT(CONFIG), frozen, float32)
    model = _setup(GPT(CONFIG), frozen, float32)
    units = units_of(model)
    state = fully_shard(model, shard_group, rep, prefetch=prefetch)
    if keep_gathered:                                          # the mutant: never resharded
        for _, u in model.named_modules():
            if isinstance(u, ShardedUnit):
                u.free = lambda: None
    opt = make_optimizer([p for p in model.parameters() if p.requires_grad])  # not the frozen
    serial_opt = make_optimizer([p for p in serial.parameters() if p.requires_grad])
    full = dict(serial.named_parameters())
    out = {"loss": 0.0, "grad": 0.0, "weight": 0.0, "freed": True, "sent": 0,
           "grad32": 0.0, "weight32": 0.0}        # float32 weights: their own measure
    for step in range(steps):
        x, y = batch(CONFIG, BATCH, step)
        opt.zero_grad()
        serial_opt.zero_grad()
        comm.barrier(world)
        trace.reset()
        loss = model.loss(shard_batch(x, dp), shard_batch(y, dp))          # (B/dp, T)
        loss.backward()
        sent = sum(s["bytes_sent"] for s in trace.spans()
                   if s["kind"] == "comm" and (s["label"] or "").startswith("fsdp."))
        out["sent"] = max(out["sent"], sent)
        out["freed"] = out["freed"] and state.gathered.now == 0 and all(
            u.full[k].data.size == 0 for _, u in model.named_modules()
            if isinstance(u, ShardedUnit) for k in u.keys)
        mean = comm.all_reduce(np.array([loss.item()]), dp, op="mean")[0]
        want = serial.loss(x, y)
        want.backward()
        out["loss"] = max(out["loss"], abs(mean - want.item()))
        for name, p in model.named_parameters():
            if p.requires_grad:
                expect = shard_rows(full[name].grad, shard_group.rank, shard_group.size)
                key = "grad32" if p.dtype == np.float32 else "grad"
                out[key] = max(out[key], float(np.abs(p.grad - expect).max()))
            else:
                out["frozen_grad"] = p.grad is None and full[name].grad is None
        for q in serial.parameters():                 # the same rule: dW in W's dtype
            if q.grad is not None:
                q.grad = q.grad.astype(q.dtype, copy=False)
        opt.step()
        serial_opt.step()
        for name, p in model.named_parameters():
            expect = shard_rows(full[name].data, shard_group.rank, shard_group.size)
            key = "weight32" if p.dtype == np.float32 else "weight"
            out[key] = max(out[key], float(np.abs(p.data - expect).max()))
            out["dtypes_kept"] = out.get("dtypes_kept", True) and p.dtype == full[name].dtype
    predicted = fsdp2_bytes(units, shard_group.size, replicate, prefetch, leaves=(0, 1))
    grads = [p.grad for p in model.parameters() if p.grad is not None]
    out["measured"] = {"weights": sum(p.data.nbytes for p in model.parameters()),
                       "grads": sum(g.nbytes for g in grads),
                       "optimizer": sum(a.nbytes for s in opt.state for a in s.values()),
                       "gathered_peak": state.gathered.peak}
    out["predicted"] = predicted
    return out


def cases(rows):
    """one_case for every (label, kwargs) row; {label: result}."""
    return {label: one_case(**kwargs) for label, kwargs in rows}


def reshard(steps=2):
    """Train 2 steps on N = 4, gather the full weights and AdamW's m and v, load them on N = 2
    and N = 8, train 2 more steps: max |diff| from one process that never stopped."""
    world = comm.world()
    serial = GPT(CONFIG)
    serial_opt = make_optimizer(serial.parameters())
    for step in range(2 * steps):
        x, y = batch(CONFIG, BATCH, step)
        serial_opt.zero_grad()
        serial.loss(x, y).backward()
        serial_opt.step()
    full_serial = dict(serial.named_parameters())

    def train(group, model, opt, start):
        for step in range(start, start + steps):
            x, y = batch(CONFIG, BATCH, step)
            opt.zero_grad()
            model.loss(shard_batch(x, group), shard_batch(y, group)).backward()
            opt.step()
    first_group = world.split(color=world.rank // 4, name="dp4")
    first = GPT(CONFIG)
    fully_shard(first, first_group)
    opt = make_optimizer(first.parameters())
    train(first_group, first, opt, 0)
    weights = full_state(first, first_group)
    moments = _full_moments(first, opt, first_group)
    out = {}
    for size in (2, 8, 1):
        group = world.split(color=world.rank // size, name=f"dp{size}")
        model = GPT(CONFIG)
        fully_shard(model, group)
        load_full_state(model, weights)
        again = make_optimizer(model.parameters())
        _load_moments(model, again, moments, group, opt.step_count)
        train(group, model, again, steps)
        final = full_state(model, group)
        out[size] = max(float(np.abs(final[n] - full_serial[n].data).max()) for n in final)
    return out


def _full_moments(model, opt, group):
    """{name: {"m": whole, "v": whole}}: AdamW's state of every shard, gathered on dim 0."""
    out = {}
    for (name, p), state in zip(model.named_parameters(), opt.state):
        rows = _unit_rows(model, name)
        out[name] = {k: comm.all_gather(a, group)[:rows] for k, a in state.items()}
    return out


def _load_moments(model, opt, moments, group, step_count):
    opt.step_count = step_count
    for (name, p), state in zip(model.named_parameters(), opt.state):
        for k, whole in moments[name].items():
            state[k] = shard_rows(whole, group.rank, group.size)


def _unit_rows(model, name):
    unit_name, key = name.rsplit(".", 1)
    return dict(model.named_modules())[unit_name].rows[key]


def verify_rows():
    """checks/fsdp.check_fsdp2 as verify runs it: FSDP2 over the world, HSDP 2 x 4, and the
    float16 mixed-precision path."""
    from minimegatron.checks.fsdp import check_fsdp2
    world = comm.world()
    half = dataclasses.replace(SMALL_CONFIG, dtype="float16")
    return {"fsdp2": check_fsdp2(world), "hsdp": check_fsdp2(world, 2),
            "float16": check_fsdp2(world, 2, config=half)}
