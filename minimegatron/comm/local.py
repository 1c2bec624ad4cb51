"""What one process asks of MPI alone: a group of itself, and the end of MPI.

    self_group("cp")   Group(MPI.COMM_SELF): size 1, every collective on it a copy
    finalize()         MPI.Finalize(): the last MPI call of a process that exits on its own

Layers above comm/ never import mpi4py: a grid with cp = 1 takes its cp group
from here, and the grader's ranks end MPI here before C's ``exit``
(``exercise_checks/runner.py``: ``leave``).
"""
from mpi4py import MPI

from minimegatron.comm.group import Group


def self_group(name="self"):
    """A Group of this rank alone (``MPI.COMM_SELF``): rank 0, size 1, no messages."""
    return Group(MPI.COMM_SELF, name)


def finalize():
    """End MPI for this process (every rank calls it, after its last collective)."""
    MPI.Finalize()
