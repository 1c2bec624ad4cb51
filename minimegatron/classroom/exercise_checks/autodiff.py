"""Exercises 1.1-1.6, the backward rules: what each teaches, and the evidence of each point.

Every case is drawn from the grading seed (shapes and values), so no constant
answers it. The student side (``collect``) runs the op's forward through the
engine (``Op.apply``, so ``ctx`` is filled as in training), then calls the op's
``backward`` DIRECTLY on a random ``grad_out`` (never all ones) and records, case
by case, what came back (values, shape, dtype, or the error it raised) and
whether ``grad_out``, the saved arrays and the forward's result were left as
they were. ``unbroadcast`` (1.5) is called as it is, and once inside ``a + b``.

The judge redraws the same cases from the seed and computes every expected
gradient itself in float64, with NumPy only (never with the package's backward
rules, which a handout leaves blank): for a linear map f (X @ A in X or in A,
a sum, a broadcast) the gradient of <grad_out, f(x)> at entry j is
<grad_out, f(e_j)>, one unit array at a time, which needs no formula at all;
exp, tanh and max by their closed forms (max: 1/k at each of k tied maxima). A
"float32" point reads the dtype always, and the float32 values only when the float64
cases are right (else the mistake is another point's, with its own hint); in 1.3 and 1.6
it holds float16 cases too (a gradient cast to float32 is no gradient of float16's dtype).

    1.1 MatMul     transpose (2-D, float32 too), batched (swap the last two axes,
                   unbroadcast both gradients), vectors, needed (None where
                   ctx.needs_input_grad is False); X, A and grad_out also in memory that
                   is not C-contiguous (a transposed copy seen transposed back); twice
                   (backward again on one ctx: for X, for A, then both, as zero bubble's
                   B and W call it)
    1.2 Exp        chain (grad_out * z), float32, no_overwrite (grad_out and the
                   saved output, which IS the forward's result, stay as they were)
    1.3 Tanh       derivative (grad_out * (1 - z^2)), float32 (and float16), no_overwrite
    1.4 Max        route (only the maximum gets grad_out), ties (1/k each), axes
                   (None, int, negative, tuple, keepdims)
    1.5 unbroadcast leading, stretched, mixed (both at once, and in a + b), float32
    1.6 Sum        spread (grad_out back over x's shape), axes, float32 (and float16)
"""
import numpy as np

from minimegatron.classroom.exercise_checks.common import CheckFailed, show
from minimegatron.classroom.exercise_checks.lesson import Lesson, Point
from minimegatron.classroom.exercise_checks.watched import new_log, watch
from minimegatron.i18n import text

F64, F32, F16 = "float64", "float32", "float16"
TOL = {F64: 1e-9, F32: 2e-5, F16: 5e-3}    # |got - want| <= TOL * max(1, |want|), entry by entry


# ---- the problems, drawn from the seed (both halves call these) ------------------------
def _rng(seed, ex_id):
    return np.random.default_rng([seed] + [int(p) for p in ex_id.split(".")])


def _normal(rng, shape, dtype, scale=1.0):
    return np.asarray(rng.standard_normal(shape) * scale, dtype=dtype)


def _shape_text(shape):
    return "(" + ", ".join(map(str, shape)) + ("," if len(shape) == 1 else "") + ")"


