"""One rank misbehaves; tests/test_chaos_launcher.py checks the job ends and names it.

    python chaos_rank.py MODE [MARKER [RANK]]   (MARKER only makes the processes easy to find)

Every rank runs 5 all-reduce "training steps"; at step 2 rank RANK (default: the last) does
MODE:

    sysexit   sys.exit(3)
    osexit    os._exit(1)
    osexit0   os._exit(0): no exit barrier, no notice; the others wait in all_reduce
    sigkill   SIGKILL to itself (a crash, the OOM killer)
    exit0     stops training and returns (exit 0) while the others wait in all_reduce
    p2pexit   exit0, but the steps are a ring of isend/irecv (a pipeline): rank RANK - 1
              waits in a receive from it
    ok        nothing: a healthy job
    slow0     nothing, but rank 0 works 3 s longer than the others at the end (plotting)
    hang      rank 0 waits in all_reduce, rank 1 in a recv nobody sends (a divergent deadlock)
    sleep     every rank but 0 waits in a barrier; rank 0 sleeps (for the signal tests)
"""
import os
import signal
import sys
import time

import numpy as np

import minimegatron.runtime
from minimegatron import comm

minimegatron.runtime.setup()      # a script of one's own under plain mpirun: the abort hook

mode = sys.argv[1]
world = comm.world()
chosen = int(sys.argv[3]) if len(sys.argv) > 3 else world.size - 1
grad = np.ones(4)
if mode == "hang":
    if world.rank == 0:
        comm.all_reduce(grad, world)                       # chaos: rank 0 waits here
    else:
        comm.recv(np.zeros(4), source=0, group=world)      # chaos: rank 1 waits here
if mode == "sleep":
    print(f"rank {world.rank} ready", flush=True)
    if world.rank != 0:
        comm.barrier(world)
    time.sleep(600)
for step in range(5):
    if step == 2 and world.rank == chosen:
        if mode == "sysexit":
            sys.exit(3)
        if mode == "osexit":
            os._exit(1)
        if mode == "osexit0":
            os._exit(0)
        if mode == "sigkill":
            os.kill(os.getpid(), signal.SIGKILL)
        if mode in ("exit0", "p2pexit"):
            break
    if mode == "p2pexit":
        sent = comm.isend(grad, (world.rank + 1) % world.size, world)
        comm.irecv(np.zeros(4), (world.rank - 1) % world.size, world).wait()
        sent.wait()
    else:
        comm.all_reduce(grad, world)
    time.sleep(0.05)
if mode == "slow0" and world.rank == 0:
    time.sleep(3)
print(f"rank {world.rank} done", flush=True)
