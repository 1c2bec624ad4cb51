"""Exercises 3.x, tensor parallelism: what each teaches, and the evidence of each point.

The grader runs these on 4 ranks, on the tp groups [0, 1] and [2, 3]: each group
is a strict subset of the world, so a collective over the world sums 4 ranks
instead of 2. The problem (shapes and small integer values, exact in float32 and
float64) is drawn from the grading seed; the judge draws it again and computes
every expected value itself, serially, with NumPy. Every run is traced, so the
judge also reads which collectives ran (op, group, bytes). Points:

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
    3.3       columns          rank r keeps columns r*w .. (r+1)*w of the master weight and bias,
                               w = out/tp, for tp = 2 (the tp group), 1 and 4 (the world)
              output           Y_i = X A_i + b_i, the gathered Y = X A + b, dA_i = X^T dY_i
    3.4       rows             rank r keeps rows r*h .. (r+1)*h of the master weight (all of b),
                               h = in/tp, for tp = 2, 1 and 4
              output           X_i A_i summed over the group = X A, + b once; dA_i = X_i^T dY
    3.5       partial          last_partial is this rank's X_i A_i (no bias, not summed)
              sum              Y = sum_i X_i A_i + b on every rank; dX_i and dA_i through g
              one_all_reduce   forward ONE all_reduce of Y's bytes over the group, backward none

Where it fits, a point also holds the source notes' worked example (X 2x4, A 4x2,
exact integers) through the real layers (``checks/worked_example.py``).
"""
import numpy as np

from minimegatron.exercise_checks.common import CheckFailed, expect_close
from minimegatron.exercise_checks.lesson import Lesson, Point, comm_log
from minimegatron.i18n import text
from minimegatron.parallel.split import row_slice

DTYPES = ("float64", "float32")
A = [[10, 14], [11, 15], [12, 16], [13, 17]]
Y = [[74, 98], [258, 346]]
DX = [[24, 26, 28, 30], [24, 26, 28, 30]]              # dL/dX for L = sum(Y): ones(2, 2) A^T
COLUMN_Y_I = [[[74], [258]], [[98], [346]]]            # Y_1 = X A_1, Y_2 = X A_2
ROW_Y_I = [[[11, 15], [95, 131]], [[63, 83], [163, 215]]]    # X_1 A_1, X_2 A_2


# --- the problem, drawn from the seed (the judge draws it again) ----------------------------

def ints(seed, tag, shape, *key):
    """Small integers in [-3, 3] as float64, drawn from (seed, tag, *key): exact in float32."""
    rng = np.random.default_rng([seed, tag, *key])
    return rng.integers(-3, 4, size=shape).astype(np.float64)


def dims(seed, tag, choices):
    """One entry of each tuple in ``choices``, drawn from the seed (the same on every rank)."""
    rng = np.random.default_rng([seed, tag, 999])
    return tuple(int(rng.choice(c)) for c in choices)


def world_rank(ev):
    return ev["group"][ev["rank"]]


# --- student side helpers ------------------------------------------------------------------

def tensor_of(a, dtype, grad=False):
    from minimegatron.backend import asarray
    from minimegatron.tensor import Tensor
    return Tensor(asarray(np.asarray(a, dtype=dtype)), requires_grad=grad)


def alone_group(group):
    """A group of this rank alone (a collective over ``group``)."""
    return group.split(group.rank, name=f"alone{group.rank}")


def traced_calls(groups):
    """The collectives traced since the last reset, as evidence (then reset)."""
    from minimegatron import trace
    from minimegatron.comm import world
    calls = comm_log(list(trace.spans()), list(groups) + [world()])
    trace.reset()
    return calls


def start_trace():
    from minimegatron import trace
    trace.reset()


def _copied(a):
    return None if a is None else a.copy()


def dtype_of(a):
    return str(getattr(a, "dtype", None))


# --- judge side helpers --------------------------------------------------------------------

def sent(op, group, nbytes):
    """Bytes one rank sends in ``op`` of an ``nbytes`` argument (trace.py's ring model)."""
    n = len(group)
    return {"all_reduce": 2 * (n - 1) * nbytes // n, "reduce_scatter": (n - 1) * nbytes // n,
            "all_gather": (n - 1) * nbytes}.get(op, 0)


def _show(calls):
    return ", ".join(text("tp.call", op=op, group=g, nbytes=n, sent=s) for op, g, n, s in calls)


