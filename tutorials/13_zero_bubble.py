"""Tutorial 13: zero-bubble pipelines, 1F1B vs ZB-H1 vs ZBV on real ranks.

    python -m minimegatron run -n 4 tutorials/13_zero_bubble.py [--out zero_bubble_out]
        [--micro-batches 8] [--t-step 0.02]

Zero bubble (Qi et al., ICLR 2024) splits each backward in two: B, the input
gradient dL/dX = dL/dY W^T that the stage before waits for, and W, the weight
gradient dL/dW = X^T dL/dY that only the optimizer step needs
(minimegatron/autodiff/split_backward.py). A schedule sends dL/dX right after
B and runs W later, in a gap it would otherwise idle in
(minimegatron/parallel/pipeline_parallel/zero_bubble.py). This script

1. prints ZB-H1's and ZBV's schedules as text grids (K stages, M micro-batches,
   T_F = T_B = T_W), simulated from the action lists the executor runs;
2. runs one step of 1F1B, ZB-H1 and ZBV on the K ranks with emulated device
   time (every F, B and W lasts --t-step seconds: the real compute, then a
   sleep that gives the core back, as a stage waits for its GPU;
   checks/zero_bubble.py) and prints the MEASURED bubble (the most a stage
   idles between its first step and its last) beside the simulated one and
   the paper's table: 1F1B (K-1)(T_F+T_B+T_W), ZB-H1 (K-1)(T_F+T_B-T_W), ZBV 0;
   the step's loss beside one process's; each timeline is drawn in --out
   (<schedule>.png) with its Chrome trace beside it (<schedule>.json, open it in
   https://ui.perfetto.dev);
3. trains the 8-layer GPT of ``minimegatron verify`` for 2 AdamW steps with each
   schedule and compares loss, gradients and weights with one process.

MINIMEGATRON_LANG=ko prints the headings in Korean (minimegatron.i18n).
"""
import os
import sys
from fractions import Fraction

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# ^ import the minimegatron beside tutorials/ (a student copy's own), not another install

from minimegatron import comm
from minimegatron.checks.pipeline import TOLERANCE, check_pipeline
from minimegatron.checks.zero_bubble import EMULATED_CONFIG, emulated_run
from minimegatron.data.demo import batch
from minimegatron.i18n import language, text
from minimegatron.nn import GPT
from minimegatron.parallel.pipeline_parallel.simulator import simulate
from minimegatron.parallel.pipeline_parallel.zero_bubble import bubble_table
from minimegatron.commands import entry
from minimegatron.tools import chrome_trace
from minimegatron.tools.timeline import draw_timeline, rows_from_trace, text_grid

SCHEDULES = ("1f1b", "zb-h1", "zbv")


def grids(K, M):
    """ZB-H1's and ZBV's simulated action lists as text, at T_F = T_B = T_W."""
    for name in ("zb-h1", "zbv"):
        sim = simulate(name, K, M, Fraction(1), Fraction(1), t_weight=Fraction(1))
        print(text("t13.grid", name=name, K=K, M=M))
        print(text_grid(sim))


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
    parser.add_argument("--t-step", type=float, default=0.02,
                        help="emulated seconds of every F, B and W")
    args = parser.parse_args()
    language()                  # an unknown MINIMEGATRON_LANG: one line, before any collective
    group = comm.world()
    K, M = group.size, args.micro_batches
    if M < 2 * K - 1:
        parser.error(f"--micro-batches {M}: ZBV needs at least 2K - 1 = {2 * K - 1}")
    if not args.t_step > 0:
        parser.error(f"--t-step must be > 0 seconds, got {args.t_step}")
    if group.rank == 0:
        os.makedirs(args.out, exist_ok=True)
        grids(K, M)
    times = (args.t_step,) * 3
    runs = [emulated_run(group, name, M, times) for name in SCHEDULES]
    if group.rank == 0:
        inputs, targets = batch(EMULATED_CONFIG, 2 * M, 0)      # emulated_run's batch
        serial = GPT(EMULATED_CONFIG).loss(inputs, targets).item()
        bubbles(runs, K, args.t_step, serial, args.out)
    comm.print0(text("t13.check_heading"))
    for name in SCHEDULES:
        diffs = check_pipeline(group, name, M, steps=2, batch_size=2 * M)
        worst = comm.gather_object(diffs, group)
        if group.rank == 0:
            worst = {key: max(d[key] for d in worst) for key in diffs}
            ok = all(value < TOLERANCE for value in worst.values())
            print(text("t13.check", name=name, tol=TOLERANCE,
                       verdict=text("t13.pass" if ok else "t13.fail"),
                       diffs=", ".join(f"max|{key} diff| {value:.1e}"
                                       for key, value in worst.items())))


if __name__ == "__main__":
    entry.run(main, "tutorials/13_zero_bubble.py")
