"""What keeps a job alive and honest; skip it on a first read.

threads.py      one BLAS thread budget per rank
heap.py         keep freed memory in the process (no page faults every step)
faults.py       one failing or early-ending rank ends the job and is named (abort, exit barrier)
hang_report.py  where each rank waits, told when the launcher asks at a timeout
job_files.py    the job directory: what each rank leaves there, how the launcher reads it
reaper.py       each rank's waiter under `minimegatron run`: how and when it ended
mpiexec.py      which mpiexec: the one of mpi4py's MPI library
processes.py    a job's process tree: run it in its own session, kill all of it
launcher.py     `minimegatron run`: the job supervised, the report, each rank's child

``import minimegatron`` starts nothing: no signal handler, no thread, no child
process, no excepthook, no change to the environment (tests/test_layers.py holds
it). The lab installs itself from above, with ``setup()`` below, once per process.
Who calls it: the launcher's child (every rank of ``minimegatron run``, before
the script), ``commands/entry.run`` (every tutorial and command, also under a
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
