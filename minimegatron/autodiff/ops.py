"""Primitive operations: each states its gradient in its first docstring line.

Every op is a Function (function.py) with a static forward and backward on raw
xp arrays. Broadcasting follows NumPy everywhere; its backward is
``unbroadcast``: sum the gradient over every axis that was stretched, so
dL/dx always has x's shape.
"""
from minimegatron.backend import xp, scatter_add
from minimegatron.autodiff.function import Function
from minimegatron.autodiff.tensor import unwrap
from minimegatron.autodiff.cast import matmul


def unbroadcast(grad, shape):
    """Sum ``grad`` down to ``shape``, undoing NumPy broadcasting (one reduction at most)."""
    shape = tuple(shape)
    if grad.shape == shape:                    # nothing was stretched: no work at all
        return grad
    half = grad.dtype if grad.dtype == xp.float16 or grad.dtype.kind == "V" else None
    if half is not None:                       # float16, bf16: sum in float32 and round once at
        grad = grad.astype(xp.float32)         # the end, as mixed precision keeps sums wide
    # EXERCISE 1.5 begin
    lead = grad.ndim - len(shape)              # axes broadcasting put in front
    stretched = tuple(lead + i for i, size in enumerate(shape)
                      if size == 1 and grad.shape[lead + i] != 1)
    grad = grad.sum(axis=tuple(range(lead)) + stretched, keepdims=True)
    grad = grad.reshape(shape)                 # (1, .., 1, *shape) -> shape
    # EXERCISE 1.5 end
    return grad.astype(half) if half is not None else grad


def _shape(a):
    return getattr(a, "shape", ())


def _expand_reduced(grad, shape, axis, keepdims):
    """Give a reduced gradient back the axes the reduction removed: (..) -> shape."""
    if axis is not None and not keepdims:
        axes = (axis,) if isinstance(axis, int) else axis
        grad = xp.expand_dims(grad, tuple(a % len(shape) for a in axes))
    return xp.broadcast_to(grad, shape)


# ---- elementwise arithmetic ---------------------------------------------------
class Add(Function):
    """z = x + y    dz/dx = 1, dz/dy = 1"""
    @staticmethod
    def forward(ctx, x, y):
        ctx.shapes = (_shape(x), _shape(y))
        return x + y

    @staticmethod
    def backward(ctx, grad_out):
        needs = ctx.needs_input_grad
        return (unbroadcast(grad_out, ctx.shapes[0]) if needs[0] else None,
                unbroadcast(grad_out, ctx.shapes[1]) if needs[1] else None)


class Sub(Function):
    """z = x - y    dz/dx = 1, dz/dy = -1"""
    @staticmethod
    def forward(ctx, x, y):
        ctx.shapes = (_shape(x), _shape(y))
        return x - y

    @staticmethod
    def backward(ctx, grad_out):
        needs = ctx.needs_input_grad
        return (unbroadcast(grad_out, ctx.shapes[0]) if needs[0] else None,
                unbroadcast(-grad_out, ctx.shapes[1]) if needs[1] else None)


class Mul(Function):
    """z = x * y    dz/dx = y, dz/dy = x"""
    @staticmethod
    def forward(ctx, x, y):
        ctx.save_for_backward(x, y)
        return x * y

    @staticmethod
    def backward(ctx, grad_out):
        x, y = ctx.saved
        gx = unbroadcast(grad_out * y, _shape(x)) if ctx.needs_input_grad[0] else None
        gy = unbroadcast(grad_out * x, _shape(y)) if ctx.needs_input_grad[1] else None
        return gx, gy


class Div(Function):
    """z = x / y    dz/dx = 1/y, dz/dy = -x/y^2"""
    @staticmethod
    def forward(ctx, x, y):
        ctx.save_for_backward(x, y)
        return x / y

    @staticmethod
    def backward(ctx, grad_out):
        x, y = ctx.saved
        gx = unbroadcast(grad_out / y, _shape(x)) if ctx.needs_input_grad[0] else None
        gy = (unbroadcast(-grad_out * x / (y * y), _shape(y))
              if ctx.needs_input_grad[1] else None)
        return gx, gy


