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
rank_setup.py   ``setup()``: the lab installs itself from above, once per process

``import minimegatron`` starts nothing: no signal handler, no thread, no child
process, no excepthook, no change to the environment (tests/test_layers.py holds
it). ``setup()`` (rank_setup.py, re-exported here) makes a process a well-behaved
rank: ``minimegatron.runtime.setup()``.
"""
from minimegatron.runtime.rank_setup import setup  # noqa: F401 (re-exported)
