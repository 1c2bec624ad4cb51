"""Fused ops: one Function, with its own backward, where the composite needs many.

functional.py builds GeLU, LayerNorm, softmax and cross entropy from
primitives, which is how a reader learns them and what ``*_composite`` there
still does. A GPT step ran ~480 tiny nodes that way; these run one node each,
so the engine's bookkeeping and (on a GPU) the kernel launches shrink. Each is
checked by gradcheck and against its composite in float64 (tests/test_fused.py).

    ReLU          y = max(x, 0)                        dy/dx = [y > 0]
    GeLU          y = x/2 (1 + t), t = tanh(c (x + a x^3)), c = sqrt(2/pi), a = 0.044715
                  dy/dx = (1 + t)/2 + x/2 (1 - t^2) c (1 + 3 a x^2)
    LayerNorm     x^ = (x - mean) r, r = 1/sqrt(var + eps);  y = x^ w + b
                  dL/dx = r (g - mean(g) - x^ mean(g x^)), g = dL/dy w
                  dL/dw = sum over rows of dL/dy x^,  dL/db = sum over rows of dL/dy
    Softmax       p = softmax(s x  [+ -inf above the diagonal when causal])
                  dL/dx = s p (dL/dp - sum(dL/dp p))   (masked entries have p = 0)
    CrossEntropy  L = mean_n -log softmax(z_n)[t_n]     dL/dz_n = (p_n - onehot(t_n)) / N

On CuPy, GeLU's forward and backward are one elementwise kernel each, and
LayerNorm's three (forward) and five (backward) kernels instead of about a dozen.

``COST``: what each op's NumPy path does, per value of its first input x, counted from
its code (forward, then backward): ``passes``, arrays read or written by each ufunc
call whose output is as large as x (a broadcast weight or row statistic is read once
per output value; a scalar is free); ``reduced``, values summed or maxed along an
axis; ``tanh``, ``exp`` (exp and log) values. tools/step_model.py turns it into
seconds; tests/test_calibrate.py traces the ufunc calls (step_model.traced_cost) and
checks every declaration against them. A changed op body changes its COST there too.
"""
import math

from minimegatron.backend import backend_name, get_backend, xp
from minimegatron.autodiff.function import Function

GELU_C, GELU_A = math.sqrt(2.0 / math.pi), 0.044715
_kernels = {}


def _cupy_kernel(name, params, out, body):
    """A cached cupy.ElementwiseKernel: one launch for a whole formula."""
    if name not in _kernels:
        _kernels[name] = get_backend().ElementwiseKernel(params, out, body, name)
    return _kernels[name]


def _cupy_row_sum(name, params, term):
    """A cached cupy.ReductionKernel: sum of ``term`` (of broadcast inputs) over an axis."""
    if name not in _kernels:
        _kernels[name] = get_backend().ReductionKernel(params, "T s", term, "a + b", "s = a",
                                                       "0", name)
    return _kernels[name]


def _rows_sum(a):
    """Sum over every axis but the last: (..., D) -> (D,), as one 2-D reduction."""
    return a.reshape(-1, a.shape[-1]).sum(axis=0)


class ReLU(Function):
    """y = max(x, 0)    dy/dx = 1 where y > 0, else 0"""
    COST = {"forward": {"passes": 2}, "backward": {"passes": 5}}

    @staticmethod
    def forward(ctx, x):
        out = xp.maximum(x, 0)
        ctx.save_for_backward(out)
        return out

    @staticmethod
    def backward(ctx, grad_out):
        return grad_out * (ctx.saved[0] > 0)


class GeLU(Function):
    """GPT-2's tanh GeLU as one node (the formulas are in the module docstring)."""
    COST = {"forward": {"passes": 19, "tanh": 1}, "backward": {"passes": 28}}

    @staticmethod
    def forward(ctx, x):
        if backend_name() == "cupy":
            t, y = _cupy_kernel("mm_gelu_fwd", "T x", "T t, T y", f"""
                t = tanh({GELU_C} * (x + {GELU_A} * x * x * x));
                y = 0.5 * x * (1 + t);""")(x)
        else:
            t = x * x                                   # x^2 ...
            t *= GELU_A
            t += 1.0
            t *= x                                      # ... x + a x^3
            t *= GELU_C
            xp.tanh(t, out=t)
            y = t + 1.0
            y *= x
            y *= 0.5
        ctx.save_for_backward(x, t)
        return y

    @staticmethod
    def backward(ctx, grad_out):
        x, t = ctx.saved
        if backend_name() == "cupy":
            return _cupy_kernel("mm_gelu_bwd", "T g, T x, T t", "T dx", f"""
                dx = g * (0.5 * (1 + t) + 0.5 * x * (1 - t * t)
                          * {GELU_C} * (1 + {3 * GELU_A} * x * x));""")(grad_out, x, t)
        slope = x * x                                   # c (1 + 3 a x^2)
        slope *= 3 * GELU_A * GELU_C
        slope += GELU_C
        slope *= x
        slope *= 1.0 - t * t
        slope += 1.0 + t
        slope *= 0.5
        slope *= grad_out
        return slope