def _matmul_cases(seed):
    rng = _rng(seed, "1.1")
    n, k, m = (int(v) for v in rng.permutation([2, 3, 4, 5])[:3])   # three sizes, all different
    b, c = (int(v) for v in rng.permutation([2, 3]))
    both, no_x, no_a = (True, True), (False, True), (True, False)
    specs = [("transpose", (n, k), (k, m), F64, both), ("transpose", (m, n), (n, k), F32, both),
             ("batched", (b, n, k), (k, m), F32, both),           # a weight: one GEMM form
             ("batched", (b, n, k), (b, k, m), F64, both),
             ("batched", (b, 1, n, k), (c, k, m), F64, both),     # batch broadcast on both
             ("batched", (n, k), (b, k, m), F64, both),           # X met by every batch of A
             ("batched", (b, n, k), (1, k, m), F32, both),        # A's batch axis stretched
             ("vectors", (k,), (k, m), F64, both), ("vectors", (n, k), (k,), F64, both),
             ("vectors", (k,), (k,), F64, both), ("vectors", (b, n, k), (k,), F32, both),
             ("vectors", (k,), (b, k, m), F64, both),
             ("needed", (n, k), (k, m), F64, no_x), ("needed", (n, k), (k, m), F64, no_a),
             ("needed", (b, n, k), (b, k, m), F64, no_x),
             ("needed", (b, n, k), (b, k, m), F64, no_a)]
    strided = [("transpose", (n, k), (k, m), F64, both), ("batched", (b, n, k), (k, m), F32, both),
               ("batched", (b, n, k), (b, k, m), F64, both), ("vectors", (k,), (k, m), F64, both)]
    twice = [("twice", (b, n, k), (k, m), F64, both), ("twice", (b, n, k), (b, k, m), F64, both),
             ("twice", (n, k), (k, m), F32, both)]
    cases = []
    for kind, group in (("", specs), ("strided", strided), ("twice", twice)):
        for point, xs, as_, dtype, needs in group:
            x, a = _normal(rng, xs, dtype), _normal(rng, as_, dtype)
            out_shape = np.matmul(x, a).shape
            label = f"X {_shape_text(xs)} @ A {_shape_text(as_)}, {dtype}"
            cases.append({"point": point, "inputs": [x, a], "needs": needs, "dtype": dtype,
                          "grad_out": _normal(rng, out_shape, dtype), "kind": kind,
                          "label": label + {"": "", "strided": text("ad.strided"),
                                            "twice": text("ad.twice")}[kind],
                          "names": ["dL/dX", "dL/dA"]})
    return cases


def _strided(a):
    """The values of ``a`` in memory that is not C-contiguous: a transposed copy seen
    transposed back (a 1-D array: every other entry of one twice as long)."""
    if a.ndim == 0:
        return a
    if a.ndim == 1:
        wide = np.zeros(2 * a.size, a.dtype)
        wide[::2] = a
        return wide[::2]
    return np.swapaxes(np.swapaxes(a, -1, -2).copy(), -1, -2)


def _elementwise_cases(ex_id):
    def cases(seed):
        rng = _rng(seed, ex_id)
        op = "exp" if ex_id == "1.2" else "tanh"
        main = "chain" if ex_id == "1.2" else "derivative"
        specs = [(main, (3, 4), F64), (main, (2, 3, 2), F64), ("float32", (3, 4), F32),
                 ("float32", (5,), F32)] + ([("float32", (3, 4), F16)] if ex_id == "1.3" else [])
        return [{"point": point, "inputs": [_normal(rng, shape, dtype, 1.5)],
                 "needs": (True,), "dtype": dtype, "grad_out": _normal(rng, shape, dtype),
                 "label": f"z = {op}(x), x {_shape_text(shape)} {dtype}", "names": ["dL/dx"]}
                for point, shape, dtype in specs]
    return cases


def _with_ties(rng, shape, axis):
    """Small integers (many ties). Along an int ``axis`` the first line gets 2 tied maxima
    and the second 3; with axis None the whole array has 2; the places drawn from rng."""
    if axis is None:
        x = rng.integers(0, 3, size=shape).astype(float)
        x.reshape(-1)[rng.choice(x.size, size=2, replace=False)] = 3.0
        return x
    lines = rng.integers(0, 3, size=shape[:axis] + shape[axis + 1:] + (shape[axis],))
    flat = lines.astype(float).reshape(-1, shape[axis])         # (lines, n)
    for row, k in ((0, 2), (1, 3)):
        flat[row] = 0.0
        flat[row, rng.choice(shape[axis], size=k, replace=False)] = 3.0
    return np.ascontiguousarray(np.moveaxis(flat.reshape(lines.shape), -1, axis))


