"""Mixture of experts with expert parallelism, next to one process.

``moe_reference(config, moe, steps, batch_size, clip)``: MoEGPT trained by one
process with AdamW (optionally clipping by the global gradient norm): the loss
(cross entropy + aux), every gradient, every weight after each step, the norm.

``check_moe((dp, pp, tp, cp, ep), moe, ...)``: a ProcessGrid with ep folded over
dp x cp and an MoETrainer on the same global batches; returns this rank's max
|difference| of the loss, of every gradient it holds (a tp shard of a dense
weight, ``shard_of``; rows e*E/ep.. of an expert weight) and of every weight
after each step, and of the gradient norm when clipping. ``expert_group="dp_cp"``
reduces expert gradients over the wrong group (the tests expect a FAIL), as
``load_group="dp"`` sums the loads of aux-loss-free balancing over too few ranks
when cp > 1; "bias" is the max |difference| of the routers' expert biases.

``check_dispatch_bytes(group, moe, ...)``: one ExpertParallelMoE layer on random
tokens, forward and backward; the bytes of each all-to-all from the trace next
to the formulas (dispatch.padded_bytes, dispatch.dropless_bytes), and the
layer's output and input gradient against the serial MoE on the same tokens.

``moe_sensitivity``: one MoE process against itself nudged by one ulp (verify's
tolerance of the MoE rows, whose float16 gradients are larger than the dense GPT's).

MOE_CONFIG: the 2-layer SMALL_CONFIG GPT; MOE: E = 8 experts, top-2, capacity
factor 1.0 (C = ceil(2*8/8) = 2 per sequence of 8 tokens: tokens are dropped).
BALANCED: dropless, aux-loss-free balancing (gamma 0.05, large enough to change the
choices within two steps) in place of the aux loss.
float64 agrees to ~1e-15; verify's tolerance applies.
"""
import dataclasses
import functools
from types import SimpleNamespace

import numpy as np

from minimegatron import comm
from minimegatron.comm import trace
from minimegatron.backend import asarray, xp
from minimegatron.checks.common import drift_between, max_abs_diff
from minimegatron.checks.precision import backward, check_optimizer, loss_scale, unscaled
from minimegatron.data.demo import SMALL_CONFIG, batch, make_optimizer
from minimegatron.nn.moe import MoE, MoEConfig, MoEGPT, balance_experts, init_by_name, moe_layers
from minimegatron.parallel.expert_parallel.dispatch import dropless_bytes, padded_bytes
from minimegatron.parallel.expert_parallel.gpt import is_expert
from minimegatron.parallel.expert_parallel.grads import clip_grad_norm
from minimegatron.parallel.expert_parallel.layer import ExpertParallelMoE
from minimegatron.parallel.expert_parallel.trainer import MoETrainer
from minimegatron.parallel.grid import ProcessGrid
from minimegatron.parallel.split import flatten, rows_of
from minimegatron.parallel.tensor_parallel import shard_of
from minimegatron.autodiff.tensor import Tensor

MOE_CONFIG = SMALL_CONFIG
MOE = MoEConfig(num_experts=8, top_k=2, capacity_factor=1.0)
DROPLESS = dataclasses.replace(MOE, capacity_factor=None)
BALANCED = dataclasses.replace(DROPLESS, bias_update_rate=0.05, aux_loss_coeff=0.0)


class _SerialGrid:
    """The groups grad_norm asks for, each of one rank (no message)."""
    tp_rank = 0
    ep = tp = pp = SimpleNamespace(size=1)


@functools.lru_cache(maxsize=None)
def moe_reference(config, moe, steps=2, batch_size=8, clip=None, nudge=False):
    """{"loss", "grads", "weights", "norm", "dropped"}: one process, one entry per step.
    ``nudge``: every initial weight one unit in the last place up (``moe_sensitivity``)."""
    model = MoEGPT(config, moe)
    if nudge:
        for p in model.parameters():
            p.data[...] = xp.nextafter(p.data, xp.inf)
    opt = check_optimizer(model.parameters(), config, None)
    record = {"loss": [], "grads": [], "weights": [], "norm": [], "dropped": 0, "bias": []}
    for step in range(steps):
        x, y = batch(config, batch_size, step)
        opt.zero_grad()
        for layer in moe_layers(model):               # float16: the aux losses start from S
            layer.aux_grad_scale = loss_scale(opt)
        loss = model.loss(x, y)
        backward(loss, opt)                           # from S x loss (S = 1 unless float16)
        record["dropped"] += sum(layer.last_plan.dropped for layer in moe_layers(model))
        balance_experts(model)                        # aux-loss-free: the bias for the next
        record["bias"].append(_biases(model))
        record["loss"].append(loss.item())
        record["grads"].append({n: unscaled(p.grad, opt).copy()
                                for n, p in model.named_parameters()})
        if clip is not None:
            record["norm"].append(clip_grad_norm(model.named_parameters(), _SerialGrid(), clip))
        opt.step()
        record["weights"].append(model.state_dict())
    return record


