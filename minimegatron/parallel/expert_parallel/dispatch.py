"""Dispatch and combine: token rows to the ranks of their experts and back.

Both start from the serial layer's expert-major rows (nn/moe/routing.py): E
blocks, block e for expert e. With ep ranks and E_l = E/ep experts each,
blocks e*E_l .. (e+1)*E_l - 1 go to ep rank e.

Padded (capacity C, fixed size). Every block is b*C rows (b local sequences):

    send       (ep, E_l, b*C, h)   chunk j: the rows for rank j's experts
    all-to-all (ep, E_l, b*C, h)   chunk q: the rows rank q sends to MY experts
    regroup    (E_l, ep, b*C, h)   expert-major: my expert i sees ep*b*C rows
    experts, then the inverse: transpose back, the same all-to-all back.

Bytes per layer and rank, forward: dispatch and combine each send
(ep-1) x E_l x C x h x b x itemsize (and backward the same again): the padding
travels too, whatever the router chose.

Dropless (all_to_allv). Block e has counts[e] rows. First the counts: an
all-to-all of (ep, E_l) ints tells each rank how many rows come from whom for
each of its experts (recv (ep, E_l), row q from rank q). Then

    send      sum_j send_sizes[j] rows, send_sizes[j] = sum of counts of rank j's experts
    receive   recv_sizes[q] = sum_i recv[q, i] rows from rank q, source-major
              (inside a source: its rows for my expert 0, then 1, ...)
    regroup   expert-major by a permutation (``source_to_expert``), counts recv.sum(0)

and the inverse on the way back (all_to_allv with the sizes swapped). Bytes
forward: (rows sent to other ranks) x h x itemsize each way, plus the counts.
"""
from minimegatron.comm import trace
from minimegatron.backend import xp
from minimegatron.parallel.expert_parallel.mappings import (all_to_all_rows, all_to_allv_rows,
                                                            exchange_counts)


def dispatch_padded(rows, group, local_experts):
    """(E*b*C, h) expert-major -> (E_l*ep*b*C, h) rows of MY experts, expert-major."""
    # EXERCISE 10.2 begin
    ep, width = group.size, rows.shape[-1]
    block = rows.shape[0] // (ep * local_experts)                   # b*C slots per expert
    send = rows.reshape(ep, local_experts, block, width)            # [to rank][its e][slot]
    with trace.label("ep.dispatch"):
        received = all_to_all_rows(send.reshape(-1, width), group)  # chunk q: from rank q
    received = received.reshape(ep, local_experts, block, width)    # [from rank][my e][slot]
    mine = received.transpose(1, 0, 2, 3)                           # [my e][from rank][slot]
    return mine.reshape(local_experts * ep * block, width)          # (E_l*ep*b*C, h)
    # EXERCISE 10.2 end


def combine_padded(out, group, local_experts):
    """(E_l*ep*b*C, h) my experts' outputs -> (E*b*C, h) back on the tokens' ranks."""
    ep, width = group.size, out.shape[-1]
    block = out.shape[0] // (ep * local_experts)                    # b*C
    out = out.reshape(local_experts, ep, block, width)              # (E_l, ep, b*C, h)
    out = out.transpose(1, 0, 2, 3).reshape(ep * local_experts * block, width)
    with trace.label("ep.combine"):
        return all_to_all_rows(out, group)                          # (E*b*C, h)


def source_to_expert(recv):
    """Row order that turns source-major rows (recv (ep, E_l) counts) into expert-major."""
    ep, local = recv.shape
    start = xp.concatenate([xp.zeros(1, dtype=xp.int64), xp.cumsum(recv.reshape(-1))])
    start = start[:-1].reshape(ep, local)                           # first row of (q, i)
    parts = [xp.arange(start[q, i], start[q, i] + recv[q, i])
             for i in range(local) for q in range(ep)]
    return xp.concatenate(parts).astype(xp.int64) if parts else xp.zeros(0, dtype=xp.int64)


def dispatch_dropless(rows, counts, group):
    """(n, h) expert-major with counts (E,) -> (my rows expert-major, my counts (E_l,),
    the route back)."""
    ep = group.size
    sent = xp.asarray(counts, dtype=xp.int64).reshape(ep, -1)      # (ep, E_l)
    with trace.label("ep.counts"):
        recv = exchange_counts(sent, group)                         # (ep, E_l)
    send_sizes, recv_sizes = sent.sum(axis=1), recv.sum(axis=1)
    with trace.label("ep.dispatch"):
        received = all_to_allv_rows(rows, group, send_sizes, recv_sizes)   # source-major
    order = source_to_expert(recv)
    back = (xp.argsort(order), send_sizes, recv_sizes)
    return received[order], recv.sum(axis=0), back                  # expert-major


def combine_dropless(out, group, back):
    """My experts' outputs (expert-major) -> (n, h) on the tokens' ranks, expert-major."""
    inverse, send_sizes, recv_sizes = back
    with trace.label("ep.combine"):
        return all_to_allv_rows(out[inverse], group, recv_sizes, send_sizes)


def padded_bytes(ep, num_experts, capacity, width, sequences, itemsize):
    """The formula: bytes one rank sends in ONE of dispatch / combine (forward), padded."""
    return (ep - 1) * (num_experts // ep) * capacity * width * sequences * itemsize


def dropless_bytes(counts, rank, ep, width, itemsize):
    """The formula: bytes this rank sends in dispatch (forward) given its counts (E,):
    every row for another rank's experts (the counts exchange adds (ep-1) E/ep x 8)."""
    own = xp.asarray(counts).reshape(ep, -1)[rank].sum()
    return int((xp.asarray(counts).sum() - own) * width * itemsize)
