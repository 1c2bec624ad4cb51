"""Causal attention at a long sequence: cp ranks against one process, time and peak memory.

    minimegatron run -n 4 benchmarks/bench_context_parallel.py [--seq 2048] [--repeats 3]

Rank 0 first times one process's causal attention (nn/gpt.py: the fused softmax
keeps the (B, H, S, S) matrix) while the others wait; then every rank runs each
cp variant (all-gather, ring with zigzag, Ulysses) on its S/cp tokens. One
measurement is a forward and a backward of sum(Y * W); the best of
``--repeats`` is reported (on a shared machine the best is the least
disturbed), and the peak bytes allocated during one more run (under
tracemalloc, which NumPy reports its arrays to; the inputs, allocated before,
are not counted; garbage collection off during it). Time includes the wait for
the other ranks inside the collectives: with more ranks than cores (2 cores
here) the ranks share them, so time is the weak figure and memory the strong one. Not a timed test.
"""
import argparse
import gc
import time
import tracemalloc

import numpy as np

from minimegatron import comm
from minimegatron.comm import comm_check
from minimegatron.backend import asarray
from minimegatron.nn import causal_attention
from minimegatron.parallel.context_parallel import (allgather_attention, ring_attention,
                                                    split_sequence, ulysses_attention)
from minimegatron.autodiff.tensor import Tensor

VARIANTS = {"allgather": (allgather_attention, "zigzag"), "ring": (ring_attention, "zigzag"),
            "ulysses": (ulysses_attention, "contiguous")}


def measure(fn, inputs, weight, repeats):
    """(best seconds, peak bytes) of forward + backward of sum(fn(q, k, v) * weight):
    timed without tracemalloc (it slows allocation), then one more run under it."""
    def once():
        qkv = [Tensor(a, requires_grad=True) for a in inputs]
        (fn(*qkv) * Tensor(weight)).sum().backward()
    times = []
    for _ in range(repeats + 1):                                  # the first is a warm-up
        t0 = time.perf_counter()
        once()
        times.append(time.perf_counter() - t0)
    gc.collect()                                      # the warm-ups' graphs are gone,
    gc.disable()                                      # and no collection moves the peak
    tracemalloc.start()
    once()
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    gc.enable()
    return min(times[1:]), peak


def main():
    comm_check.disable()      # benchmarks time the collectives alone (docs/notes_comm.md)
    parser = argparse.ArgumentParser()
    parser.add_argument("--seq", type=int, default=2048)
    parser.add_argument("--heads", type=int, default=8)
    parser.add_argument("--head-dim", type=int, default=16)
    parser.add_argument("--batch", type=int, default=1)
    parser.add_argument("--dtype", default="float32")
    parser.add_argument("--repeats", type=int, default=3)
    opts = parser.parse_args()
    group = comm.world()
    cp, heads = group.size, opts.heads
    rng = np.random.default_rng(0)
    shape = (opts.batch, opts.seq, heads * opts.head_dim)
    full = [asarray(rng.standard_normal(shape).astype(opts.dtype)) for _ in range(4)]
    rows = {}
    if group.rank == 0:                                           # alone: the others wait
        rows["one process"] = measure(lambda q, k, v: causal_attention(q, k, v, heads),
                                      full[:3], full[3], opts.repeats)
    comm.barrier(group)
    for name, (fn, split) in VARIANTS.items():
        if name == "ulysses" and heads % cp:
            continue
        mine = [split_sequence(a, group.rank, cp, split) for a in full]       # (B, S/cp, D)
        comm.barrier(group)
        rows[name] = measure(lambda q, k, v, fn=fn, split=split: (
            fn(q, k, v, group, heads) if name == "ulysses" else fn(q, k, v, group, heads, split)),
            mine[:3], mine[3], opts.repeats)
    everyone = comm.gather_object(rows, group)
    if group.rank != 0:
        return
    serial_s, serial_peak = everyone[0]["one process"]
    print(f"causal attention, B={opts.batch} S={opts.seq} heads={heads} hd={opts.head_dim} "
          f"{opts.dtype}, forward + backward, best of {opts.repeats}; cp={cp} ranks")
    print(f"{'variant':<12}{'s (max rank)':>13}{'x serial':>10}{'peak MB (max rank)':>20}"
          f"{'x serial':>10}")
    print(f"{'one process':<12}{serial_s:>13.3f}{1:>10.2f}{serial_peak / 1e6:>20.1f}{1:>10.2f}")
    for name in VARIANTS:
        if name not in everyone[0]:
            continue
        seconds = max(r[name][0] for r in everyone)
        peak = max(r[name][1] for r in everyone)
        print(f"{name:<12}{seconds:>13.3f}{seconds / serial_s:>10.2f}{peak / 1e6:>20.1f}"
              f"{peak / serial_peak:>10.2f}")


if __name__ == "__main__":
    import minimegatron.runtime
    minimegatron.runtime.setup()      # as every tutorial: heap kept, BLAS threads, abort hook
    main()
