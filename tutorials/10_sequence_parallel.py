"""Tutorial 10: sequence parallelism (Korthikanti et al. 2022) on top of tensor parallelism.

    minimegatron run -n 4 tutorials/10_sequence_parallel.py
    (or: mpirun -n 4 python tutorials/10_sequence_parallel.py)

The tp group is every rank (t = the number of ranks). ParallelGPT(...,
sequence_parallel=True) keeps the activations between the linears split along
the sequence, (B, T/t, D); g (all-gather) and g-bar (reduce-scatter) of
parallel/tensor_parallel/sequence.py replace f and g at the borders. Three
things, each from the real code:

1. ``traced_step``: one training step of each model, traced, per transformer
   block: plain tensor parallelism does 2 all-reduces forward and 2 backward;
   with sequence parallelism they become 2 all-gathers + 2 reduce-scatters each
   way, and every rank sends the same bytes. On top: the re-gathers of the stored
   input (backward) and the small all-reduces of the LayerNorm / bias gradients.
2. The activation bytes one block keeps for backward on a rank, measured from
   the autograd graph (``layer_activation_bytes``, tools/activation_memory.py), next to
   tools/memory.py's formula: tensor parallelism leaves a replicated part,
   sequence parallelism divides everything by t.
3. ``train``: AdamW steps of the sequence-parallel GPT and, in the same loop,
   of the whole GPT on one process: each rank's gradient and weight shards
   against the same slices of one process's (``shard_of``), and the losses.

``--out DIR`` also writes rank 0's block-0 collectives of both runs to
DIR/sp_trace.json (docs/make_figures.py draws docs/img/sequence_parallel_trace.png
from it).
MINIMEGATRON_LANG=ko prints the headings in Korean (minimegatron.i18n).
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# ^ import the minimegatron beside tutorials/ (a student copy's own), not another install

import collections
import json

import numpy as np

from minimegatron import comm, nn
from minimegatron.autodiff.tensor import Tensor
from minimegatron.backend import asarray, to_numpy
from minimegatron.comm import trace
from minimegatron.commands.entry import ArgumentParser, run
from minimegatron.data.demo import batch, make_optimizer
from minimegatron.i18n import language, text
from minimegatron.i18n.columns import fit, width
from minimegatron.parallel.tensor_parallel import ParallelGPT, shard_of
from minimegatron.tools import memory
from minimegatron.tools.activation_memory import activation_bytes

OPS = ("all_reduce", "all_gather", "reduce_scatter")


def traced_step(model, group, config, batch_size):
    """[(phase, op, label, nbytes, bytes sent)] of every tp collective of one step."""
    x, y = batch(config, batch_size, 0)                 # (B, T) token ids and targets
    comm.barrier(group)
    trace.reset()
    loss = model.loss(x, y)
    forward = len(trace.spans())                        # the spans so far: forward's
    loss.backward()
    return [("forward" if i < forward else "backward", s["op"], s["label"], s["nbytes"],
             s["bytes_sent"]) for i, s in enumerate(trace.spans())
            if s["kind"] == "comm" and s["group"] == group.name]


def layer_activation_bytes(group, config, sequence_parallel, batch_size):
    """Part 2: bytes block 0 keeps for backward on this rank (group None: one process's
    nn.GPT block): every array its autograd graph saved plus its output, not the
    parameters nor its input."""
    model = nn.GPT(config) if group is None else ParallelGPT(
        config, group, sequence_parallel=sequence_parallel)
    parts = group.size if sequence_parallel and group is not None else 1
    shape = (batch_size, config.seq_len // parts, config.d_model)     # (B, T or T/tp, D)
    x = Tensor(asarray(np.random.default_rng(0).standard_normal(shape)), requires_grad=True)
    out = model.blocks[0](x)
    return activation_bytes([out], exclude=model.parameters() + [x])


def max_diff(a, b):
    return float(abs(to_numpy(a) - to_numpy(b)).max())


def train(group, config, steps, batch_size):
    """AdamW on the tp + sequence parallel GPT and on one process, step by step.

    Returns [(loss tp+sp, loss one process)] per step and this rank's largest
    {"loss", "grad", "weight"} differences (its shards against one process's slices).
    """
    model = ParallelGPT(config, group, sequence_parallel=True)
    opt = make_optimizer(model.parameters())
    serial = nn.GPT(config)                      # one process: the same seed, the same weights
    serial_opt = make_optimizer(serial.parameters())
    whole = dict(serial.named_parameters())      # a shard keeps its full parameter's name
    r, t = group.rank, group.size
    losses, diffs = [], {"loss": 0.0, "grad": 0.0, "weight": 0.0}
    for step in range(steps):
        x, y = batch(config, batch_size, step)   # (B, T); the model splits T itself
        loss = model.loss(x, y)
        opt.zero_grad()
        loss.backward()
        ref = serial.loss(x, y)
        serial_opt.zero_grad()
        ref.backward()
        losses.append((loss.item(), ref.item()))
        diffs["loss"] = max(diffs["loss"], abs(loss.item() - ref.item()))
        for name, p in model.named_parameters():
            diffs["grad"] = max(diffs["grad"], max_diff(p.grad, shard_of(name, whole[name].grad,
                                                                         r, t)))
        opt.step()
        serial_opt.step()
        for name, p in model.named_parameters():
            diffs["weight"] = max(diffs["weight"], max_diff(p.data, shard_of(
                name, whole[name].data, r, t)))
    return losses, diffs


def block_traffic(spans, block="blocks.0"):
    """{(phase, kind): {op: [count, bytes sent]}} of one block; kind: act, regather, params."""
    out = collections.defaultdict(lambda: {op: [0, 0] for op in OPS})
    for phase, op, label, _, sent in spans:
        if label and (label == block or label.startswith((block + ".", block + "/"))):
            kind = "params" if "sp-params" in label else "regather" if "regather" in label \
                else "act"
            out[(phase, kind)][op][0] += 1
            out[(phase, kind)][op][1] += sent
    return out


def traffic_text(plain, sp, tp):
    lines = [text("t10.part1", tp=tp),
             f"{'':<24}{'all-reduce':>18}{'all-gather':>18}{'reduce-scatter':>18}"]

    def row(name, cell):
        return f"{name:<24}" + "".join(f"{cell[op][0]:>6} {cell[op][1]:>9,d} B" for op in OPS)
    for phase in ("forward", "backward"):
        lines.append(row(f"{phase}, tp", plain[(phase, "act")]))
        lines.append(row(f"{phase}, tp+sp", sp[(phase, "act")]))
        same = sum(v[1] for v in plain[(phase, "act")].values()) == \
            sum(v[1] for v in sp[(phase, "act")].values())
        lines.append(text("t10.same", phase=phase, verdict=text("t10.yes" if same else "t10.no")))
    lines.append(row("backward, re-gather", sp[("backward", "regather")]))
    lines.append(row("backward, LN/bias grads", sp[("backward", "params")]))
    return "\n".join(lines)


def main():
    parser = ArgumentParser()
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--batch", type=int, default=2)
    parser.add_argument("--out", help="write this rank 0's block-0 spans to OUT/sp_trace.json")
    opts = parser.parse_args()
    language()                  # an unknown MINIMEGATRON_LANG: one line, before any collective
    group = comm.world()
    config = nn.GPTConfig(vocab_size=24, seq_len=8, n_layer=2, n_head=8, d_model=32)
    b, s, h, a, t = opts.batch, config.seq_len, config.d_model, config.n_head, group.size
    comm.print0(text("t10.heading", layers=config.n_layer, h=h, a=a, s=s, b=b, t=t))

    spans = {flag: traced_step(ParallelGPT(config, group, sequence_parallel=flag), group,
                               config, b) for flag in (False, True)}       # tp, then tp + sp
    plain, sp = block_traffic(spans[False]), block_traffic(spans[True])
    comm.print0(traffic_text(plain, sp, t))
    if opts.out and group.rank == 0:
        os.makedirs(opts.out, exist_ok=True)
        with open(os.path.join(opts.out, "sp_trace.json"), "w") as f:
            json.dump({"tp": t, "spans": {"tp": [x for x in spans[False] if "blocks.0" in
                                                 (x[2] or "")],
                                          "tp+sp": [x for x in spans[True] if "blocks.0" in
                                                    (x[2] or "")]}}, f)

    shape = memory.GPTShape(config.vocab_size, s, 1, h, a)
    comm.print0(text("t10.part2"))
    rows = ((text("t10.one_process"), 1, False), (f"tp={t}", t, False),
            (text("t10.sp_row", t=t), t, True))
    size = max(18, *(width(name) + 2 for name, _, _ in rows))      # Hangul: 2 columns
    for name, t_, flag in rows:
        got = layer_activation_bytes(None if t_ == 1 else group, config, flag, b)
        want = memory.activation_bytes_per_layer(shape, b, t_, "float64", sequence_parallel=flag)
        comm.print0(f"  {fit(name, size, '<')}{got:>10,d} / {int(want):>10,d}  "
                    + text("t10.equal" if got == want else "t10.different"))
    comm.print0(text("t10.note", tp=memory.activation_bytes_per_layer(shape, b, t),
                     sp=memory.activation_bytes_per_layer(shape, b, t, sequence_parallel=True)))

    losses, diffs = train(group, config, opts.steps, 2 * b)
    worst = {k: comm.all_reduce(np.array([diffs[k]]), group, op="max")[0]
             for k in ("loss", "grad", "weight")}
    comm.print0(text("t10.part3", t=t, steps=opts.steps, loss=worst["loss"],
                     grad=worst["grad"], weight=worst["weight"]))
    comm.print0(text("t10.columns", batch=2 * b))
    for step, (loss, ref) in enumerate(losses):
        comm.print0(f"{step:>4} {loss:>18.15f} {ref:>18.15f} {abs(loss - ref):>9.1e}")


if __name__ == "__main__":
    run(main, "tutorials/10_sequence_parallel.py")
