"""Process groups and array collectives: the module that talks to MPI.

(bound.py is its one sibling: an all-reduce whose buffer is bound once, for DDP.)

A ``Group`` wraps an mpi4py communicator. Every array collective below is one
visible mpi4py BUFFER-API call (``Iallreduce``, ``Iallgather``, ``Ibcast``...)
on a contiguous host array, after ``backend.sync()``; the lowercase pickle API
is used only by the ``*_object`` functions, for small metadata.

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
the first L mod N ranks one extra row (v-variants: ``Iscatterv``,
``Ireduce_scatter``). Gathers assume equal shapes unless ``sizes`` (each
rank's length along ``axis``) is given, which selects ``Igatherv``/``Iallgatherv``.
all_to_all needs N to divide ``axis``; ``all_to_allv`` (``Ialltoallv``) takes the
rows each rank sends to and receives from every other.

Waiting (polling.py): when every rank has a core of its own (``polling.spins()``)
a blocking form makes MPI's blocking call (``Allreduce``...), the latency path;
when the ranks outnumber the cores it is the nonblocking form followed by
``Handle.wait()``, which polls ``Test`` and calls ``os.sched_yield()`` between
polls, so a waiting rank does not steal the CPU from the rank that computes.
Either way ``Handle.wait()`` is where a rank waits (faults.py looks there).

Host staging and ``out=`` placement live in staging.py (no MPI call there).
Preallocated outputs: ``out=`` (all_reduce, reduce, all_gather, reduce_scatter,
scatter, gather and their ``i*`` forms) receives the result and is returned.
MPI writes straight into it when it is a contiguous host array and ``axis`` is
0; otherwise the result is copied in. A wrong shape, dtype or kind raises
ValueError before any MPI call. broadcast and recv already fill their argument.

CuPy arrays are staged through pinned host memory unless MPI is CUDA-aware
(``staging.CUDA_AWARE``). Every call is recorded in ``minimegatron.comm.trace``.

Checking mode (``comm_check``, on unless ``MINIMEGATRON_CHECK=0``): before any
data moves, each collective's ranks agree on its signature (op, shape, dtype,
root, reduce op, sizes) with one small ``Iallgather``, so a mismatch raises the
same ``CollectiveMismatch`` on every rank instead of garbage or a deadlock.
"""
import functools
import sys

import numpy as np
from mpi4py import MPI
from mpi4py.util.dtlib import from_numpy_dtype

from minimegatron.comm import comm_check, polling, staging, trace
from minimegatron.backend import get_backend
from minimegatron.comm.polling import wait_all

ABORT_GRACE_S = 0.5
OPS = {"sum": MPI.SUM, "mean": MPI.SUM, "max": MPI.MAX, "min": MPI.MIN}


class Group:
    """A communicator with a name: ``.comm``, ``.rank``, ``.size``, ``.ranks`` (world ranks)."""

    def __init__(self, comm, name):
        self.comm, self.name = comm, name
        self.rank, self.size = comm.Get_rank(), comm.Get_size()
        self.ranks = comm.Get_group().Translate_ranks(list(range(self.size)),
                                                      MPI.COMM_WORLD.Get_group())

    def split(self, color, key=None, name=None):
        """Collective: ranks with the same color form a new Group (ordered by key)."""
        comm = self.comm.Split(color, self.rank if key is None else key)
        return Group(comm, name or f"{self.name}.{color}")

    def __repr__(self):
        return f"Group({self.name!r}, rank={self.rank}, size={self.size}, ranks={self.ranks})"


_world = []


def world():
    """The Group of every process, named "world"."""
    if not _world:
        _world.append(Group(MPI.COMM_WORLD, "world"))
    return _world[0]


def _start(block, blocking, nonblocking, *args, **kw):
    """(requests, call): ``nonblocking(*args)`` started now, or, when ``block`` (the
    latency path), ``blocking(*args)`` not yet called: ``Handle.wait()`` calls it."""
    if block:
        return [], functools.partial(blocking, *args, **kw)
    return [nonblocking(*args, **kw)], None


