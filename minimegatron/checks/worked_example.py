"""The source notes' worked example, Y = X A, computed by the real tensor-parallel layers.

    X = [[0, 1, 2, 3],      A = [[10, 14],      Y = X A = [[ 74,  98],
         [4, 5, 6, 7]]           [11, 15],                 [258, 346]]
                                 [12, 16],
                                 [13, 17]]

On 2 ranks. Column split (ColumnParallelLinear): rank i holds column A_i, sees
all of X (f), computes Y_i = X A_i; the all-gather concatenates the columns.
Row split (RowParallelLinear): rank i holds rows A_i, gets the columns X_i of X
(scatter), computes X_i A_i; g (all-reduce) sums the partial products. Both then
differentiate L = sum(Y): dL/dX = ones(2, 2) A^T, dL/dA = X^T ones(2, 2).

The tests and the exercise grader assert every integer of them from here;
tutorials/02_worked_example.py builds the same layers itself (``column_split``,
``row_split``) and trains them next to one process in its own loop.
"""
from minimegatron.backend import asarray, to_numpy
from minimegatron.parallel.tensor_parallel.linear import ColumnParallelLinear, RowParallelLinear
from minimegatron.parallel.tensor_parallel.mappings import scatter_to_tp
from minimegatron.autodiff.tensor import Tensor

X = [[0.0, 1.0, 2.0, 3.0], [4.0, 5.0, 6.0, 7.0]]
A = [[10.0, 14.0], [11.0, 15.0], [12.0, 16.0], [13.0, 17.0]]


def _check_two(group):
    if group.size != 2:
        raise ValueError(f"the worked example splits A over 2 ranks; run it with -n 2, "
                         f"not -n {group.size}")


def worked_column(group):
    """This rank's column split: A_i, X_i (all of X), Y_i, Y, dX, dA_i (xp arrays)."""
    _check_two(group)
    column = ColumnParallelLinear(4, 2, group, bias=False, gather_output=True,
                                  master_weight=asarray(A, dtype="float64"))
    x = Tensor(asarray(X, dtype="float64"), requires_grad=True)
    y = column(x)                                       # f, X A_i, all-gather: (2, 2)
    y.sum().backward()
    return {"A_i": column.weight.data, "X_i": x.data, "Y_i": column.last_partial,
            "Y": y.data, "dX": x.grad, "dA_i": column.weight.grad}


def worked_row(group):
    """This rank's row split: A_i, X_i (its columns of X), Y_i (partial), Y, dX, dA_i."""
    _check_two(group)
    row = RowParallelLinear(4, 2, group, bias=False, input_is_parallel=True,
                            master_weight=asarray(A, dtype="float64"))
    x = Tensor(asarray(X, dtype="float64"), requires_grad=True)
    x_i = scatter_to_tp(x, group)                       # (2, 2): columns 2i, 2i+1 of X
    y = row(x_i)                                        # X_i A_i, then g (all-reduce)
    y.sum().backward()
    return {"A_i": row.weight.data, "X_i": x_i.data, "Y_i": row.last_partial,
            "Y": y.data, "dX": x.grad, "dA_i": row.weight.grad}


def worked_f(group):
    """f alone on the column split: x = X whole, h = f(x), and h's gradient handed in as
    dL/dY_i A_i^T = ones(2, 1) A_i^T (plain arrays, no layer); dX is f's backward, the sum
    over the ranks. Exercise 3.1's check: it runs through no other exercise's block."""
    from minimegatron.parallel.tensor_parallel.mappings import copy_to_tp
    _check_two(group)
    a_i = asarray(A, dtype="float64")[:, group.rank:group.rank + 1]     # (4, 1): column i
    x = Tensor(asarray(X, dtype="float64"), requires_grad=True)
    copy_to_tp(x, group).backward(asarray([[1.0], [1.0]]) @ a_i.T)     # (2, 4) on each rank
    return {"dX": x.grad}


def worked_g(group):
    """g alone on the row split's partial products: rank i's Y_i = X_i A_i (plain arrays, no
    layer, no autodiff), then Y = g(Y_i). Exercise 3.2's check: it runs through no other
    exercise's block, so a student can do 3.2 first. Returns Y_i (after g) and Y."""
    from minimegatron.parallel.tensor_parallel.mappings import reduce_from_tp
    _check_two(group)
    cols = slice(2 * group.rank, 2 * group.rank + 2)        # this rank's columns of X, rows of A
    partial = Tensor(asarray(X, dtype="float64")[:, cols] @ asarray(A, dtype="float64")[cols])
    y = reduce_from_tp(partial, group)                  # (2, 2): the sum of the partials
    return {"Y_i": partial.data, "Y": y.data}


def worked_example(group):
    """Both splits as NumPy arrays: {"column": {...}, "row": {...}}."""
    return {split: {k: to_numpy(v) for k, v in make(group).items()}
            for split, make in (("column", worked_column), ("row", worked_row))}
