"""Exercises 3.1 (f) and 3.2 (g), Megatron's conjugate operators: what each teaches, and
the evidence of each point.

The problem and the judge's tools are in ``tp_problem.py``.

    3.1 f     sum              dL/dX on every rank = the sum of the group's dL/dY, in x's dtype
              one_all_reduce   forward: no collective; backward: ONE all_reduce of dL/dY's bytes
                               over the tp group
              grad_out_kept    the incoming gradient is not overwritten (a branch that shares
                               it keeps its own value: no in-place all-reduce), and dL/dX is
                               a new array (a second f of the same shape leaves it as it was)
    3.2 g     sum              every rank gets the sum of the group's x, in x's dtype
              one_all_reduce   ONE all_reduce of x's bytes over the group; none in backward,
                               none on a group of one rank
              input_kept       x itself (the partial product X_i A_i) keeps its value, and
                               g(x) is a new array (a second g leaves it as it was)

Each check runs f or g and nothing else of the student's: the gradient goes to backward as
it is (no Sum backward) and the worked example's products are plain arrays (no MatMul, no
Column/RowParallelLinear), so a student's fresh copy grades 3.1 or 3.2 done first.
"""
import numpy as np

from minimegatron.classroom.exercise_checks.lesson import Lesson, Point
from minimegatron.classroom.exercise_checks.tp_problem import (
    DTYPES, DX, ROW_Y_I, Y, alone_group, copied, dims, dtype_of, exact, expect_calls, expect_dtype,
    ints, start_trace, tensor_of, traced_calls, worked, world_rank)
from minimegatron.i18n import text


# --- 3.1 f: identity forward, all-reduce backward --------------------------------------------

F_DIMS = ((2, 3), (3, 4, 5))                       # x: (b, n)


def collect_copy(group, seed):
    """x (the same on the group's ranks) -> h = f(x); rank r's dL/dh = G_r, handed to backward
    as it is: the caller keeps G_r (as a branch that shares it would), so f must not
    overwrite it. Only f runs (no Add, no Sum backward, no MatMul, no layer): 3.1 alone."""
    from minimegatron.comm import trace
    from minimegatron.checks.worked_example import worked_f
    from minimegatron.parallel.tensor_parallel.mappings import copy_to_tp
    shape, rank = dims(seed, 31, F_DIMS), group.ranks[group.rank]
    runs = {}
    for dtype in DTYPES:
        x = tensor_of(ints(seed, 31, shape, 1, group.ranks[0]), dtype, grad=True)
        grad = tensor_of(ints(seed, 31, shape, 2, rank), dtype).data       # G_r, kept here
        start_trace()
        h = copy_to_tp(x, group)
        forward = traced_calls([group])
        h.backward(grad)
        backward = traced_calls([group])
        runs[dtype] = {"y": h.data, "y_dtype": dtype_of(h.data), "dx": copied(x.grad),
                       "dx_dtype": dtype_of(x.grad), "dw": grad, "forward": forward,
                       "backward": backward, "dx_later": x.grad}
    for dtype in DTYPES:        # another f of the same shape: the dL/dX above (held, not
        other = tensor_of(ints(seed, 31, shape, 3, group.ranks[0]), dtype, grad=True)
        copy_to_tp(other, group).backward(      # copied) keeps its value: no buffer reused
            tensor_of(ints(seed, 31, shape, 4, rank), dtype).data)       # across calls
    trace.reset()
    worked = worked_f(group)
    return {"runs": runs, "worked": {"dX": worked["dX"]}}


def judge_copy_sum(ranks, seed):
    shape = dims(seed, 31, F_DIMS)
    for ev in ranks:
        x = ints(seed, 31, shape, 1, ev["group"][0])
        want = sum(ints(seed, 31, shape, 2, q) for q in ev["group"])
        for dtype, run in ev["runs"].items():
            exact(text("tp.f_forward", dtype=dtype), run["y"], x, ev)
            exact(text("tp.f_backward", dtype=dtype, group=ev["group"]), run["dx"], want, ev)
            expect_dtype(ev, "dL/dX", run["dx_dtype"], dtype)
        worked(ev, "column", "dX", DX)


def judge_copy_calls(ranks, seed):
    shape = dims(seed, 31, F_DIMS)
    for ev in ranks:
        for dtype, run in ev["runs"].items():
            expect_calls(ev, "forward", run["forward"], [])
            nbytes = int(np.prod(shape)) * np.dtype(dtype).itemsize
            expect_calls(ev, "backward", run["backward"], [("all_reduce", ev["group"], nbytes)])