class Handle:
    """A started operation: ``.test()`` -> bool, ``.wait()`` -> the result.

    ``started`` is ``_start``'s (requests, call); a blocking call is made in ``wait()``.
    ``peer``: the group rank a send or receive pairs with (the watchdog names it).
    """

    def __init__(self, op, group, started, finish, nbytes, sent, recv, keep=(), peer=None):
        self.op, self.group, self.finish, self.peer = op, group, finish, peer
        self.requests, self.call = started
        self.nbytes, self.sent, self.recv = nbytes, sent, recv
        self.keep = keep  # buffers MPI reads or writes until completion
        self.start, self.label = trace.now(), trace.current_label()
        self.done, self.result = False, None

    def _complete(self):
        self.result, self.done = self.finish(), True
        trace.record(self.op, self.group.name, self.nbytes, self.sent, self.recv,
                     self.start, trace.now(), label=self.label)

    def test(self):
        if not self.done and (self.call is not None or MPI.Request.Testall(self.requests)):
            self.wait()
        return self.done

    def wait(self):
        if not self.done:
            if self.requests:
                wait_all(self.requests)
            if self.call is not None:
                self.call()                       # MPI's blocking call: the rank waits here
            self._complete()
        return self.result


def chunk_sizes(length, parts):
    """Rows per rank when ``length`` rows are split over ``parts`` ranks (array_split)."""
    base, extra = divmod(int(length), parts)
    return [base + (r < extra) for r in range(parts)]


def _counts(rows, row_elems):
    counts = [r * row_elems for r in rows]
    return counts, [sum(counts[:r]) for r in range(len(counts))]


def _op(op, dtype):
    if op not in OPS:
        raise ValueError(f"unknown reduction op {op!r}; choose one of {sorted(OPS)}")
    if op == "mean" and not np.issubdtype(np.dtype(dtype), np.floating):
        raise ValueError(f"op='mean' needs a floating dtype, got {np.dtype(dtype)}")
    return OPS[op]


# --- nonblocking collectives (each one visible mpi4py call) --------------------------------
# ``block=True`` (the blocking forms, when polling.spins()) makes the blocking call instead.

def iall_reduce(x, group, op="sum", inplace=False, out=None, block=False):
    """Start x_0 + ... + x_{N-1} on every rank (``inplace`` writes the result into x)."""
    if inplace and out is not None:
        raise ValueError("all_reduce: inplace=True and out= exclude each other")
    if not inplace:
        result, finish = staging.output(out, tuple(x.shape), x.dtype, x, 0, "all_reduce")
    comm_check.check(group, "all_reduce", x, reduce_op=op)
    mpi_op, (host, copied) = _op(op, x.dtype), staging.host(x)
    n, N = x.nbytes, group.size
    if inplace:
        result = host
        started = _start(block, group.comm.Allreduce, group.comm.Iallreduce,
                         MPI.IN_PLACE, host, op=mpi_op)
    else:
        started = _start(block, group.comm.Allreduce, group.comm.Iallreduce,
                         host, result, op=mpi_op)

    def done():
        if op == "mean":
            result[...] /= N
        if inplace and copied:
            x[...] = staging.like(result, x)
            return x
        return x if inplace else finish(result)
    sent, recv = trace.bytes_moved("all_reduce", n, N)
    return Handle("all_reduce", group, started, done, n, sent, recv, keep=(host, result))


def iall_gather(x, group, axis=0, sizes=None, out=None, block=False):
    """Start cat(x_0, ..., x_{N-1}) along ``axis`` on every rank."""
    N = group.size
    rows = [x.shape[axis]] * N if sizes is None else [int(s) for s in sizes]
    moved = (sum(rows),) + staging.without(x.shape, axis)
    result, finish = staging.output(out, moved, x.dtype, x, axis, "all_gather")
    comm_check.check(group, "all_gather", x, axis=axis, sizes=sizes)
    host = staging.front(x, axis)
    if sizes is None:
        started = _start(block, group.comm.Allgather, group.comm.Iallgather, host, result)
    else:
        counts, displs = _counts(rows, int(np.prod(host.shape[1:])))
        spec = [result, counts, displs, from_numpy_dtype(result.dtype)]
        started = _start(block, group.comm.Allgatherv, group.comm.Iallgatherv, host, spec)
    moved = trace.bytes_moved("all_gather", result.nbytes, N, own=host.nbytes)
    return Handle("all_gather", group, started, lambda: finish(result), x.nbytes, *moved,
                  keep=(host, result))


