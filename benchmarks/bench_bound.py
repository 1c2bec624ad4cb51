"""Bound (persistent) all-reduce vs raw MPI vs comm.all_reduce: what binding once buys.

    minimegatron run -n 2 benchmarks/bench_bound.py [--max-mib 16]
    minimegatron run -n 8 benchmarks/bench_bound.py

For each size (1 KiB .. 16 MiB, float64, zeros so that repeated in-place sums
stay put) five ways of summing one array over the world run in the same job,
interleaved, each timed over a loop of calls (many at small sizes):

    raw          comm.Allreduce(MPI.IN_PLACE, x, MPI.SUM)        MPI's blocking call
    raw_init     the bound request alone: req.Start(); req.Wait()  (MPI 4 only, else "-")
    bound        ar = bound.bind_all_reduce(x, g, inplace=True) once; ar()
    comm_ip      comm.all_reduce(x, g, inplace=True)
    comm_out     comm.all_reduce(x, g, out=o)

Printed: time per call of ``raw`` (us), then the ratio raw time / time of each
other way (1.0 = as fast as MPI's blocking call; target >= 0.9 from 4 KiB).
The trace stays ON (as in training: bound and comm both record a span per
call); checking mode is off, as in every benchmark. Median over the repeats.
"""
import argparse
import time

import numpy as np
from mpi4py import MPI

from minimegatron import comm
from minimegatron.comm import bound, comm_check, polling
from minimegatron.runtime import threads

WAYS = ("raw", "raw_init", "bound", "comm_ip", "comm_out")


def ways(g, n):
    """{way: one call} summing float64 arrays of n elements over group g."""
    x, out = np.zeros(n), np.empty(n)
    bound_ar = bound.bind_all_reduce(x, g, inplace=True)
    fns = {"raw": lambda: g.comm.Allreduce(MPI.IN_PLACE, x, MPI.SUM), "bound": bound_ar,
           "comm_ip": lambda: comm.all_reduce(x, g, inplace=True),
           "comm_out": lambda: comm.all_reduce(x, g, out=out)}
    if bound_ar.persistent:                   # MPI 4 (not Open MPI 4.1): the raw floor
        request = bound_ar.requests[0]

        def raw_init():
            request.Start()
            request.Wait()
        fns["raw_init"] = raw_init
    return fns


def timed(g, fn, calls):
    """Seconds per call of ``fn``, the slowest rank's."""
    g.comm.Barrier()
    start = time.perf_counter()
    for _ in range(calls):
        fn()
    elapsed = (time.perf_counter() - start) / calls
    return g.comm.allreduce(elapsed, op=MPI.MAX)


def main(argv=None):
    comm_check.disable()      # benchmarks time the collectives alone (docs/notes_comm.md)
    parser = argparse.ArgumentParser()
    parser.add_argument("--max-mib", type=int, default=16)
    parser.add_argument("--repeats", type=int, default=15)
    opts = parser.parse_args(argv)
    g = comm.world()
    sizes = [1 << k for k in range(10, 21 + int(np.log2(opts.max_mib)), 2)]
    library = " ".join(MPI.Get_library_version().split()[:3])        # "MPICH Version: 5.0.2"
    comm.print0(f"{g.size} ranks, {threads.cores()} cores, waits: "
                f"{'spin' if polling.spins() else 'yield'}; {library}; ratio = raw time / time")
    comm.print0(f"{'size':>6}{'raw us':>10}" + "".join(f"{w:>10}" for w in WAYS[1:]))
    for nbytes in sizes:
        calls = int(np.clip((1 << 20) // nbytes, 1, 200))
        fns = ways(g, nbytes // 8)
        for fn in fns.values():
            fn()                                              # warm up
        times = {w: [] for w in fns}
        for rep in range(max(3, opts.repeats if nbytes < 1 << 22 else opts.repeats // 3)):
            order = list(fns) if rep % 2 == 0 else list(fns)[::-1]   # alternate who is first
            for w in order:
                times[w].append(timed(g, fns[w], calls))
        med = {w: float(np.median(t)) for w, t in times.items()}
        comm.print0(f"{_label(nbytes):>6}{med['raw'] * 1e6:>10.1f}" + "".join(
            f"{med['raw'] / med[w]:>10.2f}" if w in med else f"{'-':>10}" for w in WAYS[1:]))
        fns["bound"].free()


def _label(nbytes):
    return f"{nbytes >> 20}M" if nbytes >= 1 << 20 else f"{nbytes >> 10}K"


if __name__ == "__main__":
    import minimegatron.runtime
    minimegatron.runtime.setup()      # as every tutorial: heap kept, BLAS threads, abort hook
    main()