def _reduction_cases(ex_id):
    def cases(seed):
        rng = _rng(seed, ex_id)
        op = "max" if ex_id == "1.4" else "sum"
        if ex_id == "1.4":
            specs = [("route", (3, 4), 1, False, F64, False),
                     ("route", (4, 3), 0, False, F32, False),
                     ("ties", (4, 5), 1, False, F64, True), ("ties", (5, 3), 0, True, F64, True),
                     ("ties", (3, 3), None, False, F64, True),
                     ("axes", (3, 3), -1, False, F64, False),
                     ("axes", (2, 3, 4), (0, 2), False, F64, False),
                     ("axes", (2, 3, 4), -1, True, F64, False),
                     ("axes", (2, 3, 4), (-1, 0), True, F64, False),
                     ("axes", (3, 4), None, True, F64, False)]
        else:
            specs = [("spread", (3, 4), None, False, F64, False),
                     ("spread", (3, 4), 1, False, F64, False),
                     ("axes", (2, 3, 4), (0, 2), False, F64, False),
                     ("axes", (4, 4), -1, False, F64, False),
                     ("axes", (2, 3, 4), 1, True, F64, False),
                     ("axes", (2, 3, 4), (-1, 0), True, F64, False),
                     ("axes", (3, 4), None, True, F64, False),
                     ("float32", (3, 4), 0, False, F32, False),
                     ("float32", (2, 3, 4), (1, 2), False, F32, False),
                     ("float32", (3, 4), 1, True, F16, False),
                     ("float32", (2, 3, 4), (0, 2), False, F16, False)]
        out = []
        for point, shape, axis, keepdims, dtype, ties in specs:
            x = (_with_ties(rng, shape, axis) if ties else _normal(rng, shape, F64)).astype(dtype)
            out_shape = np.sum(x, axis=axis, keepdims=keepdims).shape
            out.append({"point": point, "inputs": [x], "needs": (True,), "dtype": dtype,
                        "axis": axis, "keepdims": keepdims,
                        "grad_out": _normal(rng, out_shape, dtype),
                        "label": f"x.{op}(axis={axis}, keepdims={keepdims}), x "
                                 f"{_shape_text(shape)} {dtype}", "names": ["dL/dx"]})
        return out
    return cases


def _unbroadcast_cases(seed):
    rng = _rng(seed, "1.5")
    p, q, a, b, c = (int(v) for v in rng.integers(2, 5, size=5))
    specs = [("leading", (p, a, b), (a, b), F64), ("leading", (p, q, a), (a,), F64),
             ("leading", (p, a), (), F64),
             ("stretched", (a, b, c), (a, 1, c), F64), ("stretched", (a, b, c), (1, b, 1), F64),
             ("stretched", (a, b), (a, 1), F64),
             ("mixed", (p, a, b), (a, 1), F64), ("mixed", (p, q, a, b), (1, b), F64),
             ("mixed", (p, a, b, c), (1, b, 1), F64), ("mixed", (p, a, b), "a + b", F64),
             ("float32", (p, a, b), (b,), F32), ("float32", (a, b, c), (a, 1, 1), F32),
             ("float32", (p, a, b), (1, b), F32)]
    cases = []
    for point, grad_shape, shape, dtype in specs:
        grad = _normal(rng, grad_shape, dtype)
        if shape == "a + b":            # in training: the gradient of a (p, a, b) + b (a, 1)
            inputs = [_normal(rng, grad_shape, dtype), _normal(rng, (a, 1), dtype)]
            cases.append({"point": point, "engine": True, "inputs": inputs, "grad_out": grad,
                          "dtype": dtype, "shapes": [grad_shape, (a, 1)],
                          "label": f"(a + b).backward(g), a {_shape_text(grad_shape)}, "
                                   f"b {_shape_text((a, 1))}, {dtype}",
                          "names": ["a.grad", "b.grad"]})
            continue
        cases.append({"point": point, "engine": False, "grad_out": grad, "dtype": dtype,
                      "shapes": [shape],
                      "label": f"unbroadcast(grad {_shape_text(grad_shape)} {dtype}, "
                               f"{_shape_text(shape)})", "names": ["result"]})
    return cases


