"""Exercise 6.2, sequence parallelism's g-bar: what it teaches, and the evidence of each point.

The grader runs it on 4 ranks, on the tp groups [0, 1] and [2, 3]: each group is
a strict subset of the world, so a reduce-scatter over the world sums 4 ranks
and splits in 4. The shapes (B, T, D) and the small integer values (exact in
float32 and float64) are drawn from the grading seed; the judge draws them again
and computes every expected value itself, serially, with NumPy. Points:

    tokens              rank r gets tokens r*T/t .. (r+1)*T/t of the SUM over the group,
                        (B, T/t, D) in x's dtype, a new array (a second g-bar leaves it
                        as it was); its backward gives every rank the all-gathered gradient
    one_reduce_scatter  forward: ONE reduce_scatter of x's bytes over the tp group (an
                        all-reduce then a slice moves twice the bytes); backward: one
                        all_gather; a group of one rank: no collective at all
    layer               a sequence-parallel RowParallelLinear: rank r gets its tokens of
                        X A + b, and dL/dX_i, dL/dA_i, dL/db equal one process's
"""
import numpy as np

from minimegatron.classroom.exercise_checks.lesson import Lesson, Point
from minimegatron.classroom.exercise_checks.tp_problem import (
    DTYPES, agree, alone_group, dims, dtype_of, exact, expect_calls, expect_dtype, ints,
    start_trace, tensor_of, traced_calls, world_rank)
from minimegatron.i18n import text

SP_DIMS = ((1, 2), (6, 8, 10), (2, 3))             # x: (B, T, D), T not 4, split over tp = 2
LAYER_DIMS = ((4, 6), (2, 3))                      # the layer's in (split over tp), out


def _tokens(a, r, tp):
    """Rank r's tokens of a (B, T, ...): axis 1, rows r*T/tp .. (r+1)*T/tp."""
    step = a.shape[1] // tp
    return a[:, r * step:(r + 1) * step]


def _layer_problem(seed):
    b, t, _ = dims(seed, 62, SP_DIMS)
    n_in, n_out = dims(seed, 63, LAYER_DIMS)
    return {"in": n_in, "out": n_out, "W": ints(seed, 63, (n_in, n_out), 1),
            "bias": ints(seed, 63, (n_out,), 2), "X": ints(seed, 63, (b, t, n_in), 3)}


