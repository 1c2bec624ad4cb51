"""Checks for exercises 4.x and 5.x: DDP and ZeRO on the dp groups of a 2 x 2 grid.

The grader runs these on 4 ranks, on the dp groups [0, 2] and [1, 3]. The two
groups train DIFFERENT problems (the seed is the group's first world rank), so
an average over the world instead of the group mixes them and fails.

A small case first (one Linear, each rank a different input, so the averaged
gradient is known by hand), then the package's own equivalence checks
(``checks.data.check_ddp`` / ``check_zero``): a GPT trained for 1, then 2 AdamW steps
with the batch split over the ranks must match ``serial_reference`` on the
whole batch: loss, gradients and weights within 1e-10 (float64).
"""
import dataclasses

import numpy as np

from minimegatron import nn
from minimegatron.backend import asarray
from minimegatron.checks.data import TOL, check_ddp, check_zero
from minimegatron.demo import SMALL_CONFIG
from minimegatron.exercise_checks.common import CheckFailed, expect_close
from minimegatron.i18n import text
from minimegatron.parallel.data_parallel.ddp import DistributedDataParallel
from minimegatron.tensor import Tensor

STEPS = (1, 2)      # 1 step first: a wrong update then shows as a weight, not a later grad


def _config(group):
    """SMALL_CONFIG with a seed of this group's own: each dp group trains its own problem."""
    return dataclasses.replace(SMALL_CONFIG, seed=min(group.ranks))


def _expect_serial(scheme, diffs, rank, advice, steps):
    for key in ("grad", "weight", "loss"):      # the first wrong one explains the others
        value = diffs[key]
        if value is not None and not value < TOL:
            raise CheckFailed(text("dp.differs", rank=rank, scheme=scheme, steps=steps,
                                   what=text(f"dp.{key}"), value=value, tol=TOL,
                                   advice=advice.get(key, "")).rstrip())


def check_ddp_all_reduce(group):
    r, n, base = group.rank, group.size, 10 * min(group.ranks)
    layer = nn.Linear(2, 2, seed=0)
    ddp = DistributedDataParallel(layer, group)
    x = Tensor(asarray(np.full((1, 2), float(base + r + 1))))     # rank r's input
    ddp(x).sum().backward()
    ddp.finish()
    mean = sum(base + q + 1 for q in range(n)) / n
    expect_close(text("dp.ddp_mean", ranks=group.ranks, base=base, mean=mean),
                 layer.weight.grad, np.full((2, 2), mean), rank=r)
    for steps in STEPS:
        diffs = check_ddp(group, config=_config(group), steps=steps)
        _expect_serial("DDP", diffs, r, {"grad": text("dp.ddp_advice")}, steps)
    return text("dp.ddp_pass", diff=max(diffs["grad"], 0))


def check_zero_reduce_scatter(group):
    for steps in STEPS:
        diffs = check_zero(group, 2, config=_config(group), steps=steps)
        _expect_serial(text("dp.zero_stage", stage=2), diffs, group.rank,
                       {"grad": text("dp.zero2_advice")}, steps)
    return text("dp.zero2_pass", diff=diffs["weight"])


def check_zero_update(group):
    for stage in (1, 2):
        for steps in STEPS:
            diffs = check_zero(group, stage, config=_config(group), steps=steps)
            _expect_serial(text("dp.zero_stage", stage=stage), diffs, group.rank,
                           {"weight": text("dp.zero_update_advice")}, steps)
    return text("dp.zero_update_pass", diff=diffs["weight"])


CHECKS = {"4.1": check_ddp_all_reduce, "5.1": check_zero_reduce_scatter,
          "5.2": check_zero_update}
