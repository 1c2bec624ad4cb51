"""This rank of a launch, before MPI starts: who it is, and ``setup()``, once.

``rank_from_env`` and ``world_size_from_env`` read the launcher's environment (MPICH's
PMI_RANK, Open MPI's OMPI_COMM_WORLD_RANK, ...): code prints once, or sizes the job,
without starting MPI. ``import minimegatron`` starts nothing (tests/test_layers.py); the
lab installs itself with ``setup()``, called by the launcher's child (every rank of
``minimegatron run``, before the script), ``commands/entry.run`` (every tutorial and
command, also under a plain ``mpirun``) and a user's own script under a plain ``mpirun``::

    import minimegatron.runtime
    minimegatron.runtime.setup()        # first thing in the script
"""
import os

RANK_ENV = ("PMI_RANK", "OMPI_COMM_WORLD_RANK", "PMIX_RANK", "MV2_COMM_WORLD_RANK")
WORLD_SIZE_ENV = ("PMI_SIZE", "OMPI_COMM_WORLD_SIZE", "PMIX_SIZE", "MV2_COMM_WORLD_SIZE")
_done = []


def world_size_from_env():
    """Ranks in the whole MPI job, read from the launcher's environment (1 if none).

    Lets ``setup()`` decide whether to install the abort hook
    without starting MPI itself.
    """
    for name in WORLD_SIZE_ENV:
        if os.environ.get(name, "").isdigit():
            return max(1, int(os.environ[name]))
    return 1


def rank_from_env():
    """This process's world rank, read from the launcher's environment (0 if none).

    Lets code print once, or read standard input (which mpiexec gives rank 0
    alone), without starting MPI.
    """
    for name in RANK_ENV:
        if os.environ.get(name, "").isdigit():
            return int(os.environ[name])
    return 0


def setup():
    """Make this process a well-behaved rank; a second call does nothing.

    1. the waiter (reaper.py), under ``minimegatron run`` only: the process forks
       before MPI starts, and the waiter records how the rank ends;
    2. the heap is kept (heap.py: freed arrays stay, no page faults every step);
    3. BLAS threads: cores // ranks on this host (threads.py);
    4. in a multi-rank launch, the abort hook (faults.py): one failing, early-ending
       or hanging rank ends the whole job and is named.
    """
    if _done:
        return
    _done.append(True)
    from minimegatron.runtime import faults, heap, reaper, threads
    reaper.reap_if_asked()
    heap.keep()
    threads.limit_blas_threads()
    if world_size_from_env() > 1:
        faults.install()
