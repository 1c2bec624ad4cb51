"""Tutorial 12: context parallelism, the sequence split over cp ranks (cp = every rank).

    minimegatron run -n 4 tutorials/12_context_parallel.py
    (or: mpirun -n 4 python tutorials/12_context_parallel.py)

Four things, each from the real code (minimegatron/parallel/context_parallel/), each
computed here next to one process:

1. Who holds which of S = 16 tokens, contiguous and zigzag, and the causal
   work each rank then does: contiguous grows with the rank, zigzag is equal.
2. The three causal attention variants (allgather_attention, ring_attention,
   ulysses_attention) on this rank's tokens against one process's attention
   (nn/gpt.py causal_attention on every token): max |diff| of Y, dQ, dK, dV,
   and the bytes each rank sent in the forward, read from the trace, next to
   the formula.
3. The training loop: ContextParallelGPT (ring attention in every block) on
   this rank's S/cp tokens, and the serial GPT on the whole batch, the same
   AdamW steps side by side; after every step the loss (mean over dp x cp),
   every gradient and every weight are compared. Then the bytes each rank sent
   per dimension (cp: the ring; dp x cp: the gradients and the loss), from the
   trace (trace.comm_by_dimension), next to the formulas.
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
from minimegatron.autodiff.tensor import Tensor
from minimegatron.backend import asarray, to_numpy, xp
from minimegatron.comm import trace
from minimegatron.commands.entry import run
from minimegatron.data.demo import CONTEXT_CONFIG as CONFIG, batch, make_optimizer
from minimegatron.i18n import language, text
from minimegatron.nn import GPT
from minimegatron.nn.gpt import causal_attention
from minimegatron.parallel.context_parallel import (ContextParallelGPT, allgather_attention,
                                                    average_gradients, causal_pairs, check_split,
                                                    positions, ring_attention, ring_blocks,
                                                    split_sequence, ulysses_attention)
from minimegatron.parallel.grid import ProcessGrid
from minimegatron.parallel.split import shard_batch
from minimegatron.tools import memory
from minimegatron.tools.activation_memory import activation_bytes
from minimegatron.tools.cp_picture import draw_context_parallel

STEPS, HEADS, HD, BATCH = 16, 8, 4, 2          # part 2: S tokens, H heads of hd, b rows
# part 2's attention as the calculator's shape: S tokens, width h = H * hd (K and V)
ATTENTION_SHAPE = memory.GPTShape(vocab=1, seq_len=STEPS, n_layer=1, d_model=HEADS * HD,
                                  n_head=HEADS)
GPT_BATCH = 4                                  # parts 3 and 4: rows of the GPT's batch
VARIANTS = ("allgather", "ring", "ulysses")


def tokens(rank, cp, split):
    return ",".join(str(int(p)) for p in positions(STEPS, rank, cp, split))


def worst(group, value):
    return float(comm.all_reduce(np.array([value]), group, op="max")[0])


def max_diff(a, b):
    """max |a - b| of two arrays."""
    return float(abs(to_numpy(a) - to_numpy(b)).max())


def attention_next_to_one_process(group, name):
    """Part 2: one variant on this rank's tokens against one process on every token.

    Loss sum(Y * W) with a random W; returns max |diff| of Y, dQ, dK, dV on this rank
    and the bytes this rank sent in the forward (trace)."""
    cp, rank = group.size, group.rank
    split = "contiguous" if name == "ulysses" else "zigzag"      # Ulysses re-cuts heads
    rng = np.random.default_rng(10)
    full = [asarray(rng.standard_normal((BATCH, STEPS, HEADS * HD)))
            for _ in range(4)]                                   # Q, K, V, W: (B, S, H*hd)
    serial = [Tensor(a, requires_grad=True) for a in full[:3]]
    y_serial = causal_attention(*serial, HEADS)                  # one process: (B, S, H*hd)
    (y_serial * Tensor(full[3])).sum().backward()

    def mine(a):
        return split_sequence(a, rank, cp, split)                # (B, S/cp, H*hd)
    q, k, v = [Tensor(mine(a), requires_grad=True) for a in full[:3]]
    comm.barrier(group)
    trace.reset()
    with trace.label("attention"):
        if name == "ring":                                       # K/V blocks travel the ring
            y = ring_attention(q, k, v, group, HEADS, split)     # (B, S/cp, H*hd)
        elif name == "allgather":                                # every K/V gathered first
            y = allgather_attention(q, k, v, group, HEADS, split)
        else:                                                    # all-to-all: heads <-> tokens
            y = ulysses_attention(q, k, v, group, HEADS)
        (y * Tensor(mine(full[3]))).sum().backward()
    diffs = [max_diff(y.data, mine(y_serial.data))]
    diffs += [max_diff(got.grad, mine(want.grad)) for got, want in zip((q, k, v), serial)]
    sent = sum(s["bytes_sent"] for s in trace.spans()
               if s["kind"] == "comm" and s["label"] == "attention")   # forward only
    return diffs, sent


def train_next_to_one_process(grid, steps):
    """Part 3: the GPT on cp ranks beside the GPT of one process, the same AdamW steps.

    Returns one row per step: both losses and max |diff| of the loss, the gradients and the
    weights over every rank."""
    serial = GPT(CONFIG)                                   # one process, the whole batch
    model = ContextParallelGPT(CONFIG, grid.cp, "ring")    # the same weights, S/cp tokens
    serial_opt, opt = make_optimizer(serial.parameters()), make_optimizer(model.parameters())
    want = dict(serial.named_parameters())
    comm.barrier(grid.world)
    trace.reset()                                          # dimension_table reads these steps
    rows = []
    for step in range(steps):
        x, y = batch(CONFIG, GPT_BATCH, step)                          # (B, S)
        serial_opt.zero_grad()
        serial_loss = serial.loss(x, y)                                # one process
        serial_loss.backward()

        x, y = shard_batch(x, grid.dp), shard_batch(y, grid.dp)        # (B/dp, S)
        x, y = model.shard(x), model.shard(y)                          # (B/dp, S/cp) zigzag
        opt.zero_grad()
        loss = model.loss(x, y)               # mean over my tokens; every block's ring moves K/V
        loss.backward()                       # the ring again: K/V, then dK/dV one hop behind
        average_gradients(model, grid.dp_cp)  # dL/dW = mean over dp x cp: one flat all-reduce
        mean = comm.all_reduce(xp.asarray([loss.item()]), grid.dp_cp, op="mean")[0]
        grad = max(max_diff(p.grad, want[n].grad) for n, p in model.named_parameters())
        serial_opt.step()
        opt.step()
        weight = max(max_diff(p.data, want[n].data) for n, p in model.named_parameters())
        diffs = {"loss": abs(float(mean) - serial_loss.item()), "grad": grad, "weight": weight}
        rows.append(dict({key: worst(grid.world, d) for key, d in diffs.items()},   # every rank
                         serial=serial_loss.item(), cp=float(mean)))
    return rows


def dimension_table(grid, steps):
    """Part 3's bytes per dimension (trace.comm_by_dimension of its ``steps`` steps) beside the
    formulas: the ring over cp, (cp-1) hops of K/V forward, cp-1 of K/V and cp of dK/dV
    backward, 2(S/cp) h b x 8 B each, per layer; the gradients and the loss over dp x cp."""
    by, cp, n = trace.comm_by_dimension(), grid.cp_size, grid.dp_cp.size
    hop = 2 * (CONFIG.seq_len // cp) * CONFIG.d_model * 8 * (GPT_BATCH // grid.dp_size)
    values = sum(p.size for p in GPT(CONFIG).parameters())
    ring = lambda nbytes: trace.bytes_moved("all_reduce", nbytes, n)[0]   # noqa: E731
    rows = [("cp", by["cp"], steps * CONFIG.n_layer * (3 * cp - 2) * hop,
             text("t12.how_cp", steps=steps, layers=CONFIG.n_layer, hop=hop)),
            ("dp x cp", by["dp_cp"], steps * (ring(8 * values) + ring(8)),
             text("t12.how_dp_cp", steps=steps, values=values, n=n)),
            ("dp, tp, pp", by["dp"] + by["tp"] + by["pp"], 0, text("t12.dim_none"))]
    comm.print0(text("t12.by_dimension"))
    comm.print0(text("t12.dim_head"))
    for name, got, want, how in rows:
        comm.print0(f"{name:<12}{got:>14,d}{want:>10,d}  {how}")
    off = max(abs(got - want) for _, got, want, _ in rows)
    comm.print0(text("t12.by_dimension_off", off=worst(grid.world, off)))


def layer_activation_bytes(group, name):
    """Part 4: bytes block 0 of the GPT on cp ranks keeps for backward on this rank: every
    array its autograd graph saved plus its output, not the parameters nor its input."""
    model = ContextParallelGPT(CONFIG, group, name)
    shape = (GPT_BATCH, CONFIG.seq_len // group.size, CONFIG.d_model)      # (B, S/cp, D)
    x = Tensor(asarray(np.random.default_rng(0).standard_normal(shape)), requires_grad=True)
    out = model.blocks[0](x)
    return activation_bytes([out], exclude=model.parameters() + [x])


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
    for name in VARIANTS:
        if name == "ulysses" and HEADS % cp:        # Ulysses splits the heads over cp
            continue
        diffs, sent = attention_next_to_one_process(group, name)
        diffs = [worst(group, d) for d in diffs]
        want = round(memory.cp_attention_bytes(ATTENTION_SHAPE, BATCH, cp=cp, attention=name,
                                               precision="float64")["forward"])
        comm.print0(f"{name:<11}" + "".join(f"{d:>9.1e}" for d in diffs)
                    + f"{sent:>15,d}{want:>10,d}")

    grid = ProcessGrid(cp=cp)                        # dp = 1: cp is every rank
    rows = train_next_to_one_process(grid, opts.steps)
    worst_of = {key: max(row[key] for row in rows) for key in ("loss", "grad", "weight")}
    comm.print0(text("t12.part3", cp=cp, steps=opts.steps, loss=worst_of["loss"],
                     grad=worst_of["grad"], weight=worst_of["weight"]))
    comm.print0(text("t12.head_steps", cp=f"cp={cp}"))
    for step, row in enumerate(rows):
        comm.print0(f"{step:>4}{row['serial']:>18.12f}{row['cp']:>18.12f}"
                    f"{row['loss']:>14.1e}{row['grad']:>14.1e}{row['weight']:>14.1e}")

    dimension_table(grid, opts.steps)

    shape = memory.GPTShape.of(CONFIG)
    comm.print0(text("t12.part4", batch=GPT_BATCH, serial=int(memory.activation_bytes_per_layer(
        shape, GPT_BATCH, precision="float64"))))
    comm.print0(text("t12.head_bytes"))
    for name in VARIANTS:
        if name == "ulysses" and CONFIG.n_head % cp:
            continue
        got = worst(group, layer_activation_bytes(group, name))
        want = memory.activation_bytes_per_layer(shape, GPT_BATCH, precision="float64", cp=cp,
                                                 attention=name)
        comm.print0(f"{name:<11}{int(got):>12,d}{int(want):>12,d}")
    flight = memory.ring_in_flight_bytes(shape, GPT_BATCH, cp=cp, precision="float64")
    comm.print0(text("t12.in_flight", forward=int(flight["forward"]),
                     backward=int(flight["backward"])))


if __name__ == "__main__":
    run(main, "tutorials/12_context_parallel.py")
