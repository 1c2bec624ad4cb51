"""Tutorial 7: pipeline parallelism, naive vs GPipe vs 1F1B, on real ranks.

    python -m minimegatron run -n 4 tutorials/07_pipeline.py [--out pipeline_out]
        [--checkpoint] [--t-forward 0.02] [--t-backward 0.04]

A 4-layer GPT is cut into one stage per rank (stage 0 also embeds, the last
stage owns the head and the loss). For naive (the whole batch at once),
GPipe and 1F1B with M = 4, 8 and 16 micro-batches, every rank runs its
stage's schedule (minimegatron/parallel/pipeline_parallel/schedules.py) with the executor
(minimegatron/parallel/pipeline_parallel/engine.py) and:

1. the pipeline loss is printed next to the serial GPT's loss on the same
   batch (they agree to ~1e-16: loss = mean over micro-batches of loss_i);
2. two traced steps give each stage's forward/backward spans, and so the
   measured bubble (time not computing), printed next to the schedule's
   (K-1)/(M+K-1):
   - emulated: each forward lasts --t-forward seconds and each backward
     --t-backward, the part after the real compute slept without holding a
     core, as a stage waits for its GPU (minimegatron/parallel/pipeline_parallel/device_time.py);
   - plain: the real compute only. With 4 ranks on 2 cores the ranks steal
     each other's core, so this bubble is the OS scheduler's, not the schedule's;
   both timelines are saved as PNGs in --out (<schedule>_M<M>.png, emulated,
   and <schedule>_M<M>_plain.png), each with a Chrome trace beside it (.json:
   open it in https://ui.perfetto.dev, minimegatron/tools/chrome_trace.py);
3. the peak activations each stage held (micro-batches in flight, bytes kept
   by their autograd graphs): GPipe holds M, 1F1B min(M, K - k).
MINIMEGATRON_LANG=ko prints the headings in Korean (minimegatron.i18n) and draws the
timelines in Korean (in English, with a line saying which font to install, without one).
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# ^ import the minimegatron beside tutorials/ (a student copy's own), not another install


from minimegatron import comm
from minimegatron.commands import entry
from minimegatron.commands.argtypes import positive_int
from minimegatron.comm import trace
from minimegatron.data.datasets import repeat_task
from minimegatron.i18n import language, text, text_in
from minimegatron.nn import GPT, GPTConfig
from minimegatron.parallel.pipeline_parallel import (DeviceTime, PipelineEngine, PipelineStage,
                                                     bubble_formula)
from minimegatron.runtime.threads import cores
from minimegatron.tools import chrome_trace
from minimegatron.tools.activation_memory import ActivationMeter
from minimegatron.tools.fonts import drawing_language
from minimegatron.tools.timeline import (bubble_from_rows, draw_timeline, measured_heading,
                                         rows_from_trace)
from minimegatron.tools.trace_gather import gather_timeline

CONFIG = GPTConfig(vocab_size=16, seq_len=16, n_layer=4, n_head=4, d_model=64, seed=0)
BATCH = 16
RUNS = [("naive", 1)] + [(s, m) for s in ("gpipe", "1f1b") for m in (4, 8, 16)]


def traced_steps(engine, inputs, targets, device_time, repeats):
    """The least disturbed of ``repeats`` traced steps (as timeit: other processes only add
    time): on rank 0 its bubble, rows, in-flight peak per stage and longest real compute."""
    engine.device_time = device_time
    best = None
    for _ in range(repeats):
        engine.stage_module.zero_grad()
        comm.barrier(engine.group)
        trace.reset()
        engine.train_step(inputs, targets)
        spans = gather_timeline(engine.group)
        if spans is not None:
            rows = rows_from_trace(spans)
            best = min(best or (2.0, rows, spans), (bubble_from_rows(rows), rows, spans),
                       key=lambda b: b[0])
    slowest = comm.gather_object(device_time.slowest, engine.group)
    late = comm.gather_object(device_time.late, engine.group)
    in_flight = comm.gather_object(engine.stats["peak_in_flight"], engine.group)
    if best is None:
        return None
    return {"bubble": best[0], "rows": best[1], "spans": best[2], "in_flight": in_flight,
            "slowest": {op: max(s[op] for s in slowest) for op in ("forward", "backward")},
            "late": [sum(d[key] for d in late) for key in ("seconds", "sleeps")]}


def run(schedule, micro_batches, group, inputs, targets, args):
    """Loss and peak memory, then plain and emulated traced steps, drawn (on rank 0)."""
    stage = PipelineStage(GPT(CONFIG), group.rank, group.size)   # the full model is dropped
    meter = ActivationMeter()
    engine = PipelineEngine(stage, group, schedule=schedule, num_micro_batches=micro_batches,
                            checkpoint_activations=args.checkpoint, memory_meter=meter)
    loss = engine.train_step(inputs, targets)                    # also the warm-up step
    memory = comm.gather_object(meter.peak, group)
    engine.memory_meter = None                                   # graph walks are not compute
    plain = traced_steps(engine, inputs, targets, DeviceTime(), args.repeats)
    emulated = traced_steps(engine, inputs, targets, DeviceTime(*args.device_time),
                            args.repeats)
    if group.rank != 0:
        return None
    M = engine.num_micro_batches
    formula = bubble_formula(group.size, M)
    device = [1e3 * t for t in args.device_time]                  # ms
    for name, result, device_ms in (("", emulated, device), ("_plain", plain, None)):
        result["png"] = os.path.join(args.out, f"{schedule}_M{M}{name}.png")
        # the heading's numbers ride in the Chrome trace: docs/make_figures.py redraws the
        # same run in Korean from it (measured_heading, chrome_trace.spans_from)
        numbers = {"schedule": schedule, "stages": group.size, "micro_batches": M,
                   "formula": str(formula), "bubble": result["bubble"], "device_ms": device_ms}
        heading = measured_heading(args.lang, **numbers)
        draw_timeline(result.pop("rows"), result["png"], heading,
                      xlabel=text_in(args.lang, "figure.timeline.seconds"), lang=args.lang)
        trace = chrome_trace.from_trace(result.pop("spans"), heading)
        chrome_trace.write({**trace, "otherData": numbers}, result["png"][:-len(".png")]
                           + ".json")
    return {"loss": loss, "formula": float(formula), "M": M, "memory": memory,
            "plain": plain, "emulated": emulated}


def report(results, serial, args):
    """The table: loss vs serial, bubble by formula, emulated and plain, memory per stage."""
    print(text("t07.head_table"))
    for (schedule, _), r in zip(RUNS, results):
        held = " ".join(str(h) for h in r["emulated"]["in_flight"])
        kib = " ".join(f"{b / 1024:.0f}" for b in r["memory"])
        print(f"{schedule:<8}{r['M']:>4}  {r['loss']:>18.15f}{serial:>18.15f}"
              f"{abs(r['loss'] - serial):>9.1e}  {r['formula']:>15.1%}"
              f"{r['emulated']['bubble']:>10.1%}{r['plain']['bubble']:>8.1%}  {held:<21}{kib}")
    print(text("t07.why", cores=cores(), ranks=len(results[0]["memory"])))
    slowest = {op: max(r["emulated"]["slowest"][op] for r in results if r["M"] > 1)
               for op in ("forward", "backward")}
    emulated = dict(zip(slowest, args.device_time))
    times = ", ".join(text("t07.op", op=op, ms=1e3 * slowest[op], budget=1e3 * emulated[op])
                      for op in slowest)
    too_long = any(slowest[op] > emulated[op] for op in slowest)
    print(text("t07.compute", times=times, end=text("t07.too_long") if too_long else "."))
    late, sleeps = (sum(r["emulated"]["late"][i] for r in results) for i in (0, 1))
    print(text("t07.late", ms=1e3 * late / max(sleeps, 1)))
    print(text("t07.memory"))
    print(text("t07.timelines", files=4 * len(results), out=args.out))


def main():
    parser = entry.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="pipeline_out", help="folder for the timeline PNGs")
    parser.add_argument("--checkpoint", action="store_true", help="activation checkpointing")
    parser.add_argument("--t-forward", type=float, default=0.02,
                        help="emulated seconds per forward of one micro-batch")
    parser.add_argument("--t-backward", type=float, default=0.04,
                        help="emulated seconds per backward of one micro-batch")
    parser.add_argument("--repeats", type=positive_int, default=2,
                        help="traced steps per measurement; the least disturbed is kept")
    args = parser.parse_args()
    try:
        args.device_time = tuple(DeviceTime(args.t_forward, args.t_backward).seconds.values())
    except ValueError as error:
        parser.error(str(error))
    language()                  # an unknown MINIMEGATRON_LANG: one line, before any collective
    group = comm.world()
    if group.rank == 0:                          # rank 0 draws: Korean only with a Korean font
        os.makedirs(args.out, exist_ok=True)
        args.lang = drawing_language(language())
    comm.print0(text("t07.heading", layers=CONFIG.n_layer, batch=BATCH, stages=group.size)
                + (text("t07.checkpointing") if args.checkpoint else ""))
    stage = PipelineStage(GPT(CONFIG), group.rank, group.size)
    comm.print_ranks(text("t07.stage", stage=stage.stage, stages=stage.num_stages,
                          blocks=stage.layers, params=stage.num_parameters()))

    inputs, targets = repeat_task(BATCH, CONFIG.seq_len, CONFIG.vocab_size, seed=0, step=0)
    serial = GPT(CONFIG).loss(inputs, targets).item()          # every rank, one process
    results = [run(s, m, group, inputs, targets, args) for s, m in RUNS]
    if group.rank == 0:
        report(results, serial, args)


if __name__ == "__main__":
    entry.run(main, "tutorials/07_pipeline.py")
