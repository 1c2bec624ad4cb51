"""Pipeline stages built with different configurations (tests/test_interleaved.py): each
engine's construction must name the rank that differs instead of hanging in a receive.

    python -m minimegatron run -n 2 tests/workers/pp_config_mismatch.py CASE

    chunks          interleaved 1F1B, rank 1 builds its stage with 4 chunks, rank 0 with 2
    micro_batches   1F1B, rank 1 splits the batch into 4 micro-batches, rank 0 into 2
"""
import sys

import minimegatron.runtime
minimegatron.runtime.setup()      # a script of one's own under plain mpirun: the abort hook
from minimegatron import comm
from minimegatron.data.demo import VERIFY_CONFIG as CONFIG, batch, make_optimizer
from minimegatron.parallel.grid import ProcessGrid
from minimegatron.parallel.threed import Trainer3D

case, world = sys.argv[1], comm.world()
odd = world.rank == 1
options = ({"schedule": "interleaved", "chunks": 4 if odd else 2, "micro_batches": 2}
           if case == "chunks" else {"micro_batches": 4 if odd else 2})
trainer = Trainer3D(CONFIG, ProcessGrid(1, 2, 1), optimizer_fn=make_optimizer, **options)
trainer.train_step(*batch(CONFIG, 4, 0))
print(f"rank {world.rank}: trained", flush=True)
