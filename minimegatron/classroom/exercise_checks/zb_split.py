"""Exercise 9.1, zero-bubble pipelines: the backward split into B and W; its evidence.

9.1, the backward split into B and W (``WeightGradients.input_half`` in
autodiff/split_backward.py). The student side builds two Linears with a tanh
between them, y = tanh(x W1 + b1) W2 + b2, loss sum(y * G), from the grading
seed, in float64 and float32, and runs two micro-batches the way a zero-bubble
stage does: B0, B1 (``loss.backward(defer_weight_grads=True)``), then W1, W0.
It records x.grad and every weight's grad after the B's and after the W's,
every call of MatMul's and Add's backward with the ``needs_input_grad`` it was
asked with (so which products each half computed), the W steps recorded, and
the whole backward of the same graphs. The judge computes every gradient
itself with NumPy, in float64:

    input_now    after B, before any W, dL/dx = dY W^T ... is complete and right
    b_no_weight  B computes no X^T dY: every weight's grad untouched, each Linear
                 asked for its input's gradient only (one product per Linear)
    w_no_input   W computes X^T dY only: one product per Linear, only the ops with a
                 weight recorded, x.grad as B left it
    values       B then W equals the whole backward bit for bit and the judge's
                 gradients (float64, float32, and central differences)

and a second problem, y = tanh(tanh(x W) W) W in float32, x needing NO gradient: B asks
MatMul for dY W^T only where the input needs it (twice, not three times: b_no_weight),
and W, which sums three paths into dL/dW, runs them in the whole backward's order, so
dL/dW is the whole backward's bit for bit (values: recorded in reverse, it is not).

and a third, y = tanh(W x) in float64, the weight the FIRST input of MatMul
(either_order): B asks for x's gradient only, W for W's only, whichever side each is on.

Exercise 9.2, the W steps of ZB-H1, is zb_schedule.py.
"""
import numpy as np

from minimegatron.classroom.exercise_checks.common import CheckFailed, expect_close
from minimegatron.classroom.exercise_checks.lesson import Lesson, Point
from minimegatron.i18n import text

DTYPES = ("float64", "float32")
TOL = {"float64": 1e-10, "float32": 1e-4}
PARAMS = ("w1", "b1", "w2", "b2")


def _rng(seed, *tag):
    return np.random.default_rng([seed, 9, *tag])


# ---- 9.1: the problem (both halves) -----------------------------------------------------
def split_problem(seed):
    """{"x": [x0, x1], "g": [G0, G1], "w1", "b1", "w2", "b2"} in float64, sizes from seed."""
    rng = _rng(seed, 1)
    batch, steps = int(rng.integers(1, 3)), int(rng.integers(2, 4))
    d_in, hidden, d_out = (int(v) for v in rng.integers(2, 6, size=3))
    out = {"x": [rng.standard_normal((batch, steps, d_in)) for _ in range(2)],
           "g": [rng.standard_normal((batch, steps, d_out)) for _ in range(2)]}
    out.update(w1=rng.standard_normal((d_in, hidden)) / 2, b1=rng.standard_normal(hidden),
               w2=rng.standard_normal((hidden, d_out)) / 2, b2=rng.standard_normal(d_out))
    return out


def _forward_np(p, x):
    h = np.tanh(x @ p["w1"] + p["b1"])                   # (B, T, hidden)
    return h, h @ p["w2"] + p["b2"]                      # (B, T, d_out)


def expected_grads(p):
    """The judge's own gradients, float64: {"x": [dL/dx0, dL/dx1], "w1": .., "b2": ..}."""
    want = {"x": [], **{name: 0.0 for name in PARAMS}}
    for x, g in zip(p["x"], p["g"]):
        h, _ = _forward_np(p, x)
        dz = (g @ p["w2"].T) * (1 - h ** 2)              # (B, T, hidden)
        want["x"].append(dz @ p["w1"].T)                 # B of Linear 1: dY W^T
        want["w2"] = want["w2"] + h.reshape(-1, h.shape[-1]).T @ g.reshape(-1, g.shape[-1])
        want["b2"] = want["b2"] + g.reshape(-1, g.shape[-1]).sum(axis=0)
        want["w1"] = want["w1"] + x.reshape(-1, x.shape[-1]).T @ dz.reshape(-1, dz.shape[-1])
        want["b1"] = want["b1"] + dz.reshape(-1, dz.shape[-1]).sum(axis=0)
    return want


