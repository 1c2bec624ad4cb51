"""What checking mode costs: all_reduce with and without the signature exchange.

    minimegatron run -n 2 benchmarks/bench_comm_check.py
    minimegatron run -n 4 benchmarks/bench_comm_check.py

Checking mode (minimegatron/comm/comm_check.py) makes one extra small blocking
``Allreduce`` (48 bytes) before every collective. For each size (1 KiB, 64 KiB, 1 MiB,
float64) the checked and the unchecked ``comm.all_reduce`` run in the same job,
interleaved, ``calls`` times per sample; the median sample of each is kept
(the slowest rank's time). Ratio = checked time / unchecked time (1.0 = free).
Other benchmarks call ``comm_check.disable()``; this one switches it per sample.
"""
import argparse
import time

import numpy as np
from mpi4py import MPI

from minimegatron import comm
from minimegatron.comm import comm_check, trace

SIZES = (1 << 10, 1 << 16, 1 << 20)


def sample(g, x, calls, checked):
    """Seconds for ``calls`` all-reduces of x, on the slowest rank."""
    with comm_check.checking(checked):
        g.comm.Barrier()
        start = time.perf_counter()
        for _ in range(calls):
            comm.all_reduce(x, g)
        elapsed = time.perf_counter() - start
    return g.comm.allreduce(elapsed, op=MPI.MAX)


def main(argv=None):
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=15)
    opts = parser.parse_args(argv)
    g = comm.world()
    trace.disable()
    comm.print0(f"{g.size} ranks; all_reduce float64, median of {opts.repeats} samples")
    comm.print0(f"{'size':>6}{'unchecked (us)':>16}{'checked (us)':>14}{'ratio':>8}")
    for nbytes in SIZES:
        x = np.ones(nbytes // 8)
        calls = max(2, min(200, (1 << 22) // nbytes))
        sample(g, x, calls, True), sample(g, x, calls, False)     # warm up
        times = {True: [], False: []}
        for _ in range(opts.repeats):
            for checked in (False, True):
                times[checked].append(sample(g, x, calls, checked) / calls)
        off, on = np.median(times[False]), np.median(times[True])
        label = f"{nbytes >> 20}M" if nbytes >= 1 << 20 else f"{nbytes >> 10}K"
        comm.print0(f"{label:>6}{off * 1e6:>16.1f}{on * 1e6:>14.1f}{on / off:>8.2f}")


if __name__ == "__main__":
    import minimegatron.runtime
    minimegatron.runtime.setup()      # as every tutorial: heap kept, BLAS threads, abort hook
    main()
