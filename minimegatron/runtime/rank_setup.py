"""``setup()``: make this process a well-behaved rank, once, from above the book.

``import minimegatron`` starts nothing (tests/test_layers.py holds it); the lab installs
itself here. Who calls it: the launcher's child (every rank of ``minimegatron run``,
before the script), ``commands/entry.run`` (every tutorial and command, also under a
plain ``mpirun``), and a user's own script under a plain ``mpirun``::

    import minimegatron.runtime
    minimegatron.runtime.setup()        # first thing in the script
"""
_done = []


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
    if threads.world_size_from_env() > 1:
        faults.install()