def central_differences(p, name, eps=1e-6):
    """d(sum over micro-batches of sum(y * G)) / d p[name], by central differences."""
    grad = np.zeros_like(p[name])
    for j in np.ndindex(*p[name].shape):
        total = 0.0
        for sign in (1, -1):
            q = {**p, name: p[name].copy()}
            q[name][j] += sign * eps
            total += sign * sum(float((_forward_np(q, x)[1] * g).sum())
                                for x, g in zip(p["x"], p["g"]))
        grad[j] = total / (2 * eps)
    return grad


# ---- 9.1: the student side -------------------------------------------------------------
class _Calls:
    """Wraps MatMul's and Add's backward: records (phase, op, needs_input_grad) per call."""

    def __init__(self):
        from minimegatron.autodiff import ops
        self.ops, self.phase, self.log = ops, None, []
        self.saved = {name: getattr(ops, name).__dict__["backward"] for name in ("MatMul", "Add")}

    def __enter__(self):
        for name, original in self.saved.items():
            def backward(ctx, *grads, name=name, original=original):
                self.log.append([self.phase, name, [bool(n) for n in ctx.needs_input_grad]])
                return original.__func__(ctx, *grads)
            setattr(getattr(self.ops, name), "backward", staticmethod(backward))
        return self

    def __exit__(self, *exc):
        for name, original in self.saved.items():
            setattr(getattr(self.ops, name), "backward", original)


def _model(p, dtype):
    from minimegatron.backend import xp
    from minimegatron.nn import Parameter
    return {name: Parameter(xp.asarray(p[name].astype(dtype))) for name in PARAMS}


def _loss(model, x, g):
    """sum(y * G), y = tanh(x W1 + b1) W2 + b2: two Linears."""
    h = (x @ model["w1"] + model["b1"]).tanh()
    return ((h @ model["w2"] + model["b2"]) * g).sum()


def _grads(xs, model):
    from minimegatron.backend import to_numpy
    return {"x": [None if x.grad is None else to_numpy(x.grad).copy() for x in xs],
            **{name: None if t.grad is None else to_numpy(t.grad).copy()
               for name, t in model.items()}}


def _error(err):
    from minimegatron.classroom.exercise_checks.autodiff import raised_where
    return raised_where(err)


def _split_run(p, dtype):
    """B0, B1, then W1, W0, recorded; and the whole backward of the same graphs."""
    from minimegatron.autodiff.tensor import Tensor
    from minimegatron.backend import xp
    model = _model(p, dtype)
    xs = [Tensor(xp.asarray(x.astype(dtype)), requires_grad=True) for x in p["x"]]
    gs = [Tensor(xp.asarray(g.astype(dtype))) for g in p["g"]]
    run = {"dtype": dtype, "b": None, "w": None, "steps": None, "error": None}
    with _Calls() as calls:
        try:
            losses = [_loss(model, x, g) for x, g in zip(xs, gs)]
            calls.phase = "B"
            halves = [loss.backward(defer_weight_grads=True) for loss in losses]
            run["b"] = _grads(xs, model)
            run["steps"] = [len(half) for half in halves]
            calls.phase = "W"
            for half in reversed(halves):
                half()
            run["w"] = _grads(xs, model)
        except NotImplementedError:
            raise
        except Exception as err:   # noqa: BLE001 -- a student's bug is evidence, judged below
            run["error"] = f"{calls.phase}: {_error(err)}"
    run["calls"] = calls.log
    whole = _model(p, dtype)
    xs = [Tensor(xp.asarray(x.astype(dtype)), requires_grad=True) for x in p["x"]]
    for x, g in zip(xs, gs):
        _loss(whole, x, g).backward()
    run["whole"] = _grads(xs, whole)
    return run


def shared_problem(seed):
    """{"x", "w", "g"} float64: one square weight used three times, x needing no gradient."""
    rng = _rng(seed, 2)
    d = int(rng.integers(3, 6))
    return {"x": rng.standard_normal((2, 3, d)), "w": rng.standard_normal((d, d)) / 2,
            "g": rng.standard_normal((2, 3, d))}


def _shared_loss(x, w, g):
    """sum(y * G), y = tanh(tanh(x W) W) W: W used three times."""
    return ((((x @ w).tanh() @ w).tanh() @ w) * g).sum()


def _shared_run(p):
    """B then W on the shared-weight problem in float32, and the whole backward: which
    products each half asked for, and dL/dW both ways."""
    from minimegatron.autodiff.tensor import Tensor
    from minimegatron.backend import to_numpy, xp
    from minimegatron.nn import Parameter
    x, g = (Tensor(xp.asarray(p[n].astype(np.float32))) for n in ("x", "g"))
    run = {"w": None, "whole": None, "error": None}
    w = Parameter(xp.asarray(p["w"].astype(np.float32)))
    with _Calls() as calls:
        try:
            calls.phase = "B"
            half = _shared_loss(x, w, g).backward(defer_weight_grads=True)
            calls.phase = "W"
            half()
            run["w"] = None if w.grad is None else to_numpy(w.grad).copy()
        except NotImplementedError:
            raise
        except Exception as err:   # noqa: BLE001 -- a student's bug is evidence, judged below
            run["error"] = f"{calls.phase}: {_error(err)}"
    run["calls"] = calls.log
    whole = Parameter(xp.asarray(p["w"].astype(np.float32)))
    _shared_loss(x, whole, g).backward()
    run["whole"] = to_numpy(whole.grad).copy()
    return run


