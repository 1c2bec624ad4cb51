"""Waiting for MPI: spin when every rank has its own core, yield the CPU when they share.

MPI's own waits busy-poll. That is the fastest wait when each rank has a core
to itself, and the worst when 8 ranks share 2 cores: a waiting rank then
steals the CPU from the rank that is computing the result it waits for.
So the mode ``WAIT`` (env ``MINIMEGATRON_WAIT``) is one of

    "auto"   (default) "spin" when this host's ranks fit its cores, else "yield"
    "spin"   MPI's busy-polling waits; comm.py's blocking forms make MPI's
             blocking call (``Allreduce``, not ``Iallreduce`` + a wait loop)
    "yield"  poll ``Testall``: first ``SPIN_POLLS`` polls back to back (a
             partner already there costs no system call), then
             ``os.sched_yield()`` between polls, then ``SLEEP_S`` sleeps after
             ``YIELD_POLLS`` polls

``OVERSUBSCRIBED`` (ranks on this host > the cores this process may use, from
the launcher's environment, see threads.py) is read once at import. A rank
bound to one core (Open MPI binds 2 ranks so) counts as sharing: it yields,
slower but never stealing. A machine busy with other jobs wants "yield".
comm.py and comm_check.py both wait here; measurements: docs/performance.md.
"""
import os
import time

from mpi4py import MPI

from minimegatron.runtime.threads import cores, local_ranks

WAIT = os.environ.get("MINIMEGATRON_WAIT", "auto")  # "auto", "spin" or "yield"
OVERSUBSCRIBED = local_ranks() > cores()
SPIN_POLLS = 50           # polls back to back before the first sched_yield
YIELD_POLLS = 2000        # polls with sched_yield before backing off to short sleeps
SLEEP_S = 50e-6


def spins():
    """True when waits may busy-poll: mode "spin", or "auto" with a core per rank."""
    if WAIT not in ("auto", "spin", "yield"):
        raise ValueError(f"MINIMEGATRON_WAIT must be auto, spin or yield, got {WAIT!r}")
    return WAIT == "spin" or (WAIT == "auto" and not OVERSUBSCRIBED)


def wait_all(requests, test=MPI.Request.Testall):
    """Wait for MPI requests: MPI's Waitall when ``spins()``, else poll ``test(requests)``
    and yield (bound.py passes its own ``test``: see ``bound._test_one``)."""
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