def ireduce_scatter(x, group, axis=0, op="sum", out=None, block=False):
    """Start chunk r (along ``axis``) of x_0 + ... + x_{N-1} on rank r."""
    N = group.size
    rows = chunk_sizes(x.shape[axis], N)
    moved = (rows[group.rank],) + staging.without(x.shape, axis)
    result, finish = staging.output(out, moved, x.dtype, x, axis, "reduce_scatter")
    comm_check.check(group, "reduce_scatter", x, reduce_op=op, axis=axis)
    mpi_op, host = _op(op, x.dtype), staging.front(x, axis)
    if len(set(rows)) == 1:
        started = _start(block, group.comm.Reduce_scatter_block,
                         group.comm.Ireduce_scatter_block, host, result, op=mpi_op)
    else:
        counts, _ = _counts(rows, int(np.prod(host.shape[1:])))
        started = _start(block, group.comm.Reduce_scatter, group.comm.Ireduce_scatter,
                         host, result, counts, op=mpi_op)

    def done():
        if op == "mean":
            result[...] /= N
        return finish(result)
    moved = trace.bytes_moved("reduce_scatter", x.nbytes, N, own=result.nbytes)
    return Handle("reduce_scatter", group, started, done, x.nbytes, *moved,
                  keep=(host, result))


def _check_all_to_all(x, group, axis):
    """ValueError (before any MPI call) unless N divides x's ``axis``."""
    if x.ndim == 0 or x.shape[axis] % group.size:
        length = None if x.ndim == 0 else x.shape[axis]
        raise ValueError(f"all_to_all: axis {axis} of length {length} does not split into "
                         f"{group.size} equal chunks (one per rank of {group.name!r})")


def iall_to_all(x, group, axis=0, out=None, block=False):
    """Start the exchange: chunk j (along ``axis``) of x goes to rank j, and chunk r of
    the result is what rank r sent here. Every rank sends (N-1)/N of x, receives as much.

    With x_q = [x_q^0; ...; x_q^{N-1}] on rank q, rank r gets [x_0^r; ...; x_{N-1}^r]:
    the transpose of the (sender, chunk) table, so doing it twice gives x back.
    """
    _check_all_to_all(x, group, axis)
    moved = (x.shape[axis],) + staging.without(x.shape, axis)
    result, finish = staging.output(out, moved, x.dtype, x, axis, "all_to_all")
    comm_check.check(group, "all_to_all", x, axis=axis)
    host = staging.front(x, axis)                                # (N*c, ...) chunks in front
    started = _start(block, group.comm.Alltoall, group.comm.Ialltoall, host, result)
    moved = trace.bytes_moved("all_to_all", x.nbytes, group.size)
    return Handle("all_to_all", group, started, lambda: finish(result), x.nbytes, *moved,
                  keep=(host, result))


def iall_to_allv(x, group, send_sizes, recv_sizes, axis=0, block=False):
    """Start an uneven exchange: rows ``send_sizes[j]`` of x (along ``axis``, in rank
    order) go to rank j; ``recv_sizes[i]`` rows come from rank i, in rank order.

    Every rank's ``send_sizes[r]`` must equal rank r's ``recv_sizes`` entry for it
    (the caller knows both sides; ``alltoall_object`` can exchange them).
    """
    N = group.size
    send_sizes, recv_sizes = [int(s) for s in send_sizes], [int(s) for s in recv_sizes]
    if len(send_sizes) != N or len(recv_sizes) != N or x.ndim == 0 or \
            sum(send_sizes) != x.shape[axis] or min(send_sizes + recv_sizes) < 0:
        raise ValueError(f"all_to_allv: send_sizes {send_sizes} and recv_sizes {recv_sizes} "
                         f"need {N} entries >= 0, send_sizes summing to x's axis {axis} "
                         f"(shape {tuple(x.shape)})")
    result = staging.empty((sum(recv_sizes),) + staging.without(x.shape, axis), x.dtype, x)
    comm_check.check(group, "all_to_allv", x, axis=axis)
    host = staging.front(x, axis)
    row = int(np.prod(host.shape[1:]))
    mpi_type = from_numpy_dtype(host.dtype)
    send = [host, *_counts(send_sizes, row), mpi_type]
    recv = [result, *_counts(recv_sizes, row), mpi_type]
    started = _start(block, group.comm.Alltoallv, group.comm.Ialltoallv, send, recv)
    own = send_sizes[group.rank] * row * host.dtype.itemsize
    sent, recv_bytes = x.nbytes - own, result.nbytes - own
    return Handle("all_to_allv", group, started, lambda: staging.back(result, axis, x),
                  x.nbytes, sent, recv_bytes, keep=(host, result))