def _biases(model):
    """{its router weight's full-model name: the layer's expert bias (copy)} of every MoE
    layer with a bias (a pipeline stage names its weights as the whole model does)."""
    names = {id(p): name for name, p in model.named_parameters()}
    return {names[id(m.router.weight)]: m.expert_bias.copy() for m in moe_layers(model)
            if m.expert_bias is not None}


def moe_sensitivity(config, moe, steps=2, batch_size=8):
    """How far one MoE process drifts from itself after a one-ulp nudge of every weight
    (common.serial_sensitivity's measure, for verify's tolerance of the MoE rows)."""
    return drift_between(moe_reference(config, moe, steps, batch_size),
                         moe_reference(config, moe, steps, batch_size, nudge=True))


def expected(name, full, grid):
    """This rank's part of one process's array: its experts' rows, or its tp shard."""
    if is_expert(name):
        return rows_of(full, grid.ep.rank, grid.ep.size)
    return shard_of(name, full, grid.tp_rank, grid.tp_size)


def check_moe(dims, moe=MOE, steps=2, micro_batches=1, batch_size=8, config=MOE_CONFIG,
              mpi_comm=None, expert_group="edp", clip=None, schedule="1f1b", zero_stage=0,
              checkpoint_activations=False, chunks=1, sequence_parallel=False,
              load_group="dp_cp"):
    """{"loss", "grad", "weight", "norm", "dropped"}: max |this rank - one process|.

    ZeRO-2 keeps only slices of the two flat gradients (dense, experts): each is
    compared with the same slice of the flattened one-process gradients this rank's
    part holds. float16: the gradients unscaled (grad / S), SGD (checks/precision.py).
    """
    dp, pp, tp, cp, ep = dims
    grid = ProcessGrid(dp, pp, tp, comm=mpi_comm, cp=cp, ep=ep)
    trainer = MoETrainer(config, moe, grid, schedule=schedule, micro_batches=micro_batches,
                         optimizer_fn=lambda ps: check_optimizer(ps, config, grid.world),
                         clip_grad=clip, expert_group=getattr(grid, expert_group),
                         zero_stage=zero_stage, checkpoint_activations=checkpoint_activations,
                         chunks=chunks, sequence_parallel=sequence_parallel,
                         load_group=getattr(grid, load_group))
    ref = moe_reference(config, moe, steps, batch_size, clip)
    out = {"loss": 0.0, "grad": 0.0, "weight": 0.0, "norm": 0.0, "dropped": ref["dropped"],
           "bias": 0.0}
    names = {id(p): name for name, p in trainer.named_parameters()}
    for step in range(steps):
        loss = trainer.forward_backward(*batch(config, batch_size, step))
        out["loss"] = max(out["loss"], abs(loss - ref["loss"][step]))
        if zero_stage == 2:
            for part in trainer.optimizer.parts:
                flat = part.flat
                serial = flatten([expected(names[id(p)], ref["grads"][step][names[id(p)]], grid)
                                  for p in flat.params], flat.dtype)
                got = unscaled(part.grad_shard, trainer.rule)
                out["grad"] = max(out["grad"], max_abs_diff(got, flat.own(flat.pad(serial))))
        for name, p in trainer.named_parameters():
            if zero_stage == 2:
                break
            want = expected(name, ref["grads"][step][name], grid)
            if clip is not None:                       # the reference's grads before clipping
                want = want * min(1.0, clip / (ref["norm"][step] + 1e-6))
            out["grad"] = max(out["grad"], max_abs_diff(unscaled(p.grad, trainer.rule), want))
        if clip is not None:
            out["norm"] = max(out["norm"], abs(trainer.grad_norm - ref["norm"][step]))
        for name, bias in _biases(trainer.stage).items():       # this stage's routers
            out["bias"] = max(out["bias"], max_abs_diff(bias, ref["bias"][step][name]))
        trainer.step()
        for name, p in trainer.named_parameters():
            want = expected(name, ref["weights"][step][name], grid)
            out["weight"] = max(out["weight"], max_abs_diff(p.data, want))
    return out


