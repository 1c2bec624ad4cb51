"""Ring attention with the zigzag split: K/V blocks travel, partial softmaxes merge.

The idea (Liu et al. 2023; Megatron-LM and TransformerEngine context
parallelism; ring-flash-attention). Rank i holds its tokens' Q, K and V
(zigzag: chunks i and 2cp-1-i of 2cp, so every rank does the same work). The
cp ranks form a ring. At step s = 0 .. cp-1 rank i holds the K/V block of rank
j = (i - s) mod cp: it starts sending that block to rank i+1 and receiving the
next one from rank i-1 (nonblocking ``isend``/``irecv``, so no rank waits on
another's send: no deadlock), attends its queries to the block it holds, then
waits. No rank ever holds more than two K/V blocks.

The math. Each step gives (O^(j), lse^(j)) of the queries over block j's keys
(blockwise.py); the online-softmax rule merges them::

    lse <- log(exp(lse) + exp(lse^(j)))     O <- exp(lse_old - lse) O + exp(lse^(j) - lse) O^(j)

Only the rows and columns of a block that hold causal pairs are computed: for
zigzag with j < i that is every query against chunk j; with j > i only chunk
2cp-1-i against both chunks of j; with j = i the local causal block.

Backward (``block_backward`` with the final O and lse): dQ_i accumulates
locally while the K/V blocks travel the ring once more; each block carries
its dK/dV accumulator along, one hop behind the block. After cp hops it is
back at its owner, complete.

Communication per layer and rank (S tokens, h = K (or V) width, b bytes per
element, per batch row): forward cp-1 hops of one K/V block, 2(S/cp)*h*b each;
backward cp-1 hops of K/V and cp hops of dK/dV, 2(S/cp)*h*b each. Every hop
overlaps with a block's attention on a GPU; the total equals the all-gather's.
Tests: tests/test_context_parallel.py (2, 4 and 8 ranks against nn/gpt.py).
Tutorial: ``minimegatron run -n 4 tutorials/12_context_parallel.py``.
"""
import contextlib

from minimegatron.comm import trace
from minimegatron.backend import xp
from minimegatron.comm import irecv, isend
from minimegatron.autodiff.function import Function
from minimegatron.parallel.context_parallel.blockwise import (block_backward, block_forward,
                                                              from_heads, merge, to_heads)
from minimegatron.parallel.context_parallel.zigzag import causal_mask, check_split, positions

KV_TAG, GRAD_TAG = 40, 41


def _pass_on(buf, group, tag):
    """Start sending ``buf`` to rank i+1 and receiving the same shape from rank i-1."""
    received = xp.empty_like(buf)
    right, left = (group.rank + 1) % group.size, (group.rank - 1) % group.size
    return received, [irecv(received, left, group, tag), isend(buf, right, group, tag)]


def _wait(handles):
    for handle in handles:
        handle.wait()


def _visible(query_positions, key_positions):
    """(rows, cols, mask): the query rows and key columns of a block holding causal pairs."""
    mask = causal_mask(query_positions, key_positions)               # (Tq, Tk)
    rows, cols = xp.nonzero(mask.any(axis=1))[0], xp.nonzero(mask.any(axis=0))[0]
    return rows, cols, mask[rows][:, cols]


class RingAttention(Function):
    """Y_i = softmax(a Q_i K^T + causal) V, K and V passed around the cp ring (see above)"""
    @staticmethod
    def forward(ctx, q, k, v, group, n_head, split):
        cp, rank, steps = group.size, group.rank, q.shape[1] * group.size
        where = [positions(steps, r, cp, split) for r in range(cp)]     # tokens of each rank
        q = to_heads(q, n_head)                                         # (B, H, S/cp, hd)
        kv = home = xp.stack([to_heads(k, n_head), to_heads(v, n_head)])  # (2, B, H, S/cp, hd)
        out = lse = None
        for step in range(cp):
            if step < cp - 1:
                incoming, handles = _pass_on(kv, group, KV_TAG)
            rows, cols, mask = _visible(where[rank], where[(rank - step) % cp])
            if len(rows):                         # none: a later block of a contiguous split
                block = block_forward(q[:, :, rows], kv[0][:, :, cols], kv[1][:, :, cols], mask)
                if out is None:                   # step 0, the diagonal: every row, every key
                    out, lse = block
                else:
                    out[:, :, rows], lse[:, :, rows] = merge(out[:, :, rows], lse[:, :, rows],
                                                             *block)
            if step < cp - 1:
                _wait(handles)
                kv = incoming
        ctx.save_for_backward(q, out, lse, home)
        ctx.group, ctx.where, ctx.label = group, where, trace.current_label()
        return from_heads(out)                                          # (B, S/cp, H*hd)

    @staticmethod
    def backward(ctx, grad_out):
        (q, out, lse, kv), group, where = ctx.saved, ctx.group, ctx.where
        cp, rank = group.size, group.rank
        grad_out = to_heads(grad_out, q.shape[1])                       # (B, H, S/cp, hd)
        grad_q, grad_kv = xp.zeros_like(q), xp.zeros_like(kv)           # grad_kv travels
        label = trace.label(f"{ctx.label}.backward") if ctx.label else contextlib.nullcontext()
        with label:
            for step in range(cp):
                if step < cp - 1:
                    incoming, handles = _pass_on(kv, group, KV_TAG)
                rows, cols, mask = _visible(where[rank], where[(rank - step) % cp])
                if len(rows):
                    dq, dk, dv = block_backward(q[:, :, rows], kv[0][:, :, cols],
                                                kv[1][:, :, cols], mask, out[:, :, rows],
                                                lse[:, :, rows], grad_out[:, :, rows])
                    grad_q[:, :, rows] += dq
                    grad_kv[0][:, :, cols] += dk
                    grad_kv[1][:, :, cols] += dv
                if cp > 1:                          # the accumulator follows its block
                    arrived, grad_handles = _pass_on(grad_kv, group, GRAD_TAG)
                    _wait(grad_handles)
                    grad_kv = arrived
                if step < cp - 1:
                    _wait(handles)
                    kv = incoming
        return from_heads(grad_q), from_heads(grad_kv[0]), from_heads(grad_kv[1]), \
            None, None, None


def ring_attention(q, k, v, group, n_head, split="zigzag"):
    """Causal attention of this rank's tokens: q, k, v (B, S/cp, H*hd) -> (B, S/cp, H*hd)."""
    check_split(q.shape[1] * group.size, group.size, split)        # before any collective
    return RingAttention.apply(q, k, v, group, n_head, split)
