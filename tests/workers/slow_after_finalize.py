"""Every rank ends as the grader's runner does (MPI.Finalize, then ``runner.leave``): rank 0
at once, the others ``argv[1]`` seconds later, as a busy machine makes them. Each rank has an
atexit hook, which must not run (no Python exit hook runs after the runner's last line)."""
import atexit
import sys
import time

from mpi4py import MPI

from minimegatron.classroom.exercise_checks.runner import leave
from minimegatron.comm.local import finalize

rank = MPI.COMM_WORLD.Get_rank()
atexit.register(print, f"rank {rank}: an atexit hook ran", flush=True)
MPI.COMM_WORLD.Barrier()
finalize()
print(f"rank {rank}: finalized", flush=True)
if rank != 0:
    time.sleep(float(sys.argv[1]))
leave(0)
