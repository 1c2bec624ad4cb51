"""Runs on every rank (via tests/mpi_harness.run_mpi): the pipeline against one process.

One launch per stage count: equivalence for the requested schedules x M x
checkpointing, peak activation memory at a fixed micro-batch size, the
errors of bad configurations, and (with ``png_dir``) a timeline PNG of a
real 1F1B run drawn by rank 0. ``emulated_bubbles`` measures the bubble with
emulated device time (parallel/pipeline_parallel/device_time.py) on a tiny GPT.
"""
import os

from minimegatron import comm
from minimegatron.comm import trace
from minimegatron.checks.pipeline import (build, check_all, check_errors, check_memory,
                                          timeline_run)
from minimegatron.data.demo import batch


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


def emulated_bubbles(micro_batches, device_time, scales, tolerance):
    """Per "schedule/M=m", with emulated device time: traced steps at ``device_time`` times
    each of ``scales`` in turn, stopping at the first bubble within ``tolerance`` (relative)
    of the formula. Returns the bubbles (rank 0) and the last step's device time, this
    stage's peak in flight, shortest forward/backward span, longest real compute, total
    wake-up delay, and the plain and emulated losses."""
    from minimegatron.nn import GPTConfig
    from minimegatron.parallel.pipeline_parallel import DeviceTime
    from minimegatron.tools.trace_gather import gather_timeline
    from minimegatron.tools.timeline import bubble_from_rows, rows_from_trace
    group = comm.world()
    config = GPTConfig(vocab_size=16, seq_len=8, n_layer=group.size, n_head=2, d_model=32)
    inputs, targets = batch(config, 8, 0)
    out = {}
    for schedule in ("gpipe", "1f1b"):
        for m in micro_batches:
            stage, engine = build(group, config, schedule, m, False)
            case = {"bubbles": [], "plain_loss": engine.train_step(inputs, targets)}  # warm-up
            formula = (group.size - 1) / (m + group.size - 1)
            for scale in scales:
                case["device_time"] = [scale * t for t in device_time]
                device = engine.device_time = DeviceTime(*case["device_time"])
                stage.zero_grad()
                comm.barrier(group)
                trace.reset()
                case["loss"] = engine.train_step(inputs, targets)
                mine = [s for s in trace.spans() if s["kind"] == "compute"]
                spans = gather_timeline(group)
                if spans is not None:
                    case["bubbles"].append(bubble_from_rows(rows_from_trace(spans)))
                if comm.bcast_object(abs(case["bubbles"][-1] - formula) <= tolerance * formula
                                     if spans is not None else None, group):
                    break
            case.update(in_flight=engine.stats["peak_in_flight"], slowest=device.slowest,
                        late=device.late)
            case["shortest"] = {op: min(s["end"] - s["start"] for s in mine if s["op"] == op)
                                for op in ("forward", "backward")}
            out[f"{schedule}/M={m}"] = case
    return out
