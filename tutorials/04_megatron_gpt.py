"""Tutorial 4: a GPT trained with 8-way tensor parallelism, next to the serial GPT.

    minimegatron run -n 8 tutorials/04_megatron_gpt.py [--steps 10] [--layers 2]
    (or: mpirun -n 8 python tutorials/04_megatron_gpt.py)

Every rank holds 1/8 of each block's weights (heads, ffn columns, vocabulary
slice); LayerNorms and positions are replicated. Each step, rank 0 also trains
the serial GPT (same full initial weights, same batches, same AdamW) and the
two losses are printed side by side: they agree to float64 rounding. The
trace counts the all-reduces: per step 2L + 4 forward (2 per block, 1 for the
embedding, 3 for the vocab-parallel loss) and 2L + 1 backward.
MINIMEGATRON_LANG=ko prints the headings in Korean (minimegatron.i18n).
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# ^ import the minimegatron beside tutorials/ (a student copy's own), not another install

import time

from minimegatron import comm, nn
from minimegatron.comm import trace
from minimegatron.data.demo import batch, make_optimizer
from minimegatron.runtime.entry import ArgumentParser, run
from minimegatron.i18n import language, text
from minimegatron.parallel.tensor_parallel import ParallelGPT


def main():
    parser = ArgumentParser()
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--batch", type=int, default=8)
    opts = parser.parse_args()
    language()                  # an unknown MINIMEGATRON_LANG: one line, before any collective
    group = comm.world()
    config = nn.GPTConfig(vocab_size=24, seq_len=8, n_layer=opts.layers, n_head=8, d_model=32)
    model = ParallelGPT(config, group)                 # ValueError on every rank if tp misfits
    opt = make_optimizer(model.parameters())
    serial = nn.GPT(config) if group.rank == 0 else None
    serial_opt = make_optimizer(serial.parameters()) if serial else None

    local = sum(p.size for p in model.parameters())
    comm.print0(text("t04.heading", layers=config.n_layer, d_model=config.d_model,
                     heads=config.n_head, vocab=config.vocab_size, tp=group.size, local=local)
                + (text("t04.of_serial", n=serial.num_parameters()) if serial else ""))
    comm.print0(text("t04.columns", loss_tp=text("t04.loss_tp", tp=group.size)))
    worst, start = 0.0, time.perf_counter()
    for step in range(opts.steps):
        x, y = batch(config, opts.batch, step)
        trace.reset()
        loss = model.loss(x, y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        reduces = sum(1 for s in trace.spans() if s["op"] == "all_reduce")
        if serial is not None:
            ref = serial.loss(x, y)
            serial_opt.zero_grad()
            ref.backward()
            serial_opt.step()
            worst = max(worst, abs(loss.item() - ref.item()))
            comm.print0(f"{step:>4} {loss.item():>14.10f} {ref.item():>14.10f} "
                        f"{abs(loss.item() - ref.item()):>9.1e} {reduces:>12}")
    elapsed = time.perf_counter() - start
    formula = text("t04.formula", n=config.n_layer)
    why = f" = {formula}" if group.size > 1 else text("t04.why_tp1", formula=formula)
    comm.print0(text("t04.summary", steps=opts.steps, elapsed=elapsed, tp=group.size,
                     worst=worst, reduces=reduces, why=why, local=local)
                + (text("t04.of", n=serial.num_parameters()) if serial else ""))


if __name__ == "__main__":
    run(main, "tutorials/04_megatron_gpt.py")