def expect_calls(ev, phase, calls, want):
    """CheckFailed unless ``calls`` are exactly ``want``, [(op, world ranks, nbytes)], each
    sending what the ring model says."""
    got = [(c["op"], c["group"], int(c["nbytes"]), int(c["bytes_sent"])) for c in calls]
    want = [(op, list(g), int(n), sent(op, g, n)) for op, g, n in want]
    if got != want:
        raise CheckFailed(text("tp.calls_wrong", rank=world_rank(ev), phase=text(f"tp.{phase}"),
                               got=_show(got) or text("tp.no_collective"),
                               want=_show(want) or text("tp.no_collective")))


def expect_dtype(ev, what, got, want):
    if got != want:
        raise CheckFailed(text("tp.dtype_wrong", rank=world_rank(ev), what=what, got=got,
                               want=want))


def exact(what, got, want, ev):
    """expect_close with no tolerance: every value here is a small integer."""
    expect_close(what, got, np.asarray(want, dtype=np.float64), atol=0.0, rank=world_rank(ev))


def _worked(ev, split, key, want):
    name = text(f"tp.{key}", n=ev["rank"] + 1)
    exact(text("tp.worked", split=text(f"tp.{split}"), name=name), ev["worked"].get(key), want,
          ev)


# --- 3.1 f: identity forward, all-reduce backward --------------------------------------------

F_DIMS = ((2, 3), (3, 4, 5))                       # x: (b, n)


def collect_copy(group, seed):
    """x (the same on the group's ranks) -> h = f(x), z = h + w; rank r's dL/dz = G_r. The add
    hands f and w the SAME gradient array, so f must not overwrite it."""
    from minimegatron import trace
    from minimegatron.checks.worked_example import worked_column
    from minimegatron.parallel.tensor_parallel.mappings import copy_to_tp
    shape, rank = dims(seed, 31, F_DIMS), group.ranks[group.rank]
    runs = {}
    for dtype in DTYPES:
        x = tensor_of(ints(seed, 31, shape, 1, group.ranks[0]), dtype, grad=True)
        w = tensor_of(np.zeros(shape), dtype, grad=True)
        start_trace()
        h = copy_to_tp(x, group)
        forward = traced_calls([group])
        (((h + w) * tensor_of(ints(seed, 31, shape, 2, rank), dtype)).sum()).backward()
        backward = traced_calls([group])
        runs[dtype] = {"y": h.data, "y_dtype": dtype_of(h.data), "dx": _copied(x.grad),
                       "dx_dtype": dtype_of(x.grad), "dw": w.grad, "forward": forward,
                       "backward": backward, "dx_later": x.grad}
    for dtype in DTYPES:        # another f of the same shape: the dL/dX above (held, not
        other = tensor_of(ints(seed, 31, shape, 3, group.ranks[0]), dtype, grad=True)
        (copy_to_tp(other, group) * tensor_of(ints(seed, 31, shape, 4, rank), dtype)
         ).sum().backward()     # copied) keeps its value: no buffer reused across calls
    trace.reset()
    worked = worked_column(group)
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
        _worked(ev, "column", "dX", DX)


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
    """Rank r's own x_r -> y = g(x_r); dL/dy = G (the same on the group's ranks); then g on a
    group of this rank alone; then the worked example's row split."""
    from minimegatron.checks.worked_example import worked_row
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
        (y * tensor_of(ints(seed, 32, shape, 2, group.ranks[0]), dtype)).sum().backward()
        runs[dtype].update({"backward": traced_calls([group]), "dx": x.grad, "x_after": x.data})
    for dtype in DTYPES:        # another g of the same shape: the g(x) above (held, not
        reduce_from_tp(tensor_of(ints(seed, 32, shape, 3, rank), dtype), group)   # copied)
    start_trace()               # keeps its value: no buffer reused across calls
    alone = alone_group(group)
    x = tensor_of(ints(seed, 32, shape, 1, rank), "float64")
    start_trace()
    y = reduce_from_tp(x, alone)
    runs_alone = {"y": y.data, "calls": traced_calls([group, alone])}
    worked = worked_row(group)
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
        _worked(ev, "row", "Y", Y)


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
        _worked(ev, "row", "Y_i", ROW_Y_I[ev["rank"]])


# --- 3.3 and 3.4: which slice of the master weight each rank keeps --------------------------

COLUMN_DIMS = ((2, 3), (3, 5), (8, 12))            # X (b, in) . A (in, out), out % 4 == 0
ROW_DIMS = ((2, 3), (8, 12), (3, 5))               # in % 4 == 0


def _layer_problem(seed, tag, choices):
    b, n_in, n_out = dims(seed, tag, choices)
    return {"b": b, "in": n_in, "out": n_out, "W": ints(seed, tag, (n_in, n_out), 1),
            "bias": ints(seed, tag, (n_out,), 2), "X": ints(seed, tag, (b, n_in), 3),
            "G": ints(seed, tag, (b, n_out), 4)}


