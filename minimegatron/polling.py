"""Waiting without spinning: poll MPI requests and give the CPU away between polls.

MPI's own ``Wait`` busy-polls. With 8 ranks on 2 cores a waiting rank then
steals the CPU from the rank that is computing the result it waits for. So
``wait_all`` polls ``Testall`` and calls ``os.sched_yield()`` between polls,
backing off to short sleeps after ``YIELD_POLLS`` polls. ``WAIT = "spin"``
(or ``MINIMEGATRON_WAIT=spin``) uses MPI's busy-polling ``Waitall`` instead.
comm.py and comm_check.py both wait here; see docs/notes_comm.md.
"""
import os
import time

from mpi4py import MPI

WAIT = os.environ.get("MINIMEGATRON_WAIT", "yield")  # "yield" or "spin"
YIELD_POLLS = 2000        # polls with sched_yield before backing off to short sleeps
SLEEP_S = 50e-6


def wait_all(requests):
    """Wait for MPI requests, yielding the CPU between polls (see module docstring)."""
    if WAIT == "spin":
        MPI.Request.Waitall(requests)
        return
    polls = 0
    while not MPI.Request.Testall(requests):
        polls += 1
        if polls < YIELD_POLLS:
            os.sched_yield()
        else:
            time.sleep(SLEEP_S)
