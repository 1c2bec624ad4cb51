"""Nonblocking collectives: start now, overlap, ``wait()`` later (DDP's buckets, pipelines).

    h = comm.iall_reduce(bucket, group, op="mean", inplace=True)   # Iallreduce: started
    ...                                                            # backward goes on
    h.wait()                                                       # the mean, in bucket

Each ``i*`` function prepares its buffers as its blocking twin in collectives.py
does, makes ONE nonblocking mpi4py call on ``group.comm`` (checked there: checked.py)
(``Iallreduce``, ``Iallgather``, ``Ibcast``...) and returns a ``Handle``. ``Handle.wait()``
waits for MPI (polling.wait_all: MPI's Waitall, or a yielding poll when ranks
share cores), finishes the result (a mean's division, a copy back into place)
and records the trace span, from the start to the end of the wait.
The blocking collectives do not come through here.
"""
import numpy as np
from mpi4py import MPI

from minimegatron.comm import staging, trace, wire
from minimegatron.comm.collectives import (check_all_to_all, check_all_to_allv, check_peer,
                                           chunk_sizes, counts, mpi_op)
from minimegatron.comm.polling import wait_all
from minimegatron.comm.waits import waits


class Handle:
    """A started operation: ``.test()`` -> bool, ``.wait()`` -> the result.

    ``requests``: MPI's requests; ``finish()`` makes the result once they are done.
    ``keep``: buffers MPI reads or writes until completion. ``peer``: the group
    rank a send or receive pairs with (the hang report names it).
    """

    def __init__(self, op, group, requests, finish, nbytes, sent, recv, keep=(), peer=None):
        self.op, self.group, self.requests, self.finish, self.peer = op, group, requests, \
            finish, peer
        self.nbytes, self.sent, self.recv, self.keep = nbytes, sent, recv, keep
        self.start, self.label = trace.now(), trace.current_label()
        self.done, self.result = False, None

    def test(self):
        """True once complete (then the result is ready); lets MPI progress it meanwhile."""
        if not self.done and MPI.Request.Testall(self.requests):
            self.wait()
        return self.done

    @waits()
    def wait(self):
        """Wait until complete; the result."""
        if not self.done:
            wait_all(self.requests)
            self.result, self.done = self.finish(), True
            trace.record(self.op, self.group.name, self.nbytes, self.sent, self.recv,
                         self.start, trace.now(), label=self.label)
        return self.result


@wire.carries("reduce")
def iall_reduce(x, group, op="sum", inplace=False, out=None):
    """Start x_0 + ... + x_{N-1} on every rank: ``Iallreduce`` (``inplace``: into x)."""
    if inplace and out is not None:
        raise ValueError("all_reduce: inplace=True and out= exclude each other")
    if not inplace:
        result, finish = staging.output(out, tuple(x.shape), x.dtype, x, 0, "all_reduce")
    reduce_op, (host, copied) = mpi_op(op, x.dtype), staging.host(x)
    if inplace:
        result = host
        request = group.comm.Iallreduce(MPI.IN_PLACE, host, op=reduce_op)
    else:
        request = group.comm.Iallreduce(host, result, op=reduce_op)

    def done():
        if op == "mean":
            result[...] /= group.size
        if inplace:
            return staging.copy_back(result, x) if copied else x
        return finish(result)
    moved = trace.bytes_moved("all_reduce", x.nbytes, group.size)
    return Handle("all_reduce", group, [request], done, x.nbytes, *moved, keep=(host, result))


@wire.carries("move")
def iall_gather(x, group, axis=0, sizes=None, out=None):
    """Start cat(x_0, ..., x_{N-1}) along ``axis`` on every rank: ``Iallgather(v)``."""
    rows = [x.shape[axis]] * group.size if sizes is None else [int(s) for s in sizes]
    moved = (sum(rows),) + staging.without(x.shape, axis)
    result, finish = staging.output(out, moved, x.dtype, x, axis, "all_gather")
    host = staging.front(x, axis)
    if sizes is None:
        request = group.comm.Iallgather(host, result)
    else:
        spec = [result, *counts(rows, int(np.prod(host.shape[1:]))), staging.mpi_type(x.dtype)]
        request = group.comm.Iallgatherv(host, spec)
    moved = trace.bytes_moved("all_gather", result.nbytes, group.size, own=host.nbytes)
    return Handle("all_gather", group, [request], lambda: finish(result), x.nbytes, *moved,
                  keep=(host, result))


