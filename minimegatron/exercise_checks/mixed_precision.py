"""Check for exercise 7.1: the skip-and-halve rule of dynamic loss scaling, on 4 ranks.

The grader runs this on the dp groups [0, 2] and [1, 3]. Only in group [0, 2]
does rank 1 of the group (world rank 2) see an inf, so every rank of THAT group
must skip and halve, and group [1, 3] must step on: a flag reduced over the
world, or not reduced at all, fails. Then ZeRO-2 in float16 (checks/mixed.py),
where after the reduce-scatter only one rank holds the inf: every rank must
skip that step with its weights bitwise unchanged, and the scale doubles after
``growth_interval`` clean steps.
"""
import numpy as np

from minimegatron.checks.mixed import check_mixed
from minimegatron.exercise_checks.common import CheckFailed, expect_equal
from minimegatron.i18n import text
from minimegatron.mixed_precision.loss_scaler import DynamicLossScaler


def check_skip_and_halve(group):
    rank, poisoned = group.rank, 0 in group.ranks       # the inf lives in group [0, 2] only
    scaler = DynamicLossScaler(init_scale=8.0, growth_interval=2)
    grads = [np.ones(3)]
    got = [scaler.update(grads, group), scaler.scale]
    expect_equal(text("mp.clean"), got, [False, 8.0], rank=rank)
    got = [scaler.update(grads, group), scaler.scale]
    expect_equal(text("mp.grow"), got, [False, 16.0], rank=rank)
    bad = [np.array([1.0, np.inf if poisoned and rank == 1 else 2.0, 3.0])]
    got = [scaler.update(bad, group), scaler.scale]
    want = [True, 8.0] if poisoned else [False, 16.0]
    expect_equal(text("mp.overflow", ranks=group.ranks, poisoned=poisoned), got, want,
                 rank=rank)
    out = check_mixed(group, "zero2", steps=4, overflow=(1, 1), growth_interval=2)
    records = out["records"]
    expect_equal(text("mp.zero_skip"), [r["skipped"] for r in records],
                 [False, True, False, False], rank=rank)
    if not records[1]["unchanged"]:
        raise CheckFailed(text("mp.changed", rank=rank))
    scales = [r["scale"] for r in records]
    expect_equal(text("mp.scales"), scales, [256.0, 256.0, 128.0, 128.0], rank=rank)
    return text("mp.pass", scales=scales)


CHECKS = {"7.1": check_skip_and_halve}
