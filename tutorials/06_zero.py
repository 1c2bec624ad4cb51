"""Tutorial 6: ZeRO stages 0-3 side by side: same losses, less memory, a bit more traffic.

    minimegatron run -n 8 tutorials/06_zero.py [--steps 5]

Stage 0 is DDP with AdamW (every rank holds weights, grads, m and v: 4bP
bytes, b = 8 in float64). Stage 1 shards m and v over the N ranks, stage 2
also the gradients, stage 3 also the weights (gathered one layer at a time,
just before its forward and again before its backward). Every stage trains
tutorial 0's GPT on the same batches and prints the same losses. The table
compares each rank's bytes, measured from the real arrays
(tools/memory_measure.py), with model_state_bytes (tools/memory.py), and the
bytes each rank sent per step (trace) with the ring model. Last, FSDP2: every
weight sharded on its own rows (dim 0) instead of a flat buffer, so the model's
parameters are the shards and a plain AdamW steps them; its losses beside stage
3's, its bytes beside tools/memory_fsdp.py (the gathered peak: two units at a
time, the one running and the next, prefetched).
Code: minimegatron/parallel/data_parallel/zero.py, zero3.py, fsdp2.py.
MINIMEGATRON_LANG=ko prints the headings in Korean (minimegatron.i18n).
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# ^ import the minimegatron beside tutorials/ (a student copy's own), not another install


from minimegatron import comm, nn, optim
from minimegatron.comm import trace
from minimegatron.backend import xp
from minimegatron.data.datasets import repeat_task
from minimegatron.commands.argtypes import positive_int
from minimegatron.commands.entry import ArgumentParser, run
from minimegatron.i18n import language, text
from minimegatron.parallel.data_parallel import DistributedDataParallel, zero_optimizer
from minimegatron.parallel.data_parallel.fsdp2 import fully_shard
from minimegatron.parallel.split import shard_batch
from minimegatron.tools.memory_fsdp import fsdp2_bytes, units_of
from minimegatron.tools.memory_measure import formula, measure, padding_margin

CONFIG = nn.GPTConfig(vocab_size=10, seq_len=16, n_layer=2, n_head=2, d_model=32, seed=0)
BATCH, LR = 16, 3e-3
COMM_MODEL = {0: "2(N-1)/N G", 1: "3(N-1)/N G", 2: "2(N-1)/N G", 3: "3(N-1)/N G"}


def rows(step, group):
    """This rank's rows of the step's batch: (B/N, T) inputs and targets."""
    x, y = repeat_task(BATCH, CONFIG.seq_len, CONFIG.vocab_size, seed=0, step=step)
    return shard_batch(x, group), shard_batch(y, group)


def mean_loss(loss, group):
    """The global mean loss, for printing (traced as "print", left out of the bytes)."""
    with trace.label("print"):
        return float(comm.all_reduce(xp.asarray([loss.item()]), group, op="mean")[0])


def sent_per_step(steps):
    """Bytes this rank sent per step, from the trace (the prints left out)."""
    return sum(s["bytes_sent"] for s in trace.spans()
               if s["kind"] == "comm" and s["label"] != "print") / steps


def train(stage, group, steps):
    """(losses, measured bytes at the last step, bytes sent per step, flat groups)."""
    model = nn.GPT(CONFIG)
    adamw = optim.AdamW(model.parameters(), lr=LR, weight_decay=0.0)
    if stage == 0:
        ddp = DistributedDataParallel(model, group, bucket_bytes=16 * 1024)
    else:
        zero = zero_optimizer(model, group, stage, adamw)          # 3: wraps model's layers
    comm.barrier(group)
    trace.reset()
    losses = []
    for step in range(steps):
        loss = model.loss(*rows(step, group))                       # (B/N, T)
        if stage == 0:
            adamw.zero_grad()
            ddp.backward(loss)                                      # all-reduce, averaged
            held = measure(model.parameters(), adamw)
            adamw.step()
        else:
            zero.zero_grad()
            loss.backward()                                         # stage 3: reduce-scatter
            zero.reduce_gradients()                                 # stage 1/2: the grads
            held = measure(model.parameters(), zero)
            zero.step()                                             # + all-gather (1, 2)
        losses.append(mean_loss(loss, group))
    sent = sent_per_step(steps)
    return losses, held, sent, 1 if stage == 0 else len(zero.local_shards())


def train_fsdp2(group, steps):
    """(losses, {measured bytes}, {the calculator's}) of FSDP2: the same loop as stage 3."""
    model = nn.GPT(CONFIG)
    units = units_of(model)                            # shapes for the calculator
    state = fully_shard(model, group)                  # every weight: its rows r*c.. only
    adamw = optim.AdamW(model.parameters(), lr=LR, weight_decay=0.0)   # on the shards
    comm.barrier(group)
    trace.reset()
    losses = []
    for step in range(steps):
        adamw.zero_grad()
        loss = model.loss(*rows(step, group))                       # all-gather per unit
        loss.backward()                                             # again + reduce-scatter
        adamw.step()                                                # no communication
        losses.append(mean_loss(loss, group))
    sent = sent_per_step(steps)
    held = {"weights": sum(p.data.nbytes for p in model.parameters()),
            "grads": sum(p.grad.nbytes for p in model.parameters()),
            "optimizer": sum(a.nbytes for st in adamw.state for a in st.values()),
            "gathered_peak": state.gathered.peak, "sent": int(sent)}
    return losses, held, fsdp2_bytes(units, group.size)


def main(steps):
    language()                  # an unknown MINIMEGATRON_LANG: one line, before any collective
    group = comm.world()
    N = group.size
    P = nn.GPT(CONFIG).num_parameters()
    runs = {stage: train(stage, group, steps) for stage in range(4)}
    comm.print0(text("t06.heading", n=N, params=P))
    comm.print0(text("t06.head_losses"))
    for step in range(steps):
        comm.print0(f"{step:4d}" + "".join(f"{runs[s][0][step]:12.8f}" for s in range(4)))
    comm.print_ranks(" ".join(f"stage{s} {runs[s][1]['total']:,d} B" for s in range(4)), group)

    comm.print0(text("t06.bytes"))
    comm.print0(text("t06.head_memory"))
    G = 8 * P
    for stage, (_, held, sent, groups) in runs.items():
        want = formula(P, N, stage, "float64")
        cells = "".join(f"{held[k]:>10,d} /{int(want[k]):>8,d}"
                        for k in ("weights", "grads", "optimizer", "total"))
        comm.print0(f"{stage:<6}{cells}{held['peak_gathered']:>14,d}{sent:>11,.0f}  "
                    f"{COMM_MODEL[stage]} = {eval_model(stage, N, G):,.0f}")
        if stage and abs(held["total"] - want["total"]) > padding_margin(N, groups):
            comm.print0(text("t06.outside"))
    comm.print0(text("t06.margin", margin=padding_margin(N, 1), g=G))
    losses, held, want = train_fsdp2(group, steps)
    off = max(abs(a - b) for a, b in zip(losses, runs[3][0]))
    comm.print0(text("t06.fsdp2", off=off))
    comm.print0(text("t06.fsdp2_head"))
    comm.print0(" ".join(f"{held[k]:>9,d} /{int(want[k]):>9,d}" for k in held))


def eval_model(stage, N, G):
    return (3 if stage in (1, 3) else 2) * (N - 1) / N * G


if __name__ == "__main__":
    parser = ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=positive_int, default=5)
    run(main, "tutorials/06_zero.py", parser.parse_args().steps)