def ibroadcast(x, group, root=0, block=False):
    """Start copying the root's x into x on every rank (x is filled in place)."""
    comm_check.check(group, "broadcast", x, root=root)
    host, copied = staging.host(x)
    started = _start(block, group.comm.Bcast, group.comm.Ibcast, host, root=root)

    def finish():
        if copied:
            x[...] = staging.like(host, x)
        return x
    moved = trace.bytes_moved("broadcast", x.nbytes, group.size, is_root=group.rank == root)
    return Handle("broadcast", group, started, finish, x.nbytes, *moved, keep=(host,))


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


def isend(x, dest, group, tag=0, block=False):
    """Start sending x to group rank ``dest``; ``wait()`` returns None.

    Checking mode first sends x's signature on another tag (``comm_check``).
    """
    dest = check_peer("send", dest, group)
    signature = comm_check.isend_signature(x, dest, group, tag)   # [] or [(request, buffer)]
    host, _ = staging.host(x)
    requests, call = _start(block, group.comm.Send, group.comm.Isend, host, dest=dest, tag=tag)
    return Handle("send", group, ([r for r, _ in signature] + requests, call), lambda: None,
                  x.nbytes, x.nbytes, 0, keep=(host,) + tuple(b for _, b in signature),
                  peer=dest)


def irecv(buf, source, group, tag=0, block=False):
    """Start receiving into ``buf`` from group rank ``source``; ``wait()`` returns buf.

    Checking mode: ``wait()`` first compares the sender's signature (``comm_check``).
    """
    source = check_peer("recv", source, group, wildcard=True)
    host, copied = staging.host(buf)
    started = _start(block, group.comm.Recv, group.comm.Irecv, host, source=source, tag=tag)

    def finish():
        if copied:
            buf[...] = staging.like(host, buf)
        return buf
    handle = Handle("recv", group, started, finish, buf.nbytes, 0, buf.nbytes, keep=(host,),
                    peer=source)
    return comm_check.CheckedRecv.wrap(handle, buf, source, group, tag)


# --- blocking forms: MPI's blocking call on a core of one's own, else start + yielding wait -

def all_reduce(x, group, op="sum", inplace=False, out=None):
    return iall_reduce(x, group, op, inplace, out, block=polling.spins()).wait()


def all_gather(x, group, axis=0, sizes=None, out=None):
    return iall_gather(x, group, axis, sizes, out, block=polling.spins()).wait()


def reduce_scatter(x, group, axis=0, op="sum", out=None):
    return ireduce_scatter(x, group, axis, op, out, block=polling.spins()).wait()


def all_to_all(x, group, axis=0, out=None):
    return iall_to_all(x, group, axis, out, block=polling.spins()).wait()


def all_to_allv(x, group, send_sizes, recv_sizes, axis=0):
    return iall_to_allv(x, group, send_sizes, recv_sizes, axis, block=polling.spins()).wait()


def broadcast(x, group, root=0):
    return ibroadcast(x, group, root, block=polling.spins()).wait()


def send(x, dest, group, tag=0):
    isend(x, dest, group, tag, block=polling.spins()).wait()


def recv(buf, source, group, tag=0):
    return irecv(buf, source, group, tag, block=polling.spins()).wait()


def barrier(group):
    """Every rank of the group arrives before any leaves (``Ibarrier``, yielding wait)."""
    comm_check.check(group, "barrier")
    started = _start(polling.spins(), group.comm.Barrier, group.comm.Ibarrier)
    Handle("barrier", group, started, lambda: None, 0, 0, 0).wait()


def reduce(x, group, root=0, op="sum", out=None):
    """x_0 + ... + x_{N-1} on the root, None elsewhere (``out``: used on the root only)."""
    result, finish = staging.output(out, tuple(x.shape), x.dtype, x, 0, "reduce")
    comm_check.check(group, "reduce", x, root=root, reduce_op=op)
    mpi_op, (host, _), N = _op(op, x.dtype), staging.host(x), group.size
    is_root = group.rank == root
    result = result if is_root else None
    started = _start(polling.spins(), group.comm.Reduce, group.comm.Ireduce, host, result,
                     op=mpi_op, root=root)

    def done():
        if not is_root:
            return None
        if op == "mean":
            result[...] /= N
        return finish(result)
    moved = trace.bytes_moved("reduce", x.nbytes, N, is_root=is_root)
    return Handle("reduce", group, started, done, x.nbytes, *moved, keep=(host, result)).wait()


MAX_DIMS = 14