PROBLEMS = {"1.1": _matmul_cases, "1.2": _elementwise_cases("1.2"),
            "1.3": _elementwise_cases("1.3"), "1.4": _reduction_cases("1.4"),
            "1.5": _unbroadcast_cases, "1.6": _reduction_cases("1.6")}


# ---- the student side ------------------------------------------------------------------
def _forward(ex_id, case, tensors):
    if ex_id == "1.1":
        return tensors[0] @ tensors[1]
    if ex_id in ("1.2", "1.3"):
        return tensors[0].exp() if ex_id == "1.2" else tensors[0].tanh()
    reduce = tensors[0].max if ex_id == "1.4" else tensors[0].sum
    return reduce(axis=case["axis"], keepdims=case["keepdims"])


def _as_evidence(grads):
    """The returned gradients as NumPy arrays (None stays None); ValueError for anything
    that is not an array of numbers."""
    from minimegatron.backend import to_numpy
    grads = tuple(grads) if isinstance(grads, (tuple, list)) else (grads,)
    out = []
    for g in grads:
        if g is None:
            out.append(None)
            continue
        array = np.asarray(to_numpy(g))
        if array.dtype.kind not in "biuf":
            raise ValueError(f"backward returned {type(g).__name__}, not an array")
        out.append(array.copy())
    return out


def _kept(before, after):
    from minimegatron.backend import to_numpy
    return bool(np.array_equal(before, np.asarray(to_numpy(after)), equal_nan=True))


def _all_kept(before, after):
    """Are the saved arrays all still there, each as it was?"""
    if not isinstance(after, (tuple, list)) or len(after) != len(before):
        return False
    return all(_kept(a, s) for a, s in zip(before, after))


def raised_where(err):
    """'ValueError: ... (in Max.backward: <the line>)': the error and where, in the copy
    (the copy's own code, not the watched arrays' bookkeeping)."""
    import os
    from minimegatron.classroom import PACKAGE_DIR
    from minimegatron.classroom.exercise_checks.runner import where_it_failed
    copy = os.path.dirname(PACKAGE_DIR)
    where = where_it_failed(err.__traceback__, copy, skip=("watched.py",))
    return f"{type(err).__name__}: {err}{where}"


def _twin(case):
    """The case again with other values of the same shapes (a second op of one shape)."""
    other = dict(case)
    other["inputs"] = [x * 0.5 + 1.0 for x in case["inputs"]]
    other["grad_out"] = case["grad_out"] * -2.0 + 0.25
    return other


def _backward(ex_id, case, log=None):
    """(node, the gradients as returned, grad_out, saved copies, result copy): forward by
    the engine, then the op's backward called directly on grad_out (Watched arrays when
    ``log`` is given: the products and float64 steps are noted there)."""
    from minimegatron.backend import to_numpy, xp
    from minimegatron.autodiff.tensor import Tensor
    arrange = _strided if case.get("kind") == "strided" else np.copy
    tensors = [Tensor(xp.asarray(arrange(x)), requires_grad=need)
               for x, need in zip(case["inputs"], case["needs"])]
    out = _forward(ex_id, case, tensors)
    node = out._node
    saved = [np.array(to_numpy(s)) for s in node.ctx.saved]
    result = np.array(to_numpy(out.data))
    grad_out = xp.asarray(arrange(case["grad_out"]))
    if log is not None:
        node.ctx.saved = tuple(watch(s, log) for s in node.ctx.saved)
        grad_out = watch(grad_out, log)
    grads = node.fn.backward(node.ctx, grad_out)
    return node, out, grads, grad_out, saved, result


