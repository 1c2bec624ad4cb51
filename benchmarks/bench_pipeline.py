"""Pipeline step time: naive vs GPipe vs 1F1B, and the measured bubble next to the formula.

    mpirun -n 4 python benchmarks/bench_pipeline.py [--steps 5] [--micro-batches 8]

An 8-layer GPT (d_model 128, seq 32, batch 32, float32) in 4 stages. For each
schedule: the median wall time of a training step (a barrier before each
step), and from the last step's trace the measured bubble (1 - compute time
/ (stages x makespan), tools/timeline.py) next to (K-1)/(M+K-1). The serial
step time of the whole model on one rank is printed for scale.

Expect GPipe and 1F1B to take about the same time (same bubble; 1F1B wins
on memory, not speed) and naive to be slowest. With more ranks than cores
(4 ranks on a 2-core laptop) ranks share CPUs: a "busy" stage is then
partly waiting for a core, so the measured bubble reads lower and the
speed-up over naive smaller than on one core per rank.
"""
import argparse
import statistics
import time

from minimegatron import comm
from minimegatron.comm import comm_check, trace
from minimegatron.data.datasets import repeat_task
from minimegatron.nn import GPT, GPTConfig
from minimegatron.parallel.pipeline_parallel import PipelineEngine, PipelineStage, bubble_formula
from minimegatron.tools.timeline import bubble_from_rows, rows_from_trace
from minimegatron.tools.trace_gather import gather_timeline

CONFIG = GPTConfig(vocab_size=32, seq_len=32, n_layer=8, n_head=4, d_model=128, seed=0,
                   dtype="float32")
BATCH = 32


def step_times(step, steps, group):
    """Wall time of each step after one warm-up, every rank starting together."""
    step()
    times = []
    for _ in range(steps):
        comm.barrier(group)
        start = time.perf_counter()
        step()
        times.append(time.perf_counter() - start)
    return times


def bench(schedule, micro_batches, group, inputs, targets, steps):
    stage = PipelineStage(GPT(CONFIG), group.rank, group.size)
    engine = PipelineEngine(stage, group, schedule=schedule, num_micro_batches=micro_batches)

    def step():
        stage.zero_grad()
        trace.reset()
        engine.train_step(inputs, targets)
    median = statistics.median(step_times(step, steps, group))
    spans = gather_timeline(group)
    if spans is None:
        return None
    return {"time": median, "measured": bubble_from_rows(rows_from_trace(spans)),
            "formula": float(bubble_formula(group.size, engine.num_micro_batches)),
            "M": engine.num_micro_batches}


def main():
    comm_check.disable()      # benchmarks time the collectives alone (docs/notes_comm.md)
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--micro-batches", type=int, default=8)
    args = parser.parse_args()
    group = comm.world()
    inputs, targets = repeat_task(BATCH, CONFIG.seq_len, CONFIG.vocab_size, seed=0, step=0)
    serial = None
    if group.rank == 0:
        model = GPT(CONFIG)

        def serial_step():
            model.zero_grad()
            model.loss(inputs, targets).backward()
        serial_step()                                            # warm-up
        serial = statistics.median(_time(serial_step) for _ in range(args.steps))
    comm.barrier(group)
    rows = [(s, bench(s, args.micro_batches, group, inputs, targets, args.steps))
            for s in ("naive", "gpipe", "1f1b")]
    if group.rank != 0:
        return
    print(f"{CONFIG.n_layer}-layer GPT d_model {CONFIG.d_model}, batch {BATCH}, "
          f"{group.size} stages; serial step on one rank {serial * 1e3:.1f} ms")
    print(f"{'schedule':<9}{'M':>4}{'step (ms)':>11}{'vs naive':>10}"
          f"{'bubble formula':>16}{'measured':>10}")
    naive = rows[0][1]["time"]
    for name, r in rows:
        print(f"{name:<9}{r['M']:>4}{r['time'] * 1e3:>11.1f}{naive / r['time']:>9.2f}x"
              f"{r['formula']:>16.1%}{r['measured']:>10.1%}")


def _time(fn):
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


if __name__ == "__main__":
    import minimegatron.runtime
    minimegatron.runtime.setup()      # as every tutorial: heap kept, BLAS threads, abort hook
    main()
