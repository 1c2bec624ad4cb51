"""faults.install() leaves no nonblocking collective pending on COMM_WORLD.

It once made its private communicator with ``Idup`` and let it complete later.
Open MPI 4.1 runs an ``Idup``'s context-id rounds as internal nonblocking
collectives on COMM_WORLD, started from its progress engine, so they and the
next ``Iallgather`` on COMM_WORLD (comm_check's signature rows) were matched in
a rank-dependent order: "MPI Error in NBC subrequest ... : 15" (MPI_ERR_TRUNCATE)
and a false ``CollectiveMismatch`` with a garbage "other side". MPICH runs the
same calls correctly, so here a spy records what install() calls on COMM_WORLD.
"""
import os
import subprocess
import sys

from mpi_harness import REPO_ROOT

from minimegatron.runtime.rank_setup import WORLD_SIZE_ENV

SPY = r"""
import mpi4py
from mpi4py import MPI

calls = []


class Spy:
    def __getattr__(self, name):          # COMM_WORLD, recording each method install() uses
        attr = getattr(MPI.COMM_WORLD, name)
        if callable(attr):
            calls.append(name)
        return attr


class SpiedMPI:
    COMM_WORLD = Spy()

    def __getattr__(self, name):
        return getattr(MPI, name)


mpi4py.MPI = SpiedMPI()                   # what `from mpi4py import MPI` in faults gets
from minimegatron.runtime import faults
faults.install()
print(" ".join(calls))
"""


def test_install_makes_its_private_communicator_with_a_blocking_dup():
    env = {k: v for k, v in os.environ.items() if k not in WORLD_SIZE_ENV}
    done = subprocess.run([sys.executable, "-c", SPY], env={**env, "PYTHONPATH": REPO_ROOT},
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    calls = done.stdout.split()
    assert "Dup" in calls, calls
    started = [name for name in calls if name.startswith("I") and name != "Iprobe"]
    assert started == [], f"install() left {started} pending on COMM_WORLD"
