"""The seam: a checked communicator that wraps a group's mpi4py communicator.

A collective in collectives.py reads as MPI code reads: check the arguments,
ONE mpi4py call on ``group.comm``, record the trace. What guards that call is
not in its source; it sits here, behind the communicator, the way MPI's
profiling interface (PMPI) lets a correctness checker such as MUST wrap every
``MPI_Allreduce`` of a program without touching the program:

    group.comm.Allreduce(host, result, op=MPI.SUM)        # what collectives.py says
      -> Checked.Allreduce: guard(), then group.mpi.Allreduce(...)

``guard`` runs before the call moves any data, in checking mode only:

- the call's signature (comm_check.check: one 48-byte all-reduce on which the
  ranks agree, or the same CollectiveMismatch on every rank), and, for
  ``all_to_allv``, its counts (comm_check.check_counts);
- inside an agreed step (agreed_steps.py) the group's first call waits for the
  step's comparison instead, and later calls go unchecked;
- a send carries its signature on another tag; a receive compares it first
  (comm_check.send_signature, recv_signature, CheckedRecv).

What the call IS (all_reduce with op="mean" and x of shape (4, 8), a scatter
from root 1...) is read where the hang report reads a wait (runtime/hang_report.py):
in the caller's frame, the collective's own arguments (``x``, ``op``, ``root``,
``axis``, ``sizes``), named by the collective's function. A call from anywhere
else (a benchmark's ``g.comm.Barrier()``, the checks' own messages) passes
through unchecked.

Then the blocking call goes to ``group.mpi``: the communicator itself, or, when
ranks share cores, polling.Yielding, whose blocking calls yield while they wait.
``group.comm`` is this wrapper while checking is on or ranks share cores, else
the mpi4py communicator itself (group.py); every other attribute (``Split``,
``Allreduce_init``, the pickle ``bcast``...) is the communicator's own.
"""
import sys

from mpi4py import MPI

from minimegatron.comm import agreed_steps, comm_check, polling
from minimegatron.comm.polling import wait_all
from minimegatron.comm.waits import waits

# the functions of collectives.py and nonblocking.py whose calls are checked, by their op
CHECKED_OPS = frozenset(("all_reduce", "all_gather", "reduce_scatter", "all_to_all",
                         "all_to_allv", "broadcast", "reduce", "scatter", "gather", "barrier",
                         "send", "recv"))
REDUCING = frozenset(("all_reduce", "reduce_scatter", "reduce"))
COLLECTIVE_MODULES = ("minimegatron.comm.collectives", "minimegatron.comm.nonblocking")
_ops = {}                     # code object -> the op its calls are checked as, or None


def op_of(frame):
    """The op a call from ``frame`` is checked as: its function's name in collectives.py
    (nonblocking.py: without the leading i), or None for any other caller."""
    code = frame.f_code
    if code not in _ops:
        name = code.co_name
        module = frame.f_globals.get("__name__")
        if module == COLLECTIVE_MODULES[1] and name.startswith("i"):
            name = name[1:]
        _ops[code] = name if module in COLLECTIVE_MODULES and name in CHECKED_OPS else None
    return _ops[code]


def guarding():
    """True while anything guards a call: checking mode is on, or ranks share cores (then a
    blocking call must yield). ``group.comm`` is a ``Checked`` exactly then (group.py)."""
    return comm_check.enabled() or not polling.spins()


def guard(group, method, frame):
    """Check the collective that makes ``method`` from ``frame`` (module docstring)."""
    op = op_of(frame)
    if op is None or not comm_check.enabled() or op == "scatter" and method != "Bcast":
        return                               # scatter: checked once, at its header's Bcast
    args = frame.f_locals
    x, root = args.get("x"), args.get("root", -1)
    if op == "scatter" and group.rank != root:
        x = None                             # only the root's x has a shape
    comm_check.check(group, op, x, root=root,
                     reduce_op=args.get("op") if op in REDUCING else None,
                     axis=args.get("axis", 0), sizes=args.get("sizes"))
    if op == "all_to_allv":
        comm_check.check_counts(group, x, args["send_sizes"], args["recv_sizes"],
                                args.get("axis", 0))


class Signed(MPI.Request):
    """A send's or receive's request with its signature's: ``before_wait()`` waits for the
    signature (and, for a receive, compares it) before polling.wait_all waits for the data."""

    def before_wait(self):
        self.signature.wait()