@wire.carries("reduce")
def ireduce_scatter(x, group, axis=0, op="sum", out=None):
    """Start chunk r (along ``axis``) of x_0 + ... + x_{N-1} on rank r:
    ``Ireduce_scatter_block`` (``Ireduce_scatter`` for uneven chunks)."""
    rows = chunk_sizes(x.shape[axis], group.size)
    moved = (rows[group.rank],) + staging.without(x.shape, axis)
    result, finish = staging.output(out, moved, x.dtype, x, axis, "reduce_scatter")
    reduce_op, host = mpi_op(op, x.dtype), staging.front(x, axis)
    if len(set(rows)) == 1:
        request = group.comm.Ireduce_scatter_block(host, result, op=reduce_op)
    else:
        request = group.comm.Ireduce_scatter(
            host, result, counts(rows, int(np.prod(host.shape[1:])))[0], op=reduce_op)

    def done():
        if op == "mean":
            result[...] /= group.size
        return finish(result)
    moved = trace.bytes_moved("reduce_scatter", x.nbytes, group.size, own=result.nbytes)
    return Handle("reduce_scatter", group, [request], done, x.nbytes, *moved,
                  keep=(host, result))


@wire.carries("move")
def iall_to_all(x, group, axis=0, out=None):
    """Start the exchange of chunks (see ``collectives.all_to_all``): ``Ialltoall``."""
    check_all_to_all(x, group, axis)
    moved = (x.shape[axis],) + staging.without(x.shape, axis)
    result, finish = staging.output(out, moved, x.dtype, x, axis, "all_to_all")
    host = staging.front(x, axis)
    request = group.comm.Ialltoall(host, result)
    moved = trace.bytes_moved("all_to_all", x.nbytes, group.size)
    return Handle("all_to_all", group, [request], lambda: finish(result), x.nbytes, *moved,
                  keep=(host, result))


@wire.carries("move")
def iall_to_allv(x, group, send_sizes, recv_sizes, axis=0):
    """Start the uneven exchange (see ``collectives.all_to_allv``): ``Ialltoallv``."""
    send_sizes, recv_sizes = check_all_to_allv(x, group, send_sizes, recv_sizes, axis)
    result = staging.empty((sum(recv_sizes),) + staging.without(x.shape, axis), x.dtype, x)
    host = staging.front(x, axis)
    row, mpi_type = int(np.prod(host.shape[1:])), staging.mpi_type(host.dtype)
    request = group.comm.Ialltoallv([host, *counts(send_sizes, row), mpi_type],
                                    [result, *counts(recv_sizes, row), mpi_type])
    own = send_sizes[group.rank] * row * host.dtype.itemsize
    return Handle("all_to_allv", group, [request], lambda: staging.back(result, axis, x),
                  x.nbytes, x.nbytes - own, result.nbytes - own, keep=(host, result))


@wire.carries("move")
def ibroadcast(x, group, root=0):
    """Start copying the root's x into x on every rank: ``Ibcast``."""
    host, copied = staging.host(x)
    request = group.comm.Ibcast(host, root=root)
    moved = trace.bytes_moved("broadcast", x.nbytes, group.size, is_root=group.rank == root)
    return Handle("broadcast", group, [request],
                  lambda: staging.copy_back(host, x) if copied else x, x.nbytes, *moved,
                  keep=(host,))


@wire.carries("move")
def isend(x, dest, group, tag=0):
    """Start sending x to group rank ``dest``: ``Isend``; ``wait()`` returns None.

    Checking mode first sends x's signature on another tag (checked.py).
    """
    dest = check_peer("send", dest, group)
    host, _ = staging.host(x)
    request = group.comm.Isend(host, dest=dest, tag=tag)
    return Handle("send", group, [request], lambda: None, x.nbytes, x.nbytes, 0, keep=(host,),
                  peer=dest)


@wire.carries("move")
def irecv(buf, source, group, tag=0):
    """Start receiving into ``buf`` from group rank ``source``: ``Irecv``; ``wait()``
    returns buf. Checking mode: ``wait()`` first compares the sender's signature."""
    source = check_peer("recv", source, group, wildcard=True)
    host, copied = staging.host(buf)
    request = group.comm.Irecv(host, source=source, tag=tag)
    return Handle("recv", group, [request],
                  lambda: staging.copy_back(host, buf) if copied else buf, buf.nbytes, 0,
                  buf.nbytes, keep=(host,), peer=source)