def shared_expected(p):
    """dL/dW of the shared-weight problem, float64, by the chain rule by hand."""
    x, w, g = p["x"], p["w"], p["g"]
    h1 = np.tanh(x @ w)
    h2 = np.tanh(h1 @ w)
    grad = np.einsum("btk,btm->km", h2, g)                    # y = h2 W
    d2 = (g @ w.T) * (1 - h2 ** 2)
    grad += np.einsum("btk,btm->km", h1, d2)                  # h2 = tanh(h1 W)
    d1 = (d2 @ w.T) * (1 - h1 ** 2)
    return grad + np.einsum("btk,btm->km", x, d1)             # h1 = tanh(x W)


def first_problem(seed):
    """{"x", "w", "g"} float64 for y = tanh(W x): the weight is the FIRST input of MatMul."""
    rng = _rng(seed, 3)
    d_in, d_out, k = (int(v) for v in rng.integers(2, 6, size=3))
    return {"x": rng.standard_normal((d_in, k)), "w": rng.standard_normal((d_out, d_in)) / 2,
            "g": rng.standard_normal((d_out, k))}


def first_expected(p):
    """(dL/dx, dL/dW) of sum(tanh(W x) * G), float64."""
    dz = p["g"] * (1 - np.tanh(p["w"] @ p["x"]) ** 2)        # (d_out, k)
    return p["w"].T @ dz, dz @ p["x"].T


def _first_run(p):
    """B then W on y = tanh(W x) in float64: x.grad and W.grad after each half, and which
    gradients each half asked MatMul for."""
    from minimegatron.autodiff.tensor import Tensor
    from minimegatron.backend import xp
    from minimegatron.nn import Parameter
    x = Tensor(xp.asarray(p["x"]), requires_grad=True)
    w, g = Parameter(xp.asarray(p["w"])), Tensor(xp.asarray(p["g"]))
    run = {"b": None, "w": None, "error": None}
    with _Calls() as calls:
        try:
            calls.phase = "B"
            half = ((w @ x).tanh() * g).sum().backward(defer_weight_grads=True)
            run["b"] = _grads([x], {"w": w})
            calls.phase = "W"
            half()
            run["w"] = _grads([x], {"w": w})
        except NotImplementedError:
            raise
        except Exception as err:   # noqa: BLE001 -- a student's bug is evidence, judged below
            run["error"] = f"{calls.phase}: {_error(err)}"
    run["calls"] = calls.log
    return run


def collect_split(group, seed):
    """Both dtypes' runs of the student's split backward on the seed's problem, the
    shared-weight run and the weight-first run."""
    p = split_problem(seed)
    return {"runs": [_split_run(p, dtype) for dtype in DTYPES],
            "shared": _shared_run(shared_problem(seed)),
            "first": _first_run(first_problem(seed))}


# ---- 9.1: the judge --------------------------------------------------------------------
def _runs(evidence):
    runs = evidence["runs"]
    if [run["dtype"] for run in runs] != list(DTYPES):
        raise CheckFailed(text("zb.dtypes", got=[run["dtype"] for run in runs]))
    return runs


def _close(what, got, want, dtype):
    if got is None:
        raise CheckFailed(text("zb.none", what=what))
    if str(np.asarray(got).dtype) != dtype:
        raise CheckFailed(text("zb.dtype", what=what, got=np.asarray(got).dtype, want=dtype))
    scale = max(1.0, float(np.abs(want).max()))
    expect_close(what, np.asarray(got, dtype=np.float64), want, TOL[dtype] * scale)


def _raised_in(run, phases):
    """CheckFailed if the run raised in one of ``phases`` ("B", "W") or before B began."""
    if run["error"] and run["error"].split(":")[0] in phases + ("None",):
        raise CheckFailed(text("zb.raised", dtype=run["dtype"], error=run["error"]))


def judge_input_now(evidence, seed):
    want = expected_grads(split_problem(seed))
    for run in _runs(evidence):
        _raised_in(run, ("B",))
        for i, (got, dx) in enumerate(zip(run["b"]["x"], want["x"])):
            _close(text("zb.after_b", what=f"dL/dx{i}", dtype=run["dtype"]), got, dx,
                   run["dtype"])


