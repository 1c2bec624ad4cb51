"""Exercises 1.1-1.6 (backward rules): the reference PASSes, and every wrong answer misses
its point.

Each mutant is the reference package with ONE block replaced by an answer a student
could plausibly write (``grader.grade_variants``); all six exercises' variants are
graded in one process (``lesson_mutants.grade_lessons``). Each mutant must FAIL, and
among the points it misses must be the one named here, in English and in Korean. The
mutants marked "(passed the old grader)" got PASS from the gradcheck-only checks. The
ALTERNATIVES are right answers written another way: each must PASS every point.
"""
import pytest

from lesson_mutants import assert_mutants, block_of, grade_lessons

IDS = ("1.1", "1.2", "1.3", "1.4", "1.5", "1.6")

# 1.1 MatMul.backward: pieces of the reference block
WEIGHT = ["        if a2.ndim == 2:",
          "            g2 = g.reshape(-1, g.shape[-1])"]
WEIGHT_GX = ["            if ctx.needs_input_grad[0]:",
             "                gx = (g2 @ a2.T).reshape(x.shape)"]
WEIGHT_GA = ["            if ctx.needs_input_grad[1]:",
             "                rows = x2.reshape(-1, x2.shape[-1])",
             "                ga = (rows.T @ g2).reshape(a.shape)"]
BATCHED = ["        else:",
           "            if ctx.needs_input_grad[0]:",
           "                gx = unbroadcast(g @ xp.swapaxes(a2, -1, -2), x2.shape)"
           ".reshape(x.shape)",
           "            if ctx.needs_input_grad[1]:",
           "                ga = unbroadcast(xp.swapaxes(x2, -1, -2) @ g, a2.shape)"
           ".reshape(a.shape)"]

