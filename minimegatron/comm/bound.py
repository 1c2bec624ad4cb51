"""Bound collectives: an all-reduce whose buffers, op and group are fixed ONCE.

``comm.all_reduce(x, group, out=o)`` does a few microseconds of Python on every
call before MPI sees the data: it checks ``out``, maps the op, decides about
host staging and records the trace (docs/performance.md, "Small collectives").
When the SAME buffer is all-reduced again and again (a DDP bucket is a fixed
slice of one flat gradient buffer), all of that can be done once:

    ar = bind_all_reduce(bucket, group, op="mean", inplace=True)   # once
    ...
    ar.start(); ...; ar.wait()       # every step: bucket = mean over the group
    ar()                             # the same, blocking

Bound once, at ``bind_all_reduce`` (every rank of the group must call it, in
the same order, like any collective):

- the checks: a contiguous, writable array, an op in ``comm.OPS``, a floating
  dtype for "mean", ``out`` of x's shape and dtype not overlapping x; each
  rank's verdict and its call (shape, dtype, op, inplace) are swapped with ONE
  ``allgather_object`` (pickle: small metadata), so a bad input on any rank
  raises the same ValueError on every rank before any array moves;
- host staging: a CuPy array (MPI not CUDA-aware) gets one pinned host buffer
  now; each call copies into it and back (``x.get(out=host)``, ``x.set(host)``);
- the MPI call itself. MPI 4 has PERSISTENT collectives::

      request = comm.Allreduce_init(MPI.IN_PLACE, host, op)   # MPI binds the buffer
      request.Start()    # each call: run the bound all-reduce (nonblocking)
      request.Wait()     # each call: until it is complete; the request stays alive

  ``Allreduce_init`` is itself collective; MPI may pick its algorithm and set
  up its internal schedule there, once, rather than on every call. Each
  ``Start`` must be made on every rank in the same order relative to the
  group's other collectives, as for any collective. MPICH 4+ has them; Open
  MPI 4.1 does not (mpi4py raises NotImplementedError), and then the same
  call is made instead: ``group.mpi.Allreduce(MPI.IN_PLACE, host, op)`` in
  ``wait()`` when each rank has a core (polling.spins()), else
  ``comm.Iallreduce(...)`` in ``start()``. ``persistent`` tells which.

Each call keeps what comm/collectives.py guarantees (about 3 us of Python per call in all,
against collectives.py's 13; docs/performance.md, "Bound (persistent) collectives"):

- the trace: one span "all_reduce" (group, bytes, start, end, label) per call;
- checking mode (comm_check): when on, ``start()`` first runs the same
  ``comm_check.check`` as comm.all_reduce (one small ``Allreduce``), so two ranks
  that start different bound collectives raise CollectiveMismatch, not garbage;
- waiting: ``request.Wait()`` (MPI_Wait) when each rank has a core
  (``polling.spins()``), else ``polling.wait_all``, which polls ``Test`` and
  yields the CPU between polls; ``BoundAllReduce.wait`` is marked ``@waits()``,
  so the hang report names it (op "all_reduce", the group) as ``Handle.wait``.

"mean" is MPI.SUM followed by ``/= N`` on the host buffer, as collectives.py does, so
the bound result is bitwise the result of ``comm.all_reduce``.
"""
import weakref

import numpy as np
from mpi4py import MPI

from minimegatron.comm import collectives as comm
from minimegatron.comm import comm_check, polling, staging, trace
from minimegatron.backend import is_device_array, sync, to_pinned_host
from minimegatron.comm.waits import waits
from minimegatron.comm.staging import CUDA_AWARE


def _problem(x, op, inplace, out):
    """Why (x, op, inplace, out) cannot be bound, or "" when it can (this rank only)."""
    if not hasattr(x, "shape") or not hasattr(x, "dtype"):
        return f"x must be an array, got {type(x).__name__}"
    if inplace == (out is not None):
        return "give exactly one of inplace=True or out= (a bound call needs a fixed output)"
    if not x.flags.c_contiguous:
        return "x must be C-contiguous (MPI binds its memory once)"
    if inplace and not getattr(x.flags, "writeable", True):     # CuPy's flags lack it
        return "x is read-only (inplace=True writes the result into it)"
    try:                                 # the op and ``out=`` as collectives.py checks them
        comm.mpi_op(op, x.dtype)
        if out is not None:
            staging.check_out(out, tuple(x.shape), x.dtype, x, "bind_all_reduce")
    except ValueError as err:
        return str(err)
    if out is not None and not out.flags.c_contiguous:
        return "out= must be C-contiguous (MPI binds its memory once)"
    return ""