def _run_case(ex_id, case):
    """Forward by the engine, then the op's backward called directly on grad_out; then a
    second op of the same shape, whose backward must leave the first gradients as they
    were (no result buffer kept from call to call)."""
    if ex_id == "1.5":
        return _run_unbroadcast(case)
    if case.get("kind") == "twice":
        return _run_twice(ex_id, case)
    log = new_log()
    try:
        node, out, grads, grad_out, saved, result = _backward(ex_id, case, log)
        evidence = _as_evidence(grads)
        returned = grads if isinstance(grads, (tuple, list)) else (grads,)
        _backward(ex_id, _twin(case))
        reused = any(g is not None and e is not None and not _kept(e, g)
                     for g, e in zip(returned, evidence))
    except NotImplementedError:
        raise
    except Exception as err:   # noqa: BLE001 -- a student's bug is evidence, judged below
        return {"error": raised_where(err)}
    return {"grads": evidence, "grad_out_kept": _kept(case["grad_out"], grad_out),
            "saved_kept": _all_kept(saved, node.ctx.saved),
            "output_kept": _kept(result, out.data), "reused": reused, **log}


def _run_twice(ex_id, case):
    """The zero-bubble way: one forward, then backward on the same ctx for the input only
    (B), for the weight only (W), then for both: the gradients of each call."""
    from minimegatron.backend import xp
    from minimegatron.autodiff.tensor import Tensor
    tensors = [Tensor(xp.asarray(x.copy()), requires_grad=True) for x in case["inputs"]]
    node = _forward(ex_id, case, tensors)._node
    calls = []
    try:
        for needs in ((True, False), (False, True), (True, True)):
            node.ctx.needs_input_grad = needs
            grads = node.fn.backward(node.ctx, xp.asarray(case["grad_out"].copy()))
            calls.append(_as_evidence(grads))
    except NotImplementedError:
        raise
    except Exception as err:   # noqa: BLE001 -- a student's bug is evidence, judged below
        return {"error": text("ad.call", n=len(calls) + 1) + raised_where(err)}
    return {"grads": calls[2], "halves": [calls[0][0], calls[1][1]]}


def _run_unbroadcast(case):
    from minimegatron.backend import xp
    from minimegatron.autodiff.ops import unbroadcast
    from minimegatron.autodiff.tensor import Tensor
    grad = xp.asarray(case["grad_out"].copy())
    try:
        log = {}
        if case["engine"]:
            a, b = (Tensor(xp.asarray(x.copy()), requires_grad=True) for x in case["inputs"])
            (a + b).backward(grad)
            grads = _as_evidence((a.grad, b.grad))
        else:
            log = new_log()
            grads = _as_evidence(unbroadcast(watch(grad, log), case["shapes"][0]))
    except NotImplementedError:
        raise
    except Exception as err:   # noqa: BLE001 -- a student's bug is evidence, judged below
        return {"error": raised_where(err)}
    return {"grads": grads, "grad_out_kept": _kept(case["grad_out"], grad), **log}


def collect_for(ex_id):
    def collect(group, seed):
        """Every case of the exercise, drawn from seed: what the student's backward did."""
        return {"cases": [_run_case(ex_id, case) for case in PROBLEMS[ex_id](seed)]}
    return collect


# ---- the judge: expected gradients, computed here in float64 ---------------------------
def _by_basis(shape, value_at):
    """[value_at(e_j) for every unit array e_j of shape], as an array of that shape."""
    grad = np.zeros(shape)
    for j in np.ndindex(*shape):
        unit = np.zeros(shape)
        unit[j] = 1.0
        grad[j] = value_at(unit)
    return grad


