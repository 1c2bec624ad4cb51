"""The MPI calls an all_reduce makes (tests/test_seam.py).

Each entry: [MPI method, function making it, its module]: the calls the group's
mpi4py communicator receives while one ``comm.all_reduce`` runs, with checking
on and then off.
"""
import sys

import numpy as np

from minimegatron import comm
from minimegatron.comm import comm_check, polling


class Spy:
    """Stands in for a group's mpi4py communicator: records each call, then makes it."""

    def __init__(self, raw, calls):
        self.raw, self.calls = raw, calls

    def __getattr__(self, name):
        method = getattr(self.raw, name)

        def call(*args, **kwargs):
            frame = sys._getframe(1)
            self.calls.append([name, frame.f_code.co_name, frame.f_globals["__name__"]])
            return method(*args, **kwargs)
        return call


def mpi_calls(group, run):
    """[[method, caller, module]] of every call group's communicator gets while ``run()``."""
    calls, raw = [], group.raw
    group.raw = group.checked.raw = group.checked.yielding.comm = Spy(raw, calls)
    try:
        run()
    finally:
        group.raw = group.checked.raw = group.checked.yielding.comm = raw
    return calls


def all_reduce_calls():
    g = comm.world()
    x = np.arange(1024, dtype=np.float64) + g.rank
    with comm_check.checking(True):
        checked = mpi_calls(g, lambda: comm.all_reduce(x, g))
    with comm_check.checking(False):
        raw = mpi_calls(g, lambda: comm.all_reduce(x, g))
    result = comm.all_reduce(x, g)
    return {"checked": checked, "raw": raw, "spins": polling.spins(),
            "right": bool(np.allclose(result, 2 * np.arange(1024) + 1))}
