"""The blocking collectives: each one reads top to bottom, check, MPI call, trace record.

(nonblocking.py holds the ``i*`` forms, which return a Handle to wait on later;
bound.py an all-reduce whose buffer is bound once, for DDP.)

Every array collective below is one visible mpi4py BUFFER-API call
(``Allreduce``, ``Allgather``, ``Bcast``...) on a contiguous host array; the
lowercase pickle API is used only by the ``*_object`` functions, for small
metadata. Each function does, in this order:

    1. validate its arguments and prepare the buffers (staging.py; a bad ``out=``
       raises ValueError before any MPI call);
    2. the MPI call on ``group.comm``;
    3. ``trace.record_comm``: one span (op, group, bytes, start, end) per call.

What guards the call sits behind ``group.comm`` (checked.py), as MPI's profiling
interface lets a checker wrap a program: in checking mode the ranks first agree on
the call (comm_check.py: one 48-byte all-reduce), a send carries its signature,
and when ranks share cores a blocking call yields while it waits (polling.py).

Semantics, for a group of N ranks and arrays split along ``axis``::

    all_reduce(x)      every rank gets  x_0 + x_1 + ... + x_{N-1}   (or max, or mean)
    reduce(x)          the root gets it, the others get None
    broadcast(x)       every rank gets the root's x (written into x)
    scatter(x)         rank r gets chunk r of the root's x
    gather(x)          the root gets cat(x_0, ..., x_{N-1}), the others None
    all_gather(x)      every rank gets cat(x_0, ..., x_{N-1})
    reduce_scatter(x)  rank r gets chunk r of x_0 + ... + x_{N-1}
    all_to_all(x)      rank r gets cat(chunk r of x_0, ..., chunk r of x_{N-1})

Chunks follow ``numpy.array_split``: a length L that N does not divide gives
the first L mod N ranks one extra row (v-variants: ``Scatterv``,
``Reduce_scatter``). Gathers assume equal shapes unless ``sizes`` (each rank's
length along ``axis``) is given, which selects ``Gatherv``/``Allgatherv``.
all_to_all needs N to divide ``axis``; ``all_to_allv`` takes the rows each rank
sends to and receives from every other.

Preallocated outputs: ``out=`` (all_reduce, reduce, all_gather, reduce_scatter,
scatter, gather, all_to_all) receives the result and is returned. MPI writes
straight into it when it is a contiguous host array and ``axis`` is 0;
otherwise the result is copied in. broadcast and recv fill their argument.
CuPy arrays are staged through pinned host memory unless MPI is CUDA-aware.

``@waits("all_reduce")`` marks where a rank waits: the hang report
(runtime/hang_report.py) names the marked function, its ``group`` and peer. The
decorator returns the function unchanged.
"""
import sys

import numpy as np
from mpi4py import MPI

from minimegatron.backend import get_backend
from minimegatron.comm import staging, trace, wire
from minimegatron.comm.group import world
from minimegatron.comm.waits import waits

OPS = {"sum": MPI.SUM, "mean": MPI.SUM, "max": MPI.MAX, "min": MPI.MIN}
MAX_DIMS = 14


def chunk_sizes(length, parts):
    """Rows per rank when ``length`` rows are split over ``parts`` ranks (array_split)."""
    base, extra = divmod(int(length), parts)
    return [base + (r < extra) for r in range(parts)]


def counts(rows, row_elems):
    """(element counts, displacements) of the v-variants for ``rows`` rows per rank."""
    sizes = [r * row_elems for r in rows]
    return sizes, [sum(sizes[:r]) for r in range(len(sizes))]


def mpi_op(op, dtype):
    """MPI's reduction for "sum", "mean" (a sum, divided after), "max" or "min"."""
    if op not in OPS:
        raise ValueError(f"unknown reduction op {op!r}; choose one of {sorted(OPS)}")
    if op == "mean" and not np.issubdtype(np.dtype(dtype), np.floating):
        raise ValueError(f"op='mean' needs a floating dtype, got {np.dtype(dtype)}")
    return OPS[op]


def check_peer(op, peer, group, wildcard=False):
    """ValueError (one line) unless ``peer`` is a rank of ``group`` (0 .. size-1), or
    MPI.PROC_NULL, or MPI.ANY_SOURCE for a receive: not MPI's raw "Invalid rank" stack."""
    allowed = (MPI.PROC_NULL, MPI.ANY_SOURCE) if wildcard else (MPI.PROC_NULL,)
    try:
        index = int(peer.__index__())
    except (AttributeError, TypeError):
        index = None
    if index is None or isinstance(peer, bool) or not (0 <= index < group.size
                                                       or index in allowed):
        word = "to" if op == "send" else "from"
        raise ValueError(f"{op} {word} rank {peer!r} of group {group.name!r}, which has ranks "
                         f"0..{group.size - 1} (world ranks {list(group.ranks)}): a peer is "
                         "a rank of the group it is given")
    return index


