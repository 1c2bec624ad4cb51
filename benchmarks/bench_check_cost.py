"""What checking mode costs in a 3D training step: off, agreed steps, every call checked.

    minimegatron run -n 8 benchmarks/bench_check_cost.py [--steps 120] [--dp 2 --pp 2 --tp 2]

The model and batch of tutorial 08 (the demo GPT, 2 layers, 32 tokens, batch 16, M = 2,
1F1B) on a dp x pp x tp grid. One job, one Trainer3D; the three modes take turns STEP
BY STEP, so a load that comes and goes on a shared machine slows all three alike:

    off        MINIMEGATRON_CHECK=0: no check at all
    agreed     the default: the step is an ``agreed_step``: only each group's first
               collective is checked, with the step number, the batch's shapes, the
               optimizer's settings and (tp, pp, cp) the rows' crc32 folded into its key
    per call   MINIMEGATRON_CHECK=all: the same fields compared, then one 48-byte
               Allreduce before every collective and a 320-byte signature before every
               send (comm/comm_check.py)

Printed: the median step time of each (the slowest rank's), the cost of each mode over
``off`` in percent, and the 48-byte checks each mode made per step on rank 0 (counted
by wrapping ``comm_check.fast_signature`` and ``agreed_steps.post_step_check``).
Figures: docs/performance.md, "What checking mode costs", and docs/reliability.md.
"""
import argparse
import statistics
import time
from dataclasses import replace

from mpi4py import MPI

from minimegatron import comm
from minimegatron.comm import agreed_steps, comm_check
from minimegatron.data.datasets import CharTokenizer, text_batches, tiny_corpus
from minimegatron.data.demo import DEMO_CONFIG
from minimegatron.optim import AdamW
from minimegatron.parallel.grid import ProcessGrid
from minimegatron.parallel.threed import Trainer3D

MODES = {"off": dict(on=False), "agreed": dict(on=True, steps=True),
         "per call": dict(on=True, steps=False)}


def counting(calls):
    """Wrap comm_check.fast_signature (one per 48-byte check) and post_step_check (one per
    group and agreed step) to count both into ``calls``."""
    fast, post = comm_check.fast_signature, agreed_steps.post_step_check

    def fast_counted(*args):
        calls["checks"] += 1
        return fast(*args)

    def post_counted(*args):
        calls["checks"] += 1
        return post(*args)
    comm_check.fast_signature, agreed_steps.post_step_check = fast_counted, post_counted


def main(argv=None):
    ap = argparse.ArgumentParser()
    for flag, default in (("dp", 2), ("pp", 2), ("tp", 2), ("steps", 120)):
        ap.add_argument(f"--{flag}", type=int, default=default)
    args = ap.parse_args(argv)
    world = comm.world()
    corpus = tiny_corpus()
    tokenizer = CharTokenizer(corpus)
    ids = tokenizer.encode(corpus)
    config = replace(DEMO_CONFIG, vocab_size=tokenizer.vocab_size, seq_len=32, n_layer=2)
    grid = ProcessGrid(args.dp, args.pp, args.tp)
    trainer = Trainer3D(config, grid, micro_batches=2,
                        optimizer_fn=lambda params: AdamW(params, lr=1e-2, weight_decay=0.0))
    times = {mode: [] for mode in MODES}
    calls = {mode: {"checks": 0} for mode in MODES}
    counted = {"checks": 0}
    counting(counted)
    for step in range(args.steps):
        mode = list(MODES)[step % len(MODES)]
        x, y = text_batches(ids, 16, config.seq_len, seed=config.seed, step=step)
        before = dict(counted)
        with comm_check.checking(False):
            comm.barrier(world)                    # every rank starts together, unchecked
        with comm_check.checking(**MODES[mode]):
            start = time.perf_counter()
            trainer.train_step(x, y)
            elapsed = time.perf_counter() - start
        times[mode].append(world.comm.allreduce(elapsed, op=MPI.MAX))
        for key in counted:
            calls[mode][key] += counted[key] - before[key]
    if world.rank == 0:
        skip = 3                                   # the first steps of each mode: warm-up
        medians = {mode: statistics.median(t[skip:]) for mode, t in times.items()}
        print(f"{world.size} ranks (dp {args.dp} x pp {args.pp} x tp {args.tp}), "
              f"{args.steps // len(MODES)} steps per mode, modes taking turns")
        print(f"{'mode':<10}{'median step (ms)':>18}{'cost':>8}{'checks/step':>13}")
        for mode, median in medians.items():
            cost = 100 * (median / medians["off"] - 1)
            steps = len(times[mode])
            print(f"{mode:<10}{1e3 * median:>18.2f}{cost:>7.1f}%"
                  f"{calls[mode]['checks'] / steps:>13.1f}")


if __name__ == "__main__":
    import minimegatron.runtime
    minimegatron.runtime.setup()
    main()
