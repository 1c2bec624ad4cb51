"""Tutorial 13: zero-bubble pipelines, 1F1B vs ZB-H1 vs ZBV on real ranks.

    python -m minimegatron run -n 4 tutorials/13_zero_bubble.py [--out zero_bubble_out]
        [--micro-batches 8] [--t-step 0.02]

Zero bubble (Qi et al., ICLR 2024) splits each backward in two: B, the input
gradient dL/dX = dL/dY W^T that the stage before waits for, and W, the weight
gradient dL/dW = X^T dL/dY that only the optimizer step needs
(minimegatron/autodiff/split_backward.py). A schedule sends dL/dX right after
B and runs W later, in a gap it would otherwise idle in
(minimegatron/parallel/pipeline_parallel/zero_bubble.py). This script

1. prints ZB-H1's, ZBV's and DualPipe's schedules as text grids (K stages, M
   micro-batches, T_F = T_B = T_W), simulated from the action lists the executor runs;
2. builds each rank's stage (ZBV: two chunks in a V, ChunkedStage) and a
   PipelineEngine with the schedule "1f1b", "zb-h1" or "zbv", and runs one step
   with emulated device time (every F, B and W lasts --t-step seconds: the real
   compute, then a sleep that gives the core back, as a stage waits for its
   GPU; DeviceTime); it prints the MEASURED bubble (the most a stage idles
   between its first step and its last, from the gathered trace) beside the
   simulated one and the paper's table: 1F1B (K-1)(T_F+T_B+T_W), ZB-H1
   (K-1)(T_F+T_B-T_W), ZBV 0; the step's loss beside one process's; each
   timeline is drawn in --out (<schedule>.png) with its Chrome trace beside it
   (<schedule>.json, open it in https://ui.perfetto.dev);
3. the training loop: the 8-layer GPT of ``minimegatron verify``, each
   schedule's stages and one process side by side for 2 AdamW steps on the same
   batches; after every step the loss, every gradient and every weight this
   stage holds are compared with one process's, name by name;
4. the same loop for DualPipe and DualPipeV (DeepSeek-V3; dualpipe.py, M = 2K or
   more, even): micro-batches from both ends, each rank holding stages k and K-1-k,
   so DualPipe's rank holds twice a 1F1B stage's parameters and its gradients are
   summed over the mirror pair {k, K-1-k} by one all-reduce, read here from the trace.

MINIMEGATRON_LANG=ko prints the headings in Korean (minimegatron.i18n).
"""
import os
import sys
from fractions import Fraction

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# ^ import the minimegatron beside tutorials/ (a student copy's own), not another install

from minimegatron import comm
from minimegatron.backend import to_numpy
from minimegatron.comm import trace
from minimegatron.commands import entry
from minimegatron.commands.argtypes import finite_positive_float
from minimegatron.data.demo import VERIFY_CONFIG, batch, make_optimizer
from minimegatron.i18n import language, text
from minimegatron.nn import GPT, GPTConfig
from minimegatron.parallel.pipeline_parallel import (ChunkedStage, DeviceTime, PipelineEngine,
                                                     PipelineStage, simulate)
from minimegatron.parallel.pipeline_parallel.zero_bubble import bubble_table
from minimegatron.tools import chrome_trace
from minimegatron.tools.timeline import (COMPUTE, draw_timeline, rows_from_trace,
                                         text_grid)
from minimegatron.tools.trace_gather import gather_timeline

SCHEDULES = ("1f1b", "zb-h1", "zbv")
# part 2: small enough that one chunk's real compute (~1 ms) stays below the emulated times
EMULATED_CONFIG = GPTConfig(vocab_size=16, seq_len=8, n_layer=8, n_head=2, d_model=32)
TOLERANCE, TRAIN_STEPS = 1e-10, 2          # part 3: float64 agrees to ~1e-15


def grids(K, M):
    """ZB-H1's, ZBV's (and DualPipe's: M even, >= 2K) action lists as text, T_F = T_B = T_W."""
    for name in ("zb-h1", "zbv") + (("dualpipe",) if M % 2 == 0 and M >= 2 * K else ()):
        sim = simulate(name, K, M, Fraction(1), Fraction(1), t_weight=Fraction(1))
        print(text("t13.grid", name=name, K=K, M=M))
        print(text_grid(sim))