def collect(group, seed):
    """Rank r's own x_r -> y = g-bar(x_r), dL/dy = rank r's own G_r (traced), in float64 and
    float32; g-bar on a group of this rank alone; then a sequence-parallel RowParallelLinear."""
    from minimegatron.backend import asarray
    from minimegatron.parallel.tensor_parallel.linear import RowParallelLinear
    from minimegatron.parallel.tensor_parallel.sequence import reduce_scatter_to_sequence
    b, t, d = dims(seed, 62, SP_DIMS)
    rank, want = group.ranks[group.rank], (b, t // group.size, d)
    runs, shapes_right = {}, True
    for dtype in DTYPES:
        x = tensor_of(ints(seed, 62, (b, t, d), 1, rank), dtype, grad=True)
        start_trace()
        y = reduce_scatter_to_sequence(x, group)
        run = {"y": y.data.copy(), "dtype": dtype_of(y.data), "forward": traced_calls([group]),
               "y_later": y.data}
        shapes_right = shapes_right and tuple(y.shape) == want
        if tuple(y.shape) == want:
            (y * tensor_of(ints(seed, 62, want, 2, rank), dtype)).sum().backward()
            run["dx"] = x.grad
        run["backward"] = traced_calls([group])
        runs[dtype] = run
    for dtype in DTYPES:        # another g-bar of the same shape: the g-bar(x) above (held,
        reduce_scatter_to_sequence(tensor_of(ints(seed, 62, (b, t, d), 3, rank), dtype),
                                   group)   # not copied) keeps its value: no buffer reused
    alone = alone_group(group)
    start_trace()
    y = reduce_scatter_to_sequence(tensor_of(ints(seed, 62, (b, t, d), 1, rank), "float64"),
                                   alone)
    runs_alone = {"y": y.data, "calls": traced_calls([group, alone])}
    if not agree(shapes_right, group):          # g-bar gave a wrong shape: no layer to run
        return {"runs": runs, "alone": runs_alone, "layer": {}}
    p = _layer_problem(seed)
    layer = RowParallelLinear(p["in"], p["out"], group, input_is_parallel=True,
                              master_weight=asarray(p["W"]), master_bias=asarray(p["bias"]),
                              sequence_parallel=True)
    width = p["in"] // group.size
    x = tensor_of(p["X"][..., group.rank * width:(group.rank + 1) * width], "float64", grad=True)
    y = layer(x)
    out = {"Y": y.data}
    g = ints(seed, 63, (b, t // group.size, p["out"]), 4, rank)
    if tuple(y.shape) == g.shape:
        (y * tensor_of(g, "float64")).sum().backward()
        out.update({"dX": x.grad, "dW": layer.weight.grad, "db": layer.bias.grad})
    return {"runs": runs, "alone": runs_alone, "layer": out}


def judge_tokens(ranks, seed):
    b, t, d = dims(seed, 62, SP_DIMS)
    for ev in ranks:
        group, r, tp = ev["group"], ev["rank"], len(ev["group"])
        total = sum(ints(seed, 62, (b, t, d), 1, q) for q in group)
        grad = np.concatenate([ints(seed, 62, (b, t // tp, d), 2, q) for q in group], axis=1)
        for dtype, run in ev["runs"].items():
            exact(text("sp.forward", dtype=dtype, group=group, shape=(b, t, d)), run["y"],
                  _tokens(total, r, tp), ev)
            expect_dtype(ev, "g-bar(x)", run["dtype"], dtype)
            exact(text("sp.backward", dtype=dtype), run.get("dx"), grad, ev)
            exact(text("sp.reused", dtype=dtype), run.get("y_later"), _tokens(total, r, tp), ev)
        exact(text("sp.alone"), ev["alone"]["y"], ints(seed, 62, (b, t, d), 1, world_rank(ev)),
              ev)


def judge_calls(ranks, seed):
    b, t, d = dims(seed, 62, SP_DIMS)
    for ev in ranks:
        for dtype, run in ev["runs"].items():
            nbytes = b * t * d * np.dtype(dtype).itemsize
            expect_calls(ev, "forward", run["forward"],
                         [("reduce_scatter", ev["group"], nbytes)])
            expect_calls(ev, "backward", run["backward"],
                         [("all_gather", ev["group"], nbytes // len(ev["group"]))])
        expect_calls(ev, "alone", ev["alone"]["calls"], [])


def judge_layer(ranks, seed):
    p = _layer_problem(seed)
    b, t, _ = dims(seed, 62, SP_DIMS)
    for ev in ranks:
        group, r, tp = ev["group"], ev["rank"], len(ev["group"])
        width = p["in"] // tp
        cols = slice(r * width, (r + 1) * width)
        grad = np.concatenate([ints(seed, 63, (b, t // tp, p["out"]), 4, q) for q in group],
                              axis=1)                                    # (B, T, out)
        run, name = ev["layer"], "RowParallelLinear(sequence_parallel=True)"
        exact(text("tp.layer", name=name, what="Y_r = tokens_r(X A) + b"), run.get("Y"),
              _tokens(p["X"] @ p["W"], r, tp) + p["bias"], ev)
        exact(text("tp.layer", name=name, what="dL/dX_i = dY A_i^T"), run.get("dX"),
              grad @ p["W"][cols].T, ev)
        exact(text("tp.layer", name=name, what="dL/dA_i = X_i^T dY"), run.get("dW"),
              p["X"][..., cols].reshape(-1, width).T @ grad.reshape(-1, p["out"]), ev)
        exact(text("tp.layer", name=name, what="dL/db = sum dY"), run.get("db"),
              grad.sum(axis=(0, 1)), ev)


LESSONS = {"6.2": Lesson(collect, (Point("tokens", judge_tokens),
                                   Point("one_reduce_scatter", judge_calls),
                                   Point("layer", judge_layer)))}