class LayerNorm(Function):
    """Normalise over the last axis, then scale and shift (module docstring)."""
    float32_inside = True     # bf16: statistics in float32 (function.py)
    COST = {"forward": {"passes": 15, "reduced": 2},
            "backward": {"passes": 21, "reduced": 4}}

    @staticmethod
    def forward(ctx, x, weight, bias, eps=1e-5):
        mean = x.mean(axis=-1, keepdims=True)
        if backend_name() == "cupy":                    # 3 kernels instead of ~9
            return _layer_norm_forward_cupy(ctx, x, mean, weight, bias, eps)
        xhat = x - mean
        var = (xhat * xhat).mean(axis=-1, keepdims=True)
        rstd = 1.0 / xp.sqrt(var + eps)                 # (..., 1)
        xhat *= rstd
        ctx.save_for_backward(xhat, rstd, weight)
        return xhat * weight + bias

    @staticmethod
    def backward(ctx, grad_out):
        if backend_name() == "cupy":
            return _layer_norm_backward_cupy(ctx, grad_out)
        xhat, rstd, weight = ctx.saved
        gx = None
        if ctx.needs_input_grad[0]:                     # (a split backward's W skips it)
            g = grad_out * weight
            proj = (g * xhat).mean(axis=-1, keepdims=True)  # mean(g x^)
            gx = g - g.mean(axis=-1, keepdims=True)
            gx -= xhat * proj
            gx *= rstd
        gw = _rows_sum(grad_out * xhat) if ctx.needs_input_grad[1] else None
        gb = _rows_sum(grad_out) if ctx.needs_input_grad[2] else None
        return gx, gw, gb


_RSTD = "rsqrt(s * inv_d + eps)"                         # 1 / sqrt(var + eps), var = s / D


def _layer_norm_forward_cupy(ctx, x, mean, weight, bias, eps):
    s = _cupy_row_sum("mm_ln_var", "T x, T m", "(x - m) * (x - m)")(x, mean, axis=-1,
                                                                     keepdims=True)
    inv_d = 1.0 / x.shape[-1]
    xhat, y = _cupy_kernel(
        "mm_ln_fwd", "T x, T m, T s, T w, T b, float64 inv_d, float64 eps", "T xhat, T y",
        f"xhat = (x - m) * {_RSTD}; y = xhat * w + b;")(x, mean, s, weight, bias, inv_d, eps)
    ctx.save_for_backward(xhat, s, weight)
    ctx.consts = (inv_d, eps)
    return y


def _layer_norm_backward_cupy(ctx, grad_out):
    xhat, s, weight = ctx.saved
    inv_d, eps = ctx.consts
    sum_g = _cupy_row_sum("mm_ln_g", "T g, T w", "g * w")(grad_out, weight, axis=-1,
                                                           keepdims=True)
    sum_gx = _cupy_row_sum("mm_ln_gx", "T g, T w, T xh", "g * w * xh")(
        grad_out, weight, xhat, axis=-1, keepdims=True)
    gx = _cupy_kernel(
        "mm_ln_bwd", "T g, T w, T xh, T s, T sg, T sgx, float64 inv_d, float64 eps", "T dx",
        f"dx = {_RSTD} * (g * w - (sg + xh * sgx) * inv_d);")(
        grad_out, weight, xhat, s, sum_g, sum_gx, inv_d, eps)
    rows = (-1, grad_out.shape[-1])                      # (..., D) -> (N, D)
    gw = (_cupy_row_sum("mm_ln_gw", "T g, T xh", "g * xh")(
        grad_out.reshape(rows), xhat.reshape(rows), axis=0)
        if ctx.needs_input_grad[1] else None)
    gb = _rows_sum(grad_out) if ctx.needs_input_grad[2] else None
    return gx, gw, gb


class Softmax(Function):
    """p = softmax(scale x) over ``axis``; ``causal``: the last two axes are (query, key)
    and a query sees no later key (its score becomes -inf before the softmax)."""
    float32_inside = True     # bf16: statistics in float32 (function.py)
    COST = {"forward": {"passes": 11, "reduced": 2, "exp": 1},    # scale != 1, causal
            "backward": {"passes": 11, "reduced": 1}}

    @staticmethod
    def forward(ctx, x, axis=-1, scale=1.0, causal=False):
        e = x * scale if scale != 1.0 else x.copy()    # worked on in place from here
        if causal:                                      # + 0 on and below the diagonal, -inf above
            rows, cols = x.shape[-2:]
            e += xp.where(xp.tri(rows, cols, dtype=bool), 0.0, -math.inf).astype(x.dtype)
        e -= e.max(axis=axis, keepdims=True)
        xp.exp(e, out=e)
        e /= e.sum(axis=axis, keepdims=True)
        ctx.save_for_backward(e)
        ctx.axis, ctx.scale = axis, scale
        return e

    @staticmethod
    def backward(ctx, grad_out):
        (p,) = ctx.saved
        grad = grad_out - (grad_out * p).sum(axis=ctx.axis, keepdims=True)
        grad *= p
        if ctx.scale != 1.0:
            grad *= ctx.scale
        return grad


class CrossEntropy(Function):
    """mean over the N rows of -log softmax(logits)[target]; logits (..., V), targets (...)"""
    float32_inside = True     # bf16: statistics in float32 (function.py)
    COST = {"forward": {"passes": 6, "reduced": 2, "exp": 1}, "backward": {"passes": 2}}

    @staticmethod
    def forward(ctx, logits, targets):
        z = logits.reshape(-1, logits.shape[-1])        # (..., V) -> (N, V)
        t = xp.asarray(targets).reshape(-1)             # (...) -> (N,)
        shifted = z - z.max(axis=-1, keepdims=True)
        e = xp.exp(shifted)
        total = e.sum(axis=-1, keepdims=True)           # (N, 1)
        rows = xp.arange(z.shape[0])
        loss = (xp.log(total[:, 0]) - shifted[rows, t]).mean()
        e /= total                                      # softmax, kept for backward
        ctx.save_for_backward(e, t)
        ctx.shape = logits.shape
        return loss

    @staticmethod
    def backward(ctx, grad_out):
        p, t = ctx.saved
        grad = p                                        # freed after this call: reuse it
        grad[xp.arange(grad.shape[0]), t] -= 1.0
        grad *= grad_out / grad.shape[0]
        return grad.reshape(ctx.shape), None
