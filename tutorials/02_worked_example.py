"""Tutorial 2: the source notes' worked example, Y = X A, split over 2 ranks two ways.

    minimegatron run -n 2 tutorials/02_worked_example.py
    (or: mpirun -n 2 python tutorials/02_worked_example.py)

    X = [[0, 1, 2, 3],      A = [[10, 14],      Y = X A = [[ 74,  98],
         [4, 5, 6, 7]]           [11, 15],                 [258, 346]]
                                 [12, 16],
                                 [13, 17]]

Column split (ColumnParallelLinear): rank i holds column A_i, sees all of X
(f: identity), computes Y_i = X A_i, and the all-gather concatenates the columns.
Row split (RowParallelLinear): rank i holds rows A_i, gets the columns X_i of X
(scatter), computes the partial product X_i A_i, and g (all-reduce) sums them.
Every number printed comes out of the real layers (``last_partial`` is the
local product the layer's forward computed). Each split then trains for 2 SGD
steps on L = sum(Y): dL/dX = ones(2, 2) A^T and dL/dA = X^T ones(2, 2), which
each rank holds its shard of. The same loop runs on one process (nn.Linear
holding the whole A): its L, Y, dL/dX, dL/dA and A after every step must equal
the parallel ones, integer for integer (lr 1: every number stays an integer).
MINIMEGATRON_LANG=ko prints the headings and explanations in Korean (minimegatron.i18n).
"""
import os
import sys
import unicodedata

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# ^ import the minimegatron beside tutorials/ (a student copy's own), not another install

import numpy as np

from minimegatron import comm, nn
from minimegatron.autodiff.tensor import Tensor
from minimegatron.backend import asarray, to_numpy
from minimegatron.commands.entry import run
from minimegatron.i18n import language, text
from minimegatron.optim import SGD
from minimegatron.parallel.tensor_parallel import (ColumnParallelLinear, RowParallelLinear,
                                                   scatter_to_tp)

X = [[0.0, 1.0, 2.0, 3.0], [4.0, 5.0, 6.0, 7.0]]                     # (2, 4)
A = [[10.0, 14.0], [11.0, 15.0], [12.0, 16.0], [13.0, 17.0]]         # (4, 2)
STEPS, LR = 2, 1.0


def column_split(group):
    """Rank i holds column A_i (4, 1); X goes whole through f; the all-gather makes Y."""
    layer = ColumnParallelLinear(4, 2, group, bias=False, gather_output=True,
                                 master_weight=asarray(A, dtype="float64"))

    def forward(x):
        y = layer(x)                                       # f, X A_i, all-gather: (2, 2)
        return y, x.data, layer.last_partial               # Y, this rank's input, Y_i (2, 1)
    return layer, forward


def row_split(group):
    """Rank i holds rows A_i (2, 2) and gets columns X_i (2, 2); g (all-reduce) sums."""
    layer = RowParallelLinear(4, 2, group, bias=False, input_is_parallel=True,
                              master_weight=asarray(A, dtype="float64"))

    def forward(x):
        x_i = scatter_to_tp(x, group)                      # (2, 2): columns 2i, 2i+1 of X
        y = layer(x_i)                                     # X_i A_i, then g: (2, 2)
        return y, x_i.data, layer.last_partial             # Y, X_i, Y_i (2, 2)
    return layer, forward


def one_process():
    """The same layer unsplit: nn.Linear holding all of A, Y = X A."""
    layer = nn.Linear(4, 2, bias=False)
    layer.weight.data = asarray(A, dtype="float64")        # (4, 2)

    def forward(x):
        y = layer(x)                                       # (2, 2)
        return y, x.data, y.data
    return layer, forward


def train(layer, forward):
    """STEPS of SGD on L = sum(Y). Returns, per step, {L, A_i, X_i, Y_i, Y, dX, dA_i} as
    NumPy copies (A_i: the weight that step used), and the weight after the last step."""
    opt = SGD(layer.parameters(), lr=LR)
    steps = []
    for _ in range(STEPS):
        x = Tensor(asarray(X, dtype="float64"), requires_grad=True)           # (2, 4)
        y, x_i, y_i = forward(x)
        loss = y.sum()                                                         # L = sum(Y)
        opt.zero_grad()
        loss.backward()
        steps.append({key: to_numpy(value).copy() for key, value in (
            ("A_i", layer.weight.data), ("X_i", x_i), ("Y_i", y_i), ("Y", y.data),
            ("dX", x.grad), ("dA_i", layer.weight.grad))})
        steps[-1]["L"] = loss.item()
        opt.step()                                                             # A_i -= lr dA_i
    return steps, to_numpy(layer.weight.data).copy()


