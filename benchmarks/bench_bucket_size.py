"""How big should a DDP bucket be? all_reduce time against message size, and its knee.

    minimegatron run -n 8 benchmarks/bench_bucket_size.py [--max-mib 64]

One all-reduce of n bytes costs about t(n) = alpha + n / beta: a fixed latency
alpha (start-up, synchronisation, Python) plus the bytes at bandwidth beta.
Small buckets pay alpha again and again; one huge bucket cannot start until
backward is over, so nothing overlaps. The knee is where alpha stops
mattering: this prints, per size (float32, ``comm.all_reduce(op="mean",
out=...)`` as DDP calls it, median over repeats, slowest rank), the time,
the bus bandwidth 2(N-1)/N * n / t, and its share of the best bandwidth
measured; then alpha (the smallest size's time), the size from which half
the best bandwidth is reached (latency = half the time), and the
recommendation: the smallest size whose bandwidth reaches KNEE_SHARE of the
best. Bandwidth can fall again past the caches; the knee ignores that.
"""
import argparse
import time

import numpy as np
from mpi4py import MPI

from minimegatron import comm
from minimegatron.comm import comm_check, polling, trace
from minimegatron.runtime import threads

KNEE_SHARE = 0.8


def timed(g, x, out, repeats):
    """Median seconds of one all_reduce, the slowest rank's."""
    times = []
    for _ in range(repeats):
        g.comm.Barrier()
        start = time.perf_counter()
        comm.all_reduce(x, g, op="mean", out=out)
        times.append(time.perf_counter() - start)
    return g.comm.allreduce(float(np.median(times)), op=MPI.MAX)


def main(argv=None):
    comm_check.disable()      # benchmarks time the collectives alone (docs/notes_comm.md)
    parser = argparse.ArgumentParser()
    parser.add_argument("--max-mib", type=int, default=64)
    opts = parser.parse_args(argv)
    g = comm.world()
    trace.disable()
    sizes = [1 << k for k in range(12, 21 + int(np.log2(opts.max_mib)))]
    seconds = []
    for nbytes in sizes:
        x, out = np.ones(nbytes // 4, np.float32), np.empty(nbytes // 4, np.float32)
        comm.all_reduce(x, g, op="mean", out=out)                      # warm up
        seconds.append(timed(g, x, out, int(np.clip((1 << 24) // nbytes, 5, 41))))
    bus = [2 * (g.size - 1) / g.size * n / t for n, t in zip(sizes, seconds)]
    best = max(bus)
    comm.print0(f"{g.size} ranks, {threads.cores()} cores, waits: "
                f"{'spin' if polling.spins() else 'yield'}; float32 all_reduce(op='mean')")
    comm.print0(f"{'size':>8}{'time (us)':>12}{'bus GB/s':>10}{'of best':>9}")
    for n, t, b in zip(sizes, seconds, bus):
        comm.print0(f"{_label(n):>8}{t * 1e6:>12.1f}{b / 1e9:>10.2f}{b / best:>9.2f}")
    knee = next(n for n, b in zip(sizes, bus) if b >= KNEE_SHARE * best)
    half = next(n for n, b in zip(sizes, bus) if b >= best / 2)
    comm.print0(f"latency alpha ~ t({_label(sizes[0])}) = {seconds[0] * 1e6:.1f} us; best bus "
                f"bandwidth {best / 1e9:.2f} GB/s; half of it from {_label(half)}")
    comm.print0(f"knee: smallest size with >= {KNEE_SHARE:.0%} of the best bus bandwidth = "
                f"{_label(knee)} ({knee} bytes)")


def _label(nbytes):
    if nbytes >= 1 << 20:
        return f"{nbytes / 2 ** 20:g}M"
    return f"{nbytes / 2 ** 10:g}K"


if __name__ == "__main__":
    import minimegatron.runtime
    minimegatron.runtime.setup()      # as every tutorial: heap kept, BLAS threads, abort hook
    main()