def bind_all_reduce(x, group, op="sum", inplace=False, out=None):
    """Collective: bind ``x`` (and ``out``) to an all-reduce over ``group``; a BoundAllReduce.

    ``inplace=True`` writes x_0 + ... + x_{N-1} (or mean, max, min) into x on
    every call; ``out=`` writes it into out. Raises the same ValueError on every
    rank when any rank's input is bad or the ranks bind different calls.
    """
    problem = _problem(x, op, inplace, out)
    call = "" if problem else f"shape {tuple(x.shape)}, {x.dtype}, op={op}, inplace={inplace}"
    reports = comm.allgather_object((problem, call), group)
    bad = [f"rank {r}: {p}" for r, (p, _) in zip(group.ranks, reports) if p]
    if not bad and len({c for _, c in reports}) > 1:
        bad = [f"rank {r}: {c}" for r, (_, c) in zip(group.ranks, reports)]
        bad.insert(0, "the ranks bind different all-reduces")
    if bad:
        raise ValueError(f"bind_all_reduce on group {group.name!r}: " + "; ".join(bad))
    return BoundAllReduce(x, group, op, out)


def _test_one(requests):
    """``requests[0].Test()``. Not ``Request.Testall``: MPICH 5.0.2's Testall raises
    MPI_ERR_IN_STATUS on a started persistent collective (with no error in the status,
    and the all-reduce complete); ``Test`` and ``Waitall`` work."""
    return requests[0].Test()


def _free(requests):
    """Free MPI's persistent requests (MPICH warns at MPI_Finalize about any left)."""
    if not MPI.Is_finalized():
        for request in requests:
            request.Free()
    requests.clear()


class BoundAllReduce:
    """``start()`` -> self, ``test()`` -> bool, ``wait()`` -> the result; ``self()`` blocks.

    ``free()`` releases MPI's request (also done when the object is collected or at
    exit). The attributes ``op`` and ``group`` are what hang_report.py reads from ``wait``.
    """

    def __init__(self, x, group, op, out=None):
        self.op, self.group, self.x, self.reduce_op = "all_reduce", group, x, op
        self.result = x if out is None else out
        staged = is_device_array(x) and not CUDA_AWARE
        self.send = to_pinned_host(x) if staged else x              # what MPI reads
        self.recv = (self.send if out is None                        # where MPI writes
                     else to_pinned_host(out) if staged else out)
        self.staged, self.device = staged, is_device_array(x)
        self.divide_by = group.size if op == "mean" else None
        moved = trace.bytes_moved("all_reduce", x.nbytes, group.size)
        self.span = trace.template("all_reduce", group.name, x.nbytes, *moved)  # per call: copied
        args = ((MPI.IN_PLACE, self.recv) if out is None else (self.send, self.recv))
        args += (comm.OPS[op],)
        try:
            self.requests = [group.comm.Allreduce_init(*args)]        # MPI 4: bound by MPI
            self.persistent = True
            # freed by free(), else when this object is collected or Python exits
            self.free = weakref.finalize(self, _free, list(self.requests))
        except NotImplementedError:                                   # e.g. Open MPI 4.1
            self.requests, self.persistent = [], False
            self.free = weakref.finalize(self, _free, [])
        self.args = args
        self.active, self.start_time, self.label = False, 0.0, None

    def start(self):
        """Begin one all-reduce of the bound buffers (nonblocking); returns self."""
        if self.active:
            raise RuntimeError("BoundAllReduce: start() again before wait()")
        if comm_check.enabled():
            comm_check.check(self.group, "all_reduce", self.x, reduce_op=self.reduce_op)
        if self.device:
            sync()                                    # queued GPU work has written x
            if self.staged:
                self.x.get(out=self.send)             # device -> the bound host buffer
        self.active, self.start_time, self.label = True, trace.now(), trace.current_label()
        if self.persistent:
            self.requests[0].Start()                  # MPI_Start: the bound all-reduce
        elif not polling.spins():
            self.requests = [self.group.comm.Iallreduce(*self.args)]   # same arguments
        return self

    def test(self):
        """True when done (completing it then); lets MPI progress it otherwise."""
        if self.active and (_test_one(self.requests) if self.requests else True):
            self.wait()
        return not self.active

    @waits()
    def wait(self):
        """Wait until the all-reduce is complete; the result (x itself, or out)."""
        if not self.active:
            return self.result
        if self.requests and polling.spins():
            self.requests[0].Wait()                   # MPI_Wait (a list's Waitall costs 2 us)
        elif self.requests:
            polling.wait_all(self.requests, _test_one)  # poll, sched_yield between polls
        else:
            self.group.comm.Allreduce(*self.args)     # MPI_Allreduce: the rank waits here
        if self.divide_by is not None:
            np.true_divide(self.recv, self.divide_by, out=self.recv)  # "mean", as collectives.py
        if self.staged:
            self.result.set(self.recv)                # the bound host buffer -> device
        if not self.persistent:
            self.requests = []
        self.active = False
        trace.record_from(self.span, self.start_time, trace.now(), self.label)
        return self.result

    @waits()
    def __call__(self):
        """The blocking form: start() then wait()."""
        return self.start().wait()
