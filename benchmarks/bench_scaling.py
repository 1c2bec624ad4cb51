"""Predicted vs measured step time: the calibrated step model against real runs.

    python benchmarks/bench_scaling.py [--hardware hw.json] [--steps 3] [--schemes dp tp pp 3d]

1. Calibration: ``--hardware`` (from ``minimegatron calibrate``), or measured now
   (tools/calibrate.py and rates.py: the engine's MatMul rates, per-op overhead, elementwise and
   row-sum rates, tanh and exp here; all-reduce alpha/beta on 2 ranks).
2. For n = 1, 2, 4, 8 ranks and each scheme (grid below) a real run under mpiexec:
   Trainer3D on a GPT with L=8, h=64, s=32, V=64, batch 32 in 4 micro-batches,
   float64; the median step time of the slowest rank.
3. Inside the run, the warm-up step is counted (tools/step_model.count_step: engine
   ops, GEMM FLOPs per shape class, elementwise bytes, reduced and tanh/exp values,
   collective ring steps and bytes per rank) and
   step_model.step_time turns the counts and the calibration into a prediction;
   the slowest rank's prediction is printed beside the measured step with the
   ratio measured / predicted (goal: within 2x). A ratio benchmark, not a timed test.

Grids (dp, pp, tp): dp = (n, 1, 1), tp = (1, 1, n), pp = (1, n, 1), 3d = tp 2 first,
then pp 2, then dp (8 ranks: 2 x 2 x 2).

``--rates-in-run``: each run measures the step model's rates itself (tools/rates.measure
on every rank at once, the slowest rank's figures) just before its timed steps, so that on
a machine shared with other jobs the rates and the steps see the same load; runs with more
ranks than cores keep the calibration's rates (measured there, they would include the
time-slicing that the model's share counts).

One BLAS thread per rank (set here before NumPy loads, for the calibration too):
on a shared machine OpenBLAS's threads spin-wait for each other and a 1-rank step
swung 3-17 s; the model gives each rank min(1, cores / ranks) of a thread's rate.
"""
import os

for _name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_name, "1")

import argparse  # noqa: E402
import json  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402

from minimegatron.comm import comm_check  # noqa: E402
from minimegatron.nn import GPTConfig  # noqa: E402
from minimegatron.data.demo import make_optimizer

CONFIG = GPTConfig(vocab_size=64, seq_len=32, n_layer=8, n_head=4, d_model=64, seed=0)
BATCH, MICRO_BATCHES, WARMUP, RANKS = 32, 4, 1, (1, 2, 4, 8)
PARTS = ("gemm", "batched", "ops", "elementwise", "reduce", "transcendental", "bubble", "comm")
HEAD = ("gemm", "bgemm", "ops", "elem", "reduce", "tanh", "bubble", "comm")


