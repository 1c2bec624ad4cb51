"""Attention on one block of queries and keys, with its log-sum-exp: the shared kernel.

Every context-parallel variant computes causal attention in pieces: a rank's
queries against some of the keys (a ring step, the gathered keys, or all keys
of its heads). One piece, for queries Q (Tq, hd), keys K and values V (Tk, hd),
a mask M (Tq, Tk) from the tokens' global positions and a = 1/sqrt(hd)::

    S = a Q K^T  (masked entries -inf)     lse = log sum_k exp(S_k)   (per query row)
    P = exp(S - lse)                       O = P V

The online-softmax merge (Milakov & Gimelshein 2018; flash attention). Two
pieces over disjoint key sets, (O_1, lse_1) and (O_2, lse_2), give the
attention over their union::

    lse = log(exp(lse_1) + exp(lse_2))     O = exp(lse_1 - lse) O_1 + exp(lse_2 - lse) O_2

because each O_i is a softmax-weighted mean with weights summing to 1, and
exp(lse_i - lse) is the share of the total softmax mass held by piece i.

Backward of one piece, given the FINAL O and lse (over all keys) and dO::

    P = exp(S - lse)    dV = P^T dO    dP = dO V^T    D = rowsum(dO * O)
    dS = P * (dP - D)   dQ = a dS K    dK = a dS^T Q

(D replaces the softmax Jacobian's sum over all keys, so each piece's
gradients need only its own keys.) Every query row must see at least one key
of a piece (callers skip pieces with none). No communication here.
"""
import math

from minimegatron.backend import xp
from minimegatron.autodiff.cast import matmul
from minimegatron.autodiff.function import Function


def to_heads(x, n_head):
    """(B, T, H*hd) -> (B, H, T, hd), contiguous."""
    batch, steps, width = x.shape
    return xp.ascontiguousarray(
        x.reshape(batch, steps, n_head, width // n_head).transpose(0, 2, 1, 3))


def from_heads(x):
    """(B, H, T, hd) -> (B, T, H*hd)."""
    batch, heads, steps, hd = x.shape
    return xp.ascontiguousarray(x.transpose(0, 2, 1, 3)).reshape(batch, steps, heads * hd)


def _scores(q, k, mask):
    scale = 1.0 / math.sqrt(q.shape[-1])
    scores = matmul(q, k.transpose(0, 1, 3, 2)) * scale                # (B, H, Tq, Tk)
    return xp.where(mask, scores, -xp.inf), scale


def block_forward(q, k, v, mask):
    """(O, lse) of queries q (B, H, Tq, hd) over keys k, v (B, H, Tk, hd) under mask (Tq, Tk)."""
    scores, _ = _scores(q, k, mask)
    top = scores.max(axis=-1, keepdims=True)                           # (B, H, Tq, 1)
    weights = xp.exp(scores - top)
    total = weights.sum(axis=-1, keepdims=True)
    lse = (top + xp.log(total))[..., 0]                                # (B, H, Tq)
    return matmul(weights / total, v), lse                             # (B, H, Tq, hd)


def merge(out, lse, block_out, block_lse):
    """The online-softmax rule: (O, lse) of two pieces over disjoint keys -> of their union."""
    if out is None:
        return block_out, block_lse
    # EXERCISE 8.1 begin
    top = xp.maximum(lse, block_lse)                                   # (B, H, Tq), per row
    new_lse = top + xp.log(xp.exp(lse - top) + xp.exp(block_lse - top))   # no overflow
    return (xp.exp(lse - new_lse)[..., None] * out
            + xp.exp(block_lse - new_lse)[..., None] * block_out), new_lse
    # EXERCISE 8.1 end


def block_backward(q, k, v, mask, out, lse, grad_out):
    """(dQ, dK, dV) of one piece, from the final O and lse (see the module docstring)."""
    scores, scale = _scores(q, k, mask)
    probs = xp.exp(scores - lse[..., None])                            # (B, H, Tq, Tk)
    grad_v = matmul(probs.transpose(0, 1, 3, 2), grad_out)             # (B, H, Tk, hd)
    grad_probs = matmul(grad_out, v.transpose(0, 1, 3, 2))             # (B, H, Tq, Tk)
    row = (grad_out * out).sum(axis=-1, keepdims=True)                 # D: (B, H, Tq, 1)
    grad_scores = probs * (grad_probs - row)
    grad_q = matmul(grad_scores, k) * scale                            # (B, H, Tq, hd)
    grad_k = matmul(grad_scores.transpose(0, 1, 3, 2), q) * scale      # (B, H, Tk, hd)
    return grad_q, grad_k, grad_v


class MaskedAttention(Function):
    """Y = softmax(a Q K^T + mask) V per head, Q (B, Tq, H*hd) against K, V (B, Tk, H*hd)

    dQ, dK, dV by ``block_backward`` from this one piece's O and lse.
    """
    @staticmethod
    def forward(ctx, q, k, v, mask, n_head):
        q, k, v = to_heads(q, n_head), to_heads(k, n_head), to_heads(v, n_head)  # (B, H, T, hd)
        out, lse = block_forward(q, k, v, mask)
        ctx.save_for_backward(q, k, v, out, lse)
        ctx.mask = mask
        return from_heads(out)                                         # (B, Tq, H*hd)

    @staticmethod
    def backward(ctx, grad_out):
        q, k, v, out, lse = ctx.saved
        grad_out = to_heads(grad_out, q.shape[1])                     # (B, H, Tq, hd)
        grads = block_backward(q, k, v, ctx.mask, out, lse, grad_out)
        return tuple(from_heads(g) for g in grads) + (None, None)


def masked_attention(q, k, v, mask, n_head):
    """Attention of q's tokens over k's and v's under a (Tq, Tk) boolean mask."""
    return MaskedAttention.apply(q, k, v, mask, n_head)
