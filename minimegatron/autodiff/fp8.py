"""fp8 matmuls with per-tensor dynamic scales: e4m3 forward, e5m2 gradients.

The formats (ml_dtypes; OCP FP8, as H100's tensor cores take them):

    e4m3fn   4 exponent bits, 3 mantissa bits   largest 448     smallest normal 2^-6
    e5m2     5 exponent bits, 2 mantissa bits   largest 57344   smallest normal 2^-14

Forward values (activations X, weights W) need precision: e4m3. Gradients need
range: e5m2. Either way the range is tiny next to bf16's, so a tensor is SCALED
before the cast, with one float32 number per tensor taken from its largest |value|
(its amax) on this very step ("dynamic" scaling, as torchao's float8 and nanochat do):

    s = 2^floor(log2(fmax / amax))         the max lands in (fmax / 2, fmax]
    q = fp8(s * x)                          rounds to fp8's 3 (or 2) mantissa bits
    x ~= q / s

A power of two keeps the scale itself exact: multiplying and dividing by s only
moves the exponent. Without it a value past fmax is lost: e4m3fn has no infinity,
so ``float8_e4m3fn(500.0)`` is NaN (tests/test_fp8.py), and values below 2^-9 are 0.

The matmul. Y = X W with both scaled, multiplied in fp8, accumulated in float32
(``cast.matmul`` upcasts: what the tensor core does inside), then unscaled:

    forward   Y  = (q_X @ q_W) / (s_X s_W)             q_X, q_W in e4m3
    backward  dX = (q_G @ q_W^T) / (s_G s_W)           q_G = e5m2(s_G dY)
              dW = (q_X^T @ q_G) / (s_X s_G)

Only q_X and q_W (1 byte each) and their scales are kept for backward: a quarter
of float32's activation memory for these inputs. Y, dX, dW come back in the dtype
of X and W (bf16 in training). Everything around the matmuls (LayerNorm, softmax,
attention's own products, the head) stays bf16, as in Megatron and torchao.

Where. ``mark(module)`` marks every 2-D weight under ``module`` (a block's qkv,
proj, fc1, fc2); ``x @ W`` on a marked W (Tensor.__matmul__) runs ``Fp8Matmul``,
serial and tensor-parallel alike (a column- or row-parallel layer's local product
X A_i is an fp8 matmul of its own shard). GPTConfig's ``fp8=True`` marks each block as it
is built. A tensor split over the tp ranks (W_i, a row-parallel X_i, a column-parallel
dY_i) takes its scale from the amax of the WHOLE tensor: one MAX all-reduce of a float32
over the tp group per scale (ParallelGPT passes ``agree``; Megatron's amax reduction
group), so every element rounds exactly as in one process and only the float32 sums of
the partial products differ in order.

Experts. A mixture of experts keeps E weights stacked, W (E, in, out), and runs them as one
batched (grouped) matmul on (E, c, in). Each expert is its own matmul, so each gets its own
scales (a grouped GEMM's per-GEMM scales, as Transformer Engine's GroupedLinear keeps them):

    Y[e] = (q_X[e] @ q_W[e]) / (s_X[e] s_W[e])       s[e] = scale_for(X[e]), shape (E, 1, 1)

``mark_experts(module)`` marks the stacked weights, and ``x @ W`` on a marked 3-D W runs
``Fp8GroupedMatmul``; an expert run alone (dropless) is ``fp8_matmul(x, W[e])``, the same
scales. The router (its softmax picks the experts) stays bf16. Under expert parallelism
every row of expert e reaches the one rank that holds W[e], so its amax needs no agreement.
"""
import ml_dtypes
import numpy as np

from minimegatron.autodiff.cast import matmul
from minimegatron.autodiff.function import Function

E4M3, E5M2 = np.dtype(ml_dtypes.float8_e4m3fn), np.dtype(ml_dtypes.float8_e5m2)
FMAX = {E4M3: float(ml_dtypes.finfo(E4M3).max), E5M2: float(ml_dtypes.finfo(E5M2).max)}


def scale_for(x, fmt, agree=None):
    """s = 2^floor(log2(fmax / amax)): the power of two that brings amax near fmt's max.

    ``agree``: a function taking this rank's amax (a float32 array of one) to the amax
    the scale is taken from (a MAX all-reduce: one scale for a tensor split over ranks).
    """
    amax = np.array([np.max(np.abs(x.astype(np.float32))) if x.size else 0.0], np.float32)
    amax = float((amax if agree is None else agree(amax))[0])
    if not np.isfinite(amax):
        raise FloatingPointError(f"fp8 scale: amax of a {x.shape} tensor is {amax}")
    if amax == 0.0:
        return np.float32(1.0)                               # all zeros: any scale is exact
    return np.float32(2.0 ** np.floor(np.log2(FMAX[fmt] / amax)))


def quantize(x, fmt, agree=None):
    """(q, s): x scaled by s and rounded to the fp8 format ``fmt``; x ~= q / s."""
    s = scale_for(x, fmt, agree)
    return (x.astype(np.float32) * s).astype(fmt), s