MATMUL = {
    "no transpose": ([
        "        if ctx.needs_input_grad[0]:",
        "            gx = unbroadcast(g @ a2, x2.shape).reshape(x.shape)",
        "        if ctx.needs_input_grad[1]:",
        "            ga = unbroadcast(x2 @ g, a2.shape).reshape(a.shape)"], "transpose"),
    "no unbroadcast": ([
        "        if ctx.needs_input_grad[0]:",
        "            gx = (g @ xp.swapaxes(a2, -1, -2)).reshape(x.shape)",
        "        if ctx.needs_input_grad[1]:",
        "            ga = (xp.swapaxes(x2, -1, -2) @ g).reshape(a.shape)"], "batched"),
    "the one-GEMM form for a batched A too": ([
        "        g2 = g.reshape(-1, g.shape[-1])",
        "        if ctx.needs_input_grad[0]:",
        "            gx = (g2 @ xp.swapaxes(a2, -1, -2)).reshape(x.shape)",
        "        if ctx.needs_input_grad[1]:",
        "            ga = (x2.reshape(-1, x2.shape[-1]).T @ g2).reshape(a.shape)"], "batched"),
    ".T for a batch (reverses every axis)": ([
        "        if ctx.needs_input_grad[0]:",
        "            gx = unbroadcast(g @ a2.T, x2.shape).reshape(x.shape)",
        "        if ctx.needs_input_grad[1]:",
        "            ga = unbroadcast(x2.T @ g, a2.shape).reshape(a.shape)"], "batched"),
    "dL/dA sums the leading batch axes only (passed the old grader)": (WEIGHT + WEIGHT_GX
        + WEIGHT_GA + [
            "        else:",
            "            if ctx.needs_input_grad[0]:",
            "                gx = unbroadcast(g @ xp.swapaxes(a2, -1, -2), x2.shape)"
            ".reshape(x.shape)",
            "            if ctx.needs_input_grad[1]:",
            "                ga = xp.swapaxes(x2, -1, -2) @ g",
            "                ga = ga.sum(axis=tuple(range(ga.ndim - a2.ndim))).reshape(a.shape)"],
        "batched"),
    "both gradients always, needed or not (passed the old grader)": (WEIGHT + [
        "            gx = (g2 @ a2.T).reshape(x.shape)",
        "            rows = x2.reshape(-1, x2.shape[-1])",
        "            ga = (rows.T @ g2).reshape(a.shape)",
        "        else:",
        "            gx = unbroadcast(g @ xp.swapaxes(a2, -1, -2), x2.shape).reshape(x.shape)",
        "            ga = unbroadcast(xp.swapaxes(x2, -1, -2) @ g, a2.shape).reshape(a.shape)"],
        "needed"),
    "reshaped to x2.shape and a2.shape (a vector stays a matrix)": (WEIGHT + [
        "            if ctx.needs_input_grad[0]:",
        "                gx = (g2 @ a2.T).reshape(x2.shape)",
        "            if ctx.needs_input_grad[1]:",
        "                rows = x2.reshape(-1, x2.shape[-1])",
        "                ga = (rows.T @ g2).reshape(a2.shape)",
        "        else:",
        "            if ctx.needs_input_grad[0]:",
        "                gx = unbroadcast(g @ xp.swapaxes(a2, -1, -2), x2.shape)",
        "            if ctx.needs_input_grad[1]:",
        "                ga = unbroadcast(xp.swapaxes(x2, -1, -2) @ g, a2.shape)"], "vectors"),
    "float64 products for float32 inputs (passed the old grader)": (WEIGHT + [
        "            if ctx.needs_input_grad[0]:",
        "                gx = xp.matmul(g2, a2.T, dtype=xp.float64).reshape(x.shape)"]
        + WEIGHT_GA + BATCHED, "transpose"),
    "float64 products cast back to float32 (right dtype, a float64 shortcut)": (WEIGHT + [
        "            if ctx.needs_input_grad[0]:",
        "                gx = xp.matmul(g2, a2.T, dtype=xp.float64).astype(g2.dtype)",
        "                gx = gx.reshape(x.shape)"] + WEIGHT_GA + BATCHED, "transpose"),
    "both products every time, then None where none is needed": ([
        "        gx = unbroadcast(g @ xp.swapaxes(a2, -1, -2), x2.shape).reshape(x.shape)",
        "        ga = unbroadcast(xp.swapaxes(x2, -1, -2) @ g, a2.shape).reshape(a.shape)",
        "        if not ctx.needs_input_grad[0]:",
        "            gx = None",
        "        if not ctx.needs_input_grad[1]:",
        "            ga = None"], "needed"),
    "the result kept in a buffer per shape (the next MatMul overwrites it)": (WEIGHT + [
        "            if ctx.needs_input_grad[0]:",
        "                buffers = globals().setdefault('_GX_BUFFERS', {})",
        "                key = (g2.shape[0], a2.shape[0], str(g2.dtype))",
        "                buf = buffers.setdefault(key, xp.empty(key[:2], g2.dtype))",
        "                xp.matmul(g2, a2.T, out=buf)",
        "                gx = buf.reshape(x.shape)"] + WEIGHT_GA + BATCHED, "transpose"),
    "X's rows made by setting x2.shape in place, no copy (passed the old grader)": (WEIGHT
        + WEIGHT_GX + [
        "            if ctx.needs_input_grad[1]:",
        "                rows = x2",
        "                rows.shape = (-1, x2.shape[-1])",
        "                ga = (rows.T @ g2).reshape(a.shape)"] + BATCHED, "twice"),
    "the saved arrays freed once used (passed the old grader)": (WEIGHT + WEIGHT_GX
        + WEIGHT_GA + BATCHED + ["        ctx.saved = None"], "twice"),
    "grad_out's rows made by setting g.shape in place (fails on a strided grad_out)": ([
        "        if a2.ndim == 2:",
        "            g2 = g",
        "            g2.shape = (-1, g.shape[-1])"] + WEIGHT_GX + WEIGHT_GA + BATCHED,
        "batched"),
}

