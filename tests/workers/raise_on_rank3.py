"""Rank 3 raises while the others wait in a barrier: the whole job must end, not hang."""
import time

import minimegatron.runtime
from minimegatron import comm

minimegatron.runtime.setup()      # a script of one's own under plain mpirun: the abort hook

if comm.world().rank == 3:
    time.sleep(0.2)
    raise RuntimeError("deliberate failure on rank 3")
comm.barrier(comm.world())
time.sleep(60)  # never reached by all ranks: the barrier waits for rank 3