def _expected(ex_id, case):
    """The float64 gradients the case must give (None where none is needed)."""
    g = np.asarray(case["grad_out"], dtype=np.float64)
    if ex_id == "1.5":
        return [_by_basis(shape, lambda e: np.sum(g * np.broadcast_to(e, g.shape)))
                for shape in case["shapes"]]
    inputs = [np.asarray(x, dtype=np.float64) for x in case["inputs"]]
    if ex_id == "1.1":
        x, a = inputs
        gx = _by_basis(x.shape, lambda e: np.sum(g * np.matmul(e, a)))
        ga = _by_basis(a.shape, lambda e: np.sum(g * np.matmul(x, e)))
        return [gx if case["needs"][0] else None, ga if case["needs"][1] else None]
    (x,) = inputs
    if ex_id == "1.2":
        return [g * np.exp(x)]
    if ex_id == "1.3":
        return [g * (1.0 - np.tanh(x) ** 2)]
    axis, keepdims = case["axis"], case["keepdims"]
    if ex_id == "1.6":
        return [_by_basis(x.shape, lambda e: np.sum(g * np.sum(e, axis=axis,
                                                                keepdims=keepdims)))]
    top = x.max(axis=axis, keepdims=True)                  # 1.4: 1/k at each of k maxima
    weights = (x == top) / (x == top).sum(axis=axis, keepdims=True)
    return [weights * np.broadcast_to(np.reshape(g, top.shape), x.shape)]


def _cases(ex_id, evidence, seed):
    """[(case, result)] of the exercise: the cases redrawn here, the results as recorded."""
    cases, results = PROBLEMS[ex_id](seed), evidence["cases"]
    if len(results) != len(cases):
        raise CheckFailed(text("ad.case_count", got=len(results), want=len(cases)))
    return list(zip(cases, results))


def _compare(case, name, got, want, check_dtype):
    what = f"{case['label']}: {name}"
    if got is None:
        raise CheckFailed(text("ad.none", case=case["label"], name=name))
    got = np.asarray(got)
    if got.shape != want.shape:
        raise CheckFailed(text("check.wrong_shape", where="", what=what, got=got.shape,
                               expected=want.shape))
    if check_dtype and str(got.dtype) != case["dtype"]:
        raise CheckFailed(text("ad.dtype", what=what, got=got.dtype, want=case["dtype"]))
    tol = TOL[case["dtype"]] * max(1.0, float(np.abs(want).max()) if want.size else 1.0)
    err = np.abs(got.astype(np.float64) - want)
    if err.size and not (err <= tol).all():              # also catches NaN
        if got.size <= 16:
            raise CheckFailed(text("check.expected_got", where="", what=what,
                                   expected=show(np.round(want, 6)), got=show(got)))
        index = np.unravel_index(int(np.nan_to_num(err, nan=np.inf).argmax()), err.shape)
        raise CheckFailed(text("check.worst_entry", where="", what=what,
                               index=tuple(int(i) for i in index), expected=f"{want[index]:.6g}",
                               got=f"{got[index]:.6g}", diff=err[index], atol=tol))


def _check_values(ex_id, case, result, check_dtype=True):
    if "error" in result:
        raise CheckFailed(text("ad.raised", case=case["label"], error=result["error"]))
    if result.get("reused"):
        raise CheckFailed(text("ad.reused", case=case["label"]))
    if check_dtype and case["dtype"] == F32 and result.get("widened"):
        raise CheckFailed(text("ad.widened", case=case["label"]))
    grads, wants = result["grads"], _expected(ex_id, case)
    if len(grads) != len(wants):
        raise CheckFailed(text("ad.count", case=case["label"], got=len(grads),
                               want=len(wants)))
    for name, got, want in zip(case["names"], grads, wants):
        if want is not None:
            _compare(case, name, got, want, check_dtype)


def judge_values(ex_id, point, check_dtype=True):
    """A judge: every case of ``point`` gives the expected gradients (shape, dtype, values)."""
    def judge(evidence, seed):
        for case, result in _cases(ex_id, evidence, seed):
            if case["point"] == point:
                _check_values(ex_id, case, result, check_dtype)
    return judge


