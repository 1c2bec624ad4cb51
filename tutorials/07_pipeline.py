"""Tutorial 7: pipeline parallelism, naive vs GPipe vs 1F1B, on real ranks.

    mpirun -n 4 python tutorials/07_pipeline.py [--out pipeline_out] [--checkpoint]

A 4-layer GPT is cut into one stage per rank (stage 0 also embeds, the last
stage owns the head and the loss). For naive (the whole batch at once),
GPipe and 1F1B with M = 1, 4 and 16 micro-batches, every rank runs its
stage's schedule (minimegatron/parallel/schedules.py) with the executor
(minimegatron/parallel/pipeline.py) and:

1. the pipeline loss is printed next to the serial GPT's loss on the same
   batch (they agree to ~1e-16: loss = mean over micro-batches of loss_i);
2. a traced step gives each stage's forward/backward spans: the measured
   bubble (time not computing) is printed next to the schedule's
   (K-1)/(M+K-1), and the timeline is saved as a PNG in --out;
3. the peak activations each stage held (micro-batches in flight, bytes kept
   by their autograd graphs): GPipe holds M, 1F1B at most min(M, K - k).

With 4 ranks on 2 cores the processes share CPUs, so measured bubbles are
noisy and larger than the formula (Python overhead and messages count as
idle); the pattern, and the memory, is exact.
"""
import argparse
import os

from minimegatron import comm, trace
from minimegatron.datasets import repeat_task
from minimegatron.nn import GPT, GPTConfig
from minimegatron.parallel.pipeline import PipelineEngine, gather_timeline
from minimegatron.parallel.pipeline_stage import PipelineStage
from minimegatron.parallel.schedules import bubble_formula
from minimegatron.tools.timeline import bubble_from_rows, draw_timeline, rows_from_trace

CONFIG = GPTConfig(vocab_size=16, seq_len=16, n_layer=4, n_head=4, d_model=64, seed=0)
BATCH = 16
RUNS = [("naive", 1)] + [(s, m) for s in ("gpipe", "1f1b") for m in (1, 4, 16)]


def run(schedule, micro_batches, group, inputs, targets, checkpoint, out_dir):
    """Loss, peak memory, then one traced step: its measured bubble and PNG (on rank 0)."""
    stage = PipelineStage(GPT(CONFIG), group.rank, group.size)   # the full model is dropped
    engine = PipelineEngine(stage, group, schedule=schedule, num_micro_batches=micro_batches,
                            checkpoint_activations=checkpoint, measure_memory=True)
    loss = engine.train_step(inputs, targets)                    # also the warm-up step
    memory = (engine.stats["peak_in_flight"], engine.stats["peak_activation_bytes"])
    stage.zero_grad()
    engine.measure_memory = False                                # graph walks are not compute
    trace.reset(group)
    engine.train_step(inputs, targets)
    spans = gather_timeline(group)
    memory = comm.gather_object(memory, group)
    if group.rank != 0:
        return None
    rows = rows_from_trace(spans)
    measured = bubble_from_rows(rows)
    formula = bubble_formula(group.size, engine.num_micro_batches)
    png = os.path.join(out_dir, f"{schedule}_M{engine.num_micro_batches}.png")
    draw_timeline(rows, png, f"{schedule}: K={group.size} stages, M={engine.num_micro_batches}"
                  f" | measured bubble {measured:.1%}, formula (K-1)/(M+K-1) = {formula}"
                  f" = {float(formula):.1%}", xlabel="time (s)")
    return {"loss": loss, "measured": measured, "formula": float(formula), "png": png,
            "memory": memory, "M": engine.num_micro_batches}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="pipeline_out", help="folder for the timeline PNGs")
    parser.add_argument("--checkpoint", action="store_true", help="activation checkpointing")
    args = parser.parse_args()
    group = comm.world()
    if group.rank == 0:
        os.makedirs(args.out, exist_ok=True)
    comm.print0(f"{CONFIG.n_layer}-layer GPT, batch {BATCH}, {group.size} stages"
                + (", activation checkpointing" if args.checkpoint else ""))
    comm.print_ranks(repr(PipelineStage(GPT(CONFIG), group.rank, group.size)))

    inputs, targets = repeat_task(BATCH, CONFIG.seq_len, CONFIG.vocab_size, seed=0, step=0)
    serial = GPT(CONFIG).loss(inputs, targets).item()          # every rank, one process
    results = [run(s, m, group, inputs, targets, args.checkpoint, args.out) for s, m in RUNS]
    if group.rank != 0:
        return
    print(f"\n{'schedule':<8}{'M':>4}  {'pipeline loss':>18}{'serial loss':>18}{'|diff|':>9}"
          f"  {'bubble: formula':>15}{'measured':>10}  {'in flight per stage':<20}"
          f"{'peak KiB per stage'}")
    for (schedule, _), r in zip(RUNS, results):
        held = " ".join(str(h) for h, _ in r["memory"])
        kib = " ".join(f"{b / 1024:.0f}" for _, b in r["memory"])
        print(f"{schedule:<8}{r['M']:>4}  {r['loss']:>18.15f}{serial:>18.15f}"
              f"{abs(r['loss'] - serial):>9.1e}  {r['formula']:>15.1%}{r['measured']:>10.1%}"
              f"  {held:<20}{kib}")
    print("\nAt a fixed batch GPipe keeps the whole batch's activations whatever M is (M in "
          "flight, each 1/M of the batch);\n1F1B keeps min(M, K - k) of M micro-batches: "
          "the deeper the pipeline, the less the later stages hold.")
    print(f"\ntimelines: {', '.join(os.path.basename(r['png']) for r in results)} "
          f"in {args.out}/")


if __name__ == "__main__":
    main()
