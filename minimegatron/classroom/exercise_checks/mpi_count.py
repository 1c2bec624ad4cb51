"""Every MPI call a multi-rank check makes is seen: the ones the trace does not show become
trace spans of their own.

The package's collectives (comm/collectives.py, nonblocking.py, bound.py) each make one
buffer-API MPI call and record it in the trace, so the checks compare the trace with the
collectives a lesson needs. Two kinds of MPI call leave no trace:

    the pickle API           group.comm.allgather(...), comm.allgather_object(...): a
                             blocking collective all the same (the ranks wait for each other)
    a direct buffer call     group.comm.Allreduce(...), group.mpi.Allreduce(...) or
                             MPI.COMM_WORLD.Allreduce(...) from outside comm/ (the
                             check of collectives.py never ran)

``count_mpi_calls()`` (runner.py, before the first group is built) makes every Group's
communicator a ``Counted`` one (a subclass of its own mpi4py class): the same MPI
communicator (no copy, no new context), whose communication methods record such a call
in the trace as a comm span of op "<method> (untraced MPI)" and 0 bytes, then make it.
Every check that reads the collectives from the trace (``lesson.comm_log``) then sees
it as one more call than the lesson allows.
The collectives' own checking call (comm_check.py, mismatch.py) is not counted.

Apart from the trace, every call (traced or not) is also counted in a list of this
module (``made_calls``): method, group and the bytes of its buffer. A block that
rewrites the trace in its own process (records an all_reduce it never made, or hides
an allgather) leaves the two disagreeing, and the judge compares them
(``tp_problem.expect_calls``). Both lists live in the process that runs the student's
code: a block that finds and rewrites both agrees with itself (docs/teaching.md says
so); the static read is what keeps a block from reaching either.
"""
import sys

# the communication methods of an mpi4py communicator: buffer API, pickle API, nonblocking
METHODS = ("Allreduce", "Allgather", "Allgatherv", "Alltoall", "Alltoallv", "Alltoallw",
           "Bcast", "Gather", "Gatherv", "Scatter", "Scatterv", "Reduce", "Reduce_scatter",
           "Reduce_scatter_block", "Scan", "Exscan", "Barrier", "Send", "Ssend", "Bsend",
           "Rsend", "Recv", "Sendrecv", "Sendrecv_replace", "Mrecv",
           "Iallreduce", "Iallgather", "Iallgatherv", "Ialltoall", "Ialltoallv", "Ibcast",
           "Igather", "Igatherv", "Iscatter", "Iscatterv", "Ireduce", "Ireduce_scatter",
           "Ireduce_scatter_block", "Ibarrier", "Isend", "Issend", "Irecv",
           "Allreduce_init", "Allgather_init", "Bcast_init", "Send_init", "Recv_init",
           "allreduce", "allgather", "alltoall", "bcast", "gather", "scatter", "reduce",
           "scan", "exscan", "barrier", "send", "ssend", "recv", "sendrecv", "isend",
           "issend", "irecv", "mprobe", "improbe")
PACKAGE_COMM = "minimegatron.comm."                  # calls from here are traced collectives
NOT_COUNTED = ("minimegatron.comm.comm_check", "minimegatron.comm.mismatch")
PASS_THROUGH = ("minimegatron.comm.polling", "functools",    # a yielding stand-in's wait
                "minimegatron.comm.checked")                # the seam: who called through it


def _caller_module():
    """The module that made the MPI call (past a yielding stand-in's wait)."""
    frame = sys._getframe(2)
    while frame is not None and frame.f_globals.get("__name__") in PASS_THROUGH:
        frame = frame.f_back
    return "" if frame is None else frame.f_globals.get("__name__", "")


def _untraced(method, caller):
    """Does this call leave no trace span (pickle API, or a buffer call from outside comm/)?"""
    if caller in NOT_COUNTED:
        return False
    return method[0].islower() or not caller.startswith(PACKAGE_COMM)


_made = []       # (method, group name, bytes) of every counted call since made_calls()


def _buffer_bytes(method, args):
    """Bytes of a buffer-API call's send buffer (its receive buffer when the send is
    MPI.IN_PLACE); 0 for the pickle API or a buffer without nbytes."""
    if method[0].islower() or not args:
        return 0
    mpi = sys.modules.get("mpi4py.MPI")
    buf = args[1] if len(args) > 1 and mpi is not None and args[0] is mpi.IN_PLACE else args[0]
    if isinstance(buf, (list, tuple)) and buf:               # [buffer, counts, datatype]
        buf = buf[0]
    return int(getattr(buf, "nbytes", 0) or 0)


def made_calls():
    """[(method, group name, bytes)] of every MPI call made since the last time (then
    forgotten), whoever made it (the package's collectives, the pickle API, a direct
    call), or None when nothing counts (``count_mpi_calls`` never ran here). The judge
    pairs them with the trace's collectives (``tp_problem.expect_calls``): a span no MPI
    call made, or a call no span shows, is a forged or a hidden collective."""
    from minimegatron.comm import group as group_module
    if not getattr(group_module.Group, "_counted", False):
        return None
    made = list(_made)
    del _made[:]
    return made


def _counted(base, method):
    made = getattr(base, method)

    def call(self, *args, **kwargs):
        caller = _caller_module()
        if caller not in NOT_COUNTED:      # counted apart from the trace, always
            _made.append((method, getattr(self, "group_name", ""), _buffer_bytes(method, args)))
        if _untraced(method, caller):
            from minimegatron.comm import trace
            now = trace.now()
            trace.record(f"{method} (untraced MPI)", self.group_name, 0, 0, 0, now, now)
        return made(self, *args, **kwargs)
    call.__name__ = method
    return call


_CLASSES = {}


def counted_class(base):
    """The Counted subclass of an mpi4py communicator class (comm/ alone imports mpi4py)."""
    if base not in _CLASSES:
        _CLASSES[base] = type("Counted", (base,), {
            "__doc__": "An MPI communicator whose untraced calls are recorded (see the module).",
            "counted": True,
            **{m: _counted(base, m) for m in METHODS if hasattr(base, m)}})
    return _CLASSES[base]


def _count(group):
    """Make ``group`` (a comm.group.Group) call MPI through a Counted communicator."""
    if not getattr(group.raw, "counted", False):
        group.comm = counted_class(type(group.raw))(group.raw)     # under the seam
        group.raw.group_name = group.name
    return group


def count_mpi_calls():
    """From now on every Group of the imported package counts its untraced MPI calls."""
    from minimegatron.comm import group as group_module
    cls = group_module.Group
    if getattr(cls, "_counted", False):
        return
    built = cls.__init__

    def __init__(self, comm, name):
        built(self, comm, name)
        _count(self)
    cls.__init__, cls._counted = __init__, True
    for existing in group_module._world:
        _count(existing)
    mpi = sys.modules.get("mpi4py.MPI")             # MPI.COMM_WORLD.allgather(...) too
    if mpi is not None and not getattr(mpi.COMM_WORLD, "counted", False):
        world = counted_class(type(mpi.COMM_WORLD))(mpi.COMM_WORLD)
        world.group_name = "world"
        mpi.COMM_WORLD = world