def check_dispatch_bytes(group, moe=MOE, sequences=2, steps=8, width=16, dtype="float64",
                         seed=7):
    """One layer on ``group`` (ep ranks) next to the serial MoE: {"out", "dx": max |diff|,
    "sent": {label: bytes}, "formula": {label: bytes}, "counts": this rank's (E,)}."""
    ep, rank = group.size, group.rank
    rng = np.random.default_rng(seed)
    full = asarray(rng.normal(size=(ep * sequences, steps, width)).astype(dtype))
    grad = asarray(rng.normal(size=full.shape).astype(dtype))
    config = dataclasses.replace(MOE_CONFIG, d_model=width, dtype=dtype)
    serial = MoE(width, moe, dtype)
    init_by_name(serial, "blocks.0.mlp", config)
    xs = Tensor(full, requires_grad=True)
    y_serial = serial(xs)
    (y_serial * Tensor(grad)).sum().backward()
    layer = ExpertParallelMoE(width, moe, group, dtype)
    layer.load_full("blocks.0.mlp", config)
    layer.aux_grad_scale = 1.0 / ep        # one process's aux loss is the mean over the ranks
    mine = slice(rank * sequences, (rank + 1) * sequences)               # my b sequences
    x = Tensor(full[mine].copy(), requires_grad=True)
    comm.barrier(group)
    trace.reset()
    y = layer(x)
    (y * Tensor(grad[mine])).sum().backward()
    out = {"out": max_abs_diff(y.data, y_serial.data[mine]),
           "dx": max_abs_diff(x.grad, xs.grad[mine]), "sent": {}, "formula": {}}
    for s in trace.spans():
        if s["kind"] == "comm" and (s["label"] or "").startswith("ep."):
            out["sent"][s["label"]] = out["sent"].get(s["label"], 0) + s["bytes_sent"]
    itemsize = np.dtype(dtype).itemsize
    plan = layer.last_plan
    if plan.capacity is not None:
        each = padded_bytes(ep, moe.num_experts, plan.capacity, width, sequences, itemsize)
    else:
        each = dropless_bytes(plan.counts, rank, ep, width, itemsize)
        out["formula"]["ep.counts"] = (ep - 1) * (moe.num_experts // ep) * 8
    for label in ("ep.dispatch", "ep.combine", "ep.dispatch.backward", "ep.combine.backward"):
        out["formula"][label] = each if plan.capacity is not None or label in (
            "ep.dispatch", "ep.combine.backward") else None
    if plan.capacity is None:            # combine sends back what dispatch received
        received = _received_rows(group, plan.counts)
        for label in ("ep.combine", "ep.dispatch.backward"):
            out["formula"][label] = received * width * itemsize
    out["counts"] = [int(c) for c in plan.counts]
    out["dropped"] = plan.dropped
    return out


def _received_rows(group, counts):
    """Rows this rank received for its experts from the OTHER ranks (from every rank's counts,
    gathered as plain metadata)."""
    every = comm.allgather_object([int(c) for c in counts], group)
    local = len(counts) // group.size
    mine = slice(group.rank * local, (group.rank + 1) * local)
    return sum(sum(c[mine]) for q, c in enumerate(every) if q != group.rank)


def check_moe_fits(config, moe, dims):
    """ValueError (no message sent) unless the grid (dp, pp, tp, M, cp, ep) can train it."""
    from minimegatron.parallel.context_parallel import check_config as check_cp_config
    from minimegatron.parallel.expert_parallel.groups import check_expert_parallel
    from minimegatron.parallel.pipeline_parallel import stage_layers
    from minimegatron.parallel.tensor_parallel import check_tp_config
    dp, pp, tp, _, cp, ep = dims
    check_tp_config(config, tp)
    stage_layers(config.n_layer, pp, 0)
    check_expert_parallel(ep, dp, cp, moe.num_experts)
    if cp > 1:
        check_cp_config(config, cp, "ring", "zigzag", tp)
        if not moe.dropless:
            raise ValueError("MoE with cp > 1 needs dropless routing")


def measured_vs_calculator(dims, moe=MOE, config=MOE_CONFIG, micro_batches=1, batch_size=8):
    """{"measured", "predicted"}: this rank's expert and dense parameters and the bytes of one
    dispatch buffer (the ``ep.dispatch`` all-to-all's payload, from the trace) against
    tools/memory_moe.py."""
    from minimegatron.tools.memory_moe import dispatch_buffer_bytes, moe_rank_params
    dp, pp, tp, cp, ep = dims
    grid = ProcessGrid(dp, pp, tp, cp=cp, ep=ep)
    trainer = MoETrainer(config, moe, grid, micro_batches=micro_batches,
                         optimizer_fn=make_optimizer)
    named = list(trainer.named_parameters())
    comm.barrier(grid.world)
    trace.reset()
    trainer.forward_backward(*batch(config, batch_size, 0))
    buffers = {s["nbytes"] for s in trace.spans() if s["label"] == "ep.dispatch"}
    sequences = batch_size // (dp * micro_batches)
    predicted = moe_rank_params(config, moe.num_experts, moe.every, ep, pp, tp, grid.pp_rank)
    predicted["dispatch_buffer"] = dispatch_buffer_bytes(
        config, moe.num_experts, moe.top_k, moe.capacity_factor, sequences, config.dtype)
    return {"measured": {"experts": sum(p.size for n, p in named if is_expert(n)),
                         "dense": sum(p.size for n, p in named if not is_expert(n)),
                         "dispatch_buffer": sorted(buffers)},
            "predicted": predicted}