def scatter(x, group, root=0, axis=0, out=None):
    """Chunk r (along ``axis``) of the root's x on rank r; non-root ranks may pass None.

    The root first broadcasts a small int64 header [dtype char, ndim, *shape]
    (``Ibcast``), so the other ranks can size their receive buffers; a bad
    ``out`` on a non-root rank is found after the header, before the data moves.
    """
    comm_check.check(group, "scatter", x if group.rank == root else None, root=root, axis=axis)
    is_root, N, block = group.rank == root, group.size, polling.spins()
    header = np.zeros(MAX_DIMS + 2, np.int64)
    if is_root:
        if x.ndim > MAX_DIMS:
            raise ValueError(f"scatter supports up to {MAX_DIMS} dims, got {x.ndim}")
        header[:x.ndim + 2] = [ord(np.dtype(x.dtype).char), x.ndim, *x.shape]
    Handle("scatter_header", group, _start(block, group.comm.Bcast, group.comm.Ibcast, header,
                                           root=root), lambda: None, header.nbytes, 0, 0).wait()
    dtype, shape = np.dtype(chr(header[0])), tuple(int(s) for s in header[2:2 + header[1]])
    axis = axis % len(shape)
    moved_shape = (shape[axis],) + shape[:axis] + shape[axis + 1:]
    rows = chunk_sizes(moved_shape[0], N)
    like = x if x is not None else get_backend().empty(0, dtype)
    result, finish = staging.output(out, (rows[group.rank],) + moved_shape[1:], dtype, like,
                                    axis, "scatter")
    host = staging.front(x, axis) if is_root else None
    if len(set(rows)) == 1:
        started = _start(block, group.comm.Scatter, group.comm.Iscatter, host, result,
                         root=root)
    else:
        counts, displs = _counts(rows, int(np.prod(moved_shape[1:])))
        send_spec = [host, counts, displs, from_numpy_dtype(dtype)] if is_root else None
        started = _start(block, group.comm.Scatterv, group.comm.Iscatterv, send_spec, result,
                         root=root)
    full = int(np.prod(shape)) * dtype.itemsize
    moved = trace.bytes_moved("scatter", full, N, is_root=is_root, own=result.nbytes)
    nbytes = full if is_root else result.nbytes
    return Handle("scatter", group, started, lambda: finish(result), nbytes, *moved,
                  keep=(host, result)).wait()


def gather(x, group, root=0, axis=0, sizes=None, out=None):
    """cat(x_0, ..., x_{N-1}) along ``axis`` on the root, None elsewhere (``out``: root only)."""
    N, is_root = group.size, group.rank == root
    rows = [x.shape[axis]] * N if sizes is None else [int(s) for s in sizes]
    moved = (sum(rows),) + staging.without(x.shape, axis)
    result, finish = staging.output(out, moved, x.dtype, x, axis, "gather")
    comm_check.check(group, "gather", x, root=root, axis=axis, sizes=sizes)
    host = staging.front(x, axis)
    result = result if is_root else None
    if sizes is None:
        started = _start(polling.spins(), group.comm.Gather, group.comm.Igather, host, result,
                         root=root)
    else:
        counts, displs = _counts(rows, int(np.prod(host.shape[1:])))
        recv_spec = [result, counts, displs, from_numpy_dtype(host.dtype)] if is_root else None
        started = _start(polling.spins(), group.comm.Gatherv, group.comm.Igatherv, host,
                         recv_spec, root=root)
    full = sum(rows) * int(np.prod(host.shape[1:])) * host.dtype.itemsize
    moved = trace.bytes_moved("gather", full, N, is_root=is_root, own=host.nbytes)
    return Handle("gather", group, started, lambda: finish(result) if is_root else None,
                  x.nbytes, *moved, keep=(host, result)).wait()


# --- small Python objects (pickle API, metadata only) --------------------------------------

def bcast_object(obj, group, root=0):
    return group.comm.bcast(obj, root=root)


def gather_object(obj, group, root=0):
    return group.comm.gather(obj, root=root)


def allgather_object(obj, group):
    return group.comm.allgather(obj)


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


def install_abort_hook():
    """One failing rank ends the whole job and names itself: ``minimegatron.runtime.faults``.

    An uncaught exception aborts every rank; the end of the script is an exit
    barrier (a rank that ends while others still wait ends the job); a
    watchdog thread reports where this rank waits when the launcher asks.
    """
    from minimegatron.runtime import faults   # faults imports mpi4py only when installing
    faults.install()
