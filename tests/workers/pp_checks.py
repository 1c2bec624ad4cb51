"""Runs on every rank (via tests/mpi_harness.run_mpi): the pipeline against one process.

One launch per stage count: equivalence for the requested schedules x M x
checkpointing, peak activation memory at a fixed micro-batch size, the
errors of bad configurations, and (with ``png_dir``) a timeline PNG of a
real 1F1B run drawn by rank 0.
"""
import os

from minimegatron import comm
from minimegatron.checks.pipeline import check_all, check_errors, check_memory, timeline_run


def run(micro_batches, checkpoints, png_dir=None):
    group = comm.world()
    out = {"equivalence": check_all(group, micro_batches=micro_batches,
                                    checkpoints=[bool(c) for c in checkpoints])}
    out["memory"] = {f"{s}/M={m}/ckpt={c}": check_memory(group, s, m, bool(c))
                     for s in ("gpipe", "1f1b") for m in (1, 2, 4, 8) for c in (0, 1)}
    out["errors"] = check_errors(group)
    if png_dir:
        png = os.path.join(png_dir, f"1f1b_K{group.size}_M4.png")
        result = timeline_run(group, "1f1b", 4, png=png)
        if result is not None:
            counts = [{} for _ in range(group.size)]
            for span in result.pop("spans"):
                key = f"{span['op']} {span['label']}"
                counts[span["rank"]][key] = counts[span["rank"]].get(key, 0) + 1
            out["timeline"] = dict(result, png=png, span_counts=counts)
    return out
