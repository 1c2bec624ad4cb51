"""No growth: resident memory stays flat over many calls once warmed up (tests/test_soak.py).

Each soak measures this rank's resident set (/proc/self/statm) after a warm-up (pools,
caches, the trace ring filled: it keeps the last ``SPANS`` spans) and again at the end:

    all_to_allv   20,000 calls of comm.all_to_allv (uneven sizes, float64 and float32)
    planted       8,000 such calls, with each datatype made per call as mpi4py's
                  from_numpy_dtype makes it (the old code): the growth the soak must see
    moe           4,000 steps of a dropless MoE (dp=2, ep=2: two all_to_allv per MoE
                  layer forward, two backward)
"""
import os

import numpy as np
from mpi4py.util.dtlib import from_numpy_dtype

from minimegatron import comm
from minimegatron.comm import staging, trace
from minimegatron.data.demo import batch, make_optimizer
from minimegatron.nn.gpt import GPTConfig
from minimegatron.nn.moe import MoEConfig
from minimegatron.parallel.expert_parallel import MoETrainer
from minimegatron.parallel.grid import ProcessGrid

SPANS = 1000
TINY = GPTConfig(vocab_size=8, seq_len=4, n_layer=1, n_head=1, d_model=4, seed=0)


def resident_mb():
    """This process's resident set size in MB (Linux: /proc/self/statm, field 2, pages)."""
    with open("/proc/self/statm") as f:
        pages = int(f.read().split()[1])
    return pages * os.sysconf("SC_PAGE_SIZE") / 2**20


def exchanges(calls, group):
    """``calls`` all_to_allv with sizes that change each call, alternating float64, float32."""
    for i in range(calls):
        dtype = np.float64 if i % 2 else np.float32
        send = [i % 3, 2]                             # every rank sends send[j] rows to j
        x = np.full((sum(send), 3), group.rank, dtype)              # (rows, 3)
        out = comm.all_to_allv(x, group, send, [send[group.rank]] * 2)
        assert (out[:send[group.rank]] == 0).all() and (out[send[group.rank]:] == 1).all()


def soak(run, warm, calls):
    """(resident MB after ``warm`` calls, growth in MB over ``calls`` more)."""
    run(warm)
    before = resident_mb()
    run(calls)
    return before, resident_mb() - before


def all_to_allv_soak(calls=20_000, warm=1_000, planted_calls=8_000):
    group = comm.world()
    run = lambda n: exchanges(n, group)                     # noqa: E731
    before, growth = soak(run, warm, calls)
    kept = staging.mpi_type
    staging.mpi_type = from_numpy_dtype                     # planted: a new datatype per call
    try:
        _, planted = soak(run, warm, planted_calls)
    finally:
        staging.mpi_type = kept
    return {"a2av_mb": before, "a2av_growth_mb": growth, "planted_growth_mb": planted,
            "a2av_spans": len(trace.spans())}


def moe_soak(steps=4_000, warm=500):
    trainer = MoETrainer(TINY, MoEConfig(2, 1, None), ProcessGrid(dp=2, ep=2),
                         optimizer_fn=make_optimizer)
    x, y = batch(TINY, 2, 0)
    losses = []

    def run(n):
        for _ in range(n):
            losses.append(trainer.train_step(x, y))
    before, growth = soak(run, warm, steps)
    calls = sum(1 for s in trace.spans() if s["op"] == "all_to_allv")
    return {"moe_mb": before, "moe_growth_mb": growth, "moe_steps": len(losses),
            "moe_first_loss": losses[0], "moe_last_loss": losses[-1],
            "moe_a2av_in_ring": calls, "moe_finite": bool(np.isfinite(losses).all())}


def check_all():
    trace.set_max_spans(SPANS)
    return {**all_to_allv_soak(), **moe_soak()}
