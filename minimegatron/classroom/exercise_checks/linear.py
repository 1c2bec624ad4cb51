"""Exercises 3.3 - 3.5, the column and row splits of a Linear: what each teaches, and the
evidence of each point.

The problem and the judge's tools are in ``tp_problem.py``.

    3.3       columns          rank r keeps columns r*w .. (r+1)*w of the master weight and bias,
                               w = out/tp, for tp = 2 (the tp group; also [0, 2]), 1 and 4
              output           Y_i = X A_i + b_i, the gathered Y = X A + b, dA_i = X^T dY_i
              memory           a rank holds its shard only: its attributes hold in*out/tp +
                               out/tp numbers, and building it leaves no more alive (no full
                               master weight kept; float64 and float32, 2 x 4 KB shards)
    3.4       rows             rank r keeps rows r*h .. (r+1)*h of the master weight (all of b),
                               h = in/tp, for tp = 2 (also [0, 2]), 1 and 4
              output           X_i A_i summed over the group = X A, + b once; dA_i = X_i^T dY
    3.5       partial          last_partial is this rank's X_i A_i (no bias, not summed),
                               computed ONCE (one product in the forward, counted)
              sum              Y = sum_i X_i A_i + b on every rank; dX_i and dA_i through g
              one_all_reduce   forward ONE all_reduce of Y's bytes over the group, backward none
              every_forward    one layer, 3 forwards of new X_k: each its own X_i A_i in
                               last_partial (computed once), each its own Y
              memory           after those forwards the layer keeps its shard, the bias and
                               ONE partial product; the later forwards leave one alive

Where it fits, a point also holds the source notes' worked example (X 2x4, A 4x2,
exact integers) through the real layers (``checks/worked_example.py``).
"""
import numpy as np

from minimegatron.classroom.exercise_checks.common import CheckFailed
from minimegatron.classroom.exercise_checks.dp_problem import error_text
from minimegatron.classroom.exercise_checks.lesson import Lesson, Point
from minimegatron.classroom.exercise_checks.memory_watch import NewArrays, held_bytes, within
from minimegatron.classroom.exercise_checks.tp_problem import (
    A, COLUMN_DIMS, COLUMN_Y_I, DTYPES, DX, MEMORY_DIMS, ROW_DIMS, ROW_Y_I, Y, Products, agree,
    dtype_of, exact, expect_calls, expect_dtype, ints, layer_groups, layer_problem, run_layer,
    start_trace, tensor_of, traced_calls, world_rank, worked)
from minimegatron.i18n import text
from minimegatron.parallel.split import row_slice

FORWARDS = 3            # 3.5: forwards of one layer
AGAIN_ROWS = 64         # 3.5: rows of each X_k (a partial product of 64 x out numbers)