class Neg(Function):
    """z = -x    dz/dx = -1"""
    @staticmethod
    def forward(ctx, x):
        return -x

    @staticmethod
    def backward(ctx, grad_out):
        return -grad_out


class Pow(Function):
    """z = x^p    dz/dx = p x^(p-1), dz/dp = z log x"""
    @staticmethod
    def forward(ctx, x, p):
        out = x ** p
        ctx.save_for_backward(x, p, out)
        return out

    @staticmethod
    def backward(ctx, grad_out):
        x, p, out = ctx.saved
        gx = unbroadcast(grad_out * p * x ** (p - 1), _shape(x))
        gp = (unbroadcast(grad_out * out * xp.log(x), _shape(p))
              if ctx.needs_input_grad[1] else None)
        return gx, gp


class Exp(Function):
    """z = e^x    dz/dx = z"""
    @staticmethod
    def forward(ctx, x):
        out = xp.exp(x)
        ctx.save_for_backward(out)
        return out

    @staticmethod
    def backward(ctx, grad_out):
        # EXERCISE 1.2 begin
        return grad_out * ctx.saved[0]
        # EXERCISE 1.2 end


class Log(Function):
    """z = log x    dz/dx = 1/x"""
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return xp.log(x)

    @staticmethod
    def backward(ctx, grad_out):
        return grad_out / ctx.saved[0]


class Tanh(Function):
    """z = tanh x    dz/dx = 1 - z^2"""
    @staticmethod
    def forward(ctx, x):
        out = xp.tanh(x)
        ctx.save_for_backward(out)
        return out

    @staticmethod
    def backward(ctx, grad_out):
        # EXERCISE 1.3 begin
        return grad_out * (1 - ctx.saved[0] ** 2)
        # EXERCISE 1.3 end


class Sqrt(Function):
    """z = sqrt x    dz/dx = 1 / (2 z)"""
    @staticmethod
    def forward(ctx, x):
        out = xp.sqrt(x)
        ctx.save_for_backward(out)
        return out

    @staticmethod
    def backward(ctx, grad_out):
        return grad_out / (2 * ctx.saved[0])


# ---- matrix product -------------------------------------------------------------
class MatMul(Function):
    """Z = X @ A    dL/dX = dL/dZ @ A^T, dL/dA = X^T @ dL/dZ  (batched, broadcast)

    For a 2-D A (a Linear weight) and X of shape (B, T, k), dL/dA sums the
    per-row products over all B*T rows, so it is one 2-D GEMM on the rows
    stacked: X.reshape(-1, k)^T @ dL/dZ.reshape(-1, m). A batched matmul
    would instead make B products of (k, T)(T, m) and then sum them.
    """
    @staticmethod
    def forward(ctx, x, a):
        if x.ndim == 0 or a.ndim == 0 or x.shape[-1] != a.shape[-2 if a.ndim > 1 else 0]:
            raise ValueError(
                f"matmul: shapes {tuple(x.shape)} and {tuple(a.shape)} do not align "
                "(the last axis of the first must equal the second-to-last of the second)")
        ctx.save_for_backward(x, a)
        if a.ndim == 2 and x.ndim > 2:      # a weight: one GEMM over every row of x
            return matmul(x.reshape(-1, x.shape[-1]), a).reshape(x.shape[:-1] + a.shape[-1:])
        return matmul(x, a)

    @staticmethod
    def backward(ctx, grad_out):
        x, a = ctx.saved
        x2 = x[None, :] if x.ndim == 1 else x          # (n,) -> (1, n)
        a2 = a[:, None] if a.ndim == 1 else a          # (n,) -> (n, 1)
        g = grad_out
        if x.ndim == 1:
            g = xp.expand_dims(g, -2 if a.ndim > 1 else 0)
        if a.ndim == 1:
            g = xp.expand_dims(g, -1)
        gx = ga = None
        # EXERCISE 1.1 begin
        if a2.ndim == 2:       # A is a weight: every row of X, in every batch, meets the same A
            g2 = g.reshape(-1, g.shape[-1])                    # (..., n, m) -> (N, m)
            if ctx.needs_input_grad[0]:
                gx = matmul(g2, a2.T).reshape(x.shape)         # (N, m)(m, k) -> (N, k)
            if ctx.needs_input_grad[1]:
                rows = x2.reshape(-1, x2.shape[-1])            # (..., n, k) -> (N, k)
                ga = matmul(rows.T, g2).reshape(a.shape)       # one GEMM (k, N)(N, m)
        else:                  # batched A: swap the last two axes, sum broadcast batches away
            if ctx.needs_input_grad[0]:
                gx = unbroadcast(matmul(g, xp.swapaxes(a2, -1, -2)), x2.shape).reshape(x.shape)
            if ctx.needs_input_grad[1]:
                ga = unbroadcast(matmul(xp.swapaxes(x2, -1, -2), g), a2.shape).reshape(a.shape)
        # EXERCISE 1.1 end
        return gx, ga


