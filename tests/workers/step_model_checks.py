"""Runs on 4 ranks: count_step on a dp=2 x tp=2 grid (every group a strict subset)."""
from minimegatron.comm import trace
from minimegatron.data.demo import batch, make_optimizer
from minimegatron.nn import GPTConfig
from minimegatron.parallel.grid import ProcessGrid
from minimegatron.parallel.threed import Trainer3D
from minimegatron.tools import step_model

CONFIG = GPTConfig(vocab_size=16, seq_len=8, n_layer=2, n_head=4, d_model=16, seed=0)
BATCH, MICRO_BATCHES = 4, 2


def count_dp2_tp2():
    """This rank's counts of one Trainer3D step, and how many of its spans had 2 ranks."""
    grid = ProcessGrid(dp=2, pp=1, tp=2)
    trainer = Trainer3D(CONFIG, grid, micro_batches=MICRO_BATCHES, optimizer_fn=make_optimizer)
    x, y = batch(CONFIG, BATCH, 0)
    counts = step_model.count_step(lambda: trainer.train_step(x, y),
                                   trainer.stage.parameters(), {"dp": 2, "pp": 1, "tp": 2})
    counts["two_rank_messages"] = sum(s["kind"] == "comm" and s["group"][:2] in ("dp", "tp")
                                      for s in trace.spans())   # pp: a group of one
    return counts