def collect_column(group, seed):
    from minimegatron.backend import asarray
    from minimegatron.checks.worked_example import worked_column
    from minimegatron.parallel.tensor_parallel.linear import ColumnParallelLinear
    p = layer_problem(seed, 33, COLUMN_DIMS)
    runs = {}
    for name, grp in layer_groups(group):
        for dtype in (DTYPES if name == "tp" else ("float64",)):
            layer = ColumnParallelLinear(p["in"], p["out"], grp, gather_output=True,
                                         master_weight=asarray(p["W"]),
                                         master_bias=asarray(p["bias"]), dtype=dtype)
            shapes = ((p["in"], p["out"] // grp.size), (p["out"] // grp.size,))
            runs[f"{name} {dtype}"] = run_layer(layer, grp, shapes, p["X"], p["G"], dtype)
    memory = {dtype: built_memory(ColumnParallelLinear, seed, 33, group, dtype)
              for dtype in DTYPES}
    layer = ColumnParallelLinear(4, 2, group, bias=False, master_weight=asarray(A, "float64"))
    if not agree(tuple(layer.weight.shape) == (4, 1), group):     # a wrong shard: no run
        return {"runs": runs, "memory": memory, "worked": {"A_i": layer.weight.data}}
    worked = worked_column(group)
    return {"runs": runs, "memory": memory,
            "worked": {k: worked[k] for k in ("A_i", "Y_i", "Y", "dA_i")}}


def built_memory(layer_class, seed, tag, group, dtype):
    """What a layer built from a (MEMORY_DIMS) master weight keeps: the bytes its attributes
    hold, and the array memory its construction left alive in the whole process."""
    from minimegatron.backend import asarray
    n_in, n_out = MEMORY_DIMS
    master, bias = ints(seed, tag, (n_in, n_out), 5), ints(seed, tag, (n_out,), 6)
    with NewArrays() as new:
        layer = layer_class(n_in, n_out, group, master_weight=asarray(master),
                            master_bias=asarray(bias), dtype=dtype)
    return {"held": held_bytes(layer), "new": new.settle(0, [])["new"]}


def judge_column_memory(ranks, seed):
    """3.3: a rank holds its shard (in x out/tp numbers, and out/tp of the bias), no more."""
    n_in, n_out = MEMORY_DIMS
    for ev in ranks:
        tp = len(ev["group"])
        for dtype, memory in ev["memory"].items():
            size = np.dtype(dtype).itemsize
            shard_memory(ev, dtype, memory, (n_in * n_out // tp + n_out // tp) * size,
                         n_in * n_out * size)


def shard_memory(ev, dtype, memory, want, full, what="tp.full_weight"):
    """CheckFailed when the layer's attributes, or what its construction left alive, hold
    more than ``want`` bytes, give or take half of the full weight (``full`` bytes)."""
    for key in memory:
        if not within(memory[key], want, full):
            raise CheckFailed(text(f"tp.memory_{key}", rank=world_rank(ev), dtype=dtype,
                                   got=memory.get(key), want=want, full=full))


def judge_columns(ranks, seed):
    p = layer_problem(seed, 33, COLUMN_DIMS)
    for ev in ranks:
        for name, run in ev["runs"].items():
            cols = row_slice(p["out"], run["r"], run["tp"])
            exact(text("tp.shard", name=name, tp=run["tp"], r=run["r"], what="A[:, cols]"),
                  run["weight"], p["W"][:, cols], ev)
            exact(text("tp.shard", name=name, tp=run["tp"], r=run["r"], what="b[cols]"),
                  run["bias"], p["bias"][cols], ev)
        worked(ev, "column", "A_i", np.asarray(A)[:, ev["rank"]:ev["rank"] + 1])


def judge_column_output(ranks, seed):
    p = layer_problem(seed, 33, COLUMN_DIMS)
    for ev in ranks:
        for name, run in ev["runs"].items():
            cols = row_slice(p["out"], run["r"], run["tp"])
            exact(text("tp.layer", name=name, what="Y_i = X A_i + b_i"), run.get("Y_i"),
                  p["X"] @ p["W"][:, cols] + p["bias"][cols], ev)
            exact(text("tp.layer", name=name, what="Y = X A + b"), run.get("Y"),
                  p["X"] @ p["W"] + p["bias"], ev)
            exact(text("tp.layer", name=name, what="dL/dA_i = X^T dY_i"), run.get("dW"),
                  p["X"].T @ p["G"][:, cols], ev)
            exact(text("tp.layer", name=name, what="dL/dX = dY A^T"), run.get("dX"),
                  p["G"] @ p["W"].T, ev)
            expect_dtype(ev, f"Y ({name})", run.get("dtype"), name.split()[1])
        for key, want in (("Y_i", COLUMN_Y_I[ev["rank"]]), ("Y", Y),
                          ("dA_i", [[4], [6], [8], [10]])):
            worked(ev, "column", key, want)


def collect_row_split(group, seed):
    from minimegatron.backend import asarray
    from minimegatron.checks.worked_example import worked_row
    from minimegatron.parallel.tensor_parallel.linear import RowParallelLinear
    p = layer_problem(seed, 34, ROW_DIMS)
    runs = {}
    for name, grp in layer_groups(group):
        for dtype in (DTYPES if name == "tp" else ("float64",)):
            layer = RowParallelLinear(p["in"], p["out"], grp, master_weight=asarray(p["W"]),
                                      master_bias=asarray(p["bias"]), dtype=dtype)
            shapes = ((p["in"] // grp.size, p["out"]), (p["out"],))
            runs[f"{name} {dtype}"] = run_layer(layer, grp, shapes, p["X"], p["G"],
                                                 dtype)       # X scattered inside
    layer = RowParallelLinear(4, 2, group, bias=False, master_weight=asarray(A, "float64"))
    if not agree(tuple(layer.weight.shape) == (2, 2), group):     # a wrong shard: no run
        return {"runs": runs, "worked": {"A_i": layer.weight.data}}
    worked = worked_row(group)
    return {"runs": runs, "worked": {k: worked[k] for k in ("A_i", "Y_i", "Y")}}


def judge_rows(ranks, seed):
    p = layer_problem(seed, 34, ROW_DIMS)
    for ev in ranks:
        for name, run in ev["runs"].items():
            rows = row_slice(p["in"], run["r"], run["tp"])
            exact(text("tp.shard", name=name, tp=run["tp"], r=run["r"], what="A[rows, :]"),
                  run["weight"], p["W"][rows], ev)
            exact(text("tp.shard", name=name, tp=run["tp"], r=run["r"], what="b"),
                  run["bias"], p["bias"], ev)
        worked(ev, "row", "A_i", np.asarray(A)[2 * ev["rank"]:2 * ev["rank"] + 2])


def judge_row_output(ranks, seed):
    p = layer_problem(seed, 34, ROW_DIMS)
    for ev in ranks:
        for name, run in ev["runs"].items():
            rows = row_slice(p["in"], run["r"], run["tp"])
            exact(text("tp.layer", name=name, what="Y_i = X_i A_i"), run.get("Y_i"),
                  p["X"][:, rows] @ p["W"][rows], ev)
            exact(text("tp.layer", name=name, what="Y = X A + b"), run.get("Y"),
                  p["X"] @ p["W"] + p["bias"], ev)
            exact(text("tp.layer", name=name, what="dL/dA_i = X_i^T dY"), run.get("dW"),
                  p["X"][:, rows].T @ p["G"], ev)
            exact(text("tp.layer", name=name, what="dL/dX = dY A^T"), run.get("dX"),
                  p["G"] @ p["W"].T, ev)
        worked(ev, "row", "Y_i", ROW_Y_I[ev["rank"]])
        worked(ev, "row", "Y", Y)


def collect_row_forward(group, seed):
    """RowParallelLinear with input_is_parallel (rank r is given X_r, its columns of X), traced;
    then the worked example's row split."""
    from minimegatron.backend import asarray
    from minimegatron.checks.worked_example import worked_row
    from minimegatron.parallel.tensor_parallel.linear import RowParallelLinear
    p = layer_problem(seed, 35, ROW_DIMS)
    rows = row_slice(p["in"], group.rank, group.size)
    runs = {}
    for dtype in DTYPES:
        layer = RowParallelLinear(p["in"], p["out"], group, input_is_parallel=True,
                                  master_weight=asarray(p["W"]),
                                  master_bias=asarray(p["bias"]), dtype=dtype)
        x = tensor_of(p["X"][:, rows], dtype, grad=True)
        start_trace()
        with Products() as products:
            y = layer(x)
        forward = traced_calls([group])
        partial = layer.last_partial
        run = {"Y_i": None if partial is None else partial.copy(), "Y": y.data,
               "dtype": dtype_of(y.data), "forward": forward, "products": products.count}
        if tuple(y.shape) == p["G"].shape:
            (y * tensor_of(p["G"], dtype)).sum().backward()
            run.update({"dX": x.grad, "dW": layer.weight.grad, "db": layer.bias.grad})
        run["backward"] = traced_calls([group])
        runs[dtype] = run
    again = {dtype: forwards(RowParallelLinear, p, group, dtype) for dtype in DTYPES}
    worked = worked_row(group)
    return {"runs": runs, "again": again, "worked": {k: worked[k] for k in ("Y_i", "Y", "dX")}}


def forwards(layer_class, p, group, dtype):
    """One layer, FORWARDS forwards (each with its backward) of a long batch X_k (rank r
    given its columns): last_partial, Y and the products of each; then the bytes the
    layer's attributes hold, and what the forwards after the first left alive."""
    from minimegatron.backend import asarray
    rows = row_slice(p["in"], group.rank, group.size)
    layer = layer_class(p["in"], p["out"], group, input_is_parallel=True,
                        master_weight=asarray(p["W"]), master_bias=asarray(p["bias"]),
                        dtype=dtype)
    out, kept = {"partials": [], "Y": [], "products": []}, []

    def forward(k):
        x = tensor_of(again_input(p, k)[:, rows], dtype, grad=True)
        with Products() as products:
            y = layer(x)
        partial = layer.last_partial
        out["partials"].append(None if partial is None else np.array(partial))
        out["Y"].append(np.array(y.data))
        out["products"].append(products.count)
        kept.extend((out["partials"][-1], out["Y"][-1]))
        y.sum().backward()
        layer.weight.grad = layer.bias.grad = None
    try:
        forward(0)                                  # the first forward's memory is allowed
        mark = len(kept)
        with NewArrays() as new:
            for k in range(1, FORWARDS):
                forward(k)
    except Exception as err:   # noqa: BLE001 -- the student's code raised: evidence
        out["error"] = f"forward {len(out['Y']) + 1}: {error_text(err)}"
        return out
    evidence = sum(a.nbytes for a in kept[mark:] if a is not None)    # the copies above
    out["new"] = new.settle(evidence, [])["new"] - evidence
    out["held"] = held_bytes(layer)
    return out


def again_input(p, k):
    """X_k of the forwards: AGAIN_ROWS rows of small integers, another draw each k."""
    return ints(p["seed"], 35, (AGAIN_ROWS, p["in"]), 10 + k)


def judge_partial(ranks, seed):
    p = layer_problem(seed, 35, ROW_DIMS)
    for ev in ranks:
        rows = row_slice(p["in"], ev["rank"], len(ev["group"]))
        for dtype, run in ev["runs"].items():
            exact(text("tp.last_partial", dtype=dtype), run["Y_i"],
                  p["X"][:, rows] @ p["W"][rows], ev)
            if run.get("products") != 1:
                raise CheckFailed(text("tp.products", rank=world_rank(ev), dtype=dtype,
                                       got=run.get("products")))
        worked(ev, "row", "Y_i", ROW_Y_I[ev["rank"]])


def judge_row_sum(ranks, seed):
    p = layer_problem(seed, 35, ROW_DIMS)
    for ev in ranks:
        rows = row_slice(p["in"], ev["rank"], len(ev["group"]))
        for dtype, run in ev["runs"].items():
            layer = f"RowParallelLinear ({dtype})"
            exact(text("tp.layer", name=layer, what="Y = sum_i X_i A_i + b"), run["Y"],
                  p["X"] @ p["W"] + p["bias"], ev)
            expect_dtype(ev, f"Y ({dtype})", run["dtype"], dtype)
            exact(text("tp.layer", name=layer, what="dL/dX_i = dY A_i^T"), run.get("dX"),
                  p["G"] @ p["W"][rows].T, ev)
            exact(text("tp.layer", name=layer, what="dL/dA_i = X_i^T dY"), run.get("dW"),
                  p["X"][:, rows].T @ p["G"], ev)
            exact(text("tp.layer", name=layer, what="dL/db = sum dY"), run.get("db"),
                  p["G"].sum(axis=0), ev)
        worked(ev, "row", "Y", Y)
        worked(ev, "row", "dX", DX)


def judge_every_forward(ranks, seed):
    """3.5: each forward of one layer computes its own X_i A_i (once) and its own Y."""
    p = layer_problem(seed, 35, ROW_DIMS)
    for ev in ranks:
        rows = row_slice(p["in"], ev["rank"], len(ev["group"]))
        for dtype, run in ev["again"].items():
            if "error" in run:
                raise CheckFailed(text("tp.again_raised", rank=world_rank(ev), dtype=dtype,
                                       error=run["error"]))
            for k in range(FORWARDS):
                x = again_input(p, k)
                exact(text("tp.again", dtype=dtype, k=k + 1, what="last_partial = X_i A_i"),
                      run["partials"][k], x[:, rows] @ p["W"][rows], ev)
                exact(text("tp.again", dtype=dtype, k=k + 1, what="Y = X A + b"), run["Y"][k],
                      x @ p["W"] + p["bias"], ev)
                if run["products"][k] != 1:
                    raise CheckFailed(text("tp.products", rank=world_rank(ev), dtype=dtype,
                                           got=run["products"][k]))


def judge_row_memory(ranks, seed):
    """3.5: after FORWARDS forwards the layer keeps ONE partial product (the latest), its
    shard and the bias; the forwards after the first leave one partial alive."""
    p = layer_problem(seed, 35, ROW_DIMS)
    for ev in ranks:
        tp = len(ev["group"])
        for dtype, run in ev["again"].items():
            if "error" in run:
                continue                            # every_forward names it
            size = np.dtype(dtype).itemsize
            partial = AGAIN_ROWS * p["out"] * size
            shard = (p["in"] // tp * p["out"] + p["out"]) * size
            shard_memory(ev, dtype, {"held": run["held"]}, shard + partial, partial,
                         "tp.one_partial")
            shard_memory(ev, dtype, {"new": run["new"]}, partial, partial, "tp.one_partial")


def judge_row_calls(ranks, seed):
    p = layer_problem(seed, 35, ROW_DIMS)
    for ev in ranks:
        for dtype, run in ev["runs"].items():
            nbytes = p["b"] * p["out"] * np.dtype(dtype).itemsize
            expect_calls(ev, "forward", run["forward"], [("all_reduce", ev["group"], nbytes)])
            expect_calls(ev, "backward", run["backward"], [])


LESSONS = {
    "3.3": Lesson(collect_column, (Point("columns", judge_columns),
                                   Point("output", judge_column_output),
                                   Point("memory", judge_column_memory))),
    "3.4": Lesson(collect_row_split, (Point("rows", judge_rows),
                                      Point("output", judge_row_output))),
    "3.5": Lesson(collect_row_forward, (Point("partial", judge_partial),
                                        Point("sum", judge_row_sum),
                                        Point("one_all_reduce", judge_row_calls),
                                        Point("every_forward", judge_every_forward),
                                        Point("memory", judge_row_memory))),
}
