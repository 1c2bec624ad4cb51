"""A NaN weight that only rank 0 sees (an embedding row no token uses): rank 0's optimizer
raises NonFiniteError, rank 1 waits in the next collective, and the abort hook
(installed by ``minimegatron.runtime.setup()``, first thing here) must end the whole job.

    mpiexec -n 2 python tests/workers/nan_one_rank.py
"""
from dataclasses import replace

import numpy as np
from mpi4py import MPI

from minimegatron.data.demo import SMALL_CONFIG, batch, make_optimizer
from minimegatron.parallel.grid import ProcessGrid
from minimegatron.parallel.threed import Trainer3D
import minimegatron.runtime  # noqa: E402

minimegatron.runtime.setup()      # a script of one's own under plain mpirun: the abort hook

CONFIG = replace(SMALL_CONFIG, vocab_size=64)

trainer = Trainer3D(CONFIG, ProcessGrid(2, 1, 1), optimizer_fn=make_optimizer)
trainer.train_step(*batch(CONFIG, 4, 0))
if MPI.COMM_WORLD.Get_rank() == 0:
    used = set(np.concatenate([batch(CONFIG, 4, s)[0].ravel() for s in range(1, 4)]).tolist())
    unused = min(set(range(CONFIG.vocab_size)) - used)
    dict(trainer.named_parameters())["wte.weight"].data[unused, 0] = np.nan
for step in range(1, 4):
    trainer.train_step(*batch(CONFIG, 4, step))
print(f"rank {MPI.COMM_WORLD.Get_rank()}: trained on (the guard did not fire)", flush=True)
