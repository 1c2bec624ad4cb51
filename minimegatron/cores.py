"""The cores a rank may use and the ranks that share its host, from the environment.

Two numbers decide how a rank should wait and compute when ranks share a
machine: ``cores()`` (the CPUs this process may run on) and ``local_ranks()``
(how many MPI ranks the launcher put on this host: MPICH/Hydra sets
MPI_LOCALNRANKS, Open MPI OMPI_COMM_WORLD_LOCAL_SIZE, ...). comm/polling.py
yields the CPU while it waits when ranks outnumber cores; runtime/threads.py
gives each rank cores // ranks BLAS threads. Both read them here, at the
bottom of the package: nothing here imports MPI or starts anything.
"""
import os

LOCAL_SIZE_ENV = ("MPI_LOCALNRANKS", "OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNSIZE",
                  "MV2_COMM_WORLD_LOCAL_SIZE", "PMI_SIZE", "PMIX_SIZE")


def cores():
    """CPU cores this process may run on."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()


def local_ranks():
    """How many MPI ranks share this host (1 when not started by an MPI launcher)."""
    for name in LOCAL_SIZE_ENV:
        if os.environ.get(name, "").isdigit():
            return max(1, int(os.environ[name]))
    return 1
