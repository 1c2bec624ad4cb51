"""Process groups and array collectives: the only module that talks to MPI.

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

Chunks follow ``numpy.array_split``: a length L that N does not divide gives
the first L mod N ranks one extra row (v-variants: ``Iscatterv``,
``Ireduce_scatter``). Gathers assume equal shapes unless ``sizes`` (each
rank's length along ``axis``) is given, which selects ``Igatherv``/``Iallgatherv``.

Waiting without spinning: every blocking collective is its nonblocking form
followed by ``Handle.wait()``, which (polling.py) polls ``Test`` and calls
``os.sched_yield()`` between polls (``MINIMEGATRON_WAIT=spin`` uses MPI's own
busy-polling ``Wait`` instead). With 8 ranks on 2 cores a busy-waiting rank
steals the CPU from the rank that is computing; see docs/notes_comm.md.

CuPy arrays are staged through pinned host memory unless MPI is CUDA-aware
(``CUDA_AWARE``). Every call is recorded in ``minimegatron.trace``.

Checking mode (``comm_check``, on unless ``MINIMEGATRON_CHECK=0``): before any
data moves, each collective's ranks agree on its signature (op, shape, dtype,
root, reduce op, sizes) with one small ``Iallgather``, so a mismatch raises the
same ``CollectiveMismatch`` on every rank instead of garbage or a deadlock.
"""
import sys

import numpy as np
from mpi4py import MPI
from mpi4py.util.dtlib import from_numpy_dtype

from minimegatron import comm_check, trace
from minimegatron.backend import asarray, get_backend, is_device_array, sync, to_pinned_host
from minimegatron.polling import wait_all

CUDA_AWARE = bool(getattr(MPI, "Query_CUDA_Support", lambda: False)())
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


class Handle:
    """A started operation: ``.test()`` -> bool, ``.wait()`` -> the result."""

    def __init__(self, op, group, requests, finish, nbytes, sent, recv, keep=()):
        self.op, self.group, self.requests, self.finish = op, group, requests, finish
        self.nbytes, self.sent, self.recv = nbytes, sent, recv
        self.keep = keep  # buffers MPI reads or writes until completion
        self.start, self.label = trace.now(), trace.current_label()
        self.done, self.result = False, None

    def _complete(self):
        self.result, self.done = self.finish(), True
        trace.record(self.op, self.group.name, self.nbytes, self.sent, self.recv,
                     self.start, trace.now(), label=self.label)

    def test(self):
        if not self.done and MPI.Request.Testall(self.requests):
            self._complete()
        return self.done

    def wait(self):
        if not self.done:
            wait_all(self.requests)
            self._complete()
        return self.result


# --- host staging -------------------------------------------------------------------------

def _host(x):
    """(a C-contiguous array MPI can read, True if it is a copy of x)."""
    sync()
    if is_device_array(x) and not CUDA_AWARE:
        return to_pinned_host(get_backend().ascontiguousarray(x)), True
    if x.flags.c_contiguous:
        return x, False
    module = get_backend() if is_device_array(x) else np
    return module.ascontiguousarray(x), True


def _like(host, x):
    """``host`` moved back next to ``x`` (onto the GPU if x lives there)."""
    return asarray(host) if is_device_array(x) and not CUDA_AWARE else host


def _empty(shape, dtype, x=None):
    if x is not None and is_device_array(x) and CUDA_AWARE:
        return get_backend().empty(shape, dtype)
    return np.empty(shape, dtype)


def _front(x, axis):
    """x with ``axis`` moved to the front, contiguous, on the host: the layout MPI splits."""
    return _host(np.moveaxis(x, axis, 0) if not is_device_array(x)
                 else get_backend().moveaxis(x, axis, 0))[0]


def _back(host, axis, x):
    return _like(np.ascontiguousarray(np.moveaxis(host, 0, axis)), x)


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

def iall_reduce(x, group, op="sum", inplace=False):
    """Start x_0 + ... + x_{N-1} on every rank (``inplace`` writes the result into x)."""
    comm_check.check(group, "all_reduce", x, reduce_op=op)
    mpi_op, (host, copied) = _op(op, x.dtype), _host(x)
    n, N = x.nbytes, group.size
    if inplace:
        req = group.comm.Iallreduce(MPI.IN_PLACE, host, op=mpi_op)
        out = host
    else:
        out = _empty(host.shape, host.dtype, x)
        req = group.comm.Iallreduce(host, out, op=mpi_op)

    def finish():
        if op == "mean":
            out[...] /= N
        if inplace and copied:
            x[...] = _like(out, x)
            return x
        return _like(out, x)
    sent, recv = trace.bytes_moved("all_reduce", n, N)
    return Handle("all_reduce", group, [req], finish, n, sent, recv, keep=(host, out))


