"""Step time of DataParallel vs DDP, and DDP with and without overlap, on N ranks.

    mpirun -n 8 python benchmarks/bench_data_parallel.py [--steps 10] [--vocab-size 16]

Trains a 4-layer GPT (d_model 64, vocab 16 unless --vocab-size) on a batch of 32
with each scheme and prints
the median step time (max over ranks) and the exposed communication share:
the time rank 0 had a collective in flight while no compute span (forward,
backward, loss, optimizer) was running, over the step time (from the trace).
A ratio benchmark, not a timed test: on a laptop the ranks share a few cores,
so overlap can only hide communication when cores are free.

The vocabulary decides how much the master style pays: its root gathers every
rank's (B/N, T, V) logits, computes the loss of the whole batch alone and
scatters dL/dy back, while DDP's ranks each take the loss of their own rows.
With V = 16 those are a few percent of the step; with V in the thousands they
are most of it.
"""
import argparse
import dataclasses
import statistics
import time

from minimegatron import comm, nn, optim
from minimegatron.comm import comm_check, trace
from minimegatron.autodiff import functional as F
from minimegatron.backend import xp
from minimegatron.data.datasets import repeat_task
from minimegatron.parallel.data_parallel import DataParallel, DistributedDataParallel
from minimegatron.parallel.split import shard_batch

CONFIG = nn.GPTConfig(vocab_size=16, seq_len=16, n_layer=4, n_head=4, d_model=64, seed=0)
BATCH = 32


def merged(intervals):
    """Union of (start, end) intervals as a sorted list of disjoint ones."""
    out = []
    for start, end in sorted(intervals):
        if out and start <= out[-1][1]:
            out[-1][1] = max(out[-1][1], end)
        else:
            out.append([start, end])
    return out


def exposed_comm(spans):
    """Seconds with a collective in flight and no compute span running."""
    busy = merged((s["start"], s["end"]) for s in spans if s["kind"] == "compute")
    total = 0.0
    for start, end in merged((s["start"], s["end"]) for s in spans if s["kind"] == "comm"):
        covered = sum(max(0.0, min(end, b) - max(start, a)) for a, b in busy)
        total += end - start - covered
    return total


def run(scheme, group, steps, config):
    """(median step seconds, max over ranks; median exposed comm share on this rank)."""
    model = nn.GPT(config)
    opt = optim.AdamW(model.parameters(), lr=1e-3)
    if scheme == "DataParallel":
        dp = DataParallel(model, group)
    else:
        ddp = DistributedDataParallel(model, group, bucket_bytes=64 * 1024,
                                      overlap=scheme == "DDP overlap")
    times, comm_share = [], []
    for step in range(steps + 2):                           # 2 warm-up steps
        x, y = repeat_task(BATCH, config.seq_len, config.vocab_size, step=step)
        comm.barrier(group)
        trace.reset()
        start = time.perf_counter()
        if scheme == "DataParallel":
            dp.step(x, y, F.cross_entropy, opt)
        else:
            opt.zero_grad()
            with trace.span("forward"):
                loss = F.cross_entropy(ddp(shard_batch(x, group)), shard_batch(y, group))
            ddp.backward(loss)
            opt.step()
        elapsed = time.perf_counter() - start
        if step >= 2:
            times.append(elapsed)
            comm_share.append(exposed_comm(trace.spans()) / elapsed)
    slowest = comm.all_reduce(xp.asarray([statistics.median(times)]), group, op="max")[0]
    return float(slowest), statistics.median(comm_share)


def main(steps, vocab_size):
    comm_check.disable()      # benchmarks time the collectives alone (docs/notes_comm.md)
    group = comm.world()
    config = dataclasses.replace(CONFIG, vocab_size=vocab_size)
    comm.print0(f"{group.size} ranks, GPT {nn.GPT(config).num_parameters():,} parameters, "
                f"vocab {vocab_size}, batch {BATCH}, median of {steps} steps")
    results = {s: run(s, group, steps, config) for s in ("DataParallel", "DDP no overlap",
                                                  "DDP overlap")}
    comm.print0(f"{'scheme':<16}{'step (ms)':>10}{'exposed comm (rank 0)':>23}")
    for scheme, (seconds, share) in results.items():
        comm.print0(f"{scheme:<16}{seconds * 1e3:10.1f}{share:22.0%}")
    base = results["DDP no overlap"][0]
    comm.print0(f"DataParallel / DDP: {results['DataParallel'][0] / base:.2f}x;  "
                f"DDP overlap / no overlap: {results['DDP overlap'][0] / base:.2f}x")


if __name__ == "__main__":
    import minimegatron.runtime
    minimegatron.runtime.setup()      # as every tutorial: heap kept, BLAS threads, abort hook
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--vocab-size", type=int, default=CONFIG.vocab_size)
    args = parser.parse_args()
    main(args.steps, args.vocab_size)