def equals_one_process(steps, weight, serial_steps, serial_weight, group, axis):
    """True if every step's L, Y, dL/dX, the gathered dL/dA and the gathered A after each
    step equal one process's (A's shards are cut along ``axis``: 1 columns, 0 rows)."""
    def gather(shard):                                     # every rank calls it alike
        return to_numpy(comm.all_gather(asarray(shard), group, axis=axis))
    grads = [gather(s["dA_i"]) for s in steps]                                # (4, 2) each
    after = [gather(s["A_i"]) for s in steps[1:]] + [gather(weight)]          # (4, 2) each
    serial_after = [s["A_i"] for s in serial_steps[1:]] + [serial_weight]
    return all(s["L"] == r["L"] and np.array_equal(s["Y"], r["Y"])
               and np.array_equal(s["dX"], r["dX"]) and np.array_equal(g, r["dA_i"])
               for s, r, g in zip(steps, serial_steps, grads)) and \
        all(np.array_equal(a, b) for a, b in zip(after, serial_after))


def show(a):
    return np.array2string(np.asarray(a).astype(int), separator=", ").replace("\n", "")


def pad(cell, width):
    """cell left-aligned in width terminal columns (a Hangul syllable takes two)."""
    used = sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in cell)
    return cell + " " * max(width - used, 0)


def main():
    language()                  # an unknown MINIMEGATRON_LANG: one line, before any collective
    group = comm.world()
    if group.size != 2:         # the same answer on every rank, before any collective
        raise ValueError(text("t02.ranks", n=group.size))
    splits = {"column": (column_split, 1), "row": (row_split, 0)}   # A's shards: axis 1 or 0
    trained = {split: train(*make(group)) for split, (make, _) in splits.items()}
    serial_steps, serial_weight = train(*one_process())              # the same loop, unsplit
    comm.print0(text("t02.serial", X=show(X), A=show(A), Y=show(serial_steps[0]["Y"])))
    n, same = group.rank + 1, {}
    for split, (steps, weight) in trained.items():
        first = steps[0]
        comm.print0(text("t02.heading", split=text(f"t02.{split}"), how=text(f"t02.{split}_how")))
        comm.print_ranks(text("t02.local", n=n, A_i=show(first["A_i"]), X_i=show(first["X_i"]),
                              Y_i=show(first["Y_i"]), Y=show(first["Y"])), group)
        comm.print_ranks(text("t02.grads", n=n, dX=show(first["dX"]),
                              dA_i=show(first["dA_i"])), group)
        comm.print_ranks(text("t02.trained", steps=STEPS, lr=LR, n=n, A_i=show(weight),
                              losses=", ".join(f"{s['L']:g}" for s in steps)), group)
        same[split] = equals_one_process(steps, weight, serial_steps, serial_weight, group,
                                         axis=splits[split][1])
    comm.print0(text("t02.serial_grads", dX=show(serial_steps[0]["dX"]),
                     dA=show(serial_steps[0]["dA_i"])))
    comm.print0(text("t02.serial_trained", steps=STEPS, A=show(serial_weight),
                     losses=", ".join(f"{s['L']:g}" for s in serial_steps)))
    ok = {split: str(np.array_equal(steps[0]["Y"], np.array(X) @ np.array(A)))
          for split, (steps, _) in trained.items()}   # the combined Y of the first step
    rows = [(text("t02.split"), text("t02.local_product"), text("t02.combine"), "Y == X A"),
            (text("t02.column"), "Y_i = X A_i (2x1)", text("t02.all_gather"), ok["column"]),
            (text("t02.row"), "Y_i = X_i A_i (2x2)", text("t02.all_reduce"), ok["row"])]
    comm.print0("\n" + "\n".join("".join(pad(cell, width) for cell, width in
                                         zip(row, (8, 24, 14, 9))) for row in rows))
    comm.print0(text("t02.compare", steps=STEPS, column=same["column"], row=same["row"]))


if __name__ == "__main__":
    run(main, "tutorials/02_worked_example.py")