def judge_copy_kept(ranks, seed):
    shape = dims(seed, 31, F_DIMS)
    for ev in ranks:
        own = ints(seed, 31, shape, 2, world_rank(ev))
        want = sum(ints(seed, 31, shape, 2, q) for q in ev["group"])
        for dtype, run in ev["runs"].items():
            exact(text("tp.f_shared", dtype=dtype), run["dw"], own, ev)
            exact(text("tp.f_reused", dtype=dtype), run.get("dx_later"), want, ev)


# --- 3.2 g: all-reduce forward, identity backward --------------------------------------------

G_DIMS = ((2, 3), (2, 3, 4))


def collect_reduce(group, seed):
    """Rank r's own x_r -> y = g(x_r); dL/dy = G (the same on the group's ranks), given to
    backward as it is; then g on a group of this rank alone; then g on the worked example's
    partial products. Only g runs (no Sum backward, no MatMul, no layer): 3.2 alone."""
    from minimegatron.checks.worked_example import worked_g
    from minimegatron.parallel.tensor_parallel.mappings import reduce_from_tp
    shape, rank = dims(seed, 32, G_DIMS), group.ranks[group.rank]
    runs = {}
    for dtype in DTYPES:
        x = tensor_of(ints(seed, 32, shape, 1, rank), dtype, grad=True)
        start_trace()
        y = reduce_from_tp(x, group)
        forward = traced_calls([group])
        runs[dtype] = {"y": y.data.copy(), "y_dtype": dtype_of(y.data), "forward": forward,
                       "y_later": y.data}
        y.backward(tensor_of(ints(seed, 32, shape, 2, group.ranks[0]), dtype).data)
        runs[dtype].update({"backward": traced_calls([group]), "dx": x.grad, "x_after": x.data})
    for dtype in DTYPES:        # another g of the same shape: the g(x) above (held, not
        reduce_from_tp(tensor_of(ints(seed, 32, shape, 3, rank), dtype), group)   # copied)
    start_trace()               # keeps its value: no buffer reused across calls
    alone = alone_group(group)
    x = tensor_of(ints(seed, 32, shape, 1, rank), "float64")
    start_trace()
    y = reduce_from_tp(x, alone)
    runs_alone = {"y": y.data, "calls": traced_calls([group, alone])}
    worked = worked_g(group)
    return {"runs": runs, "alone": runs_alone,
            "worked": {"Y": worked["Y"], "Y_i": worked["Y_i"]}}


def judge_reduce_sum(ranks, seed):
    shape = dims(seed, 32, G_DIMS)
    for ev in ranks:
        want = sum(ints(seed, 32, shape, 1, q) for q in ev["group"])
        for dtype, run in ev["runs"].items():
            exact(text("tp.g_forward", dtype=dtype, group=ev["group"]), run["y"], want, ev)
            expect_dtype(ev, "g(x)", run["y_dtype"], dtype)
            exact(text("tp.g_backward", dtype=dtype), run["dx"],
                  ints(seed, 32, shape, 2, ev["group"][0]), ev)
        exact(text("tp.g_alone"), ev["alone"]["y"], ints(seed, 32, shape, 1, world_rank(ev)),
              ev)
        worked(ev, "row", "Y", Y)


def judge_reduce_calls(ranks, seed):
    shape = dims(seed, 32, G_DIMS)
    for ev in ranks:
        for dtype, run in ev["runs"].items():
            nbytes = int(np.prod(shape)) * np.dtype(dtype).itemsize
            expect_calls(ev, "forward", run["forward"], [("all_reduce", ev["group"], nbytes)])
            expect_calls(ev, "backward", run["backward"], [])
        expect_calls(ev, "alone", ev["alone"]["calls"], [])


def judge_reduce_kept(ranks, seed):
    shape = dims(seed, 32, G_DIMS)
    for ev in ranks:
        own = ints(seed, 32, shape, 1, world_rank(ev))
        want = sum(ints(seed, 32, shape, 1, q) for q in ev["group"])
        for dtype, run in ev["runs"].items():
            exact(text("tp.g_input", dtype=dtype), run["x_after"], own, ev)
            exact(text("tp.g_reused", dtype=dtype), run.get("y_later"), want, ev)
        worked(ev, "row", "Y_i", ROW_Y_I[ev["rank"]])


LESSONS = {
    "3.1": Lesson(collect_copy, (Point("sum", judge_copy_sum),
                                 Point("one_all_reduce", judge_copy_calls),
                                 Point("grad_out_kept", judge_copy_kept))),
    "3.2": Lesson(collect_reduce, (Point("sum", judge_reduce_sum),
                                   Point("one_all_reduce", judge_reduce_calls),
                                   Point("input_kept", judge_reduce_kept))),
}