# ---- reductions -------------------------------------------------------------------
class Sum(Function):
    """z = sum_i x_i    dz/dx_i = 1"""
    float32_inside = True     # bf16: accumulate in float32 (function.py)
    @staticmethod
    def forward(ctx, x, axis=None, keepdims=False):
        ctx.args = (x.shape, axis, keepdims)
        return xp.sum(x, axis=axis, keepdims=keepdims)

    @staticmethod
    def backward(ctx, grad_out):
        # EXERCISE 1.6 begin
        return _expand_reduced(grad_out, *ctx.args)
        # EXERCISE 1.6 end


class Mean(Function):
    """z = (1/n) sum_i x_i    dz/dx_i = 1/n"""
    float32_inside = True     # bf16: accumulate in float32 (function.py)
    @staticmethod
    def forward(ctx, x, axis=None, keepdims=False):
        out = xp.mean(x, axis=axis, keepdims=keepdims)
        ctx.args = (x.shape, axis, keepdims)
        ctx.count = x.size // max(out.size, 1)
        return out

    @staticmethod
    def backward(ctx, grad_out):
        return _expand_reduced(grad_out / ctx.count, *ctx.args)


class Max(Function):
    """z = max_i x_i    dz/dx_i = 1/k where x_i is one of k tied maxima, else 0"""
    @staticmethod
    def forward(ctx, x, axis=None, keepdims=False):
        out = xp.max(x, axis=axis, keepdims=True)
        mask = x == out
        ctx.save_for_backward(mask / mask.sum(axis=axis, keepdims=True))
        ctx.args = (x.shape, axis, keepdims)
        return out if keepdims else xp.squeeze(out, axis=axis)

    @staticmethod
    def backward(ctx, grad_out):
        # EXERCISE 1.4 begin
        return ctx.saved[0] * _expand_reduced(grad_out, *ctx.args)
        # EXERCISE 1.4 end


# ---- shape and indexing -------------------------------------------------------------
class Reshape(Function):
    """z = reshape(x)    dL/dx = reshape(dL/dz, x.shape)"""
    @staticmethod
    def forward(ctx, x, shape):
        ctx.shape = x.shape
        return x.reshape(shape)

    @staticmethod
    def backward(ctx, grad_out):
        return grad_out.reshape(ctx.shape)


class Transpose(Function):
    """z = x.transpose(axes)    dL/dx = dL/dz.transpose(inverse of axes)"""
    @staticmethod
    def forward(ctx, x, axes=None):
        ctx.axes = tuple(range(x.ndim))[::-1] if axes is None else axes
        return x.transpose(ctx.axes)

    @staticmethod
    def backward(ctx, grad_out):
        inverse = [0] * len(ctx.axes)
        for i, a in enumerate(ctx.axes):
            inverse[a % len(ctx.axes)] = i
        return grad_out.transpose(inverse)