def iall_gather(x, group, axis=0, sizes=None):
    """Start cat(x_0, ..., x_{N-1}) along ``axis`` on every rank."""
    comm_check.check(group, "all_gather", x, axis=axis, sizes=sizes)
    host, N = _front(x, axis), group.size
    rows = [host.shape[0]] * N if sizes is None else [int(s) for s in sizes]
    out = _empty((sum(rows),) + host.shape[1:], host.dtype, x)
    if sizes is None:
        req = group.comm.Iallgather(host, out)
    else:
        counts, displs = _counts(rows, int(np.prod(host.shape[1:])))
        req = group.comm.Iallgatherv(host, [out, counts, displs, from_numpy_dtype(out.dtype)])
    moved = trace.bytes_moved("all_gather", out.nbytes, N, own=host.nbytes)
    return Handle("all_gather", group, [req], lambda: _back(out, axis, x), x.nbytes, *moved,
                  keep=(host, out))


def ireduce_scatter(x, group, axis=0, op="sum"):
    """Start chunk r (along ``axis``) of x_0 + ... + x_{N-1} on rank r."""
    comm_check.check(group, "reduce_scatter", x, reduce_op=op, axis=axis)
    mpi_op, host, N = _op(op, x.dtype), _front(x, axis), group.size
    rows = chunk_sizes(host.shape[0], N)
    out = _empty((rows[group.rank],) + host.shape[1:], host.dtype, x)
    if len(set(rows)) == 1:
        req = group.comm.Ireduce_scatter_block(host, out, op=mpi_op)
    else:
        counts, _ = _counts(rows, int(np.prod(host.shape[1:])))
        req = group.comm.Ireduce_scatter(host, out, counts, op=mpi_op)

    def finish():
        if op == "mean":
            out[...] /= N
        return _back(out, axis, x)
    moved = trace.bytes_moved("reduce_scatter", x.nbytes, N, own=out.nbytes)
    return Handle("reduce_scatter", group, [req], finish, x.nbytes, *moved, keep=(host, out))


def ibroadcast(x, group, root=0):
    """Start copying the root's x into x on every rank (x is filled in place)."""
    comm_check.check(group, "broadcast", x, root=root)
    host, copied = _host(x)
    req = group.comm.Ibcast(host, root=root)

    def finish():
        if copied:
            x[...] = _like(host, x)
        return x
    moved = trace.bytes_moved("broadcast", x.nbytes, group.size, is_root=group.rank == root)
    return Handle("broadcast", group, [req], finish, x.nbytes, *moved, keep=(host,))


def isend(x, dest, group, tag=0):
    """Start sending x to group rank ``dest``; ``wait()`` returns None.

    Checking mode first sends x's signature on another tag (``comm_check``).
    """
    signature = comm_check.isend_signature(x, dest, group, tag)   # [] or [(request, buffer)]
    host, _ = _host(x)
    req = group.comm.Isend(host, dest=dest, tag=tag)
    return Handle("send", group, [r for r, _ in signature] + [req], lambda: None, x.nbytes,
                  x.nbytes, 0, keep=(host,) + tuple(b for _, b in signature))


def irecv(buf, source, group, tag=0):
    """Start receiving into ``buf`` from group rank ``source``; ``wait()`` returns buf.

    Checking mode: ``wait()`` first compares the sender's signature (``comm_check``).
    """
    host, copied = _host(buf)
    req = group.comm.Irecv(host, source=source, tag=tag)

    def finish():
        if copied:
            buf[...] = _like(host, buf)
        return buf
    handle = Handle("recv", group, [req], finish, buf.nbytes, 0, buf.nbytes, keep=(host,))
    return comm_check.CheckedRecv.wrap(handle, buf, source, group, tag)


# --- blocking forms: start, then wait (yielding) --------------------------------------------

def all_reduce(x, group, op="sum", inplace=False):
    return iall_reduce(x, group, op, inplace).wait()


def all_gather(x, group, axis=0, sizes=None):
    return iall_gather(x, group, axis, sizes).wait()


def reduce_scatter(x, group, axis=0, op="sum"):
    return ireduce_scatter(x, group, axis, op).wait()


def broadcast(x, group, root=0):
    return ibroadcast(x, group, root).wait()


def send(x, dest, group, tag=0):
    isend(x, dest, group, tag).wait()


def recv(buf, source, group, tag=0):
    return irecv(buf, source, group, tag).wait()


def barrier(group):
    """Every rank of the group arrives before any leaves (``Ibarrier``, yielding wait)."""
    comm_check.check(group, "barrier")
    Handle("barrier", group, [group.comm.Ibarrier()], lambda: None, 0, 0, 0).wait()


