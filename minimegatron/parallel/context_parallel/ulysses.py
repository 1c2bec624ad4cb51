"""Ulysses (DeepSpeed): all-to-all from sequence-sharded to head-sharded and back.

The idea (Jacobs et al. 2023). Attention mixes tokens but never heads. So
before attention, one all-to-all per tensor re-cuts Q, K and V from "S/cp
tokens of every head" to "every token of H/cp heads"; each rank then runs
the ordinary causal attention (nn/gpt.py's ``causal_attention``, unchanged)
on its heads, and one more all-to-all cuts the output back to S/cp tokens of
every head. Everything outside attention stays sequence-sharded.

The math (mappings.py). With X_r = [X_r^0, ..., X_r^{cp-1}] split by heads,
rank r gets [X_0^r; ...; X_{cp-1}^r] (every token of head group r); the
backward is the inverse all-to-all. The heads must divide by cp (H/cp per
rank): that is Ulysses' limit on cp, where ring attention has none.

Communication per layer and rank (S tokens, h = width of Q, K, V and the
output, b bytes per element, per batch row): forward 4 all-to-alls (Q, K, V in,
O out), each sends (cp-1)/cp * (S/cp)*h*b; backward 4 more, the same. The
volume per rank falls as 1/cp, unlike the all-gather's and the ring's.
Tests: tests/test_context_parallel.py (2, 4 and 8 ranks against nn/gpt.py).
Tutorial: ``minimegatron run -n 4 tutorials/12_context_parallel.py``.
"""
from minimegatron.nn.gpt import causal_attention
from minimegatron.parallel.context_parallel.mappings import heads_to_sequence, sequence_to_heads


def check_heads(n_head, cp):
    """The same ValueError on every rank, before any collective, unless cp divides the heads."""
    if n_head % cp:
        raise ValueError(f"Ulysses: {n_head} heads do not split over cp={cp} ranks; use a "
                         f"head count divisible by {cp} (or ring / all-gather attention)")


def ulysses_attention(q, k, v, group, n_head):
    """Causal attention of this rank's contiguous tokens: (B, S/cp, H*hd) -> (B, S/cp, H*hd)."""
    cp = group.size
    check_heads(n_head, cp)
    batch, local, width = q.shape
    hd = width // n_head

    def to_heads(t):
        t = t.reshape(batch, local, n_head, hd)                      # (B, S/cp, H, hd)
        t = sequence_to_heads(t, group)                              # (B, S, H/cp, hd)
        return t.reshape(batch, local * cp, width // cp)             # (B, S, H/cp*hd)

    y = causal_attention(to_heads(q), to_heads(k), to_heads(v), n_head // cp)  # (B, S, H/cp*hd)
    y = heads_to_sequence(y.reshape(batch, local * cp, n_head // cp, hd), group)
    return y.reshape(batch, local, width)                            # (B, S/cp, H*hd)