EXP = {
    "forgot the chain rule": (["        return grad_out"], "chain"),
    "ignores grad_out": (["        return ctx.saved[0]"], "chain"),
    "e^z instead of z": (["        return grad_out * xp.exp(ctx.saved[0])"], "chain"),
    "writes into the saved output (passed the old grader)": ([
        "        z = ctx.saved[0]",
        "        z *= grad_out",
        "        return z"], "no_overwrite"),
    "writes into grad_out when it can (passed the old grader)": ([
        "        if grad_out.flags.writeable:",
        "            grad_out *= ctx.saved[0]",
        "            return grad_out",
        "        return grad_out * ctx.saved[0]"], "no_overwrite"),
    "multiplies in float64 (passed the old grader)": ([
        "        return xp.multiply(grad_out, ctx.saved[0], dtype=float)"], "float32"),
    "a result buffer kept per shape (the next Exp of that shape overwrites it)": ([
        "        buffers = globals().setdefault('_EXP_BUFFERS', {})",
        "        key = (grad_out.shape, str(grad_out.dtype))",
        "        out = buffers.setdefault(key, xp.empty(grad_out.shape, grad_out.dtype))",
        "        xp.multiply(grad_out, ctx.saved[0], out=out)",
        "        return out"], "chain"),
}

TANH = {
    "no square": (["        return grad_out * (1 - ctx.saved[0])"], "derivative"),
    "wrong sign": (["        return grad_out * (1 + ctx.saved[0] ** 2)"], "derivative"),
    "tanh of the saved output again": ([
        "        return grad_out * (1 - xp.tanh(ctx.saved[0]) ** 2)"], "derivative"),
    "ones of float64 (passed the old grader)": ([
        "        z = ctx.saved[0]",
        "        return grad_out * (xp.ones(z.shape) - z * z)"], "float32"),
    "1 - z^2 built in the saved output (passed the old grader)": ([
        "        z = ctx.saved[0]",
        "        z *= z",
        "        z *= -1",
        "        z += 1",
        "        return grad_out * z"], "no_overwrite"),
    "a result buffer kept per shape (the next Tanh of that shape overwrites it)": ([
        "        buffers = globals().setdefault('_TANH_BUFFERS', {})",
        "        z = ctx.saved[0]",
        "        out = buffers.setdefault((z.shape, str(z.dtype)), xp.empty(z.shape, z.dtype))",
        "        xp.multiply(z, z, out=out)",
        "        out[...] = grad_out * (1 - out)",
        "        return out"], "derivative"),
    "float32 ones (right for float32, float32 for float16 too; passed the old grader)": ([
        "        z = ctx.saved[0]",
        "        return grad_out * (xp.ones(z.shape, dtype=xp.float32) - z * z)"], "float32"),
    "cast to float32 whenever the input is not float64 (passed the old grader)": ([
        "        z = ctx.saved[0]",
        "        g = grad_out * (1 - z * z)",
        "        return g if g.dtype == xp.float64 else g.astype(xp.float32)"], "float32"),
}

MAX = {
    "every entry gets the gradient": ([
        "        return xp.ones_like(ctx.saved[0]) * _expand_reduced(grad_out, *ctx.args)"],
        "route"),
    "ignores grad_out": (["        return ctx.saved[0] * 1.0"], "route"),
    "every tied maximum gets all of it": ([
        "        return (ctx.saved[0] > 0) * _expand_reduced(grad_out, *ctx.args)"], "ties"),
    "reduced axes not restored": (["        return ctx.saved[0] * grad_out"], "axes"),
    "axes put back for an int axis only (passed the old grader)": ([
        "        shape, axis, keepdims = ctx.args",
        "        if not keepdims and isinstance(axis, int):",
        "            grad_out = xp.expand_dims(grad_out, axis)",
        "        return ctx.saved[0] * grad_out"], "axes"),
    "a result buffer kept per shape (the next Max of that shape overwrites it)": ([
        "        buffers = globals().setdefault('_MAX_BUFFERS', {})",
        "        w = ctx.saved[0]",
        "        out = buffers.setdefault((w.shape, str(w.dtype)), xp.empty(w.shape, w.dtype))",
        "        xp.multiply(w, _expand_reduced(grad_out, *ctx.args), out=out)",
        "        return out"], "route"),
}

