"""comm.py vs raw mpi4py buffer calls: how much does the wrapper cost?

    minimegatron run -n 8 benchmarks/bench_comm.py [--max-mib 16]

For each op and message size (1 KiB .. 16 MiB, float64) both versions run in
the same job, interleaved, and the median time of each is kept. The ratio is
raw time / comm time = comm bandwidth / raw bandwidth (1.0 = no overhead;
target >= 0.9 from 64 KiB up). send/recv is a ping-pong between ranks 0 and 1;
allreduce_ip is the in-place all-reduce. The raw calls reuse preallocated
outputs, while comm returns a fresh array (its first touch costs page faults
at MiB sizes); the in-place row shows the wrapper without that cost.
"""
import argparse
import time

import numpy as np
from mpi4py import MPI

from minimegatron import comm, comm_check, trace


def raw_and_wrapped(g, n):
    """{op: (raw call, comm call)} on float64 arrays of n elements."""
    raw, x = g.comm, np.ones(n)
    out, full = np.empty(n * g.size), np.ones(n * g.size)
    chunk = np.empty(n)
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
        "all_reduce": (lambda: raw.Allreduce(x, chunk), lambda: comm.all_reduce(x, g)),
        "allreduce_ip": (lambda: raw.Allreduce(MPI.IN_PLACE, x),
                         lambda: comm.all_reduce(x, g, inplace=True)),
        "all_gather": (lambda: raw.Allgather(x, out), lambda: comm.all_gather(x, g)),
        "broadcast": (lambda: raw.Bcast(x, root=0), lambda: comm.broadcast(x, g, root=0)),
        "scatter": (lambda: raw.Scatter(full, chunk, root=0),
                    lambda: comm.scatter(full if g.rank == 0 else None, g, root=0)),
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
    comm.print0(f"{g.size} ranks; ratio = raw time / comm time (bandwidth ratio)")
    comm.print0(f"{'op':<13}" + "".join(f"{_label(s):>9}" for s in sizes))
    rows = {}
    for nbytes in sizes:
        repeats = int(np.clip((1 << 20) // nbytes, 3, 15))
        for op, (raw_fn, comm_fn) in raw_and_wrapped(g, nbytes // 8).items():
            raw_fn(), comm_fn()  # warm up
            raw_t, comm_t = [], []
            for _ in range(repeats):
                raw_t.append(timed(g, raw_fn))
                comm_t.append(timed(g, comm_fn))
            rows.setdefault(op, []).append(np.median(raw_t) / np.median(comm_t))
    for op, ratios in rows.items():
        comm.print0(f"{op:<13}" + "".join(f"{r:>9.2f}" for r in ratios))


def _label(nbytes):
    return f"{nbytes >> 20}M" if nbytes >= 1 << 20 else f"{nbytes >> 10}K"


if __name__ == "__main__":
    main()
