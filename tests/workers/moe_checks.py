"""MoE / expert-parallel checks for tests/test_expert_parallel.py, many per launch."""
import dataclasses

import numpy as np

from minimegatron import comm
from minimegatron.checks import moe as checks
from minimegatron.parallel.expert_parallel import all_to_all_rows, all_to_allv_rows
from minimegatron.autodiff.tensor import Tensor
from minimegatron.data.demo import make_optimizer


def _adjoint(group):
    """<f(x), y> - <x, f^T(y)> summed over the ranks, for the two all-to-alls."""
    rng = np.random.default_rng(group.rank)
    x = rng.normal(size=(group.size * 3, 2))
    y = rng.normal(size=x.shape)
    t = Tensor(x, requires_grad=True)
    (all_to_all_rows(t, group) * Tensor(y)).sum().backward()
    gap = (all_to_all_rows(Tensor(x), group).data * y).sum() - (x * t.grad).sum()
    send = [(group.rank + j) % 3 for j in range(group.size)]
    recv = [(q + group.rank) % 3 for q in range(group.size)]
    xv = rng.normal(size=(sum(send), 2))
    yv = rng.normal(size=(sum(recv), 2))
    tv = Tensor(xv, requires_grad=True)
    out = all_to_allv_rows(tv, group, send, recv)
    (out * Tensor(yv)).sum().backward()
    gap_v = (out.data * yv).sum() - (xv * tv.grad).sum()
    total = comm.all_reduce(np.array([gap, gap_v]), group)          # the sums over ranks
    return float(abs(total).max())


def layer_checks():
    """The all-to-all adjoints and one layer's bytes and numbers for ep = 2, 4, 8."""
    world = comm.world()
    out = {}
    for ep in (2, 4, 8):
        group = world.split(color=world.rank // ep, name=f"ep{ep}")
        out[f"adjoint{ep}"] = _adjoint(group)
        for name, moe in (("padded", checks.MOE), ("dropless", checks.DROPLESS)):
            out[f"{name}{ep}"] = checks.check_dispatch_bytes(group, moe)
        out[f"padded{ep}f32"] = checks.check_dispatch_bytes(group, checks.MOE, dtype="float32")
    return out


def trainer_checks(rows):
    """check_moe for every (label, dims, options) row; {label: diffs}."""
    out = {}
    for label, dims, options in rows:
        options = dict(options)
        if "moe" in options:
            options["moe"] = dataclasses.replace(checks.MOE, **options["moe"])
        if "dtype" in options:
            options["config"] = dataclasses.replace(checks.MOE_CONFIG,
                                                    dtype=options.pop("dtype"))
        out[label] = checks.check_moe(tuple(dims), **options)
    return out


def _error(fn):
    try:
        fn()
    except ValueError as err:
        return str(err)
    return None


def bad_inputs():
    """Each bad configuration's message on this rank, and the comm spans it caused (0)."""
    from minimegatron.comm import trace
    from minimegatron.nn.moe import MoEConfig
    from minimegatron.parallel.expert_parallel.trainer import MoETrainer
    from minimegatron.parallel.grid import ProcessGrid
    config = checks.MOE_CONFIG
    grid = ProcessGrid(dp=8, ep=4)
    cp_grid = ProcessGrid(dp=4, cp=2, ep=2)
    comm.barrier(comm.world())
    trace.reset()
    out = {
        "ep_grid": _error(lambda: ProcessGrid(dp=4, tp=2, ep=8)),
        "ep_zero": _error(lambda: ProcessGrid(dp=8, ep=0)),
        "experts": _error(lambda: MoETrainer(config, MoEConfig(num_experts=6), grid,
                                             optimizer_fn=make_optimizer)),
        "top_k": _error(lambda: MoETrainer(config, MoEConfig(num_experts=4, top_k=5), grid,
                                           optimizer_fn=make_optimizer)),
        "capacity": _error(lambda: MoETrainer(config, MoEConfig(capacity_factor=0), grid,
                                              optimizer_fn=make_optimizer)),
        "cp_capacity": _error(lambda: MoETrainer(config, checks.MOE, cp_grid,
                                                 optimizer_fn=make_optimizer)),
    }
    out["spans"] = len([s for s in trace.spans() if s["kind"] == "comm"])
    comm.barrier(comm.world())                         # every rank is still here
    return out


def mutants():
    """Wrong implementations the checks must catch: {name: max |diff|} (large)."""
    from minimegatron.parallel.expert_parallel import dispatch, grads, layer
    world = comm.world()
    group = world.split(color=world.rank // 4, name="ep4")
    out = {}

    def no_regroup(rows, group, local):                 # expert-major assumed, not made
        return dispatch.all_to_all_rows(rows, group)
    real = layer.dispatch_padded
    layer.dispatch_padded = no_regroup
    try:
        out["dispatch_layout"] = checks.check_dispatch_bytes(group, checks.MOE)["out"]
    finally:
        layer.dispatch_padded = real
    real_order = dispatch.source_to_expert
    dispatch.source_to_expert = lambda recv: real_order(recv)[::-1].copy()
    try:
        out["dropless_order"] = checks.check_dispatch_bytes(group, checks.DROPLESS)["out"]
    finally:
        dispatch.source_to_expert = real_order
    real_sum = grads._sum
    grads._sum = lambda value, g: (value if getattr(g, "name", "").startswith("ep")
                                   else real_sum(value, g))
    try:
        out["norm_without_ep"] = checks.check_moe((8, 1, 1, 1, 4), clip=0.05)["norm"]
    finally:
        grads._sum = real_sum
    return out


def memory_checks(rows):
    """measured_vs_calculator for every (label, dims, micro_batches) row."""
    return {label: checks.measured_vs_calculator(tuple(dims), micro_batches=m)
            for label, dims, m in rows}


def verify_wrong_group():
    """verify's moe-ep rows with expert gradients reduced over dp x cp (the wrong group),
    then as written: {"wrong": [status per row], "right": [...]}."""
    from minimegatron.checks import verify
    from minimegatron.parallel.expert_parallel import trainer
    real = trainer.reduce_gradients
    trainer.reduce_gradients = lambda named, grid, group=None: real(named, grid, grid.dp_cp)
    try:
        wrong = verify.run_rows(["moe-ep"], steps=2)
    finally:
        trainer.reduce_gradients = real
    right = verify.run_rows(["moe-ep"], steps=2)
    return {"wrong": [(r["grid"], r["status"], r["grad"]) for r in wrong],
            "right": [(r["grid"], r["status"], r["grad"]) for r in right]}


def first_launch():
    """layer_checks, bad_inputs and mutants in one launch."""
    return dict(layer_checks(), bad=bad_inputs(), mutants=mutants())
