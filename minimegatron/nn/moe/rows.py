"""Moving token rows to expert rows and back: a gather and its adjoint, a scatter-add.

    gather_rows(x, index):      y[i] = x[index[i]]   (0 where index[i] = -1)
    scatter_rows(y, index, n):  x[j] = sum over i with index[i] = j of y[i]

The two are each other's adjoint (<gather(x), y> = <x, scatter(y)>), so each is
the other's backward. A token that picks k experts is gathered k times; its
gradient is the sum of its k rows' gradients. An empty slot (-1, capacity
padding) gathers zeros and scatters nothing.
"""
from minimegatron.backend import scatter_add, xp
from minimegatron.autodiff.function import Function


def _gather(x, index):
    valid = index >= 0
    y = xp.zeros((len(index),) + x.shape[1:], dtype=x.dtype)    # (n, ...)
    y[valid] = x[index[valid]]
    return y


def _scatter(y, index, n):
    valid = index >= 0
    x = xp.zeros((n,) + y.shape[1:], dtype=y.dtype)             # (n_tokens, ...)
    scatter_add(x, index[valid], y[valid])
    return x


class GatherRows(Function):
    """y[i] = x[index[i]] (0 for -1)    dL/dx[j] = sum over i with index[i] = j of dL/dy[i]"""
    @staticmethod
    def forward(ctx, x, index):
        ctx.index, ctx.n = index, x.shape[0]
        return _gather(x, index)

    @staticmethod
    def backward(ctx, grad_out):
        return _scatter(grad_out, ctx.index, ctx.n), None


class ScatterRows(Function):
    """x[j] = sum over i with index[i] = j of y[i]    dL/dy[i] = dL/dx[index[i]] (0 for -1)"""
    @staticmethod
    def forward(ctx, y, index, n):
        ctx.index = index
        return _scatter(y, index, n)

    @staticmethod
    def backward(ctx, grad_out):
        return _gather(grad_out, ctx.index), None, None


def gather_rows(x, index):
    """(N, ...) rows picked by ``index`` (n,) ints, -1 for an empty row: (n, ...)."""
    return GatherRows.apply(x, xp.asarray(index))


def scatter_rows(y, index, n):
    """(n, ...) rows summed into n token rows at ``index`` (-1: dropped): (n_tokens, ...)."""
    return ScatterRows.apply(y, xp.asarray(index), n)