def _groups(group):
    """(name, group): the tp group, a group of this rank alone, and the world (tp = 4)."""
    from minimegatron.comm import world
    return (("tp", group), ("alone", alone_group(group)), ("world", world()))


def agree(ok, group):
    """True on every rank of the group when ``ok`` holds on every one (one small all-reduce),
    so that a wrong shard skips the layer's collectives on all of them, not on some."""
    from minimegatron import comm
    from minimegatron.backend import asarray
    return bool(comm.all_reduce(asarray([1.0 if ok else 0.0]), group, op="min")[0] > 0)


def _run_layer(layer, group, shard_shapes, x_in, g, dtype):
    """This rank's shard, then (when every rank's shard has the right shape) forward and
    backward of one layer; the gradients only when Y has the right shape."""
    out = {"weight": layer.weight.data, "bias": layer.bias.data, "tp": group.size,
           "r": group.rank}
    shapes = (tuple(layer.weight.shape), tuple(layer.bias.shape))
    if not agree(shapes == shard_shapes, group):
        return out
    x = tensor_of(x_in, dtype, grad=True)
    y = layer(x)
    out.update({"Y_i": layer.last_partial, "Y": y.data, "dtype": dtype_of(y.data)})
    if tuple(y.shape) == g.shape:
        (y * tensor_of(g, dtype)).sum().backward()
        out.update({"dX": x.grad, "dW": layer.weight.grad, "db": layer.bias.grad})
    return out


