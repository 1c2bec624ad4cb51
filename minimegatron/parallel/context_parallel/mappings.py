"""The all-to-all pair of context parallelism: sequence-sharded <-> head-sharded.

The idea (DeepSpeed Ulysses). Rank r of a cp group of N ranks holds tokens
r*S/N .. (r+1)*S/N of every head: X_r of shape (B, S/N, H, hd). One all-to-all
re-cuts the same numbers the other way: rank r then holds EVERY token of heads
r*H/N .. (r+1)*H/N, (B, S, H/N, hd). Attention needs all tokens of a head and
nothing of the other heads, so it runs locally in between.

The math. Split X_q along the head axis into N chunks X_q^0 .. X_q^{N-1};
rank q sends X_q^j to rank j, and rank r concatenates what it receives along
the sequence axis:  Y_r = [X_0^r; X_1^r; ...; X_{N-1}^r].  This is a
permutation of the entries (the transpose of the (sender, chunk) table), so
its adjoint is its inverse: the all-to-all that splits the sequence and
concatenates the heads. Hence the pair below, each the other's backward, and
<f(x), y> = <x, f^T(y)> summed over the ranks (tests/test_context_parallel.py).

Communication per call: one ``Alltoall`` of the local buffer, n = B*(S/N)*H*hd*b
bytes; each rank keeps its own chunk and sends (N-1)/N * n (receives as much).
"""
import contextlib

from minimegatron.comm import trace
from minimegatron.backend import xp
from minimegatron.comm import all_to_all
from minimegatron.autodiff.function import Function


def _all_to_all(x, group, split_axis, concat_axis):
    """Chunk j of x along ``split_axis`` to rank j; the received chunks in rank order along
    ``concat_axis``. A split axis of n gives n/N, a concat axis of m gives m*N."""
    N = group.size
    if N == 1:
        return x
    chunks = xp.stack(xp.split(x, N, axis=split_axis))       # (N, ..., n/N, ...)
    received = all_to_all(chunks, group)                        # (N, ..., n/N, ...) by sender
    return xp.concatenate(list(received), axis=concat_axis)    # (..., m*N, ..., n/N, ...)


class AllToAll(Function):
    """forward: all-to-all split_axis -> concat_axis | backward: all-to-all concat -> split

    The two directions are each other's inverse (and adjoint): Ulysses' pair.
    """
    @staticmethod
    def forward(ctx, x, group, split_axis, concat_axis):
        ctx.group, ctx.axes = group, (split_axis, concat_axis)
        ctx.label = trace.current_label()
        if x.shape[split_axis] % group.size:
            raise ValueError(f"all-to-all: axis {split_axis} of length {x.shape[split_axis]}"
                             f" does not split over the {group.size} ranks of {group.name!r}")
        return _all_to_all(x, group, split_axis, concat_axis)

    @staticmethod
    def backward(ctx, grad_out):
        split_axis, concat_axis = ctx.axes
        label = trace.label(f"{ctx.label}.backward") if ctx.label else contextlib.nullcontext()
        with label:
            return _all_to_all(grad_out, ctx.group, concat_axis, split_axis), None, None, None


def all_to_all_along(x, group, split_axis, concat_axis):
    """Autograd all-to-all: ``split_axis`` shrinks N-fold, ``concat_axis`` grows N-fold."""
    return AllToAll.apply(x, group, split_axis, concat_axis)


def sequence_to_heads(x, group):
    """(B, S/N, H, hd) sequence-sharded -> (B, S, H/N, hd) head-sharded (backward: inverse)."""
    return AllToAll.apply(x, group, 2, 1)


def heads_to_sequence(x, group):
    """(B, S, H/N, hd) head-sharded -> (B, S/N, H, hd) sequence-sharded (backward: inverse)."""
    return AllToAll.apply(x, group, 1, 2)
