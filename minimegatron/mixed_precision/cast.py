"""The loss in float32: the half-precision logits are upcast before the cross entropy.

Mixed precision (Micikevicius et al. 2018; Megatron's ``logits.float()``) keeps
the model's matrix products in half precision but reduces in float32 where a
half sum would lose the small terms: the softmax over the vocabulary and the
mean over the batch. The loss is then scaled in float32 (2^16 > 65504, the
largest float16), and backward turns the float32 gradient of the logits back
into half precision, where a too-large scale first overflows to inf.

    UpcastHalf   forward: x.astype(float32) | backward: g.astype(x's dtype)

A float32 or float64 model passes through unchanged (no node is recorded).
"""
from minimegatron.autodiff.function import Function
import numpy


class UpcastHalf(Function):
    """z = float32(x)    dL/dx = half(dL/dz)  (rounds; overflows to inf past 65504)"""
    @staticmethod
    def forward(ctx, x):
        ctx.dtype = x.dtype
        return x.astype("float32")

    @staticmethod
    def backward(ctx, grad_out):
        return grad_out.astype(ctx.dtype)


def is_half(dtype):
    """True for float16 (the half precision this package trains in)."""
    return numpy.dtype(dtype) == numpy.float16


def float32_if_half(x):
    """x upcast to float32 when it is half precision; otherwise x itself."""
    return UpcastHalf.apply(x) if is_half(x.dtype) else x