def grid_of(scheme, n):
    """(dp, pp, tp) of a scheme on n ranks (module docstring)."""
    if scheme == "3d":
        tp = min(2, n)
        pp = min(2, n // tp)
        return n // (tp * pp), pp, tp
    return {"dp": (n, 1, 1), "pp": (1, n, 1), "tp": (1, 1, n)}[scheme]


def busy_seconds(spans):
    """Length of the union of the spans' [start, end] (nonblocking spans may overlap)."""
    total, reach = 0.0, float("-inf")
    for start, end in sorted((s["start"], s["end"]) for s in spans):
        if end > reach:
            total += end - max(start, reach)
            reach = end
    return total


def child(args):
    """Inside each rank: count the warm-up step, time the others; rank 0 writes JSON."""
    from minimegatron import comm
    from minimegatron.comm import trace
    from minimegatron.backend import xp
    from minimegatron.data.demo import batch
    from minimegatron.parallel.grid import ProcessGrid
    from minimegatron.parallel.threed import Trainer3D
    from minimegatron.tools.step_model import count_step, step_time
    with open(args.hardware) as f:
        calib = json.load(f)
    world = comm.world()
    dp, pp, tp = grid_of(args.scheme, world.size)
    trainer = Trainer3D(CONFIG, ProcessGrid(dp, pp, tp), micro_batches=MICRO_BATCHES,
                        optimizer_fn=make_optimizer)
    x, y = batch(CONFIG, BATCH, 0)
    counts = count_step(lambda: trainer.train_step(x, y), trainer.stage.parameters(),
                        {"dp": dp, "pp": pp, "tp": tp})
    from minimegatron.tools import calibrate, rates
    if args.rates_in_run and world.size <= calib["cores"]:    # all ranks at once, now
        now = rates.busy(world) if world.size > 1 else rates.measure()
        calib = dict(calib, busy=now) if world.size > 1 else dict(calib, **now)
    times, comm_share = [], []
    for step in range(args.steps):
        x, y = batch(CONFIG, BATCH, WARMUP + step)
        comm.barrier(world)
        trace.reset()                                    # then the clock
        start = time.perf_counter()
        trainer.train_step(x, y)
        seconds = time.perf_counter() - start
        in_comm = busy_seconds(s for s in trace.spans() if s["kind"] == "comm")
        slowest = comm.all_reduce(xp.asarray([seconds]), world, op="max")
        times.append(float(slowest[0]))
        comm_share.append(in_comm / seconds)
    every = comm.gather_object(counts, world)                # small metadata: pickle
    if world.rank == 0:                    # rank 0 alone holds busy_rates' figures
        predicted, counts = max(((step_time(c, calib, world.size, pp, MICRO_BATCHES,
                                            calibrate.blas_threads()), c) for c in every),
                                key=lambda pc: pc[0]["total"])
        with open(args.out, "w") as f:
            json.dump({"seconds": statistics.median(times), "grid": [dp, pp, tp],
                       "comm_share": statistics.median(comm_share),
                       "predicted": predicted, "counts": counts}, f)


def measure_run(scheme, ranks, steps, hardware, rates_in_run=False):
    """The child's JSON of a real run on ``ranks`` ranks (None if it failed)."""
    from minimegatron.runtime.launcher import build_command, child_env
    from minimegatron.runtime.processes import run_job
    with tempfile.TemporaryDirectory(prefix="mm_scaling_") as tmp:
        out = os.path.join(tmp, "run.json")
        cmd = build_command(ranks, os.path.abspath(__file__),
                            ["--child", "--scheme", scheme, "--steps", str(steps), "--out", out,
                             "--hardware", hardware] + ["--rates-in-run"] * rates_in_run)
        code, _, err, _ = run_job(cmd, timeout=300, env=child_env(ranks),
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        if code != 0 or not os.path.exists(out):
            print(f"{scheme} on {ranks} ranks failed (code {code}):\n{err}", file=sys.stderr)
            return None
        with open(out) as f:
            return json.load(f)


def calibration(path):
    from minimegatron.tools import calibrate
    if path:
        with open(path) as f:
            return json.load(f)
    print("calibrating (GEMM here, all-reduce on 2 ranks) ...", flush=True)
    return calibrate.measure(None, launch_ranks=2)


def main(argv=None):
    comm_check.disable()      # benchmarks time the collectives alone (docs/notes_comm.md)
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--hardware", help="JSON from `minimegatron calibrate` (else measured now)")
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--schemes", nargs="+", choices=["dp", "tp", "pp", "3d"],
                    default=["dp", "tp", "pp", "3d"])
    ap.add_argument("--ranks", nargs="+", type=int, default=list(RANKS))
    ap.add_argument("--rates-in-run", action="store_true",
                    help="each run measures the step model's rates itself, all its ranks at "
                    "once, just before its steps (a machine shared with other jobs)")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--scheme", default="dp", help=argparse.SUPPRESS)
    ap.add_argument("--out", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        return child(args)
    hw = calibration(args.hardware)
    with tempfile.TemporaryDirectory(prefix="mm_calib_") as tmp:
        path = os.path.join(tmp, "hw.json")
        with open(path, "w") as f:
            json.dump(hw, f)
        return table(hw, path, args)


def table(hw, path, args):
    """Run every scheme and rank count; print measured, predicted, parts and ratio."""
    from minimegatron.tools import rates
    print(f"hardware: {hw['cores']} cores, {hw['blas_threads']} BLAS threads; alone: "
          f"{rates.line(hw)}")
    if hw.get("busy"):
        print(f"{hw['ranks_measured']} ranks busy (used for runs of 2+ ranks): "
              f"{rates.line(hw['busy'])}")
    print(f"all-reduce latency {hw['latency_s'] * 1e6:.0f} us, bandwidth "
          f"{hw['bandwidth_bytes_per_s'] / 1e9:.2f} GB/s")
    if args.rates_in_run:
        print("--rates-in-run: the compute rates of each run with ranks <= cores are its own")
    print(f"GPT L={CONFIG.n_layer} h={CONFIG.d_model} s={CONFIG.seq_len} V={CONFIG.vocab_size}"
          f", batch {BATCH} in {MICRO_BATCHES} micro-batches, float64; median of "
          f"{args.steps} steps (slowest rank); predicted ms = gemm + bgemm (attention) + ops"
          " + elem + reduce + tanh/exp + bubble + comm")
    print(f"{'scheme':>6} {'ranks':>5} {'dp,pp,tp':>8} {'ops':>5} {'measured':>9} "
          f"{'predicted':>9} " + " ".join(f"{c:>6}" for c in HEAD) + f" {'ratio':>6}")
    for scheme in args.schemes:
        for ranks in args.ranks:
            dp, pp, tp = grid_of(scheme, ranks)
            if CONFIG.n_head % tp or CONFIG.n_layer % pp or BATCH % (dp * MICRO_BATCHES):
                print(f"{scheme:>6} {ranks:>5} {dp},{pp},{tp}: does not divide the GPT "
                      f"(heads {CONFIG.n_head}, layers {CONFIG.n_layer}), skipped")
                continue
            got = measure_run(scheme, ranks, args.steps, path, args.rates_in_run)
            if got is None:
                continue
            t, grid = got["predicted"], ",".join(map(str, got["grid"]))
            parts = " ".join(f"{1e3 * t[k]:6.1f}" for k in PARTS)
            print(f"{scheme:>6} {ranks:>5} {grid:>8} {got['counts']['ops']:>5} "
                  f"{1e3 * got['seconds']:>9.1f} {1e3 * t['total']:>9.1f} {parts} "
                  f"{got['seconds'] / t['total']:>6.2f}", flush=True)
    return 0


if __name__ == "__main__":
    import minimegatron.runtime
    minimegatron.runtime.setup()      # as every tutorial: heap kept, BLAS threads, abort hook
    sys.exit(main())