def _is_basic(index):
    """Slices, ints, None and ... pick each element at most once (no scatter needed)."""
    parts = index if isinstance(index, tuple) else (index,)
    return all(p is None or p is Ellipsis or isinstance(p, (int, slice)) for p in parts)


class GetItem(Function):
    """z = x[index]    dL/dx = zeros, then dL/dz added at index (repeats summed)"""
    @staticmethod
    def forward(ctx, x, index):
        if isinstance(index, tuple):
            index = tuple(unwrap(i) for i in index)
        else:
            index = unwrap(index)
        ctx.args = (x.shape, x.dtype, index)
        return x[index]

    @staticmethod
    def backward(ctx, grad_out):
        shape, dtype, index = ctx.args
        grad = xp.zeros(shape, dtype=dtype)
        if _is_basic(index):
            grad[index] = grad_out
        else:
            scatter_add(grad, index, grad_out)
        return grad


class Concatenate(Function):
    """z = [x_1, ..., x_n] along axis    dL/dx_i = the matching slice of dL/dz"""
    @staticmethod
    def forward(ctx, *xs, axis=0):
        ctx.axis = axis
        sizes = [x.shape[axis] for x in xs]
        ctx.bounds = [sum(sizes[:i]) for i in range(1, len(sizes))]
        return xp.concatenate(xs, axis=axis)

    @staticmethod
    def backward(ctx, grad_out):
        return tuple(xp.split(grad_out, ctx.bounds, axis=ctx.axis))


class Split(Function):
    """(z_1, ..., z_n) = split(x)    dL/dx = [dL/dz_1, ..., dL/dz_n] along axis"""
    @staticmethod
    def forward(ctx, x, indices_or_sections, axis=0):
        ctx.axis = axis
        return tuple(xp.split(x, indices_or_sections, axis=axis))

    @staticmethod
    def backward(ctx, *grad_outs):
        return xp.concatenate(grad_outs, axis=ctx.axis)


class Where(Function):
    """z = cond ? x : y    dz/dx = cond, dz/dy = not cond"""
    @staticmethod
    def forward(ctx, cond, x, y):
        ctx.save_for_backward(cond)
        ctx.shapes = (_shape(x), _shape(y))
        return xp.where(cond, x, y)

    @staticmethod
    def backward(ctx, grad_out):
        (cond,) = ctx.saved
        zero = xp.zeros((), dtype=grad_out.dtype)
        gx = unbroadcast(xp.where(cond, grad_out, zero), ctx.shapes[0])
        gy = (unbroadcast(xp.where(cond, zero, grad_out), ctx.shapes[1])
              if ctx.needs_input_grad[2] else None)
        return None, gx, gy


class EmbeddingLookup(Function):
    """z = W[ids]    dL/dW[v] = sum of dL/dz over the positions where ids == v"""
    @staticmethod
    def forward(ctx, weight, ids):
        ctx.args = (weight.shape, weight.dtype, ids)
        return weight[ids]

    @staticmethod
    def backward(ctx, grad_out):
        shape, dtype, ids = ctx.args
        grad = xp.zeros(shape, dtype=dtype)
        scatter_add(grad, ids, grad_out)
        return grad, None


# ---- functional forms of the ops that are not Tensor methods ---------------------------
def concatenate(tensors, axis=0):
    return Concatenate.apply(*tensors, axis=axis)


def split(x, indices_or_sections, axis=0):
    return Split.apply(x, indices_or_sections, axis=axis)


def where(cond, x, y):
    return Where.apply(unwrap(cond), x, y)


def embedding(weight, ids):
    return EmbeddingLookup.apply(weight, unwrap(ids))
