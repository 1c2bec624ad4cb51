"""Predicted vs measured step time: the scaling model, calibrated here, against real runs.

    python benchmarks/bench_scaling.py [--hardware hw.json] [--steps 3] [--schemes dp tp]

1. Calibration: ``--hardware`` (from ``minimegatron calibrate``), or measured now
   (tools/calibrate.py: GEMM rate here, all-reduce alpha/beta on 2 ranks).
2. For n = 1, 2, 4, 8 ranks and each scheme (dp: Trainer3D dp=n, the batch split;
   tp: tp=n, every layer split) a real run under mpiexec: the median step time
   (slowest rank) of a GPT with L=2, h=128, s=32, V=64, batch 16, float64.
3. The model: tools/scaling.step_time with the calibrated figures, each of the n
   ranks getting machine_flops / n (they share this host's cores), ring all-reduces
   with the measured alpha and bandwidth, 8 bytes per value, no recomputation.

Printed side by side with the ratio measured / predicted. What the model leaves
out shows up in that ratio: Python and autograd overhead per op (large for a
model this small), the optimizer, the embedding/loss collectives, and ranks
waiting for a core when there are more ranks than cores. A ratio benchmark,
not a timed test.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

from minimegatron import comm_check
from minimegatron.nn import GPTConfig

CONFIG = GPTConfig(vocab_size=64, seq_len=32, n_layer=2, n_head=8, d_model=128, seed=0)
BATCH, WARMUP, RANKS = 16, 1, (1, 2, 4, 8)


def busy_seconds(spans):
    """Length of the union of the spans' [start, end] (nonblocking spans may overlap)."""
    total, reach = 0.0, float("-inf")
    for start, end in sorted((s["start"], s["end"]) for s in spans):
        if end > reach:
            total += end - max(start, reach)
            reach = end
    return total


def child(args):
    """Inside each rank: train, time every step (max over ranks), rank 0 writes JSON."""
    from minimegatron import comm, trace
    from minimegatron.backend import xp
    from minimegatron.demo import batch
    from minimegatron.parallel.grid import ProcessGrid
    from minimegatron.parallel.threed import Trainer3D
    world = comm.world()
    dp, tp = (world.size, 1) if args.scheme == "dp" else (1, world.size)
    trainer = Trainer3D(CONFIG, ProcessGrid(dp, 1, tp), micro_batches=1)
    times, comm_share = [], []
    for step in range(WARMUP + args.steps):
        x, y = batch(CONFIG, BATCH, step)
        comm.barrier(world)
        trace.reset()                                    # then the clock
        start = time.perf_counter()
        trainer.train_step(x, y)
        seconds = time.perf_counter() - start
        in_comm = busy_seconds(s for s in trace.spans() if s["kind"] == "comm")
        slowest = comm.all_reduce(xp.asarray([seconds]), world, op="max")
        if step >= WARMUP:
            times.append(float(slowest[0]))
            comm_share.append(in_comm / seconds)
    if world.rank == 0:
        with open(args.out, "w") as f:
            json.dump({"seconds": statistics.median(times),
                       "comm_share": statistics.median(comm_share)}, f)


def measure_run(scheme, ranks, steps):
    """{"seconds", "comm_share"} of a real run on ``ranks`` ranks (None if it failed)."""
    from minimegatron.launcher import build_command, child_env, run_job
    with tempfile.TemporaryDirectory(prefix="mm_scaling_") as tmp:
        out = os.path.join(tmp, "run.json")
        cmd = build_command(ranks, os.path.abspath(__file__),
                            ["--child", "--scheme", scheme, "--steps", str(steps), "--out", out])
        code, _, err, _ = run_job(cmd, timeout=300, env=child_env(ranks),
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        if code != 0 or not os.path.exists(out):
            print(f"{scheme} on {ranks} ranks failed (code {code}):\n{err}", file=sys.stderr)
            return None
        with open(out) as f:
            return json.load(f)


def predict(hw_json, scheme, ranks):
    """scaling.step_time for this scheme on ``ranks`` ranks of this host."""
    from minimegatron.tools.calibrate import per_rank_flops
    from minimegatron.tools.scaling import Hardware, step_time
    hw = Hardware(name=hw_json["name"], gpus_per_node=int(hw_json["ranks_per_node"]),
                  peak_flops=per_rank_flops(hw_json, ranks), efficiency=1.0,
                  intra_bw=hw_json["bandwidth_bytes_per_s"], inter_bw=hw_json[
                      "bandwidth_bytes_per_s"], intra_latency=hw_json["latency_s"],
                  inter_latency=hw_json["latency_s"])
    dp, tp = (ranks, 1) if scheme == "dp" else (1, ranks)
    return step_time(CONFIG, hw, dp=dp, tp=tp, pp=1, micro_batch=BATCH // dp,
                     micro_batches=1, recompute=False, bytes_per_value=8)


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
    ap.add_argument("--schemes", nargs="+", choices=["dp", "tp"], default=["dp", "tp"])
    ap.add_argument("--ranks", nargs="+", type=int, default=list(RANKS))
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--scheme", default="dp", help=argparse.SUPPRESS)
    ap.add_argument("--out", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        return child(args)
    hw = calibration(args.hardware)
    print(f"hardware: {hw['machine_flops'] / 1e9:.2f} GFLOP/s float64 on {hw['cores']} cores "
          f"(shared by the ranks), all-reduce latency {hw['latency_s'] * 1e6:.0f} us, "
          f"bandwidth {hw['bandwidth_bytes_per_s'] / 1e9:.2f} GB/s")
    print(f"GPT L={CONFIG.n_layer} h={CONFIG.d_model} s={CONFIG.seq_len} V={CONFIG.vocab_size}"
          f", batch {BATCH}, float64; median of {args.steps} steps (slowest rank)")
    print(f"{'scheme':>6} {'ranks':>5} {'measured ms':>12} {'comm %':>7} {'predicted ms':>13}"
          f" {'compute':>8} {'comm':>8} {'ratio':>6}")
    for scheme in args.schemes:
        for ranks in args.ranks:
            got = measure_run(scheme, ranks, args.steps)
            if got is None:
                continue
            t = predict(hw, scheme, ranks)
            comm_ms = 1e3 * (t["tp"] + t["dp"] + t["pp"])
            print(f"{scheme:>6} {ranks:>5} {1e3 * got['seconds']:>12.1f} "
                  f"{100 * got['comm_share']:>7.0f} {1e3 * t['total']:>13.1f} "
                  f"{1e3 * t['compute']:>8.1f} {comm_ms:>8.1f} "
                  f"{got['seconds'] / t['total']:>6.2f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
