"""Sequence parallelism (Korthikanti et al. 2022): split LayerNorm and dropout along the sequence.

The idea. In a Megatron block (gpt.py) the linears are split over the tp
ranks, but LayerNorm, dropout and the residual adds run on the whole
(B, T, D) activation on every rank: t copies of the same work and the same
memory. These ops act on each token alone, so they can be split along the
SEQUENCE instead: rank r keeps tokens r*T/t .. (r+1)*T/t, (B, T/t, D).

The math (the paper's Figure 5). Between the two regions, Megatron's f and g
become an all-gather / reduce-scatter pair along the sequence axis (axis 1):

    g      forward  Y = [Y_0; ...; Y_{t-1}]            all-gather   (B, T/t, D) -> (B, T, D)
           backward dL/dY_r = chunk_r(sum_q dL/dY^q)    reduce-scatter
    g-bar  forward  Z_r = chunk_r(sum_q Z^q)           reduce-scatter (B, T, D) -> (B, T/t, D)
           backward dL/dZ = [dL/dZ_0; ...]              all-gather

g replaces f (identity | all-reduce) before a column-parallel linear, g-bar
replaces g (all-reduce | identity) after a row-parallel one. They are
conjugate: g-bar's forward is g's backward and back. An all-reduce IS a
reduce-scatter followed by an all-gather, so the bytes stay the same: per
rank a ring moves (t-1)/t * F for each of them, 2(t-1)/t * F for the
all-reduce they replace (F = B*T*D values). Per block: forward 2 all-gathers
+ 2 reduce-scatters instead of 2 all-reduces, backward the same.

``gather_matmul`` fuses g with the column-parallel product X A_i and keeps
only this rank's X_r for backward, gathering X once more there (Megatron-LM
does the same): so every activation a block keeps is split by t, the paper's
sbh/t (34 + 5as/h). The price: 2 more all-gathers per block in backward.
(The layers use this fused form; ``gather_from_sequence`` is g on its own.)

A replicated parameter applied to a sequence shard (LayerNorm weight and
bias, a row-parallel bias) sees only this rank's tokens: its gradient is a
partial sum, so it passes through f (identity forward, all-reduce backward
over tp), ``shared_param`` below, traced with the label "<block>/sp-params".
A dropout in the region keeps this rank's rows of one process's mask
(``sequence_dropout``), so masks differ per rank and match the serial model.

Every operator is a no-op when the group has one rank. Tutorial:
``minimegatron run -n 4 tutorials/10_sequence_parallel.py``.
"""
import contextlib

from minimegatron.autodiff import functional as F
from minimegatron.comm import trace
from minimegatron.backend import xp
from minimegatron.comm import all_gather, reduce_scatter
from minimegatron.autodiff.cast import matmul
from minimegatron.autodiff.function import Function
from minimegatron.nn import LayerNorm
from minimegatron.parallel.split import rows_of
from minimegatron.parallel.tensor_parallel.mappings import copy_to_tp

SEQ = 1                                              # the sequence axis of (B, T, D)


def check_sequence_length(steps, tp):
    """The same ValueError on every rank, before any collective, unless tp divides T."""
    if steps % tp:
        raise ValueError(f"sequence parallel: a sequence of {steps} tokens does not split "
                         f"over tp={tp} ranks; use a length divisible by {tp}")


def labelled(ctx, suffix=".backward"):
    """The trace label of a backward collective: the forward's label + ``suffix``."""
    return trace.label(f"{ctx.label}{suffix}") if ctx.label else contextlib.nullcontext()


def seq_chunk(x, group):
    """This rank's tokens: (B, T, ...) -> (B, T/t, ...), a copy."""
    check_sequence_length(x.shape[SEQ], group.size)
    return rows_of(x, group.rank, group.size, axis=SEQ).copy()


class GatherFromSequence(Function):
    """forward: all-gather along the sequence | backward: reduce-scatter   (the paper's g)"""
    @staticmethod
    def forward(ctx, x, group):
        ctx.group, ctx.label = group, trace.current_label()
        return x if group.size == 1 else all_gather(x, group, axis=SEQ)   # (B, T, D)

    @staticmethod
    def backward(ctx, grad_out):
        if ctx.group.size == 1:
            return grad_out, None
        with labelled(ctx):
            return reduce_scatter(grad_out, ctx.group, axis=SEQ), None       # (B, T/t, D)


class ReduceScatterToSequence(Function):
    """forward: reduce-scatter along the sequence | backward: all-gather   (the paper's g-bar)"""
    @staticmethod
    def forward(ctx, x, group):
        ctx.group, ctx.label = group, trace.current_label()
        # EXERCISE 6.2 begin
        return x if group.size == 1 else reduce_scatter(x, group, axis=SEQ)   # (B, T/t, D)
        # EXERCISE 6.2 end

    @staticmethod
    def backward(ctx, grad_out):
        if ctx.group.size == 1:
            return grad_out, None
        with labelled(ctx):
            return all_gather(grad_out, ctx.group, axis=SEQ), None           # (B, T, D)


