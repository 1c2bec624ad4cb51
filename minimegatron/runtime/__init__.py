"""What keeps a job alive and honest; skip it on a first read.

threads.py   one BLAS thread budget per rank
heap.py      keep freed memory in the process (no page faults every step)
faults.py    one failing, early-ending or hanging rank ends the job and is named
reaper.py    each rank's waiter under `minimegatron run`: how and when it ended
launcher.py  `minimegatron run`: mpiexec, the job directory, the report
waits.py     the marks of where a rank waits (comm/ sets them, the hang report reads them)
"""