def collect_column(group, seed):
    from minimegatron.backend import asarray
    from minimegatron.checks.worked_example import worked_column
    from minimegatron.parallel.tensor_parallel.linear import ColumnParallelLinear
    p = _layer_problem(seed, 33, COLUMN_DIMS)
    runs = {}
    for name, grp in _groups(group):
        for dtype in (DTYPES if name == "tp" else ("float64",)):
            layer = ColumnParallelLinear(p["in"], p["out"], grp, gather_output=True,
                                         master_weight=asarray(p["W"]),
                                         master_bias=asarray(p["bias"]), dtype=dtype)
            shapes = ((p["in"], p["out"] // grp.size), (p["out"] // grp.size,))
            runs[f"{name} {dtype}"] = _run_layer(layer, grp, shapes, p["X"], p["G"], dtype)
    layer = ColumnParallelLinear(4, 2, group, bias=False, master_weight=asarray(A, "float64"))
    if not agree(tuple(layer.weight.shape) == (4, 1), group):     # a wrong shard: no run
        return {"runs": runs, "worked": {"A_i": layer.weight.data}}
    worked = worked_column(group)
    return {"runs": runs, "worked": {k: worked[k] for k in ("A_i", "Y_i", "Y", "dA_i")}}


def judge_columns(ranks, seed):
    p = _layer_problem(seed, 33, COLUMN_DIMS)
    for ev in ranks:
        for name, run in ev["runs"].items():
            cols = row_slice(p["out"], run["r"], run["tp"])
            exact(text("tp.shard", name=name, tp=run["tp"], r=run["r"], what="A[:, cols]"),
                  run["weight"], p["W"][:, cols], ev)
            exact(text("tp.shard", name=name, tp=run["tp"], r=run["r"], what="b[cols]"),
                  run["bias"], p["bias"][cols], ev)
        _worked(ev, "column", "A_i", np.asarray(A)[:, ev["rank"]:ev["rank"] + 1])


def judge_column_output(ranks, seed):
    p = _layer_problem(seed, 33, COLUMN_DIMS)
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
            _worked(ev, "column", key, want)


def collect_row_split(group, seed):
    from minimegatron.backend import asarray
    from minimegatron.checks.worked_example import worked_row
    from minimegatron.parallel.tensor_parallel.linear import RowParallelLinear
    p = _layer_problem(seed, 34, ROW_DIMS)
    runs = {}
    for name, grp in _groups(group):
        for dtype in (DTYPES if name == "tp" else ("float64",)):
            layer = RowParallelLinear(p["in"], p["out"], grp, master_weight=asarray(p["W"]),
                                      master_bias=asarray(p["bias"]), dtype=dtype)
            shapes = ((p["in"] // grp.size, p["out"]), (p["out"],))
            runs[f"{name} {dtype}"] = _run_layer(layer, grp, shapes, p["X"], p["G"],
                                                 dtype)       # X scattered inside
    layer = RowParallelLinear(4, 2, group, bias=False, master_weight=asarray(A, "float64"))
    if not agree(tuple(layer.weight.shape) == (2, 2), group):     # a wrong shard: no run
        return {"runs": runs, "worked": {"A_i": layer.weight.data}}
    worked = worked_row(group)
    return {"runs": runs, "worked": {k: worked[k] for k in ("A_i", "Y_i", "Y")}}


def judge_rows(ranks, seed):
    p = _layer_problem(seed, 34, ROW_DIMS)
    for ev in ranks:
        for name, run in ev["runs"].items():
            rows = row_slice(p["in"], run["r"], run["tp"])
            exact(text("tp.shard", name=name, tp=run["tp"], r=run["r"], what="A[rows, :]"),
                  run["weight"], p["W"][rows], ev)
            exact(text("tp.shard", name=name, tp=run["tp"], r=run["r"], what="b"),
                  run["bias"], p["bias"], ev)
        _worked(ev, "row", "A_i", np.asarray(A)[2 * ev["rank"]:2 * ev["rank"] + 2])


def judge_row_output(ranks, seed):
    p = _layer_problem(seed, 34, ROW_DIMS)
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
        _worked(ev, "row", "Y_i", ROW_Y_I[ev["rank"]])
        _worked(ev, "row", "Y", Y)


# --- 3.5 the row-parallel forward: partial products, then g --------------------------------

def collect_row_forward(group, seed):
    """RowParallelLinear with input_is_parallel (rank r is given X_r, its columns of X), traced;
    then the worked example's row split."""
    from minimegatron.backend import asarray
    from minimegatron.checks.worked_example import worked_row
    from minimegatron.parallel.tensor_parallel.linear import RowParallelLinear
    p = _layer_problem(seed, 35, ROW_DIMS)
    rows = row_slice(p["in"], group.rank, group.size)
    runs = {}
    for dtype in DTYPES:
        layer = RowParallelLinear(p["in"], p["out"], group, input_is_parallel=True,
                                  master_weight=asarray(p["W"]),
                                  master_bias=asarray(p["bias"]), dtype=dtype)
        x = tensor_of(p["X"][:, rows], dtype, grad=True)
        start_trace()
        y = layer(x)
        forward = traced_calls([group])
        partial = layer.last_partial
        run = {"Y_i": None if partial is None else partial.copy(), "Y": y.data,
               "dtype": dtype_of(y.data), "forward": forward}
        if tuple(y.shape) == p["G"].shape:
            (y * tensor_of(p["G"], dtype)).sum().backward()
            run.update({"dX": x.grad, "dW": layer.weight.grad, "db": layer.bias.grad})
        run["backward"] = traced_calls([group])
        runs[dtype] = run
    worked = worked_row(group)
    return {"runs": runs, "worked": {k: worked[k] for k in ("Y_i", "Y", "dX")}}


def judge_partial(ranks, seed):
    p = _layer_problem(seed, 35, ROW_DIMS)
    for ev in ranks:
        rows = row_slice(p["in"], ev["rank"], len(ev["group"]))
        for dtype, run in ev["runs"].items():
            exact(text("tp.last_partial", dtype=dtype), run["Y_i"],
                  p["X"][:, rows] @ p["W"][rows], ev)
        _worked(ev, "row", "Y_i", ROW_Y_I[ev["rank"]])


def judge_row_sum(ranks, seed):
    p = _layer_problem(seed, 35, ROW_DIMS)
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
        _worked(ev, "row", "Y", Y)
        _worked(ev, "row", "dX", DX)


def judge_row_calls(ranks, seed):
    p = _layer_problem(seed, 35, ROW_DIMS)
    for ev in ranks:
        for dtype, run in ev["runs"].items():
            nbytes = p["b"] * p["out"] * np.dtype(dtype).itemsize
            expect_calls(ev, "forward", run["forward"], [("all_reduce", ev["group"], nbytes)])
            expect_calls(ev, "backward", run["backward"], [])


LESSONS = {
    "3.1": Lesson(collect_copy, (Point("sum", judge_copy_sum),
                                 Point("one_all_reduce", judge_copy_calls),
                                 Point("grad_out_kept", judge_copy_kept))),
    "3.2": Lesson(collect_reduce, (Point("sum", judge_reduce_sum),
                                   Point("one_all_reduce", judge_reduce_calls),
                                   Point("input_kept", judge_reduce_kept))),
    "3.3": Lesson(collect_column, (Point("columns", judge_columns),
                                   Point("output", judge_column_output))),
    "3.4": Lesson(collect_row_split, (Point("rows", judge_rows),
                                      Point("output", judge_row_output))),
    "3.5": Lesson(collect_row_forward, (Point("partial", judge_partial),
                                        Point("sum", judge_row_sum),
                                        Point("one_all_reduce", judge_row_calls))),
}
