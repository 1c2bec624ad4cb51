"""Data parallel schemes next to one process: DataParallel, DDP, ZeRO 1/2/3.

Each ``check_*`` runs on every rank of ``group``, trains the scheme for a few
AdamW steps on the batch of ``demo.batch`` (each rank on its B/N
rows) and compares with ``serial_reference`` (the whole batch, one process)
after every step: the loss, the gradients after backward, the weights after
the update. Returned for this rank: ``{"loss", "grad", "weight"}`` max abs
differences (None where this rank holds no such value, e.g. the non-root
ranks of DataParallel), plus what the trace and the arrays measured:
``sent`` / ``recv`` (bytes per step, the check's own collectives excluded)
and ``memory`` (tools/memory_measure.measure at the second step).

Tolerance in float64: 1e-10 absolute (``TOL``); observed ~1e-15. A float16 config
trains in mixed precision (checks/precision.py: float32 masters, loss scale, found-inf
over ``group``; gradients compared unscaled).
"""
import contextlib

from minimegatron import comm
from minimegatron.autodiff import functional as F
from minimegatron.comm import trace
from minimegatron.backend import xp
from minimegatron.checks.common import max_abs_diff, serial_reference
from minimegatron.checks.precision import backward, check_optimizer, loss_scale, unscaled
from minimegatron.data.demo import SMALL_CONFIG, batch
from minimegatron.autodiff.cast import float32_if_half
from minimegatron.nn import GPT
from minimegatron.parallel.data_parallel.ddp import DistributedDataParallel
from minimegatron.parallel.data_parallel.master import DataParallel
from minimegatron.parallel.data_parallel.zero3 import zero_optimizer
from minimegatron.parallel.split import flatten, shard_batch
from minimegatron.tools.memory_measure import measure

TOL = 1e-10
STEPS, BATCH = 5, 8


def _max(a, b):
    return b if a is None else max(a, b)


def _diff_named(model, arrays, expected):
    """max |param value - reference| over named arrays ({name: array})."""
    return max(max_abs_diff(arrays(p), expected[n]) for n, p in model.named_parameters())


def global_loss(local, group):
    with trace.label("check"):
        return float(comm.all_reduce(xp.asarray([local]), group, op="mean")[0])


def traffic(steps):
    """Bytes sent / received per step, from the trace (spans labelled "check" excluded)."""
    spans = [s for s in trace.spans()
             if s["kind"] == "comm" and not (s["label"] or "").startswith("check")]
    return (sum(s["bytes_sent"] for s in spans) / steps,
            sum(s["bytes_recv"] for s in spans) / steps)


def check_data_parallel(group, config=SMALL_CONFIG, steps=STEPS, batch_size=BATCH, root=0):
    """Master-style DataParallel; the root compares loss, grads and weights every step,
    every rank compares its weights after a final broadcast ("final_weight")."""
    ref = serial_reference(config, steps, batch_size)
    model = GPT(config)
    dp = DataParallel(model, group, root)
    is_root = group.rank == root
    opt = check_optimizer(model.parameters(), config, None) if is_root else None  # root alone
    out = {"loss": None, "grad": None, "weight": None}
    trace.reset()
    for step in range(steps):
        x, y = batch(config, batch_size, step)
        scale = loss_scale(opt)                      # S x loss: the root seeds the backward

        def scaled_loss(logits, targets):
            return F.cross_entropy(float32_if_half(logits), targets) * scale
        loss = dp.step(x if is_root else None, y if is_root else None, scaled_loss, opt)
        if is_root:
            out["loss"] = _max(out["loss"], abs(loss / scale - ref["loss"][step]))
            out["grad"] = _max(out["grad"], _diff_named(model, lambda p: p.grad / scale,
                                                        ref["grads"][step]))
            out["weight"] = _max(out["weight"], _diff_named(model, lambda p: p.data,
                                                            ref["weights"][step]))
    out["sent"], out["recv"] = traffic(steps)
    out["memory"] = measure(model.parameters(), opt)
    with trace.label("check"):
        dp.broadcast_weights()
    out["final_weight"] = _diff_named(model, lambda p: p.data, ref["weights"][-1])
    return out


