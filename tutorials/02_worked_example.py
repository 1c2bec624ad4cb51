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
"""
import numpy as np

from minimegatron import comm
from minimegatron.checks.worked_example import A, X, worked_example


def show(a):
    return np.array2string(np.asarray(a).astype(int), separator=", ").replace("\n", "")


def main():
    group = comm.world()
    result = worked_example(group)
    serial_y = np.array(X) @ np.array(A)
    comm.print0(f"X = {show(X)}\nA = {show(A)}\nserial Y = X A = {show(serial_y)}\n")
    for split, how in (("column", "A split by columns; X copied (f); Y = cat(Y_1, Y_2)"),
                       ("row", "A split by rows; X split by columns; Y = Y_1 + Y_2 (g)")):
        r = result[split]
        comm.print0(f"--- {split} split: {how}")
        comm.print_ranks(f"A_{group.rank + 1} = {show(r['A_i'])}   input = {show(r['X_i'])}\n"
                         f"Y_{group.rank + 1} = {show(r['Y_i'])}   combined Y = {show(r['Y'])}",
                         group)
        comm.print_ranks(f"dL/dX = {show(r['dX'])}   dL/dA_{group.rank + 1} = "
                         f"{show(r['dA_i'])}", group)
    ones = np.ones((2, 2))
    comm.print0(f"\nserial, L = sum(Y): dL/dX = ones A^T = {show(ones @ np.array(A).T)}\n"
                f"                     dL/dA = X^T ones = {show(np.array(X).T @ ones)}")
    ok = all(np.array_equal(result[s]["Y"], serial_y) for s in ("column", "row"))
    comm.print0(f"\n{'split':<8}{'local product':<24}{'combine':<14}{'Y == X A':<9}\n"
                f"{'column':<8}{'Y_i = X A_i (2x1)':<24}{'all-gather':<14}{ok!s:<9}\n"
                f"{'row':<8}{'Y_i = X_i A_i (2x2)':<24}{'all-reduce':<14}{ok!s:<9}")


if __name__ == "__main__":
    main()
