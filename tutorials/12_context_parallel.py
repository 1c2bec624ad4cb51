"""Tutorial 12: context parallelism, the sequence split over cp ranks (cp = every rank).

    minimegatron run -n 4 tutorials/12_context_parallel.py
    (or: mpirun -n 4 python tutorials/12_context_parallel.py)

Three things, each from the real code (minimegatron/parallel/context_parallel/):

1. Who holds which of S = 16 tokens, contiguous and zigzag, and the causal
   work each rank then does: contiguous grows with the rank, zigzag is equal.
2. The three causal attention variants (all-gather, ring, Ulysses) against one
   process's attention: max |diff| of Y, dQ, dK, dV, and the bytes each rank
   sent in the forward, read from the trace, next to the formula.
3. The GPT with its sequence split over every rank (ring attention), trained
   a few AdamW steps next to one process: loss, gradients, weights; then the
   bytes each rank sent per dimension (cp: the ring; dp x cp: the gradients),
   from the trace (trace.comm_by_dimension), next to the formulas.
4. What one layer of that GPT keeps for backward on a rank, per variant,
   measured from the autograd graph next to the calculator (tools/memory.py),
   and the ring's K/V blocks in flight.

Rank 0 draws part 1 and the ring into --out/12_context_parallel.png
(tools/cp_picture.py): the two splits, the causal pairs each rank computes,
and the ring the K/V blocks travel.

MINIMEGATRON_LANG=ko prints the headings in Korean (minimegatron.i18n).
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# ^ import the minimegatron beside tutorials/ (a student copy's own), not another install

import argparse

import numpy as np

from minimegatron import comm
from minimegatron.checks.context import (BATCH as GPT_BATCH, CP_CONFIG, check_attention,
                                         check_context_parallel, forward_bytes,
                                         layer_activation_bytes)
from minimegatron.comm import trace
from minimegatron.commands.entry import run
from minimegatron.i18n import language, text
from minimegatron.parallel.context_parallel import (causal_pairs, check_split, positions,
                                                    ring_blocks)
from minimegatron.nn import GPT
from minimegatron.parallel.grid import ProcessGrid
from minimegatron.tools import memory
from minimegatron.tools.cp_picture import draw_context_parallel

STEPS, HEADS, HD, BATCH = 16, 8, 4, 2


def tokens(rank, cp, split):
    return ",".join(str(int(p)) for p in positions(STEPS, rank, cp, split))


def worst(group, value):
    return float(comm.all_reduce(np.array([value]), group, op="max")[0])


def dimension_table(grid, steps):
    """Part 3's bytes per dimension (trace.comm_by_dimension of its ``steps`` steps) beside the
    formulas: the ring over cp, (cp-1) hops of K/V forward, cp-1 of K/V and cp of dK/dV
    backward, 2(S/cp) h b x 8 B each, per layer; the gradients and the loss over dp x cp."""
    by, cp, n = trace.comm_by_dimension(), grid.cp_size, grid.dp_cp.size
    hop = 2 * (CP_CONFIG.seq_len // cp) * CP_CONFIG.d_model * 8 * (GPT_BATCH // grid.dp_size)
    values = sum(p.size for p in GPT(CP_CONFIG).parameters())
    ring = lambda nbytes: trace.bytes_moved("all_reduce", nbytes, n)[0]   # noqa: E731
    rows = [("cp", by["cp"], steps * CP_CONFIG.n_layer * (3 * cp - 2) * hop,
             text("t12.how_cp", steps=steps, layers=CP_CONFIG.n_layer, hop=hop)),
            ("dp x cp", by["dp_cp"], steps * (ring(8 * values) + ring(8)),
             text("t12.how_dp_cp", steps=steps, values=values, n=n)),
            ("dp, tp, pp", by["dp"] + by["tp"] + by["pp"], 0, text("t12.dim_none"))]
    comm.print0(text("t12.by_dimension"))
    comm.print0(text("t12.dim_head"))
    for name, got, want, how in rows:
        comm.print0(f"{name:<12}{got:>14,d}{want:>10,d}  {how}")
    off = max(abs(got - want) for _, got, want, _ in rows)
    comm.print0(text("t12.by_dimension_off", off=worst(grid.world, off)))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--out", default="out", help="folder for the picture")
    opts = parser.parse_args()
    language()                  # an unknown MINIMEGATRON_LANG: one line, before any collective
    group = comm.world()
    cp = group.size
    check_split(STEPS, cp, "zigzag")                 # the same ValueError on every rank
    comm.print0(text("t12.part1", steps=STEPS, cp=cp))
    comm.print0(text("t12.head_tokens"))
    blocks, contiguous, zigzag = (ring_blocks(cp, "contiguous"),
                                  causal_pairs(cp, "contiguous", STEPS),
                                  causal_pairs(cp, "zigzag", STEPS))
    for r in range(cp):
        comm.print0(f"{r:>4}  {tokens(r, cp, 'contiguous'):<22}{tokens(r, cp, 'zigzag'):<22}"
                    f"{blocks[r]:>12}{contiguous[r]:>15}{zigzag[r]:>14}")
    if group.rank == 0:
        try:
            os.makedirs(opts.out, exist_ok=True)
            path = draw_context_parallel(STEPS, cp, os.path.join(opts.out,
                                                                 "12_context_parallel.png"))
            print(text("t12.picture", path=path))
        except ImportError as err:      # no matplotlib: the numbers still come, one line says why
            print(err)

    comm.print0(text("t12.part2", heads=HEADS, hd=HD, batch=BATCH, steps=STEPS))
    comm.print0(text("t12.head_variants"))
    for name in ("allgather", "ring", "ulysses"):
        if name == "ulysses" and HEADS % cp:        # Ulysses splits the heads over cp
            continue
        got = check_attention(group, name, batch=BATCH, steps=STEPS, heads=HEADS, hd=HD)
        diffs = [worst(group, got[k]) for k in ("out", "dq", "dk", "dv")]
        sent = sum(got["forward"].values())
        want = forward_bytes(name, cp, STEPS, HEADS * HD, 8, BATCH)
        comm.print0(f"{name:<11}" + "".join(f"{d:>9.1e}" for d in diffs)
                    + f"{sent:>15,d}{want:>10,d}")

    grid = ProcessGrid(cp=cp)
    diffs = check_context_parallel(grid, "ring", steps=opts.steps)
    comm.print0(text("t12.part3", cp=cp, steps=opts.steps,
                     loss=worst(group, diffs["loss"]), grad=worst(group, diffs["grad"]),
                     weight=worst(group, diffs["weight"])))

    dimension_table(grid, opts.steps)

    shape = memory.GPTShape.of(CP_CONFIG)
    comm.print0(text("t12.part4", batch=GPT_BATCH, serial=int(memory.activation_bytes_per_layer(
        shape, GPT_BATCH, precision="float64"))))
    comm.print0(text("t12.head_bytes"))
    for name in ("allgather", "ring", "ulysses"):
        if name == "ulysses" and CP_CONFIG.n_head % cp:
            continue
        got = worst(group, layer_activation_bytes(group, CP_CONFIG, name, GPT_BATCH))
        want = memory.activation_bytes_per_layer(shape, GPT_BATCH, precision="float64", cp=cp,
                                                 attention=name)
        comm.print0(f"{name:<11}{int(got):>12,d}{int(want):>12,d}")
    flight = memory.ring_in_flight_bytes(shape, GPT_BATCH, cp=cp, precision="float64")
    comm.print0(text("t12.in_flight", forward=int(flight["forward"]),
                     backward=int(flight["backward"])))


if __name__ == "__main__":
    run(main, "tutorials/12_context_parallel.py")