def reduce(x, group, root=0, op="sum"):
    """x_0 + ... + x_{N-1} on the root, None elsewhere."""
    comm_check.check(group, "reduce", x, root=root, reduce_op=op)
    mpi_op, (host, _), N = _op(op, x.dtype), _host(x), group.size
    is_root = group.rank == root
    out = _empty(host.shape, host.dtype, x) if is_root else None
    req = group.comm.Ireduce(host, out, op=mpi_op, root=root)

    def finish():
        if not is_root:
            return None
        if op == "mean":
            out[...] /= N
        return _like(out, x)
    moved = trace.bytes_moved("reduce", x.nbytes, N, is_root=is_root)
    return Handle("reduce", group, [req], finish, x.nbytes, *moved, keep=(host, out)).wait()


MAX_DIMS = 14


def scatter(x, group, root=0, axis=0):
    """Chunk r (along ``axis``) of the root's x on rank r; non-root ranks may pass None.

    The root first broadcasts a small int64 header [dtype char, ndim, *shape]
    (``Ibcast``), so the other ranks can size their receive buffers.
    """
    comm_check.check(group, "scatter", x if group.rank == root else None, root=root, axis=axis)
    is_root, N = group.rank == root, group.size
    header = np.zeros(MAX_DIMS + 2, np.int64)
    if is_root:
        if x.ndim > MAX_DIMS:
            raise ValueError(f"scatter supports up to {MAX_DIMS} dims, got {x.ndim}")
        header[:x.ndim + 2] = [ord(np.dtype(x.dtype).char), x.ndim, *x.shape]
    Handle("scatter_header", group, [group.comm.Ibcast(header, root=root)], lambda: None,
           header.nbytes, 0, 0).wait()
    dtype, shape = np.dtype(chr(header[0])), tuple(int(s) for s in header[2:2 + header[1]])
    axis = axis % len(shape)
    moved_shape = (shape[axis],) + shape[:axis] + shape[axis + 1:]
    host = _front(x, axis) if is_root else None
    rows = chunk_sizes(moved_shape[0], N)
    out = _empty((rows[group.rank],) + moved_shape[1:], dtype, x)
    if len(set(rows)) == 1:
        req = group.comm.Iscatter(host, out, root=root)
    else:
        counts, displs = _counts(rows, int(np.prod(moved_shape[1:])))
        send_spec = [host, counts, displs, from_numpy_dtype(dtype)] if is_root else None
        req = group.comm.Iscatterv(send_spec, out, root=root)
    full = int(np.prod(shape)) * dtype.itemsize
    moved = trace.bytes_moved("scatter", full, N, is_root=is_root, own=out.nbytes)
    nbytes = full if is_root else out.nbytes
    like = x if x is not None else get_backend().empty(0, dtype)
    return Handle("scatter", group, [req], lambda: _back(out, axis, like),
                  nbytes, *moved, keep=(host, out)).wait()


def gather(x, group, root=0, axis=0, sizes=None):
    """cat(x_0, ..., x_{N-1}) along ``axis`` on the root, None elsewhere."""
    comm_check.check(group, "gather", x, root=root, axis=axis, sizes=sizes)
    host, N, is_root = _front(x, axis), group.size, group.rank == root
    rows = [host.shape[0]] * N if sizes is None else [int(s) for s in sizes]
    out = _empty((sum(rows),) + host.shape[1:], host.dtype, x) if is_root else None
    if sizes is None:
        req = group.comm.Igather(host, out, root=root)
    else:
        counts, displs = _counts(rows, int(np.prod(host.shape[1:])))
        recv_spec = [out, counts, displs, from_numpy_dtype(host.dtype)] if is_root else None
        req = group.comm.Igatherv(host, recv_spec, root=root)
    full = sum(rows) * int(np.prod(host.shape[1:])) * host.dtype.itemsize
    moved = trace.bytes_moved("gather", full, N, is_root=is_root, own=host.nbytes)
    return Handle("gather", group, [req], lambda: _back(out, axis, x) if is_root else None,
                  x.nbytes, *moved, keep=(host, out)).wait()


# --- small Python objects (pickle API, metadata only) --------------------------------------

def bcast_object(obj, group, root=0):
    return group.comm.bcast(obj, root=root)


def gather_object(obj, group, root=0):
    return group.comm.gather(obj, root=root)


def allgather_object(obj, group):
    return group.comm.allgather(obj)


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
    """One failing rank ends the whole job and names itself: ``minimegatron.faults``.

    An uncaught exception aborts every rank; the end of the script is an exit
    barrier (a rank that ends while others still wait ends the job); a
    watchdog thread reports where this rank waits when the launcher asks.
    """
    from minimegatron import faults   # faults imports mpi4py only when installing
    faults.install()