class _Data:
    """The data's request, as comm_check.CheckedRecv expects a handle (``requests``; ``op``,
    ``group`` and ``peer`` for the hang report, as a Handle has them)."""

    def __init__(self, request, group, source):
        self.requests, self.op, self.group, self.peer = [request], "recv", group, source

    def wait(self):
        return None


class _SentSignature:
    def __init__(self, sent):
        self.sent = sent                     # [(request, buffer)]

    @waits("send")
    def wait(self):
        wait_all([request for request, _ in self.sent])


def _forward(method):
    """A blocking collective call: the guard, then the call on ``group.mpi``."""
    def call(self, *args, **kwargs):
        guard(self.group, method, sys._getframe(1))
        return getattr(self.mpi(), method)(*args, **kwargs)
    call.__name__ = method
    return call


def _start(method):
    """A nonblocking collective call: the guard, then the call on the communicator."""
    def call(self, *args, **kwargs):
        guard(self.group, method, sys._getframe(1))
        return getattr(self.raw, method)(*args, **kwargs)
    call.__name__ = method
    return call


class Checked:
    """``group``'s communicator, checked (module docstring); ``.raw`` is mpi4py's."""

    def __init__(self, group, raw):
        self.group, self.raw, self.yielding = group, raw, polling.Yielding(raw)

    def mpi(self):
        """What ``group.mpi`` is: the raw communicator, or its yielding stand-in."""
        return self.raw if polling.spins() else self.yielding

    def __getattr__(self, name):
        return getattr(self.raw, name)

    # the collectives: guard, then MPI's call (blocking: on group.mpi, which may yield)
    Allreduce = _forward("Allreduce")
    Allgather = _forward("Allgather")
    Allgatherv = _forward("Allgatherv")
    Reduce_scatter_block = _forward("Reduce_scatter_block")
    Reduce_scatter = _forward("Reduce_scatter")
    Alltoall = _forward("Alltoall")
    Alltoallv = _forward("Alltoallv")
    Bcast = _forward("Bcast")
    Reduce = _forward("Reduce")
    Scatter = _forward("Scatter")
    Scatterv = _forward("Scatterv")
    Gather = _forward("Gather")
    Gatherv = _forward("Gatherv")
    Barrier = _forward("Barrier")
    Iallreduce = _start("Iallreduce")
    Iallgather = _start("Iallgather")
    Iallgatherv = _start("Iallgatherv")
    Ireduce_scatter_block = _start("Ireduce_scatter_block")
    Ireduce_scatter = _start("Ireduce_scatter")
    Ialltoall = _start("Ialltoall")
    Ialltoallv = _start("Ialltoallv")
    Ibcast = _start("Ibcast")

    @waits("send")
    def Send(self, buf, dest, tag=0):
        if op_of(sys._getframe(1)) == "send":
            comm_check.send_signature(buf, dest, self.group, tag)
        self.mpi().Send(buf, dest=dest, tag=tag)

    @waits("recv")
    def Recv(self, buf, source=MPI.ANY_SOURCE, tag=MPI.ANY_TAG):
        if op_of(sys._getframe(1)) == "recv":
            comm_check.recv_signature(buf, buf, source, self.group, tag)
        self.mpi().Recv(buf, source=source, tag=tag)

    def Isend(self, buf, dest, tag=0):
        if op_of(sys._getframe(1)) != "send":
            return self.raw.Isend(buf, dest=dest, tag=tag)
        sent = comm_check.isend_signature(buf, dest, self.group, tag)
        request = self.raw.Isend(buf, dest=dest, tag=tag)
        if not sent:
            return request
        request = Signed(request)
        request.signature = _SentSignature(sent)
        return request

    def Irecv(self, buf, source=MPI.ANY_SOURCE, tag=MPI.ANY_TAG):
        if op_of(sys._getframe(1)) != "recv" or not agreed_steps.signed(self.group):
            return self.raw.Irecv(buf, source=source, tag=tag)
        request = self.raw.Irecv(buf, source=source, tag=tag)
        data = _Data(request, self.group, source)
        checked = comm_check.CheckedRecv.wrap(data, buf, source, self.group, tag)
        if checked is data:
            return request
        request = Signed(request)
        request.signature = checked
        return request