class ScatterToSequence(Function):
    """forward: keep this rank's tokens | backward: all-gather (a replicated input enters)"""
    @staticmethod
    def forward(ctx, x, group):
        ctx.group, ctx.label = group, trace.current_label()
        return x if group.size == 1 else seq_chunk(x, group)              # (B, T/t, D)

    # the same all-gather along the sequence as g-bar's backward: (B, T/t, D) -> (B, T, D)
    backward = staticmethod(ReduceScatterToSequence.backward)


class GatherToReplicated(Function):
    """forward: all-gather along the sequence | backward: keep this rank's tokens

    For a region every tp rank computes whole and alike (an MoE not split over tp):
    each rank then holds the same full dL/dY, so its share is its chunk, with no sum
    (Megatron's gather with ``tensor_parallel_output_grad=False``). Leave the region
    with ``scatter_to_sequence`` (keep my tokens | all-gather).
    """
    @staticmethod
    def forward(ctx, x, group):
        ctx.group = group
        return x if group.size == 1 else all_gather(x, group, axis=SEQ)   # (B, T, D)

    @staticmethod
    def backward(ctx, grad_out):
        if ctx.group.size == 1:
            return grad_out, None
        return seq_chunk(grad_out, ctx.group), None                        # (B, T/t, D)


class GatherMatmul(Function):
    """Y = g(X) A_i keeping only X_r: dA_i = X^T dY (X gathered again), dX_r = chunk_r(sum dY A^T)

    g fused with a column-parallel product; forward one all-gather, backward
    one all-gather (X again) and one reduce-scatter.
    """
    @staticmethod
    def forward(ctx, x, weight, group):
        ctx.group, ctx.label = group, trace.current_label()
        ctx.save_for_backward(x, weight)                                   # X_r (B, T/t, in)
        full = x if group.size == 1 else all_gather(x, group, axis=SEQ)   # (B, T, in)
        return matmul(full, weight)                                        # (B, T, out/t)

    @staticmethod
    def backward(ctx, grad_out):
        x, weight = ctx.saved
        if ctx.group.size > 1:
            with labelled(ctx, ".backward.regather"):
                x = all_gather(x, ctx.group, axis=SEQ)                     # (B, T, in)
        rows, grad_rows = x.reshape(-1, x.shape[-1]), grad_out.reshape(-1, grad_out.shape[-1])
        grad_w = matmul(rows.T, grad_rows)                        # (in, B*T)(B*T, out/t)
        grad_x = matmul(grad_out, weight.T)                                 # (B, T, in)
        if ctx.group.size > 1:
            with labelled(ctx):
                grad_x = reduce_scatter(grad_x, ctx.group, axis=SEQ)       # (B, T/t, in)
        return grad_x, grad_w, None


def gather_from_sequence(x, group):
    """g: all-gather along the sequence forward, reduce-scatter backward."""
    return GatherFromSequence.apply(x, group)


def reduce_scatter_to_sequence(x, group):
    """g-bar: reduce-scatter along the sequence forward, all-gather backward."""
    return ReduceScatterToSequence.apply(x, group)


def scatter_to_sequence(x, group):
    """Keep this rank's tokens forward, all-gather backward."""
    return ScatterToSequence.apply(x, group)


def gather_to_replicated(x, group):
    """All-gather along the sequence forward, keep this rank's tokens backward."""
    return GatherToReplicated.apply(x, group)


def gather_matmul(x, weight, group):
    """g(X) @ A_i, storing only X_r (see GatherMatmul)."""
    return GatherMatmul.apply(x, weight, group)


def shared_param(param, group):
    """f on a replicated parameter used on a sequence shard: its gradient is summed over tp."""
    if group.size == 1:
        return param
    outer = trace.current_label()
    with trace.label(f"{outer}/sp-params" if outer else "sp-params"):
        return copy_to_tp(param, group)


class SequenceParallelLayerNorm(LayerNorm):
    """LayerNorm on (B, T/t, D): the same names as nn.LayerNorm, weight and bias through f."""

    def __init__(self, dim, group, dtype="float64"):
        super().__init__(dim, dtype=dtype)
        self.group = group

    def forward(self, x):
        return F.layer_norm(x, shared_param(self.weight, self.group),
                            shared_param(self.bias, self.group), self.eps)


def sequence_dropout(x, p, training, rng, group):
    """Dropout on (B, T/t, D) with one process's mask: draw the whole (B, T, D), keep my rows.

    Every rank draws the full mask from the same stream (the serial model's), so
    the masks equal one process's; each keeps (and stores) only its tokens.
    """
    if not training or p == 0.0:
        return x
    full = (x.shape[0], x.shape[SEQ] * group.size) + tuple(x.shape[2:])    # (B, T, D)
    keep = rows_of(rng.random(full) >= p, group.rank, group.size, axis=SEQ)
    return x * (xp.asarray(keep) / (1.0 - p)).astype(x.dtype)


__all__ = ["check_sequence_length", "gather_from_sequence", "reduce_scatter_to_sequence",
           "scatter_to_sequence", "gather_to_replicated", "gather_matmul", "shared_param",
           "SequenceParallelLayerNorm", "sequence_dropout", "seq_chunk"]
