"""The MPI layer, read second: every collective a scheme calls, on arrays, over a Group.

    from minimegatron import comm
    comm.all_reduce(x, grid.tp)            # blocking: returns the result
    h = comm.iall_reduce(x, grid.dp); ...; h.wait()   # nonblocking: start, overlap, wait

group.py        Group (a named communicator) and world()
collectives.py  every blocking collective: check arguments, the MPI call, the trace record
nonblocking.py  the i* forms: start now, Handle.wait() later
--- behind group.comm, the seam (skip on a first read) ---
checked.py      the checked communicator: what guards each call, as PMPI tools wrap MPI
comm_check.py   ranks agree on a call (op, dtype, shape, root) before any data moves
agreement.py    ranks agree on what sizes cannot show (cp split, schedule, ...) at construction
staging.py      host staging and preallocated outputs (C-contiguous host buffers for MPI)
wire.py         bf16 / fp8 on the wire: moved as uint16 / uint8 views, reduced in float32
polling.py      how a rank waits (spin when it has a core, yield when ranks share one)
ending.py       one failing rank ends the job, naming it (installed by the first world())
bound.py        persistent (bound) all-reduce: DDP's fast path
trace.py        one span per collective and compute step: the timeline and byte counters
"""
from minimegatron.comm.group import Group, world
from minimegatron.comm.collectives import (
    MAX_DIMS, OPS, all_gather, all_reduce, all_to_all, all_to_allv, allgather_object,
    alltoall_object, barrier, bcast_object, broadcast, check_peer, chunk_sizes, gather,
    gather_object, print0, print_ranks, recv, reduce, reduce_scatter,
    scatter, send)
from minimegatron.comm.nonblocking import (
    Handle, iall_gather, iall_reduce, iall_to_all, iall_to_allv, ibroadcast, irecv,
    ireduce_scatter, isend)

__all__ = ["Group", "world", "MAX_DIMS", "OPS", "all_gather", "all_reduce", "all_to_all",
           "all_to_allv", "allgather_object", "alltoall_object", "barrier", "bcast_object",
           "broadcast", "check_peer", "chunk_sizes", "gather", "gather_object",
           "print0", "print_ranks", "recv", "reduce", "reduce_scatter",
           "scatter", "send", "Handle", "iall_gather", "iall_reduce", "iall_to_all",
           "iall_to_allv", "ibroadcast", "irecv", "ireduce_scatter", "isend"]
