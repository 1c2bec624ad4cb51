"""Small collectives: comm.all_reduce and comm.all_gather against raw mpi4py, side by side.

    minimegatron run -n 2 benchmarks/bench_comm_small.py [--repeats 21]

A tensor-parallel layer makes four small collectives per step, so what the
wrapper costs per call (validation, the ranks' agreement check, the trace
record) is most of a small model's step. For float32 arrays of 4 KiB and
64 KiB, in ONE job, interleaved sample by sample, each way is timed over a
loop of calls (the slowest rank's time per call); the median sample is kept:

    raw        g.raw.Allreduce(x, buf) / g.raw.Allgather(x, buf)     preallocated buf
    out        comm.all_reduce(x, g, out=o) / comm.all_gather(x, g, out=o), checks off
    fresh      comm.all_reduce(x, g), a new result array each call, checks off
    checked    ``out`` with checking mode on (the default: comm_check.py)

Printed: the raw time per call (us) and ratio = raw time / time of each way
(1.0 = as fast as MPI's blocking call). The trace stays on, as in training.
Then the Python work per call, which a loaded machine's noise does not hide:
CPU time of ``out`` minus raw on a group of one rank (``COMM_SELF``: MPI only
copies), median of 9 loops of 5,000 calls, on rank 0; and what checking mode adds
in Python besides its one 48-byte Allreduce (``comm_check.check`` on a stub 2-rank
group whose Allreduce does nothing).
Figures and the machine they came from: docs/performance.md, "Small collectives".
"""
import argparse
import time

import numpy as np
from mpi4py import MPI

from minimegatron import comm
from minimegatron.comm import Group
from minimegatron.comm import comm_check, polling
from minimegatron.runtime import threads

SIZES = (4 << 10, 64 << 10)
WAYS = ("raw", "out", "fresh", "checked")


def ways(g, op, nbytes):
    """{way: (one call, checking on?)} for ``op`` on a float32 array of ``nbytes``."""
    x = np.ones(nbytes // 4, np.float32)
    if op == "all_reduce":
        buf, out = np.empty_like(x), np.empty_like(x)
        return {"raw": (lambda: g.raw.Allreduce(x, buf), False),
                "out": (lambda: comm.all_reduce(x, g, out=out), False),
                "fresh": (lambda: comm.all_reduce(x, g), False),
                "checked": (lambda: comm.all_reduce(x, g, out=out), True)}
    buf, out = np.empty(x.size * g.size, np.float32), np.empty(x.size * g.size, np.float32)
    return {"raw": (lambda: g.raw.Allgather(x, buf), False),
            "out": (lambda: comm.all_gather(x, g, out=out), False),
            "fresh": (lambda: comm.all_gather(x, g), False),
            "checked": (lambda: comm.all_gather(x, g, out=out), True)}


def timed(g, fn, calls, checked):
    """Seconds per call of ``fn`` over ``calls`` calls, the slowest rank's."""
    with comm_check.checking(checked):
        g.raw.Barrier()
        start = time.perf_counter()
        for _ in range(calls):
            fn()
        elapsed = (time.perf_counter() - start) / calls
    return g.raw.allreduce(elapsed, op=MPI.MAX)


def measure(g, op, nbytes, repeats):
    """{way: median seconds per call}, the ways interleaved sample by sample."""
    fns, calls = ways(g, op, nbytes), 400 if nbytes <= 4096 else 100
    samples = {way: [] for way in WAYS}
    for fn, checked in fns.values():
        timed(g, fn, calls // 4, checked)                      # warm up
    for _ in range(repeats):
        for way in WAYS:
            fn, checked = fns[way]
            samples[way].append(timed(g, fn, calls, checked))
    return {way: float(np.median(t)) for way, t in samples.items()}


def python_work(op):
    """Microseconds of CPU time comm adds to the raw call, on a one-rank group."""
    alone = Group(MPI.COMM_SELF, "self")
    fns = ways(alone, op, 4096)

    def cpu(fn):
        loops = []
        for _ in range(9):
            start = time.process_time()
            for _ in range(5000):
                fn()
            loops.append((time.process_time() - start) / 5000)
        return float(np.median(loops))
    with comm_check.checking(False):
        return (cpu(fns["out"][0]) - cpu(fns["raw"][0])) * 1e6


class StubMPI:
    """A communicator stand-in whose Allreduce does nothing: with IN_PLACE the check's
    signature keeps this rank's values, so max == min holds and the check passes."""

    def Allreduce(self, sendbuf, recvbuf, op=None):
        pass


class StubGroup:
    """A 2-rank group whose check calls reach StubMPI: the check's Python alone."""
    size, rank, name, ranks, mpi = 2, 0, "stub", (0, 1), StubMPI()


def check_work(op):
    """Microseconds of CPU time the check adds per call (its one Allreduce stubbed out)."""
    x = np.ones(1024, np.float32)
    group = StubGroup()
    kwargs = {"reduce_op": "sum"} if op == "all_reduce" else {"axis": 0}

    def cpu(on):
        loops = []
        with comm_check.checking(on):
            for _ in range(9):
                start = time.process_time()
                for _ in range(5000):
                    comm_check.check(group, op, x, **kwargs)
                loops.append((time.process_time() - start) / 5000)
        return float(np.median(loops))
    return (cpu(True) - cpu(False)) * 1e6


def main(argv=None):
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=21)
    opts = parser.parse_args(argv)
    g = comm.world()
    comm.print0(f"{g.size} ranks, {threads.cores()} cores, waits: "
                f"{'spin' if polling.spins() else 'yield'}, float32, median of "
                f"{opts.repeats}; ratio = raw time / time")
    comm.print0(f"{'op':<12}{'size':>6}{'raw (us)':>10}" + "".join(f"{w:>9}" for w in WAYS[1:]))
    for op in ("all_reduce", "all_gather"):
        for nbytes in SIZES:
            t = measure(g, op, nbytes, opts.repeats)
            comm.print0(f"{op:<12}{nbytes >> 10:>5}K{t['raw'] * 1e6:>10.2f}" +
                        "".join(f"{t['raw'] / t[w]:>9.2f}" for w in WAYS[1:]))
    if g.rank == 0:
        for op in ("all_reduce", "all_gather"):
            print(f"Python work per call, {op} 4K out=: {python_work(op):.2f} us; "
                  f"checks on add {check_work(op):.2f} us and one 48-byte Allreduce",
                  flush=True)


if __name__ == "__main__":
    import minimegatron.runtime
    minimegatron.runtime.setup()      # as every tutorial: heap kept, BLAS threads, abort hook
    main()
