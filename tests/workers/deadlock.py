"""Rank 0 waits for a message that rank 1 never sends: only the timeout ends this."""
import numpy as np

from minimegatron import comm

if comm.world().rank == 0:
    comm.recv(np.zeros(4), source=1, group=comm.world())
comm.barrier(comm.world())
