"""Function: one differentiable step, with its forward and backward on raw arrays.

A primitive op is a subclass with two static methods::

    class Mul(Function):
        '''z = x * y    dz/dx = y, dz/dy = x'''
        @staticmethod
        def forward(ctx, x, y):
            ctx.save_for_backward(x, y)
            return x * y
        @staticmethod
        def backward(ctx, grad_out):
            x, y = ctx.saved
            return grad_out * y, grad_out * x

``forward`` sees xp arrays (Tensors are unwrapped) and returns an array or a
tuple of arrays. ``backward`` gets one gradient per output and returns one per
positional input (None where an input needs none). ``Op.apply(...)`` wraps the
result in Tensors and, when gradients are on, records a ``Node`` that links
the outputs to the inputs. ``Tensor.backward`` (tensor.py) walks those nodes.

A returned gradient must be an array the Function will not write to again (a
fresh result, or a view of ``grad_out``; never a buffer reused by the next
call): the engine may keep it as a leaf's ``.grad`` without a copy.

bf16 in, bf16 out. NumPy promotes a bf16 array with a Python float to float32
(``bf16_array * 0.5`` is float32), so ``apply`` rounds a float output back to bf16
when an input is bf16, and Tensor.backward rounds each gradient to its input's dtype:
a bf16 model keeps bf16 activations and gradients (what travels between stages, what
backward saves). A Function that upcasts on purpose says ``upcasts = True`` (cast.py).
A reduction says ``float32_inside = True`` (Sum, Mean, LayerNorm, Softmax, CrossEntropy):
its bf16 inputs are upcast before ``forward``, so its sums accumulate in float32 (a bf16
sum of 1 and seven 2^-9 is 1) and only its outputs and gradients round to bf16, as a
fused bf16 kernel does.
"""
import contextlib

_grad_enabled = [True]


def is_grad_enabled():
    return _grad_enabled[-1]


@contextlib.contextmanager
def no_grad():
    """Run without recording the graph (evaluation, optimizer updates)."""
    _grad_enabled.append(False)
    try:
        yield
    finally:
        _grad_enabled.pop()


@contextlib.contextmanager
def enable_grad():
    """Record the graph again inside a ``no_grad`` block (used by recomputation)."""
    _grad_enabled.append(True)
    try:
        yield
    finally:
        _grad_enabled.pop()


class Context:
    """What forward leaves for backward: saved arrays and any plain attributes."""

    def __init__(self):
        self.saved = ()
        self.needs_input_grad = ()

    def save_for_backward(self, *arrays):
        self.saved = arrays


class Node:
    """One recorded call: the function, its context, and the input Tensors."""

    __slots__ = ("fn", "ctx", "inputs", "out_meta")

    def __init__(self, fn, ctx, inputs, out_meta):
        self.fn = fn
        self.ctx = ctx
        self.inputs = inputs        # Tensor or None (no gradient needed) per positional arg
        self.out_meta = out_meta    # (shape, dtype) per output, to fill missing grads with 0

    def __repr__(self):
        return f"<Node {self.fn.__name__}>"


_FLOAT32 = "float32"


def low_dtype(arrays):
    """The bf16 (or fp8) dtype of the first such array among ``arrays``, else None."""
    for a in arrays:
        dtype = getattr(a, "dtype", None)
        if dtype is not None and dtype.kind == "V":          # ml_dtypes' types
            return dtype
    return None


def keep_low(out, dtype):
    """``out`` (an array or a tuple) with its float arrays (bf16 too) cast to ``dtype``."""
    if isinstance(out, tuple):
        return tuple(keep_low(o, dtype) for o in out)
    kind = getattr(getattr(out, "dtype", None), "kind", None)
    return out.astype(dtype) if kind in ("f", "V") and out.dtype != dtype else out


class Function:
    """Base class of every differentiable operation (see the module docstring)."""

    upcasts = False           # True: a bf16 input may give a float32 output (cast.py)
    float32_inside = False    # True: bf16 inputs are upcast first (a reduction)

    @staticmethod
    def forward(ctx, *args, **kwargs):
        raise NotImplementedError

    @staticmethod
    def backward(ctx, *grad_outs):
        raise NotImplementedError

    @classmethod
    def apply(cls, *args, **kwargs):
        from minimegatron.autodiff.tensor import Tensor

        ctx = Context()
        ctx.needs_input_grad = needs = tuple(
            isinstance(a, Tensor) and a.requires_grad for a in args)
        arrays = [a.data if isinstance(a, Tensor) else a for a in args]
        low = None if cls.upcasts else low_dtype(arrays)
        if low is not None and cls.float32_inside:        # a reduction: sums in float32
            arrays = [keep_low(a, _FLOAT32) if low_dtype([a]) else a for a in arrays]
        out = cls.forward(ctx, *arrays, **kwargs)
        if low is not None:                               # bf16 in, bf16 out
            out = keep_low(out, low)
        multi = isinstance(out, tuple)
        outs = tuple(Tensor(o) for o in (out if multi else (out,)))
        if _grad_enabled[-1] and True in needs:
            inputs = tuple(a if need else None for a, need in zip(args, needs))
            node = Node(cls, ctx, inputs, [(o.shape, o.dtype) for o in outs])
            for index, t in enumerate(outs):
                t.requires_grad = True
                t._node, t._index = node, index
        return outs if multi else outs[0]
