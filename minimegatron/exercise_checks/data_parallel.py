"""Checks for exercises 4.x and 5.x: DDP and ZeRO on 2 ranks against one process.

A small case first (one Linear, each rank a different input, so the averaged
gradient is known by hand), then the package's own equivalence checks
(``checks.data.check_ddp`` / ``check_zero``): a GPT trained for 1, then 2 AdamW steps
with the batch split over the ranks must match ``serial_reference`` on the
whole batch: loss, gradients and weights within 1e-10 (float64).
"""
import numpy as np

from minimegatron import nn
from minimegatron.backend import asarray
from minimegatron.checks.data import TOL, check_ddp, check_zero
from minimegatron.exercise_checks.common import CheckFailed, expect_close
from minimegatron.parallel.ddp import DistributedDataParallel
from minimegatron.tensor import Tensor

STEPS = (1, 2)      # 1 step first: a wrong update then shows as a weight, not a later grad
WHAT = {"loss": "the loss (mean over the whole batch)",
        "grad": "a gradient after backward",
        "weight": "a weight after the AdamW step"}


def _expect_serial(scheme, diffs, rank, advice, steps):
    for key in ("grad", "weight", "loss"):      # the first wrong one explains the others
        value = diffs[key]
        if value is not None and not value < TOL:
            raise CheckFailed(f"rank {rank}: {scheme} vs one process, {steps} AdamW step(s): "
                              f"{WHAT[key]} differs by up to {value:.3g} (tolerance "
                              f"{TOL:g}). {advice.get(key, '')}".rstrip())


def check_ddp_all_reduce(group):
    r, n = group.rank, group.size
    layer = nn.Linear(2, 2, seed=0)
    ddp = DistributedDataParallel(layer, group)
    x = Tensor(asarray(np.full((1, 2), float(r + 1))))        # rank r's input: r + 1
    ddp(x).sum().backward()
    ddp.finish()
    mean = sum(q + 1 for q in range(n)) / n
    expect_close(f"Linear(2, 2) weight gradient after finish(), rank r's input = r + 1 "
                 f"(each rank's own gradient is (r + 1) ones; their mean is {mean:g})",
                 layer.weight.grad, np.full((2, 2), mean), rank=r)
    for steps in STEPS:
        diffs = check_ddp(group, steps=steps)
        _expect_serial("DDP", diffs, r, {"grad": "Every rank must end backward with the MEAN "
                                         "of all ranks' gradients."}, steps)
    return f"DDP gradients and weights = one process (max diff {max(diffs['grad'], 0):.1e})"


def check_zero_reduce_scatter(group):
    for steps in STEPS:
        diffs = check_zero(group, 2, steps=steps)
        _expect_serial("ZeRO stage 2", diffs, group.rank, {
            "grad": "Rank r must hold slice r of the MEAN gradient (reduce-scatter, op mean)."},
            steps)
    return f"stage 2 slices = one process (max diff {diffs['weight']:.1e})"


def check_zero_update(group):
    for stage in (1, 2):
        for steps in STEPS:
            diffs = check_zero(group, stage, steps=steps)
            _expect_serial(f"ZeRO stage {stage}", diffs, group.rank, {
                "weight": "Update only this rank's slice (self.shard with self.grad_shard), "
                          "then all-gather the slices into the full flat weights."}, steps)
    return f"stages 1 and 2 weights = one process (max diff {diffs['weight']:.1e})"


CHECKS = {"4.1": check_ddp_all_reduce, "5.1": check_zero_reduce_scatter,
          "5.2": check_zero_update}