# --- the collectives ---------------------------------------------------------------------------

@wire.carries("reduce")
@waits("all_reduce")
def all_reduce(x, group, op="sum", inplace=False, out=None):
    """x_0 + ... + x_{N-1} (or mean, max, min) on every rank: ``Allreduce``.

    ``inplace`` writes the result into x (and returns x); ``out`` receives it.
    """
    if inplace and out is not None:
        raise ValueError("all_reduce: inplace=True and out= exclude each other")
    if not inplace:
        result, finish = staging.output(out, x.shape, x.dtype, x, 0, "all_reduce")
    reduce_op, (host, copied) = mpi_op(op, x.dtype), staging.host(x)
    start = trace.now()
    if inplace:
        group.comm.Allreduce(MPI.IN_PLACE, host, op=reduce_op)
        result = host
    else:
        group.comm.Allreduce(host, result, op=reduce_op)
    if op == "mean":
        result /= group.size
    if inplace:
        result = staging.copy_back(host, x) if copied else x
    else:
        result = finish(result)
    trace.record_comm("all_reduce", group.name, x.nbytes, start, trace.now(), group.size)
    return result


@wire.carries("move")
@waits("all_gather")
def all_gather(x, group, axis=0, sizes=None, out=None):
    """cat(x_0, ..., x_{N-1}) along ``axis`` on every rank: ``Allgather`` (``Allgatherv``
    when ``sizes``, each rank's length along ``axis``, is given)."""
    rows = x.shape[axis] * group.size if sizes is None else sum(int(s) for s in sizes)
    moved = (rows,) + staging.without(x.shape, axis)                  # (N * rows, ...)
    result, finish = staging.output(out, moved, x.dtype, x, axis, "all_gather")
    host = staging.front(x, axis)                               # (rows, ...) axis in front
    start = trace.now()
    if sizes is None:
        group.comm.Allgather(host, result)
    else:
        spec = [result, *counts([int(s) for s in sizes], int(np.prod(host.shape[1:]))),
                staging.mpi_type(x.dtype)]
        group.comm.Allgatherv(host, spec)
    trace.record_comm("all_gather", group.name, x.nbytes, start, trace.now(), group.size,
                      n=result.nbytes, own=host.nbytes)
    return finish(result)


@wire.carries("reduce")
@waits("reduce_scatter")
def reduce_scatter(x, group, axis=0, op="sum", out=None):
    """Chunk r (along ``axis``) of x_0 + ... + x_{N-1} on rank r: ``Reduce_scatter_block``
    (``Reduce_scatter`` when N does not divide the axis)."""
    rows = chunk_sizes(x.shape[axis], group.size)
    moved = (rows[group.rank],) + staging.without(x.shape, axis)
    result, finish = staging.output(out, moved, x.dtype, x, axis, "reduce_scatter")
    reduce_op, host = mpi_op(op, x.dtype), staging.front(x, axis)
    start = trace.now()
    if len(set(rows)) == 1:
        group.comm.Reduce_scatter_block(host, result, op=reduce_op)
    else:
        group.comm.Reduce_scatter(host, result, counts(rows, int(np.prod(host.shape[1:])))[0],
                                 op=reduce_op)
    if op == "mean":
        result /= group.size
    trace.record_comm("reduce_scatter", group.name, x.nbytes, start, trace.now(), group.size,
                      own=result.nbytes)
    return finish(result)


def check_all_to_all(x, group, axis):
    """ValueError (before any MPI call) unless N divides x's ``axis``."""
    if x.ndim == 0 or x.shape[axis] % group.size:
        length = None if x.ndim == 0 else x.shape[axis]
        raise ValueError(f"all_to_all: axis {axis} of length {length} does not split into "
                         f"{group.size} equal chunks (one per rank of {group.name!r})")


@wire.carries("move")
@waits("all_to_all")
def all_to_all(x, group, axis=0, out=None):
    """Chunk j (along ``axis``) of x goes to rank j; chunk r of the result is what rank r
    sent here: ``Alltoall``. Every rank sends (N-1)/N of x and receives as much.

    With x_q = [x_q^0; ...; x_q^{N-1}] on rank q, rank r gets [x_0^r; ...; x_{N-1}^r]:
    the transpose of the (sender, chunk) table, so doing it twice gives x back.
    """
    check_all_to_all(x, group, axis)
    moved = (x.shape[axis],) + staging.without(x.shape, axis)
    result, finish = staging.output(out, moved, x.dtype, x, axis, "all_to_all")
    host = staging.front(x, axis)                                # (N*c, ...) chunks in front
    start = trace.now()
    group.comm.Alltoall(host, result)
    trace.record_comm("all_to_all", group.name, x.nbytes, start, trace.now(), group.size)
    return finish(result)


