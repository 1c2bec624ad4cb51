"""Tutorial 3: the Megatron MLP on 4 ranks, Y = Dropout(GeLU(X A) B), and its 2 all-reduces.

    minimegatron run -n 4 tutorials/03_tensor_parallel_mlp.py
    (or: mpirun -n 4 python tutorials/03_tensor_parallel_mlp.py)

A (D, 4D) is split by columns, B (4D, D) by rows. Rank i computes
GeLU(X A_i) B_i from its own columns: GeLU is elementwise, so no communication
is needed between the two matrices. One all-reduce (g) sums the partial
products in forward; one all-reduce (f) sums dL/dX in backward (a backward
collective is labelled with its forward's label plus ".backward"). The script
prints every rank's shards and partial product, checks Y and dL/dX against the
serial nn.MLP with the same full weights, takes one SGD step on both and compares
each rank's weight shards (and their gradients) with the same slices of the serial
weights (shard_of), and counts the all-reduces in the trace.
MINIMEGATRON_LANG=ko prints the headings in Korean (minimegatron.i18n).
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# ^ import the minimegatron beside tutorials/ (a student copy's own), not another install

import numpy as np

from minimegatron import comm, nn
from minimegatron.comm import trace
from minimegatron.backend import asarray, to_numpy
from minimegatron.commands.entry import run
from minimegatron.i18n import language, text
from minimegatron.i18n.columns import fit
from minimegatron.optim import SGD
from minimegatron.parallel.tensor_parallel import ParallelMLP, shard_of
from minimegatron.autodiff.tensor import Tensor

CONFIG = nn.GPTConfig(vocab_size=16, seq_len=4, n_layer=1, n_head=4, d_model=8)
LR = 0.1


def serial_mlp(config):
    """nn.MLP holding the same full weights the parallel MLP was sliced from."""
    mlp = nn.MLP(config)
    for name, p in mlp.named_parameters():
        p.data = nn.gpt_init(f"mlp.{name}", p.shape, config)
    return mlp


def worst(group, value):
    """The largest ``value`` over the ranks (every rank gets it)."""
    return float(to_numpy(comm.all_reduce(asarray([value]), group, op="max"))[0])


def main():
    language()                  # an unknown MINIMEGATRON_LANG: one line, before any collective
    group = comm.world()
    d, tp = CONFIG.d_model, group.size
    rng = np.random.default_rng(0)
    x_host, g_host = rng.standard_normal((2, 4, d)), rng.standard_normal((2, 4, d))

    mlp = ParallelMLP(CONFIG, group, name="mlp")
    x = Tensor(asarray(x_host), requires_grad=True)
    comm.barrier(group)
    trace.reset()
    with trace.label("mlp"):
        y = mlp(x)                                     # (2, 4, D) on every rank
    (y * Tensor(asarray(g_host))).sum().backward()     # backward collectives: "mlp.backward"
    counts = {phase: sum(1 for s in trace.spans() if s["op"] == "all_reduce"
                         and s["label"] == label)
              for phase, label in (("forward", "mlp"), ("backward", "mlp.backward"))}
    nbytes = [s["nbytes"] for s in trace.spans() if s["op"] == "all_reduce"]

    comm.print0(text("t03.heading", d=d, ffn=4 * d, tp=tp))
    a_i, b_i = to_numpy(mlp.fc1.weight.data), to_numpy(mlp.fc2.weight.data)
    comm.print_ranks(text("t03.shards", rank=group.rank, first=group.rank * a_i.shape[1],
                          last=(group.rank + 1) * a_i.shape[1] - 1, a_shape=a_i.shape,
                          b_shape=b_i.shape,
                          partial=np.round(to_numpy(mlp.fc2.last_partial)[0, 0, :3], 5)),
                     group)

    serial = serial_mlp(CONFIG)
    xs = Tensor(asarray(x_host), requires_grad=True)
    ys = serial(xs)
    (ys * Tensor(asarray(g_host))).sum().backward()
    y_err = float(np.abs(to_numpy(y.data) - to_numpy(ys.data)).max())
    dx_err = float(np.abs(to_numpy(x.grad) - to_numpy(xs.grad)).max())
    comm.print_ranks(f"|Y - Y_serial| = {y_err:.1e}   |dL/dX - serial| = {dx_err:.1e}", group)

    # one SGD step on both; rank i's shards against the same slices of the serial arrays
    # (shard_of: fc1 by columns, fc2 by rows, fc2's bias whole on every rank)
    whole = dict(serial.named_parameters())
    grad_err = max(float(np.abs(to_numpy(p.grad) - to_numpy(
        shard_of(name, whole[name].grad, group.rank, tp))).max())
        for name, p in mlp.named_parameters())
    SGD(mlp.parameters(), lr=LR).step()
    SGD(serial.parameters(), lr=LR).step()
    weight_err = max(float(np.abs(to_numpy(p.data) - to_numpy(
        shard_of(name, whole[name].data, group.rank, tp))).max())
        for name, p in mlp.named_parameters())
    comm.print0(text("t03.step", lr=LR, grad=worst(group, grad_err),
                     weight=worst(group, weight_err)))
    each = (text("t03.each", nbytes=nbytes[0], d=d) if nbytes else text("t03.each_tp1", d=d))
    comm.print0(text("t03.all_reduces", forward=counts["forward"], backward=counts["backward"],
                     each=each))
    params = sum(p.size for p in mlp.parameters())
    rows = [("", text("t03.serial"), text("t03.per_rank", tp=tp)),
            (text("t03.parameters"), serial.num_parameters(), params),
            (text("t03.per_step"), 0, len(nbytes))]
    comm.print0("\n" + "\n".join(fit(label, 22, "<") + fit(str(one), 10) + fit(str(tp_), 20)
                                 for label, one, tp_ in rows))     # columns: Hangul counts 2


if __name__ == "__main__":
    run(main, "tutorials/03_tensor_parallel_mlp.py")
