"""Zero-bubble schedules on real ranks with emulated device time: bubble measured and simulated.

``emulated_run(group, schedule, num_micro_batches, times)`` runs one warm-up
step, then one traced step in which every forward lasts T_F, every B T_B and
every W T_W seconds (device_time.py: the real compute, then a sleep that gives
the core back; a schedule without W runs each backward for T_B + T_W). On the
group's rank 0 it returns the step measured from the trace next to
``simulate`` with the same times:

    bubble         the zero-bubble paper's: the most a stage idles between the
                   start of its first step and the end of its last (seconds)
    idle_fraction  idle / (stages x makespan), every stage counted to the end
    makespan       first compute start to last compute end (seconds)

with ``step_time``, the slowest rank's wall time of the step (the loss broadcast
included), ``slowest``, the longest real compute of each op, and the spans (for
tools.timeline and tools.chrome_trace). Elsewhere None.
Used by the zero-bubble tests and benchmarks/bench_zero_bubble.py; a tutorial
prints the same numbers side by side::

    run = emulated_run(comm.world(), "zbv", 8, (0.02, 0.02, 0.02))
    if run: print(run["measured"]["bubble"], run["simulated"]["bubble"])
"""
from minimegatron import comm
from minimegatron.comm import trace
from minimegatron.checks.pipeline import build
from minimegatron.data.demo import batch
from minimegatron.nn import GPTConfig
from minimegatron.parallel.pipeline_parallel.device_time import DeviceTime
from minimegatron.parallel.pipeline_parallel.simulator import simulate
from minimegatron.tools.timeline import COMPUTE, bubble_from_rows, rows_from_trace
from minimegatron.tools.trace_gather import gather_timeline

# small enough that one chunk's real compute (~1 ms) stays below the emulated times
EMULATED_CONFIG = GPTConfig(vocab_size=16, seq_len=8, n_layer=8, n_head=2, d_model=32)


def stage_bubbles(rows):
    """Per row of (start, end, kind, label) boxes: idle time from its first compute to its last."""
    bubbles = []
    for row in rows:
        boxes = [(start, end) for start, end, kind, _ in row if kind in COMPUTE]
        busy = sum(end - start for start, end in boxes)
        bubbles.append(max(end for _, end in boxes) - min(start for start, _ in boxes) - busy)
    return bubbles


def emulated_run(group, schedule, num_micro_batches, times, config=EMULATED_CONFIG,
                 batch_size=None):
    """One traced step with device times ``times`` = (T_F, T_B, T_W) seconds (module docstring)."""
    if len(times) != 3 or not all(t > 0 for t in times):
        raise ValueError(f"times must be (T_F, T_B, T_W), each > 0 seconds; got {times!r}")
    stage, engine = build(group, config, schedule, num_micro_batches, False)
    inputs, targets = batch(config, batch_size or 2 * num_micro_batches, 0)
    engine.train_step(inputs, targets)                    # warm-up, not emulated
    stage.zero_grad()
    device = engine.device_time = DeviceTime(*times)
    comm.barrier(group)
    trace.reset()
    loss = engine.train_step(inputs, targets)
    elapsed = trace.now()                                 # this rank's step, loss included
    ranks = comm.gather_object((device.slowest, elapsed), group)    # small metadata
    slowest = [mine for mine, _ in ranks or []]           # real compute, to check it is short
    spans = gather_timeline(group)
    if spans is None:
        return None
    rows = rows_from_trace(spans)
    compute = [(start, end) for row in rows for start, end, kind, _ in row if kind in COMPUTE]
    sim = simulate(schedule, group.size, engine.num_micro_batches, times[0], times[1],
                   t_weight=times[2])
    return {"schedule": schedule, "loss": loss, "M": engine.num_micro_batches,
            "step_time": max(seconds for _, seconds in ranks),
            "measured": {"bubble": max(stage_bubbles(rows)),
                         "idle_fraction": bubble_from_rows(rows),
                         "makespan": max(e for _, e in compute) - min(s for s, _ in compute)},
            "simulated": {"bubble": sim.bubble, "idle_fraction": sim.bubble_fraction,
                          "makespan": sim.makespan},
            "slowest": {op: max(s[op] for s in slowest) for op in slowest[0]},
            "spans": spans}