def check_all_to_allv(x, group, send_sizes, recv_sizes, axis):
    """The sizes as ints; ValueError unless they fit the group and x's ``axis``."""
    N = group.size
    send_sizes, recv_sizes = [int(s) for s in send_sizes], [int(s) for s in recv_sizes]
    if len(send_sizes) != N or len(recv_sizes) != N or x.ndim == 0 or \
            sum(send_sizes) != x.shape[axis] or min(send_sizes + recv_sizes) < 0:
        raise ValueError(f"all_to_allv: send_sizes {send_sizes} and recv_sizes {recv_sizes} "
                         f"need {N} entries >= 0, send_sizes summing to x's axis {axis} "
                         f"(shape {tuple(x.shape)})")
    return send_sizes, recv_sizes


@wire.carries("move")
@waits("all_to_allv")
def all_to_allv(x, group, send_sizes, recv_sizes, axis=0):
    """Rows ``send_sizes[j]`` of x (along ``axis``, in rank order) go to rank j;
    ``recv_sizes[i]`` rows come from rank i, in rank order: ``Alltoallv``.

    Every rank's ``send_sizes[r]`` must equal rank r's ``recv_sizes`` entry for it
    (the caller knows both sides; ``alltoall_object`` can exchange them). In checking
    mode the checked communicator verifies that (comm_check.check_counts) and names both
    sides when it does not hold.
    """
    send_sizes, recv_sizes = check_all_to_allv(x, group, send_sizes, recv_sizes, axis)
    result = staging.empty((sum(recv_sizes),) + staging.without(x.shape, axis), x.dtype, x)
    host = staging.front(x, axis)
    row, mpi_type = int(np.prod(host.shape[1:])), staging.mpi_type(host.dtype)
    start = trace.now()
    group.comm.Alltoallv([host, *counts(send_sizes, row), mpi_type],
                        [result, *counts(recv_sizes, row), mpi_type])
    own = send_sizes[group.rank] * row * host.dtype.itemsize
    trace.record("all_to_allv", group.name, x.nbytes, x.nbytes - own, result.nbytes - own,
                 start, trace.now())
    return staging.back(result, axis, x)


@wire.carries("move")
@waits("broadcast")
def broadcast(x, group, root=0):
    """The root's x copied into x on every rank: ``Bcast`` (x is filled in place)."""
    host, copied = staging.host(x)
    start = trace.now()
    group.comm.Bcast(host, root=root)
    if copied:
        staging.copy_back(host, x)
    trace.record_comm("broadcast", group.name, x.nbytes, start, trace.now(), group.size,
                      is_root=group.rank == root)
    return x


@wire.carries("reduce")
@waits("reduce")
def reduce(x, group, root=0, op="sum", out=None):
    """x_0 + ... + x_{N-1} on the root, None elsewhere: ``Reduce`` (``out``: the root's)."""
    result, finish = staging.output(out, tuple(x.shape), x.dtype, x, 0, "reduce")
    reduce_op, (host, _), is_root = mpi_op(op, x.dtype), staging.host(x), group.rank == root
    start = trace.now()
    group.comm.Reduce(host, result if is_root else None, op=reduce_op, root=root)
    if is_root and op == "mean":
        result /= group.size
    trace.record_comm("reduce", group.name, x.nbytes, start, trace.now(), group.size,
                      is_root=is_root)
    return finish(result) if is_root else None


@waits("scatter")
def scatter(x, group, root=0, axis=0, out=None):
    """Chunk r (along ``axis``) of the root's x on rank r: ``Scatter`` (``Scatterv`` when
    N does not divide the axis). Non-root ranks may pass None.

    The root first broadcasts a small int64 header [dtype char, ndim, *shape]
    (``Bcast``, traced as "scatter_header"), so the other ranks can size their
    receive buffers; a bad ``out`` on a non-root rank is found after the header,
    before the data moves.
    """
    is_root, N = group.rank == root, group.size
    header = np.zeros(MAX_DIMS + 2, np.int64)
    if is_root:
        if x.ndim > MAX_DIMS:
            raise ValueError(f"scatter supports up to {MAX_DIMS} dims, got {x.ndim}")
        header[:x.ndim + 2] = [ord(np.dtype(x.dtype).char), x.ndim, *x.shape]
    start = trace.now()
    group.comm.Bcast(header, root=root)
    trace.record("scatter_header", group.name, header.nbytes, 0, 0, start, trace.now())
    dtype, shape = wire.dtype_of(chr(header[0])), tuple(int(s) for s in header[2:2 + header[1]])
    axis = axis % len(shape)
    moved = (shape[axis],) + shape[:axis] + shape[axis + 1:]
    rows = chunk_sizes(moved[0], N)
    like = x if x is not None else get_backend().empty(0, dtype)
    result, finish = staging.output(out, (rows[group.rank],) + moved[1:], dtype, like, axis,
                                    "scatter")
    host = wire.plain(staging.front(x, axis)) if is_root else None       # bf16: as uint16
    start = trace.now()
    if len(set(rows)) == 1:
        group.comm.Scatter(host, wire.plain(result), root=root)
    else:
        spec = [host, *counts(rows, int(np.prod(moved[1:]))),
                staging.mpi_type(wire.plain(result).dtype)]
        group.comm.Scatterv(spec if is_root else None, wire.plain(result), root=root)
    full = int(np.prod(shape)) * dtype.itemsize
    trace.record_comm("scatter", group.name, full if is_root else result.nbytes, start,
                      trace.now(), N, n=full, own=result.nbytes, is_root=is_root)
    return finish(result)


