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
local product the layer's forward computed; the computation is in
minimegatron/checks/worked_example.py). Then L = sum(Y) is differentiated:
dL/dX = ones(2, 2) A^T and dL/dA = X^T ones(2, 2), which each rank holds its shard of.
MINIMEGATRON_LANG=ko prints the headings and explanations in Korean (minimegatron.i18n).
"""
import os
import sys
import unicodedata

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# ^ import the minimegatron beside tutorials/ (a student copy's own), not another install

import numpy as np

from minimegatron import comm
from minimegatron.checks.worked_example import A, X, worked_example
from minimegatron.runtime.entry import run
from minimegatron.i18n import language, text


def show(a):
    return np.array2string(np.asarray(a).astype(int), separator=", ").replace("\n", "")


def pad(cell, width):
    """cell left-aligned in width terminal columns (a Hangul syllable takes two)."""
    used = sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in cell)
    return cell + " " * max(width - used, 0)


def main():
    language()                  # an unknown MINIMEGATRON_LANG: one line, before any collective
    group = comm.world()
    result = worked_example(group)
    serial_y = np.array(X) @ np.array(A)
    comm.print0(text("t02.serial", X=show(X), A=show(A), Y=show(serial_y)))
    n = group.rank + 1
    for split in ("column", "row"):
        r = result[split]
        comm.print0(text("t02.heading", split=text(f"t02.{split}"), how=text(f"t02.{split}_how")))
        comm.print_ranks(text("t02.local", n=n, A_i=show(r["A_i"]), X_i=show(r["X_i"]),
                              Y_i=show(r["Y_i"]), Y=show(r["Y"])), group)
        comm.print_ranks(text("t02.grads", n=n, dX=show(r["dX"]), dA_i=show(r["dA_i"])), group)
    ones = np.ones((2, 2))
    comm.print0(text("t02.serial_grads", dX=show(ones @ np.array(A).T),
                     dA=show(np.array(X).T @ ones)))
    ok = str(all(np.array_equal(result[s]["Y"], serial_y) for s in ("column", "row")))
    rows = [(text("t02.split"), text("t02.local_product"), text("t02.combine"), "Y == X A"),
            (text("t02.column"), "Y_i = X A_i (2x1)", text("t02.all_gather"), ok),
            (text("t02.row"), "Y_i = X_i A_i (2x2)", text("t02.all_reduce"), ok)]
    comm.print0("\n" + "\n".join("".join(pad(cell, width) for cell, width in
                                         zip(row, (8, 24, 14, 9))) for row in rows))


if __name__ == "__main__":
    run(main, "tutorials/02_worked_example.py")
