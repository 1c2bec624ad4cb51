"""The loss in float32: the half-precision logits are upcast before the cross entropy.

Mixed precision (Micikevicius et al. 2018; Megatron's ``logits.float()``) keeps
the model's matrix products in half precision but reduces in float32 where a
half sum would lose the small terms: the softmax over the vocabulary and the
mean over the batch. The loss is then scaled in float32 (2^16 > 65504, the
largest float16), and backward turns the float32 gradient of the logits back
into half precision, where a too-large scale first overflows to inf.

    UpcastHalf   forward: x.astype(float32) | backward: g.astype(x's dtype)

A float32 or float64 model passes through unchanged (no node is recorded).

bf16 (bfloat16: float32's 8 exponent bits, 7 mantissa bits; ml_dtypes' dtype) is the
other half precision: the same range as float32, so no gradient underflows and no loss
scale is needed, but only 2-3 significant digits. A bf16 matmul, as a tensor core does
it, multiplies bf16 inputs and accumulates in float32, rounding the product once:

    matmul(a, b) = bf16(float32(a) @ float32(b))    (float16, float32, float64: a @ b)

(ml_dtypes' own ``a @ b`` of two bf16 arrays returns float32 and loops in C without
BLAS: ~10x slower here; the upcast makes the float32 accumulation explicit.)
"""
from minimegatron.autodiff.function import Function
import ml_dtypes
import numpy

BF16 = numpy.dtype(ml_dtypes.bfloat16)


class UpcastHalf(Function):
    """z = float32(x)    dL/dx = half(dL/dz)  (rounds; overflows to inf past 65504)"""
    upcasts = True
    @staticmethod
    def forward(ctx, x):
        ctx.dtype = x.dtype
        return x.astype("float32")

    @staticmethod
    def backward(ctx, grad_out):
        return grad_out.astype(ctx.dtype)


def is_half(dtype):
    """True for float16 and bfloat16 (the half precisions this package trains in)."""
    return numpy.dtype(dtype) in (numpy.float16, BF16)


def is_bf16(dtype):
    """True for bfloat16 (no loss scale needed: float32's exponent range)."""
    return numpy.dtype(dtype) == BF16


def matmul(a, b, dtype=None):
    """a @ b; for bf16 (or fp8) inputs accumulated in float32 and rounded once to ``dtype``
    (default a's dtype; fp8 products ask for float32, autodiff/fp8.py)."""
    if a.dtype.kind != "V":                    # float16/32/64: NumPy's own (BLAS) product
        return a @ b
    return (a.astype(numpy.float32) @ b.astype(numpy.float32)).astype(dtype or a.dtype)


def float32_if_half(x):
    """x upcast to float32 when it is half precision; otherwise x itself."""
    return UpcastHalf.apply(x) if is_half(x.dtype) else x