@wire.carries("move")
@waits("gather")
def gather(x, group, root=0, axis=0, sizes=None, out=None):
    """cat(x_0, ..., x_{N-1}) along ``axis`` on the root, None elsewhere: ``Gather``
    (``Gatherv`` when ``sizes`` is given; ``out``: the root's)."""
    is_root = group.rank == root
    rows = [x.shape[axis]] * group.size if sizes is None else [int(s) for s in sizes]
    moved = (sum(rows),) + staging.without(x.shape, axis)
    result, finish = staging.output(out, moved, x.dtype, x, axis, "gather")
    host = staging.front(x, axis)
    start = trace.now()
    if sizes is None:
        group.comm.Gather(host, result if is_root else None, root=root)
    else:
        spec = [result, *counts(rows, int(np.prod(host.shape[1:]))), staging.mpi_type(x.dtype)]
        group.comm.Gatherv(host, spec if is_root else None, root=root)
    full = sum(rows) * int(np.prod(host.shape[1:])) * host.dtype.itemsize
    trace.record_comm("gather", group.name, x.nbytes, start, trace.now(), group.size, n=full,
                      own=host.nbytes, is_root=is_root)
    return finish(result) if is_root else None


@waits("barrier")
def barrier(group):
    """Every rank of the group arrives before any leaves: ``Barrier``."""
    start = trace.now()
    group.comm.Barrier()
    trace.record("barrier", group.name, 0, 0, 0, start, trace.now())


@wire.carries("move")
@waits("send")
def send(x, dest, group, tag=0):
    """Send x to group rank ``dest``: ``Send`` (checking mode: x's signature goes first)."""
    dest = check_peer("send", dest, group)
    host, _ = staging.host(x)
    start = trace.now()
    group.comm.Send(host, dest=dest, tag=tag)
    trace.record("send", group.name, x.nbytes, x.nbytes, 0, start, trace.now())


@wire.carries("move")
@waits("recv")
def recv(buf, source, group, tag=0):
    """Receive into ``buf`` from group rank ``source``: ``Recv``; returns buf.

    Checking mode first receives the sender's signature and compares it (checked.py).
    """
    source = check_peer("recv", source, group, wildcard=True)
    host, copied = staging.host(buf)
    start = trace.now()
    group.comm.Recv(host, source=source, tag=tag)
    if copied:
        staging.copy_back(host, buf)
    trace.record("recv", group.name, buf.nbytes, 0, buf.nbytes, start, trace.now())
    return buf


# --- small Python objects (pickle API, metadata only) --------------------------------------

@waits("bcast_object")
def bcast_object(obj, group, root=0):
    return group.comm.bcast(obj, root=root)


@waits("gather_object")
def gather_object(obj, group, root=0):
    return group.comm.gather(obj, root=root)


@waits("allgather_object")
def allgather_object(obj, group):
    return group.comm.allgather(obj)


@waits("alltoall_object")
def alltoall_object(objs, group):
    """objs[j] goes to rank j; returns the list of what each rank sent here."""
    return group.comm.alltoall(objs)


# --- printing and failing -------------------------------------------------------------------

def print0(*args, **kw):
    """print on world rank 0 only, flushed."""
    if MPI.COMM_WORLD.Get_rank() == 0:
        print(*args, **kw, flush=True)


def print_ranks(text, group=None):
    """Every rank's text, printed by the group's rank 0 in rank order as "[rank r] ..."."""
    group = world() if group is None else group
    texts = gather_object(str(text), group, root=0)
    if group.rank == 0:
        for rank, t in zip(group.ranks, texts):
            print("\n".join(f"[rank {rank}] {line}" for line in t.splitlines() or [""]))
        sys.stdout.flush()
