"""Waiting for MPI: spin when every rank has its own core, yield the CPU when they share.

MPI's own waits busy-poll. That is the fastest wait when each rank has a core
to itself, and the worst when 8 ranks share 2 cores: a waiting rank then
steals the CPU from the rank that is computing the result it waits for.
So the mode ``WAIT`` (env ``MINIMEGATRON_WAIT``) is one of

    "auto"   (default) "spin" when this host's ranks fit its cores, else "yield"
    "spin"   MPI's busy-polling waits: a blocking collective is MPI's blocking call
    "yield"  poll ``Testall``: first ``SPIN_POLLS`` polls back to back (a
             partner already there costs no system call), then
             ``os.sched_yield()`` between polls, then ``SLEEP_S`` sleeps after
             ``YIELD_POLLS`` polls

The collectives do not choose: they call ``group.comm``, whose blocking calls go
through the checked communicator (checked.py) to ``group.mpi`` (group.py): the
communicator itself while ``spins()``, else a ``Yielding`` stand-in whose
blocking calls start MPI's nonblocking form and wait here.

``OVERSUBSCRIBED`` (ranks on this host > the cores this process may use, from
the launcher's environment, see threads.py) is read once at import. A rank
bound to one core (Open MPI binds 2 ranks so) counts as sharing: it yields,
slower but never stealing. A machine busy with other jobs wants "yield".

Where a rank waits is marked, not guessed: ``@waits("all_reduce")`` over a
function records it in ``WAITS`` (comm/waits.py), and the hang report (runtime/hang_report.py)
names the innermost marked function on the stack. Measurements: docs/performance.md.
"""
import functools
import os
import time

from mpi4py import MPI

from minimegatron.cores import cores, local_ranks
from minimegatron.comm.waits import waits

WAIT = os.environ.get("MINIMEGATRON_WAIT", "auto")  # "auto", "spin" or "yield"
OVERSUBSCRIBED = local_ranks() > cores()
SPIN_POLLS = 50           # polls back to back before the first sched_yield
YIELD_POLLS = 2000        # polls with sched_yield before backing off to short sleeps
SLEEP_S = 50e-6


def spins():
    """True when waits may busy-poll: mode "spin", or "auto" with a core per rank."""
    if WAIT == "auto":
        return not OVERSUBSCRIBED
    if WAIT in ("spin", "yield"):
        return WAIT == "spin"
    raise ValueError(f"MINIMEGATRON_WAIT must be auto, spin or yield, got {WAIT!r}")


@waits()
def wait_all(requests, test=MPI.Request.Testall):
    """Wait for MPI requests: MPI's Waitall when ``spins()``, else poll ``test(requests)``
    and yield (bound.py passes its own ``test``: see ``bound._test_one``). A checked send's
    or receive's request (checked.Signed) first waits for its signature."""
    for request in requests:
        before = getattr(request, "before_wait", None)
        if before is not None:
            before()
    if spins():
        MPI.Request.Waitall(requests)
        return
    polls = 0
    while not test(requests):
        polls += 1
        if polls < SPIN_POLLS:
            continue
        if polls < YIELD_POLLS:
            os.sched_yield()
        else:
            time.sleep(SLEEP_S)


@waits()
def _blocking(start, *args, **kwargs):
    """A blocking MPI call made as its nonblocking form ``start`` and a yielding wait."""
    wait_all([start(*args, **kwargs)])


class Yielding:
    """A communicator whose blocking buffer calls give the CPU away while they wait.

    ``Yielding(comm).Allreduce(a, b, op=o)`` is ``comm.Iallreduce(a, b, op=o)``
    followed by ``wait_all``; the same for every MPI call X with a nonblocking IX
    (Bcast, Allgather, Send, Recv, Barrier...). group.py hands it to the
    collectives when the ranks share cores.
    """

    def __init__(self, comm):
        self.comm = comm

    def __getattr__(self, name):
        start = getattr(self.comm, "I" + name[0].lower() + name[1:])
        blocking = functools.partial(_blocking, start)
        setattr(self, name, blocking)          # looked up once per name
        return blocking