def _calls(run, phase, op):
    return [needs for when, name, needs in run["calls"] if when == phase and name == op]


def _shared(evidence, phases):
    run = evidence["shared"]
    if run["error"] and run["error"].split(":")[0] in phases + ("None",):
        raise CheckFailed(text("zb.raised", dtype="float32", error=run["error"]))
    return run


def _first_calls(evidence, phase, want):
    """y = tanh(W x): MatMul asked for ``want`` (W, x) in ``phase``, the weight FIRST."""
    run = evidence["first"]
    asked = _calls(run, phase, "MatMul")
    if not run["error"] and asked != want:
        raise CheckFailed(text("zb.first_calls", half=phase, got=asked, want=want))


def judge_b_no_weight(evidence, seed):
    shared = _shared(evidence, ("B",))
    asked = _calls(shared, "B", "MatMul")
    if asked != [[True, False]] * 2:
        raise CheckFailed(text("zb.no_input_grad", got=asked))
    _first_calls(evidence, "B", [[False, True]])
    for run in _runs(evidence):
        _raised_in(run, ("B",))
        early = [name for name in PARAMS if run["b"][name] is not None]
        if early:
            raise CheckFailed(text("zb.weights_in_b", dtype=run["dtype"], names=early))
        for op in ("MatMul", "Add"):
            asked = _calls(run, "B", op)
            if asked != [[True, False]] * 4:
                raise CheckFailed(text("zb.b_calls", dtype=run["dtype"], op=op, got=asked))


def judge_w_no_input(evidence, seed):
    _first_calls(evidence, "W", [[True, False]])
    for run in _runs(evidence):
        _raised_in(run, ("B", "W"))
        if run["steps"] != [4, 4]:
            raise CheckFailed(text("zb.steps", dtype=run["dtype"], got=run["steps"]))
        for op in ("MatMul", "Add"):
            asked = _calls(run, "W", op)
            if asked != [[False, True]] * 4:
                raise CheckFailed(text("zb.w_calls", dtype=run["dtype"], op=op, got=asked))
        for i, (before, after) in enumerate(zip(run["b"]["x"], run["w"]["x"])):
            if before is None or after is None or not np.array_equal(before, after):
                raise CheckFailed(text("zb.x_changed", dtype=run["dtype"], i=i))


def judge_values(evidence, seed):
    p = split_problem(seed)
    want = expected_grads(p)
    for run in _runs(evidence):
        _raised_in(run, ("B", "W"))
        for name in PARAMS:
            what = text("zb.after_w", what=f"dL/d{name}", dtype=run["dtype"])
            _close(what, run["w"][name], want[name], run["dtype"])
            if not np.array_equal(run["w"][name], run["whole"][name]):
                raise CheckFailed(text("zb.not_whole", what=what))
            if run["dtype"] == "float64":
                expect_close(text("zb.numeric", what=what), run["w"][name],
                             central_differences(p, name), 1e-6)
    shared = _shared(evidence, ("B", "W"))
    what = text("zb.shared", what="dL/dW")
    _close(what, shared["w"], shared_expected(shared_problem(seed)), "float32")
    if not np.array_equal(shared["w"], shared["whole"]):
        raise CheckFailed(text("zb.not_whole", what=what))


def judge_either_order(evidence, seed):
    """y = tanh(W x): B gives dL/dx = W^T dZ, no dL/dW yet; W gives dL/dW = dZ x^T, x.grad
    as B left it. (What each half asks MatMul for is b_no_weight's and w_no_input's.)"""
    run = evidence["first"]
    if run["error"]:
        raise CheckFailed(text("zb.raised", dtype="float64 (W x)", error=run["error"]))
    dx, dw = first_expected(first_problem(seed))
    _close(text("zb.first", what="dL/dx", half="B"), run["b"]["x"][0], dx, "float64")
    if run["b"]["w"] is not None:
        raise CheckFailed(text("zb.weights_in_b", dtype="float64 (W x)", names=["W"]))
    _close(text("zb.first", what="dL/dW", half="W"), run["w"]["w"], dw, "float64")
    if not np.array_equal(run["b"]["x"][0], run["w"]["x"][0]):
        raise CheckFailed(text("zb.x_changed", dtype="float64 (W x)", i=""))


# ---- 9.2: the schedules as data --------------------------------------------------------
LESSONS = {
    "9.1": Lesson(collect_split, (Point("input_now", judge_input_now),
                                  Point("b_no_weight", judge_b_no_weight),
                                  Point("w_no_input", judge_w_no_input),
                                  Point("values", judge_values),
                                  Point("either_order", judge_either_order))),
}
