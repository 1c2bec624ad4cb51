"""The MPI layer, read second: every collective a scheme calls, on arrays, over a Group.

    from minimegatron import comm
    comm.all_reduce(x, grid.tp)            # blocking: returns the result
    h = comm.iall_reduce(x, grid.dp); ...; h.wait()   # nonblocking: start, overlap, wait

collectives.py  Group, world(), every collective (blocking and nonblocking), p2p, *_object
comm_check.py   ranks agree on a call (op, dtype, shape, root) before any data moves
staging.py      host staging and preallocated outputs (C-contiguous host buffers for MPI)
polling.py      how a rank waits (spin when it has a core, yield when ranks share one)
bound.py        persistent (bound) all-reduce: DDP's fast path
trace.py        one span per collective and compute step: the timeline and byte counters
"""
from minimegatron.comm.collectives import (  # noqa: F401
    ABORT_GRACE_S, MAX_DIMS, OPS, Group, Handle, all_gather, all_reduce, all_to_all,
    all_to_allv, allgather_object, alltoall_object, barrier, bcast_object, broadcast,
    check_peer, chunk_sizes, gather, gather_object, iall_gather, iall_reduce, iall_to_all,
    iall_to_allv, ibroadcast, install_abort_hook, irecv, ireduce_scatter, isend, print0,
    print_ranks, recv, reduce, reduce_scatter, scatter, send, world)