LEAD = "    lead = grad.ndim - len(shape)"
UNBROADCAST = {
    "leading axes only": ([
        "    while grad.ndim > len(shape):",
        "        grad = grad.sum(axis=0)"], "stretched"),
    "drops the size-1 axes": ([
        "    while grad.ndim > len(shape):",
        "        grad = grad.sum(axis=0)",
        "    for axis, size in enumerate(shape):",
        "        if size == 1 and grad.shape[axis] != 1:",
        "            grad = grad.sum(axis=axis)"], "stretched"),
    "one leading axis at most (off by one)": ([
        "    if grad.ndim > len(shape):",
        "        grad = grad.sum(axis=0)",
        "    for axis, size in enumerate(shape):",
        "        if size == 1 and grad.shape[axis] != 1:",
        "            grad = grad.sum(axis=axis, keepdims=True)"], "leading"),
    "leading axes or stretched ones, never both": ([
        "    if grad.ndim > len(shape):",
        "        grad = grad.sum(axis=tuple(range(grad.ndim - len(shape))))",
        "    else:",
        "        for axis, size in enumerate(shape):",
        "            if size == 1 and grad.shape[axis] != 1:",
        "                grad = grad.sum(axis=axis, keepdims=True)"], "mixed"),
    "stretched axes counted from the left of grad": ([
        LEAD,
        "    stretched = tuple(i for i, size in enumerate(shape)",
        "                      if size == 1 and grad.shape[i] != 1)",
        "    grad = grad.sum(axis=tuple(range(lead)) + stretched, keepdims=True)",
        "    grad = grad.reshape(shape)"], "mixed"),
    "sums in float64 (passed the old grader)": ([
        LEAD,
        "    stretched = tuple(lead + i for i, size in enumerate(shape)",
        "                      if size == 1 and grad.shape[lead + i] != 1)",
        "    grad = grad.sum(axis=tuple(range(lead)) + stretched, keepdims=True,",
        "                    dtype=xp.float64)",
        "    grad = grad.reshape(shape)"], "float32"),
    "sums in float64, cast back to float32 (right dtype, a float64 shortcut)": ([
        LEAD,
        "    stretched = tuple(lead + i for i, size in enumerate(shape)",
        "                      if size == 1 and grad.shape[lead + i] != 1)",
        "    total = grad.sum(axis=tuple(range(lead)) + stretched, keepdims=True,",
        "                     dtype=xp.float64)",
        "    grad = total.astype(grad.dtype).reshape(shape)"], "float32"),
}

SUM = {
    "gradient not spread back": (["        return grad_out"], "spread"),
    "ignores grad_out": ([
        "        return xp.ones_like(_expand_reduced(grad_out, *ctx.args))"], "spread"),
    "broadcast without the reduced axes": ([
        "        return xp.broadcast_to(grad_out, ctx.args[0])"], "spread"),
    "axes put back for an int axis only": ([
        "        shape, axis, keepdims = ctx.args",
        "        if not keepdims and isinstance(axis, int):",
        "            grad_out = xp.expand_dims(grad_out, axis)",
        "        return xp.broadcast_to(grad_out, shape)"], "axes"),
    "axes put back even with keepdims": ([
        "        shape, axis, keepdims = ctx.args",
        "        if axis is not None:",
        "            grad_out = xp.expand_dims(grad_out, axis)",
        "        return xp.broadcast_to(grad_out, shape)"], "axes"),
    "ones of float64 times grad_out (passed the old grader)": ([
        "        return xp.ones(ctx.args[0]) * _expand_reduced(grad_out, *ctx.args)"],
        "float32"),
    "a result buffer kept per shape (the next Sum of that shape overwrites it)": ([
        "        buffers = globals().setdefault('_SUM_BUFFERS', {})",
        "        shape = ctx.args[0]",
        "        out = buffers.setdefault((shape, str(grad_out.dtype)),",
        "                                 xp.empty(shape, grad_out.dtype))",
        "        out[...] = _expand_reduced(grad_out, *ctx.args)",
        "        return out"], "spread"),
    "float32 ones times grad_out (float32 for float16 too; passed the old grader)": ([
        "        return xp.ones(ctx.args[0], dtype=xp.float32) * "
        "_expand_reduced(grad_out, *ctx.args)"], "float32"),
}