def judge_float32(ex_id):
    """float32 cases: the dtype always; the values too, unless the float64 cases are already
    wrong (that mistake is another point's, and its hint is the one to read)."""
    def holds(case, result):
        try:
            _check_values(ex_id, case, result)
            return True
        except CheckFailed:
            return False

    def judge(evidence, seed):
        pairs = _cases(ex_id, evidence, seed)
        wide_right = all(holds(c, r) for c, r in pairs if c["dtype"] == F64)
        for case, result in pairs:
            if case["point"] != "float32":
                continue
            for name, got in zip(case["names"], result.get("grads") or []):
                if got is not None and str(np.asarray(got).dtype) != case["dtype"]:
                    raise CheckFailed(text("ad.dtype", what=f"{case['label']}: {name}",
                                           got=np.asarray(got).dtype, want=case["dtype"]))
            if wide_right:
                _check_values(ex_id, case, result)
    return judge


def judge_twice(evidence, seed):
    """1.1: backward called again on the same ctx (B for X, W for A, then both) gives the
    right gradients every time."""
    for case, result in _cases("1.1", evidence, seed):
        if case["point"] != "twice":
            continue
        _check_values("1.1", case, result)
        for i, call in enumerate(("B", "W")):
            one = {"grads": [result["halves"][i] if j == i else None for j in range(2)]}
            _check_values("1.1", {**case, "needs": tuple(j == i for j in range(2)),
                                  "label": case["label"] + f" ({call})"}, one)


def judge_needed(evidence, seed):
    """1.1: None for an input that needs no gradient, the right one for the other."""
    for case, result in _cases("1.1", evidence, seed):
        if case["point"] != "needed":
            continue
        _check_values("1.1", case, result)
        for name, need, got in zip(case["names"], case["needs"], result["grads"]):
            if not need and got is not None:
                raise CheckFailed(text("ad.not_needed", case=case["label"], name=name))
        if result.get("products") != sum(case["needs"]):
            raise CheckFailed(text("ad.products", case=case["label"],
                                   got=result.get("products"), want=sum(case["needs"])))


def judge_no_overwrite(ex_id):
    def judge(evidence, seed):
        for case, result in _cases(ex_id, evidence, seed):
            if "error" in result:
                raise CheckFailed(text("ad.raised", case=case["label"], error=result["error"]))
            if not result["grad_out_kept"]:
                raise CheckFailed(text("ad.grad_out_changed", case=case["label"]))
            if not (result["saved_kept"] and result["output_kept"]):
                raise CheckFailed(text("ad.saved_changed", case=case["label"]))
    return judge


LESSONS = {
    "1.1": Lesson(collect_for("1.1"), (Point("transpose", judge_values("1.1", "transpose")),
                                       Point("batched", judge_values("1.1", "batched")),
                                       Point("vectors", judge_values("1.1", "vectors")),
                                       Point("needed", judge_needed),
                                       Point("twice", judge_twice))),
    "1.2": Lesson(collect_for("1.2"), (Point("chain", judge_values("1.2", "chain")),
                                       Point("float32", judge_float32("1.2")),
                                       Point("no_overwrite", judge_no_overwrite("1.2")))),
    "1.3": Lesson(collect_for("1.3"), (Point("derivative", judge_values("1.3", "derivative")),
                                       Point("float32", judge_float32("1.3")),
                                       Point("no_overwrite", judge_no_overwrite("1.3")))),
    # the forward saves float64 weights, so a float32 x gets a float64 gradient from the
    # reference itself: 1.4 checks values only, not the dtype
    "1.4": Lesson(collect_for("1.4"), (Point("route", judge_values("1.4", "route", False)),
                                       Point("ties", judge_values("1.4", "ties", False)),
                                       Point("axes", judge_values("1.4", "axes", False)))),
    "1.5": Lesson(collect_for("1.5"), (Point("leading", judge_values("1.5", "leading")),
                                       Point("stretched", judge_values("1.5", "stretched")),
                                       Point("mixed", judge_values("1.5", "mixed")),
                                       Point("float32", judge_float32("1.5")))),
    "1.6": Lesson(collect_for("1.6"), (Point("spread", judge_values("1.6", "spread")),
                                       Point("axes", judge_values("1.6", "axes")),
                                       Point("float32", judge_float32("1.6")))),
}
