"""comm/collectives.py vs raw mpi4py buffer calls: how much does the wrapper cost?

    minimegatron run -n 8 benchmarks/bench_comm.py [--max-mib 16]

For each op and message size (1 KiB .. 16 MiB, float64) both versions run in
the same job, interleaved, and the median time of each is kept. The ratio is
raw time / comm time = comm bandwidth / raw bandwidth (1.0 = no overhead;
target >= 0.9 from 4 KiB up). send/recv is a ping-pong between ranks 0 and 1;
allreduce_ip is the in-place all-reduce. The raw calls are MPI's blocking calls
into preallocated outputs, and comm gets preallocated outputs too (``out=``);
the all_reduce_new row lets comm return a fresh array each call (page faults
at MiB sizes). comm waits as it does by default (polling.py): MPI's blocking
call when each rank has a core, nonblocking + yielding when ranks share cores.
"""
import argparse
import time

import numpy as np
from mpi4py import MPI

from minimegatron import comm
from minimegatron.comm import comm_check, polling, trace
from minimegatron.runtime import threads


def raw_and_wrapped(g, n):
    """{op: (raw call, comm call)} on float64 arrays of n elements."""
    raw, x = g.comm, np.ones(n)
    out, full = np.empty(n * g.size), np.ones(n * g.size)
    chunk, mine, gathered = np.empty(n), np.empty(n), np.empty(n * g.size)  # raw's, comm's
    peer = 1 - g.rank if g.rank < 2 else None

    def raw_pingpong():
        if g.rank == 0:
            raw.Send(x, 1)
            raw.Recv(chunk, 1)
        elif g.rank == 1:
            raw.Recv(chunk, 0)
            raw.Send(x, 0)

    def comm_pingpong():
        if g.rank == 0:
            comm.send(x, peer, g)
            comm.recv(chunk, peer, g)
        elif g.rank == 1:
            comm.recv(chunk, peer, g)
            comm.send(x, peer, g)
    return {
        "all_reduce": (lambda: raw.Allreduce(x, chunk), lambda: comm.all_reduce(x, g, out=mine)),
        "all_reduce_new": (lambda: raw.Allreduce(x, chunk), lambda: comm.all_reduce(x, g)),
        "allreduce_ip": (lambda: raw.Allreduce(MPI.IN_PLACE, x),
                         lambda: comm.all_reduce(x, g, inplace=True)),
        "all_gather": (lambda: raw.Allgather(x, out),
                       lambda: comm.all_gather(x, g, out=gathered)),
        "reduce_scatter": (lambda: raw.Reduce_scatter_block(full, chunk),
                           lambda: comm.reduce_scatter(full, g, out=mine)),
        "broadcast": (lambda: raw.Bcast(x, root=0), lambda: comm.broadcast(x, g, root=0)),
        "scatter": (lambda: raw.Scatter(full, chunk, root=0),
                    lambda: comm.scatter(full if g.rank == 0 else None, g, root=0, out=mine)),
        "send_recv": (raw_pingpong, comm_pingpong),
    }


def timed(g, fn):
    g.comm.Barrier()
    start = time.perf_counter()
    fn()
    elapsed = time.perf_counter() - start
    return g.comm.allreduce(elapsed, op=MPI.MAX)  # the slowest rank sets the pace


def main(argv=None):
    comm_check.disable()      # benchmarks time the collectives alone (docs/notes_comm.md)
    parser = argparse.ArgumentParser()
    parser.add_argument("--max-mib", type=int, default=16)
    opts = parser.parse_args(argv)
    g = comm.world()
    trace.disable()
    sizes = [1 << k for k in range(10, 21 + int(np.log2(opts.max_mib)), 2)]
    comm.print0(f"{g.size} ranks, {threads.cores()} cores, waits: "
                f"{'spin' if polling.spins() else 'yield'}; ratio = raw time / comm time")
    comm.print0(f"{'op':<15}" + "".join(f"{_label(s):>9}" for s in sizes))
    rows = {}
    for nbytes in sizes:
        repeats = int(np.clip((1 << 22) // nbytes, 5, 41))
        for op, (raw_fn, comm_fn) in raw_and_wrapped(g, nbytes // 8).items():
            raw_fn(), comm_fn()  # warm up
            raw_t, comm_t = [], []
            for _ in range(repeats):
                raw_t.append(timed(g, raw_fn))
                comm_t.append(timed(g, comm_fn))
            rows.setdefault(op, []).append(np.median(raw_t) / np.median(comm_t))
    for op, ratios in rows.items():
        comm.print0(f"{op:<15}" + "".join(f"{r:>9.2f}" for r in ratios))


def _label(nbytes):
    return f"{nbytes >> 20}M" if nbytes >= 1 << 20 else f"{nbytes >> 10}K"


if __name__ == "__main__":
    import minimegatron.runtime
    minimegatron.runtime.setup()      # as every tutorial: heap kept, BLAS threads, abort hook
    main()
