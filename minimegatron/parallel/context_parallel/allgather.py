"""All-gather context parallelism (Llama 3): gather K and V, keep your own queries.

The idea. Rank i of a cp group holds S/cp tokens of the sequence (zigzag
split by default, zigzag.py). Its queries need the keys and values of every
earlier token, so it all-gathers K and V over the cp group, attends with its
own queries only, and drops the gathered copies after the layer. Queries,
the output and everything outside attention stay sharded by cp. Llama 3
trains with this at 128K tokens: K and V are small next to Q under grouped
query attention, and one all-gather is simpler to overlap than a ring.

The math, with P_i the global positions of rank i's tokens and
K = [K_0; ...; K_{cp-1}] in rank order (positions P = [P_0; ...])::

    O_i = softmax(a Q_i K^T + M_i) V,     M_i[t, s] = 0 if P[s] <= P_i[t] else -inf

(the causal mask offset by the rank's positions). Backward: dQ_i is local;
every rank holds a partial dK (dV) for ALL tokens, from its own queries, and
the true dK_j = sum_i dK^(i)_j: a reduce-scatter hands rank j its sum.
That is the sequence-parallel pair g (sequence.py): all-gather forward,
reduce-scatter backward.

Communication per layer and rank (S tokens, h = K (or V) width, b bytes per
element, per batch row): forward 2 all-gathers (K and V), each
(cp-1)/cp * S*h*b, in all 2(cp-1)/cp * S*h*b; backward 2 reduce-scatters, the same.
Memory: the gathered K and V (2*S*h per layer) are kept for backward.
Tests: tests/test_context_parallel.py (2, 4 and 8 ranks against nn/gpt.py).
Tutorial: ``minimegatron run -n 4 tutorials/12_context_parallel.py``.
"""
from minimegatron.backend import xp
from minimegatron.parallel.context_parallel.blockwise import masked_attention
from minimegatron.parallel.context_parallel.zigzag import causal_mask, check_split, positions
from minimegatron.parallel.tensor_parallel.sequence import gather_from_sequence


def allgather_attention(q, k, v, group, n_head, split="zigzag"):
    """Causal attention of this rank's tokens: q, k, v (B, S/cp, H*hd) -> (B, S/cp, H*hd)."""
    cp, steps = group.size, q.shape[1] * group.size
    check_split(steps, cp, split)                                   # before any collective
    mine = positions(steps, group.rank, cp, split)                  # (S/cp,)
    gathered = xp.concatenate([positions(steps, r, cp, split) for r in range(cp)])   # (S,)
    k_all = gather_from_sequence(k, group)      # (B, S, H*hd) rank order | bwd reduce-scatter
    v_all = gather_from_sequence(v, group)      # (B, S, H*hd)            | bwd reduce-scatter
    return masked_attention(q, k_all, v_all, causal_mask(mine, gathered), n_head)
