"""Checks for exercises 3.x: tensor parallelism on 2 ranks.

First the source notes' worked example, Y = X A with X (2x4) and A (4x2) split
over 2 ranks, through the real ColumnParallelLinear / RowParallelLinear (the
integers are exact in float64); then the checks tests/test_tensor_parallel.py
runs: the adjoint identity <f(x), y> = <x, f^T(y)> of each mapping
(``checks.tensor.check_mappings``) and both layers against nn.Linear
(``checks.tensor.check_linears``, relative error < 1e-12).
"""
import numpy as np

from minimegatron.backend import asarray
from minimegatron.checks.tensor import check_linears, check_mappings
from minimegatron.checks.worked_example import worked_column, worked_row
from minimegatron.exercise_checks.common import CheckFailed, expect_close
from minimegatron.parallel.tensor import copy_to_tp, reduce_from_tp
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
        raise CheckFailed(f"the tensor-parallel exercises run on 2 ranks, got {group.size}")


def _expect_worked(split, got, want, rank):
    names = {"A_i": f"A_{rank + 1} (this rank's block of A)", "X_i": f"X_{rank + 1}",
             "Y_i": f"Y_{rank + 1} (this rank's local product)", "Y": "Y = X A (combined)",
             "dX": "dL/dX for L = sum(Y)", "dA_i": f"dL/dA_{rank + 1}"}
    for key, value in want.items():
        expect_close(f"worked example, {split} split: {names[key]}", got[key], value,
                     atol=TOL, rank=rank)


def _expect_small(what, values, keys, rank, why):
    for key in keys:
        if not values[key] < TOL:
            raise CheckFailed(f"rank {rank}: {what} {key}: error {values[key]:.3g} (should be "
                              f"< {TOL:g}): {why}")


def check_copy(group):
    """f = copy_to_tp: identity forward; backward sums the ranks' gradients."""
    _need_two(group)
    r = group.rank
    x = Tensor(asarray(np.ones((2, 3))), requires_grad=True)
    y = copy_to_tp(x, group)
    expect_close("copy_to_tp forward of ones((2, 3))", y.data, np.ones((2, 3)), rank=r)
    (y * float(r + 1)).sum().backward()            # rank r's upstream gradient: r + 1
    expect_close("copy_to_tp backward: dL/dX when rank r's dL/dY is r + 1 everywhere "
                 "(all-reduce: 1 + 2 on every rank)", x.grad, np.full((2, 3), 3.0), rank=r)
    _expect_small("copy_to_tp (f)", check_mappings(group), ["copy_forward", "copy_adjoint"], r,
                  "<f(x), y> summed over ranks must equal <x, f^T(y)>")
    _expect_worked("column", worked_column(group), {"dX": DX}, r)
    return "f: forward identity, backward all-reduce; adjoint identity holds"


def check_reduce(group):
    """g = reduce_from_tp: all-reduce forward; identity backward."""
    _need_two(group)
    r = group.rank
    x = Tensor(asarray(np.array([[1.0, 2.0], [3.0, 4.0]]) * (r + 1)), requires_grad=True)
    y = reduce_from_tp(x, group)
    expect_close("reduce_from_tp forward: rank r holds (r + 1) [[1, 2], [3, 4]], the sum is",
                 y.data, [[3.0, 6.0], [9.0, 12.0]], rank=r)
    (y * 2.0).sum().backward()
    expect_close("reduce_from_tp backward of dL/dY = 2 (identity)", x.grad,
                 np.full((2, 2), 2.0), rank=r)
    _expect_small("reduce_from_tp (g)", check_mappings(group),
                  ["reduce_forward", "reduce_adjoint"], r,
                  "<g(x), y> must equal <x, g^T(y)> summed over ranks")
    _expect_worked("row", worked_row(group), {"Y": Y}, r)
    return "g: forward all-reduce, backward identity; worked example Y = [[74, 98], [258, 346]]"


def check_column(group):
    _need_two(group)
    r = group.rank
    _expect_worked("column", worked_column(group), {**COLUMN[r], "Y": Y, "dX": DX}, r)
    _expect_small("ColumnParallelLinear vs nn.Linear:", check_linears(group),
                  ["column_y", "column_dw", "column_db", "column_gathered_y"], r,
                  "rank r must keep columns r*out/tp .. (r+1)*out/tp of the weight and bias")
    return f"rank {r}: A_{r + 1} = {COLUMN[r]['A_i']}, Y_{r + 1} = {COLUMN[r]['Y_i']}"


def check_row_split(group):
    _need_two(group)
    r = group.rank
    _expect_worked("row", worked_row(group), {"A_i": ROW[r]["A_i"], "Y": Y}, r)
    _expect_small("RowParallelLinear vs nn.Linear:", check_linears(group),
                  ["row_y", "row_dw", "row_parallel_in_y"], r,
                  "rank r must keep rows r*in/tp .. (r+1)*in/tp of the weight")
    return f"rank {r}: A_{r + 1} = {ROW[r]['A_i']}"


def check_row_forward(group):
    _need_two(group)
    r = group.rank
    _expect_worked("row", worked_row(group), {**ROW[r], "Y": Y, "dX": DX}, r)
    _expect_small("RowParallelLinear vs nn.Linear:", check_linears(group),
                  ["row_y", "row_dx", "row_dw", "row_db", "row_parallel_in_y"], r,
                  "Y = sum_i X_i A_i (through g), then + b once")
    return f"rank {r}: Y_{r + 1} = {ROW[r]['Y_i']}, Y_1 + Y_2 = {Y}"


CHECKS = {"3.1": check_copy, "3.2": check_reduce, "3.3": check_column, "3.4": check_row_split,
          "3.5": check_row_forward}