def build(group, config, schedule, M):
    """This rank's stage of GPT(config) (built whole, then cut) and the engine that runs it."""
    if schedule in ("zbv", "dualpipev"):   # two chunks: virtual stages k and 2K-1-k (a V)
        stage = ChunkedStage(GPT(config), group.rank, group.size, 2, placement="v")
    elif schedule == "dualpipe":           # two whole stages, k and K-1-k: held twice
        stage = ChunkedStage(GPT(config), group.rank, group.size, 2, placement="mirror")
    else:                        # the layers n_layer/K of this stage
        stage = PipelineStage(GPT(config), group.rank, group.size)
    return stage, PipelineEngine(stage, group, schedule=schedule, num_micro_batches=M)


def emulated_step(group, schedule, M, t_step):
    """Part 2: one traced step in which every F, B and W lasts ``t_step`` seconds.

    On rank 0: the measured bubble and makespan (from every rank's trace) beside the
    simulated ones, the loss, the longest real compute, the spans; elsewhere None."""
    stage, engine = build(group, EMULATED_CONFIG, schedule, M)
    inputs, targets = batch(EMULATED_CONFIG, 2 * M, 0)                 # (2M, S): 2 rows each
    engine.train_step(inputs, targets)                    # warm-up, not emulated
    stage.zero_grad()
    engine.device_time = device = DeviceTime(t_step, t_step, t_step)  # T_F, T_B, T_W
    comm.barrier(group)
    trace.reset()
    loss = engine.train_step(inputs, targets)             # the schedule's F, B, W, send, recv
    slowest = comm.gather_object(device.slowest, group)   # real compute: is it short enough?
    spans = gather_timeline(group)                        # every rank's F/B/W/recv, on rank 0
    if spans is None:
        return None
    rows = rows_from_trace(spans)                         # one row of boxes per stage
    bubbles = []                                          # idle from a stage's first F to its end
    for row in rows:
        boxes = [(start, end) for start, end, kind, _ in row if kind in COMPUTE]
        busy = sum(end - start for start, end in boxes)
        bubbles.append(max(e for _, e in boxes) - min(s for s, _ in boxes) - busy)
    compute = [(start, end) for row in rows for start, end, kind, _ in row if kind in COMPUTE]
    sim = simulate(schedule, group.size, M, t_step, t_step, t_weight=t_step)
    return {"schedule": schedule, "loss": loss, "M": M, "spans": spans,
            "measured": {"bubble": max(bubbles),
                         "makespan": max(e for _, e in compute) - min(s for s, _ in compute)},
            "simulated": {"bubble": sim.bubble, "makespan": sim.makespan},
            "slowest": {op: max(s[op] for s in slowest) for op in slowest[0]}}


def max_diff(a, b):
    """max |a - b| of two arrays."""
    return float(abs(to_numpy(a) - to_numpy(b)).max())


def train_next_to_one_process(group, schedule, M):
    """Part 3: this rank's stage(s) and one process's GPT, the same AdamW steps side by side.

    Returns this rank's max |diff| of the loss, of every gradient and every weight it holds."""
    serial = GPT(VERIFY_CONFIG)                           # one process, every layer
    serial_opt = make_optimizer(serial.parameters())
    want = dict(serial.named_parameters())                # the stage's names are the GPT's
    stage, engine = build(group, VERIFY_CONFIG, schedule, M)
    opt = make_optimizer(stage.parameters())              # each stage steps its own weights
    diff = {"loss": 0.0, "grad": 0.0, "weight": 0.0}
    for step in range(TRAIN_STEPS):
        inputs, targets = batch(VERIFY_CONFIG, 2 * M, step)            # (B, S), B = 2M
        serial_opt.zero_grad()
        serial_loss = serial.loss(inputs, targets)
        serial_loss.backward()
        opt.zero_grad()
        loss = engine.train_step(inputs, targets)         # M micro-batches through K stages
        diff["loss"] = max(diff["loss"], abs(loss - serial_loss.item()))
        for name, p in stage.named_parameters():
            diff["grad"] = max(diff["grad"], max_diff(p.grad, want[name].grad))
        serial_opt.step()
        opt.step()
        for name, p in stage.named_parameters():
            diff["weight"] = max(diff["weight"], max_diff(p.data, want[name].data))
    return diff


def draw(run, out):
    """<schedule>.json (Chrome trace, always) and <schedule>.png (needs matplotlib)."""
    name, spans = run["schedule"], run["spans"]
    title = (f"{name}: {len(set(s['rank'] for s in spans))} stages, M={run['M']}, measured "
             f"bubble {1e3 * run['measured']['bubble']:.0f} ms "
             f"(simulated {1e3 * run['simulated']['bubble']:.0f} ms)")
    path = os.path.join(out, f"{name}.png")
    chrome_trace.write(chrome_trace.from_trace(spans, title), path[:-len(".png")] + ".json")
    try:
        draw_timeline(rows_from_trace(spans), path, title, xlabel="time (s)")
    except ImportError as err:        # no matplotlib: the numbers still come, one line says why
        return str(err)
    return None


