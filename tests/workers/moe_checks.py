"""MoE / expert-parallel checks for tests/test_expert_parallel.py, many per launch."""
import dataclasses

import numpy as np

from minimegatron import comm
from minimegatron.checks import moe as checks
from minimegatron.parallel.expert_parallel import all_to_all_rows, all_to_allv_rows
from minimegatron.tensor import Tensor


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
        out[label] = checks.check_moe(tuple(dims), **options)
    return out
