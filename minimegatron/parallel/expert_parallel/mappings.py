"""The two all-to-alls of expert parallelism, as autograd Functions, and the count exchange.

All-to-all is a permutation of the ranks' rows (chunk j of rank q goes to rank
j, and arrives as chunk q), so its adjoint is its inverse: the all-to-all that
sends everything back. With equal chunks that is the same call again; with
uneven chunks (all_to_allv) it is the call with send and receive sizes swapped.
<f(x), y> = <x, f^T(y)> summed over the ranks (tests/test_expert_parallel.py).
"""
import contextlib

from minimegatron.comm import trace
from minimegatron.backend import xp
from minimegatron.comm import all_to_all, all_to_allv
from minimegatron.autodiff.function import Function


def _backward_label(ctx):
    return trace.label(f"{ctx.label}.backward") if ctx.label else contextlib.nullcontext()


class AllToAll(Function):
    """forward: all-to-all of equal row chunks | backward: the same all-to-all (its inverse)"""
    @staticmethod
    def forward(ctx, x, group):
        ctx.group, ctx.label = group, trace.current_label()
        return all_to_all(x, group) if group.size > 1 else x

    @staticmethod
    def backward(ctx, grad_out):
        if ctx.group.size == 1:
            return grad_out, None
        with _backward_label(ctx):
            return all_to_all(xp.ascontiguousarray(grad_out), ctx.group), None


class AllToAllV(Function):
    """forward: all-to-allv, send_sizes[j] rows to rank j | backward: sizes swapped"""
    @staticmethod
    def forward(ctx, x, group, send_sizes, recv_sizes):
        ctx.group, ctx.label, ctx.sizes = group, trace.current_label(), (send_sizes, recv_sizes)
        return all_to_allv(x, group, send_sizes, recv_sizes)

    @staticmethod
    def backward(ctx, grad_out):
        send_sizes, recv_sizes = ctx.sizes
        with _backward_label(ctx):
            grad = all_to_allv(xp.ascontiguousarray(grad_out), ctx.group, recv_sizes, send_sizes)
        return grad, None, None, None


def all_to_all_rows(x, group):
    """(N*c, ...) rows, chunk j to rank j -> (N*c, ...), chunk q from rank q."""
    return AllToAll.apply(x, group)


def all_to_allv_rows(x, group, send_sizes, recv_sizes):
    """(sum send_sizes, ...) -> (sum recv_sizes, ...): uneven chunks, in rank order."""
    return AllToAllV.apply(x, group, send_sizes, recv_sizes)


def exchange_counts(counts, group):
    """(N, E/N) ints, row j: rows this rank sends to each expert of rank j -> (N, E/N),
    row q: rows rank q sends to each of MY experts (one small all-to-all)."""
    if group.size == 1:
        return counts.copy()
    return all_to_all(xp.ascontiguousarray(counts, dtype=xp.int64), group)