def bubbles(runs, K, t_step, serial, out):
    """The table: measured bubble beside simulated and the paper's, makespans, losses."""
    print(text("t13.measured", K=K, M=runs[0]["M"], ms=1e3 * t_step))
    print(text("t13.head_table"))
    missing = None
    for run in runs:
        table, formula, _, _ = bubble_table(run["schedule"], K, t_step, t_step, t_step)
        measured, simulated = run["measured"], run["simulated"]
        print(f"{run['schedule']:<9}{1e3 * measured['bubble']:>11.1f}"
              f"{1e3 * simulated['bubble']:>11.1f}{1e3 * table:>8.1f}"
              f"{1e3 * measured['makespan']:>13.1f}{1e3 * simulated['makespan']:>11.1f}"
              f"{run['loss']:>20.15f}{serial:>20.15f}{abs(run['loss'] - serial):>9.1e}"
              f"   {formula}")
        missing = draw(run, out) or missing
    print(missing or text("t13.drawn", out=out, files=2 * len(runs)))
    slowest = max(max(run["slowest"].values()) for run in runs)
    print(text("t13.compute", ms=1e3 * slowest, budget=1e3 * t_step))


def main():
    parser = entry.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="zero_bubble_out", help="folder for PNGs and traces")
    parser.add_argument("--micro-batches", type=int, default=8, help="M (at least 2K - 1)")
    parser.add_argument("--t-step", type=finite_positive_float, default=0.02,
                        help="emulated seconds of every F, B and W")
    args = parser.parse_args()
    language()                  # an unknown MINIMEGATRON_LANG: one line, before any collective
    group = comm.world()
    K, M = group.size, args.micro_batches
    if K % 2:                   # part 4's DualPipe folds the stages in pairs: every rank says so
        parser.error(text("t13.even_ranks", K=K))
    if M < 2 * K - 1:
        parser.error(text("t13.zbv_micro_batches", M=M, least=2 * K - 1))
    if group.rank == 0:
        os.makedirs(args.out, exist_ok=True)
        grids(K, M)
    runs = [emulated_step(group, name, M, args.t_step) for name in SCHEDULES]
    if group.rank == 0:
        inputs, targets = batch(EMULATED_CONFIG, 2 * M, 0)      # emulated_step's batch
        serial = GPT(EMULATED_CONFIG).loss(inputs, targets).item()
        bubbles(runs, K, args.t_step, serial, args.out)
    comm.print0(text("t13.check_heading"))
    for name in SCHEDULES:
        diffs = train_next_to_one_process(group, name, M)
        worst = comm.gather_object(diffs, group)
        if group.rank == 0:
            worst = {key: max(d[key] for d in worst) for key in diffs}
            ok = all(value < TOLERANCE for value in worst.values())
            print(text("t13.check", name=name, tol=TOLERANCE,
                       verdict=text("t13.pass" if ok else "t13.fail"),
                       diffs=", ".join(f"max|{key} diff| {value:.1e}"
                                       for key, value in worst.items())))
    dual_pipes(group, K, M + M % 2 if M >= 2 * K else 2 * K)


def dual_pipes(group, K, M):
    """Part 4: DualPipe and DualPipeV against one process; DualPipe's mirror all-reduce."""
    comm.print0(text("t13.dual_heading", M=M))
    for name in ("dualpipe", "dualpipev"):
        trace.reset()
        diffs = train_next_to_one_process(group, name, M)
        mirror = [s for s in trace.spans() if str(s.get("group")).endswith(".mirror")]
        held = sum(p.data.size for p in build(group, VERIFY_CONFIG, name, M)[0].parameters())
        worst = comm.gather_object((diffs, held, [s["nbytes"] for s in mirror]), group)
        if group.rank == 0:
            ok = all(max(d[key] for d, _, _ in worst) < TOLERANCE for key in diffs)
            print(text("t13.check", name=name, tol=TOLERANCE,
                       verdict=text("t13.pass" if ok else "t13.fail"),
                       diffs=", ".join(f"max|{key} diff| {max(d[key] for d, _, _ in worst):.1e}"
                                       for key in diffs)))
            for rank, (_, params, sums) in enumerate(worst):
                print(text("t13.dual_rank", name=name, rank=rank, params=params,
                           pair=sorted({rank, K - 1 - rank}), sums=len(sums),
                           nbytes=sums[-1] if sums else 0))


if __name__ == "__main__":
    entry.run(main, "tutorials/13_zero_bubble.py")