MUTANTS = {"1.1": MATMUL, "1.2": EXP, "1.3": TANH, "1.4": MAX, "1.5": UNBROADCAST, "1.6": SUM}

ALTERNATIVES = {      # right answers written another way: each must PASS
    "1.1": {"einsum for the weight case (one product each, float32 kept)": [
        "        if a2.ndim == 2:",
        "            if ctx.needs_input_grad[0]:",
        "                gx = xp.einsum('...m,km->...k', g, a2).reshape(x.shape)",
        "            if ctx.needs_input_grad[1]:",
        "                rows, g2 = x2.reshape(-1, x2.shape[-1]), g.reshape(-1, g.shape[-1])",
        "                ga = xp.einsum('nk,nm->km', rows, g2).reshape(a.shape)"] + BATCHED,
            "the batched form for every A (no one-GEMM path)": [
        "        if ctx.needs_input_grad[0]:",
        "            gx = unbroadcast(g @ xp.swapaxes(a2, -1, -2), x2.shape).reshape(x.shape)",
        "        if ctx.needs_input_grad[1]:",
        "            ga = unbroadcast(xp.swapaxes(x2, -1, -2) @ g, a2.shape).reshape(a.shape)"]},
    "1.2": {"a new array from xp.multiply, out= a fresh empty_like": [
        "        out = xp.empty_like(grad_out)",
        "        xp.multiply(grad_out, ctx.saved[0], out=out)",
        "        return out"]},
    "1.3": {"(1 - z)(1 + z)": [
        "        z = ctx.saved[0]",
        "        return grad_out * ((1 - z) * (1 + z))"]},
    "1.5": {"the page's two loops": [
        "    while grad.ndim > len(shape):",
        "        grad = grad.sum(axis=0)",
        "    for axis, size in enumerate(shape):",
        "        if size == 1 and grad.shape[axis] != 1:",
        "            grad = grad.sum(axis=axis, keepdims=True)"]},
    "1.6": {"expand_dims, then broadcast_to": [
        "        shape, axis, keepdims = ctx.args",
        "        if axis is not None and not keepdims:",
        "            grad_out = xp.expand_dims(grad_out, axis)",
        "        return xp.broadcast_to(grad_out, shape)"]},
}


@pytest.fixture(scope="module")
def verdicts():
    return grade_lessons({ex_id: block_of(ex_id) for ex_id in IDS}, MUTANTS, ALTERNATIVES)


@pytest.mark.parametrize("ex_id", IDS)
def test_the_reference_passes_every_point(verdicts, ex_id):
    assert verdicts[ex_id]["reference"].passed, "\n".join(verdicts[ex_id]["reference"].lines)


@pytest.mark.parametrize("ex_id,name", [(ex_id, name) for ex_id in IDS
                                         for name in ALTERNATIVES.get(ex_id, {})])
def test_a_right_answer_written_another_way_passes(verdicts, ex_id, name):
    verdict = verdicts[ex_id][name]
    assert verdict.passed, f"{ex_id} {name}: {verdict.result}\n" + "\n".join(verdict.lines)


@pytest.mark.parametrize("ex_id,name", [(ex_id, name) for ex_id in IDS
                                         for name in MUTANTS[ex_id]])
def test_a_wrong_answer_misses_its_point(verdicts, ex_id, name):
    assert_mutants(verdicts[ex_id], ex_id, {name: MUTANTS[ex_id][name]})


@pytest.mark.parametrize("ex_id", IDS)
def test_at_least_four_kinds_of_mistake(ex_id):
    assert len(MUTANTS[ex_id]) >= 4
    assert len({point for _, point in MUTANTS[ex_id].values()}) >= 2
