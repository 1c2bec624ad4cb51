"""Tensor parallelism's four mappings: f, g, gather and scatter over the tp group.

The idea (Y = XA + b, A of shape (in, out), p = tp ranks):

    column split  A = [A_1, ..., A_p]        Y_i = X A_i          Y = [Y_1, ..., Y_p]
    row split     A = [A_1; ...; A_p]        X = [X_1, ..., X_p]  Y = X_1 A_1 + ... + X_p A_p

A column-parallel layer needs the whole X on every rank (f: identity forward,
all-reduce backward) and leaves Y split by columns; a row-parallel layer takes
X split by columns and sums the partial products (g: all-reduce forward,
identity backward). Column then row (the Megatron MLP) needs no communication
in between, so a block costs one g forward and one f backward.

Communication per call, for an activation of b*s*h values (8 bytes each in float64):

    copy_to_tp      (f)   forward none              backward all-reduce of dL/dX
    reduce_from_tp  (g)   forward all-reduce of Y   backward none
    gather_from_tp        forward all-gather (last axis)    backward none (split)
    scatter_to_tp         forward none (split)      backward all-gather (last axis)

Every mapping is a no-op (and sends nothing) when the group has one rank.
Sequence parallelism's pair (g: all-gather | reduce-scatter, g-bar: reduce-scatter |
all-gather along the sequence) is in sequence.py.
Tutorials: ``minimegatron run -n 2 tutorials/02_worked_example.py`` and
``minimegatron run -n 4 tutorials/03_tensor_parallel_mlp.py``.
"""
import contextlib

from minimegatron.comm import trace
from minimegatron.comm import all_gather, all_reduce
from minimegatron.autodiff.function import Function
from minimegatron.parallel.split import rows_of


def _backward_label(ctx):
    """Backward collectives carry the forward's label + ".backward" (for counting)."""
    return trace.label(f"{ctx.label}.backward") if ctx.label else contextlib.nullcontext()


def _local_chunk(x, group):
    """This rank's chunk of x along the last axis: (..., n) -> (..., n/tp)."""
    width = x.shape[-1]
    if width % group.size:
        raise ValueError(f"cannot split a last axis of {width} over {group.size} tp ranks")
    return rows_of(x, group.rank, group.size, axis=-1).copy()


class CopyToTP(Function):
    """forward: identity | backward: all-reduce over tp   (Megatron's f)"""
    @staticmethod
    def forward(ctx, x, group):
        ctx.group, ctx.label = group, trace.current_label()
        return x

    @staticmethod
    def backward(ctx, grad_out):
        if ctx.group.size == 1:
            return grad_out, None
        with _backward_label(ctx):
            # EXERCISE 3.1 begin
            return all_reduce(grad_out, ctx.group), None
            # EXERCISE 3.1 end


class ReduceFromTP(Function):
    """forward: all-reduce over tp | backward: identity   (Megatron's g)"""
    @staticmethod
    def forward(ctx, x, group):
        # EXERCISE 3.2 begin
        return x if group.size == 1 else all_reduce(x, group)
        # EXERCISE 3.2 end

    @staticmethod
    def backward(ctx, grad_out):
        return grad_out, None


class GatherFromTP(Function):
    """forward: all-gather along the last axis | backward: split, keep this rank's chunk"""
    @staticmethod
    def forward(ctx, x, group):
        ctx.group = group
        return x if group.size == 1 else all_gather(x, group, axis=-1)   # (..., n*tp)

    @staticmethod
    def backward(ctx, grad_out):
        return _local_chunk(grad_out, ctx.group), None                    # (..., n)


class ScatterToTP(Function):
    """forward: split along the last axis, keep this rank's chunk | backward: all-gather"""
    @staticmethod
    def forward(ctx, x, group):
        ctx.group, ctx.label = group, trace.current_label()
        return _local_chunk(x, group)                                     # (..., n/tp)

    @staticmethod
    def backward(ctx, grad_out):
        if ctx.group.size == 1:
            return grad_out, None
        with _backward_label(ctx):
            return all_gather(grad_out, ctx.group, axis=-1), None         # (..., n)


def copy_to_tp(x, group):
    """f: identity forward, all-reduce backward."""
    return CopyToTP.apply(x, group)


def reduce_from_tp(x, group):
    """g: all-reduce forward, identity backward."""
    return ReduceFromTP.apply(x, group)


def gather_from_tp(x, group):
    """All-gather the last axis forward, split backward."""
    return GatherFromTP.apply(x, group)


def scatter_to_tp(x, group):
    """Split the last axis forward, all-gather backward."""
    return ScatterToTP.apply(x, group)