def check_ddp(group, config=SMALL_CONFIG, steps=STEPS, batch_size=BATCH,
              bucket_bytes=2 ** 20, overlap=True, accumulate=1, reduce_dtype=None):
    """DDP; ``accumulate`` > 1 splits each rank's rows into micro-batches, all but the
    last backward inside ``no_sync()``. Also returns ``buckets`` and ``overlap_lead``:
    min over steps of (end of the synced backward - start of the first bucket's
    all-reduce), > 0 when communication started during backward."""
    ref = serial_reference(config, steps, batch_size)
    model = GPT(config)
    ddp = DistributedDataParallel(model, group, bucket_bytes=bucket_bytes, overlap=overlap,
                                  reduce_dtype=reduce_dtype)
    opt = check_optimizer(model.parameters(), config, group)
    out = {"loss": 0.0, "grad": 0.0, "weight": 0.0, "buckets": len(ddp.buckets)}
    trace.reset()
    leads = []
    for step in range(steps):
        x, y = batch(config, batch_size, step)
        x, y = shard_batch(x, group), shard_batch(y, group)              # (B/N, T)
        opt.zero_grad()
        if x.shape[0] % accumulate:
            raise ValueError(f"{x.shape[0]} rows per rank do not split into {accumulate} "
                             "micro-batches")
        rows, local = x.shape[0] // accumulate, 0.0
        for i in range(accumulate):
            sync = i == accumulate - 1
            with contextlib.nullcontext() if sync else ddp.no_sync():
                first = len(trace.spans())
                with trace.span("forward"):
                    logits = float32_if_half(ddp(x[i * rows:(i + 1) * rows]))
                    loss = F.cross_entropy(logits, y[i * rows:(i + 1) * rows]) * (
                        1.0 / accumulate)
                with trace.span("backward"):
                    backward(loss, opt)
            local += loss.item()
        ddp.finish()
        spans = trace.spans()[first:]
        backward_end = [s["end"] for s in spans if s["op"] == "backward"][-1]
        starts = [s["start"] for s in spans if (s["label"] or "").startswith("ddp.bucket")]
        leads.append(backward_end - min(starts))
        out["loss"] = max(out["loss"], abs(global_loss(local, group) - ref["loss"][step]))
        out["grad"] = max(out["grad"], _diff_named(model, lambda p: unscaled(p.grad, opt),
                                                   ref["grads"][step]))
        if step == 1:
            out["memory"] = measure(model.parameters(), opt, ddp.buffers())
        opt.step()
        out["weight"] = max(out["weight"], _diff_named(model, lambda p: p.data,
                                                       ref["weights"][step]))
    out["sent"], out["recv"] = traffic(steps)
    out["overlap_lead"] = min(leads)
    return out


def _reference_slice(flat, named_ref, names):
    """This rank's slice of the reference, flattened and padded like ``flat``."""
    full = flat.pad(flatten([named_ref[names[id(p)]] for p in flat.params], flat.dtype))
    return flat.own(full)


def check_zero(group, stage, config=SMALL_CONFIG, steps=STEPS, batch_size=BATCH):
    """ZeRO stage 1/2/3: each rank compares the slices it owns (gradient after backward,
    weights after the step); stages 1-2 also the full weights (and stage 1 the full
    averaged gradient); stage 3 the weights gathered at the end ("final_weight")."""
    ref = serial_reference(config, steps, batch_size)
    model = GPT(config)
    names = {id(p): n for n, p in model.named_parameters()}
    params = model.parameters()
    rule = check_optimizer(params, config, group)
    zero = zero_optimizer(model, group, stage, rule)                 # 3: the shards
    out = {"loss": 0.0, "grad": 0.0, "weight": 0.0, "groups": len(zero.local_shards())}
    trace.reset()
    for step in range(steps):
        x, y = batch(config, batch_size, step)
        x, y = shard_batch(x, group), shard_batch(y, group)              # (B/N, T)
        zero.zero_grad()
        with trace.span("forward"):
            loss = model.loss(x, y)
        with trace.span("backward"):
            backward(loss, rule)
        zero.reduce_gradients()
        out["loss"] = max(out["loss"], abs(global_loss(loss.item(), group)
                                           - ref["loss"][step]))
        for flat, _, grad in zero.local_shards():
            want = _reference_slice(flat, ref["grads"][step], names)
            out["grad"] = max(out["grad"], max_abs_diff(unscaled(grad, rule), want))
        if stage == 1:
            out["grad"] = max(out["grad"], _diff_named(model, lambda p: unscaled(p.grad, rule),
                                                       ref["grads"][step]))
        if step == 1:
            out["memory"] = measure(params, zero)
        zero.step()
        for flat, weights, _ in zero.local_shards():
            want = _reference_slice(flat, ref["weights"][step], names)
            out["weight"] = max(out["weight"], max_abs_diff(weights, want))
        if stage != 3:
            out["weight"] = max(out["weight"], _diff_named(model, lambda p: p.data,
                                                           ref["weights"][step]))
    out["sent"], out["recv"] = traffic(steps)
    with trace.label("check"):
        full = zero.full_weights()
    out["final_weight"] = max(max_abs_diff(full[id(p)], ref["weights"][-1][names[id(p)]])
                              for p in params)
    return out
