"""Checks for exercises 3.x: tensor parallelism on the tp groups of a 2 x 2 grid.

The grader runs these on 4 ranks, on the tp groups [0, 1] and [2, 3]: each
group is a strict subset of the world, so a collective over the world instead
of the group sums 4 ranks instead of 2 and fails. First the source notes'
worked example, Y = X A with X (2x4) and A (4x2) split over 2 ranks, through
the real ColumnParallelLinear / RowParallelLinear (the integers are exact in
float64); then the checks tests/test_tensor_parallel.py runs: the adjoint
identity <f(x), y> = <x, f^T(y)> of each mapping (``checks.tensor.check_mappings``)
and both layers against nn.Linear (``checks.tensor.check_linears``, relative
error < 1e-12).
"""
import numpy as np

from minimegatron.backend import asarray
from minimegatron.checks.tensor import check_linears, check_mappings
from minimegatron.checks.worked_example import worked_column, worked_row
from minimegatron.exercise_checks.common import CheckFailed, expect_close
from minimegatron.i18n import text
from minimegatron.parallel.tensor_parallel.mappings import copy_to_tp, reduce_from_tp
from minimegatron.tensor import Tensor

Y = [[74, 98], [258, 346]]
DX = [[24, 26, 28, 30], [24, 26, 28, 30]]       # dL/dX for L = sum(Y): ones(2, 2) A^T
COLUMN = [{"A_i": [[10], [11], [12], [13]], "Y_i": [[74], [258]], "dA_i": [[4], [6], [8], [10]]},
          {"A_i": [[14], [15], [16], [17]], "Y_i": [[98], [346]], "dA_i": [[4], [6], [8], [10]]}]
ROW = [{"A_i": [[10, 14], [11, 15]], "X_i": [[0, 1], [4, 5]], "Y_i": [[11, 15], [95, 131]]},
       {"A_i": [[12, 16], [13, 17]], "X_i": [[2, 3], [6, 7]], "Y_i": [[63, 83], [163, 215]]}]
TOL = 1e-12


def _need_two(group):
    if group.size != 2:
        raise CheckFailed(text("tp.need_two", size=group.size))


def _expect_worked(split, got, want, rank):
    for key, value in want.items():
        name = text(f"tp.{key}", n=rank + 1)
        expect_close(text("tp.worked", split=text(f"tp.{split}"), name=name), got[key], value,
                     atol=TOL, rank=rank)


def _expect_small(what, values, keys, rank, why):
    for key in keys:
        if not values[key] < TOL:
            raise CheckFailed(text("tp.too_large", rank=rank, what=what, key=key,
                                   error=values[key], tol=TOL, why=why))


def check_copy(group):
    """f = copy_to_tp: identity forward; backward sums the ranks' gradients."""
    _need_two(group)
    r = group.rank
    x = Tensor(asarray(np.ones((2, 3))), requires_grad=True)
    y = copy_to_tp(x, group)
    expect_close(text("tp.copy_forward"), y.data, np.ones((2, 3)), rank=r)
    (y * float(r + 1)).sum().backward()            # rank r's upstream gradient: r + 1
    expect_close(text("tp.copy_backward"), x.grad, np.full((2, 3), 3.0), rank=r)
    _expect_small("copy_to_tp (f)", check_mappings(group), ["copy_forward", "copy_adjoint"], r,
                  text("tp.copy_adjoint"))
    _expect_worked("column", worked_column(group), {"dX": DX}, r)
    return text("tp.copy_pass")


def check_reduce(group):
    """g = reduce_from_tp: all-reduce forward; identity backward."""
    _need_two(group)
    r = group.rank
    x = Tensor(asarray(np.array([[1.0, 2.0], [3.0, 4.0]]) * (r + 1)), requires_grad=True)
    y = reduce_from_tp(x, group)
    expect_close(text("tp.reduce_forward"), y.data, [[3.0, 6.0], [9.0, 12.0]], rank=r)
    (y * 2.0).sum().backward()
    expect_close(text("tp.reduce_backward"), x.grad, np.full((2, 2), 2.0), rank=r)
    _expect_small("reduce_from_tp (g)", check_mappings(group),
                  ["reduce_forward", "reduce_adjoint"], r,
                  text("tp.reduce_adjoint"))
    _expect_worked("row", worked_row(group), {"Y": Y}, r)
    return text("tp.reduce_pass")


def check_column(group):
    _need_two(group)
    r = group.rank
    _expect_worked("column", worked_column(group), {**COLUMN[r], "Y": Y, "dX": DX}, r)
    _expect_small("ColumnParallelLinear vs nn.Linear:", check_linears(group),
                  ["column_y", "column_dw", "column_db", "column_gathered_y"], r,
                  text("tp.column_why"))
    return text("tp.column_pass", rank=r, n=r + 1, A=COLUMN[r]["A_i"], Y=COLUMN[r]["Y_i"])


def check_row_split(group):
    _need_two(group)
    r = group.rank
    _expect_worked("row", worked_row(group), {"A_i": ROW[r]["A_i"], "Y": Y}, r)
    _expect_small("RowParallelLinear vs nn.Linear:", check_linears(group),
                  ["row_y", "row_dw", "row_parallel_in_y"], r,
                  text("tp.row_why"))
    return text("tp.row_pass", rank=r, n=r + 1, A=ROW[r]["A_i"])


def check_row_forward(group):
    _need_two(group)
    r = group.rank
    _expect_worked("row", worked_row(group), {**ROW[r], "Y": Y, "dX": DX}, r)
    _expect_small("RowParallelLinear vs nn.Linear:", check_linears(group),
                  ["row_y", "row_dx", "row_dw", "row_db", "row_parallel_in_y"], r,
                  text("tp.forward_why"))
    return text("tp.forward_pass", rank=r, n=r + 1, Y_i=ROW[r]["Y_i"], Y=Y)


CHECKS = {"3.1": check_copy, "3.2": check_reduce, "3.3": check_column, "3.4": check_row_split,
          "3.5": check_row_forward}