def quantize_grouped(x, fmt):
    """(q, s) for stacked experts x (E, ...): one scale per expert, s of shape (E, 1, ..., 1)."""
    s = np.array([scale_for(x[e], fmt) for e in range(x.shape[0])], np.float32)
    s = s.reshape((-1,) + (1,) * (x.ndim - 1))                         # (E, 1, 1)
    return (x.astype(np.float32) * s).astype(fmt), s


def dequantize(q, s, dtype=np.float32):
    """q / s in ``dtype``."""
    return (q.astype(np.float32) / s).astype(dtype)


def scaled_matmul(qa, sa, qb, sb, dtype):
    """(q_a @ q_b) / (s_a s_b): fp8 products accumulated in float32, returned in ``dtype``."""
    return (matmul(qa, qb, np.float32) / (sa * sb)).astype(dtype)


class Fp8Matmul(Function):
    """Y = X W in fp8: e4m3 X, W, e5m2 dY, each with its own per-tensor scale (see above).

    X (..., k) and W (k, m), a weight; Y (..., m) in X's dtype. ``agree``: None, or
    the amax agreement of a layer split over ranks (``scale_for``).
    """
    @staticmethod
    def forward(ctx, x, w, agree=None):
        rows = x.reshape(-1, x.shape[-1])                                  # (N, k)
        # EXERCISE 7.2 begin
        sx, sw = scale_for(rows, E4M3, agree), scale_for(w, E4M3, agree)   # each its own amax
        qx = (rows.astype(np.float32) * sx).astype(E4M3)                   # (N, k) 1 byte
        qw = (w.astype(np.float32) * sw).astype(E4M3)                      # (k, m) 1 byte
        y = matmul(qx, qw, np.float32) / (sx * sw)                         # (N, m) float32
        # EXERCISE 7.2 end
        ctx.save_for_backward(qx, qw)                                      # 1 byte each
        ctx.scales, ctx.shape, ctx.dtypes = (sx, sw), x.shape, (x.dtype, w.dtype)
        ctx.agree = agree
        return y.astype(x.dtype).reshape(x.shape[:-1] + w.shape[-1:])      # (..., m)

    @staticmethod
    def backward(ctx, grad_out):
        qx, qw = ctx.saved
        (sx, sw), (x_dtype, w_dtype) = ctx.scales, ctx.dtypes
        qg, sg = quantize(grad_out.reshape(-1, grad_out.shape[-1]), E5M2, ctx.agree)  # (N, m)
        gx = gw = None
        if ctx.needs_input_grad[0]:
            gx = scaled_matmul(qg, sg, qw.T, sw, x_dtype).reshape(ctx.shape)  # (N, m)(m, k)
        if ctx.needs_input_grad[1]:
            gw = scaled_matmul(qx.T, sx, qg, sg, w_dtype)                  # (k, N)(N, m)
        return gx, gw, None


class Fp8GroupedMatmul(Function):
    """Y[e] = X[e] W[e] in fp8 for every expert e at once, each with its own scales.

    X (E, c, k) and W (E, k, m), stacked experts; Y (E, c, m) in X's dtype.
    """
    @staticmethod
    def forward(ctx, x, w):
        qx, sx = quantize_grouped(x, E4M3)                                 # (E, c, k)
        qw, sw = quantize_grouped(w, E4M3)                                 # (E, k, m)
        ctx.save_for_backward(qx, qw)                                      # 1 byte each
        ctx.scales, ctx.dtypes = (sx, sw), (x.dtype, w.dtype)
        return scaled_matmul(qx, sx, qw, sw, x.dtype)                      # (E, c, m)

    @staticmethod
    def backward(ctx, grad_out):
        qx, qw = ctx.saved
        (sx, sw), (x_dtype, w_dtype) = ctx.scales, ctx.dtypes
        qg, sg = quantize_grouped(grad_out, E5M2)                          # (E, c, m)
        gx = gw = None
        if ctx.needs_input_grad[0]:
            gx = scaled_matmul(qg, sg, qw.transpose(0, 2, 1), sw, x_dtype)  # (E, c, k)
        if ctx.needs_input_grad[1]:
            gw = scaled_matmul(qx.transpose(0, 2, 1), sx, qg, sg, w_dtype)  # (E, k, m)
        return gx, gw


def fp8_matmul(x, w, agree=None):
    """x @ w through Fp8Matmul, or Fp8GroupedMatmul for stacked experts' 3-D w (what
    ``x @ W`` does on a marked W)."""
    if w.ndim == 3:
        return Fp8GroupedMatmul.apply(x, w)
    return Fp8Matmul.apply(x, w, agree)


def mark(module, agree=None, ndim=2):
    """Mark every 2-D weight under ``module`` (``ndim=3``: stacked experts'): its matmuls run
    in fp8 (scales agreed by ``agree``, see ``scale_for``). Returns the names marked."""
    names = []
    for name, p in module.named_parameters():
        if p.ndim == ndim:
            p.fp8, p.fp8_agree = True, agree
            names.append(name)
    return names


def mark_experts(module):
    """Mark the experts' stacked 3-D weights under ``module`` (grouped fp8, a scale per
    expert); the router and the biases stay bf16. Returns the names marked."""
    return mark(module, ndim=3)
