"""Runs on every rank: bf16 and fp8 through the collectives (comm/wire.py), with mutants.

Groups: the world (4 ranks) and its halves {0, 1}, {2, 3} (strict subsets). Returned:
which checks hold, the trace's bytes per element, and each mutant's verdict.

The reduction input: rank 0 holds 1.0, every other rank 2^-9. In float32 the sum
1 + (N-1) 2^-9 is exact and rounds once to bf16; in bf16 each 2^-9 (a quarter ulp of
1) is lost at every hop, so a reduction done in bf16 returns 1. Two terms round once either
way, so the mutants run on the world of 4.
"""
import functools

import ml_dtypes
import numpy as np

from minimegatron import comm
from minimegatron.comm import trace, wire

BF16, E4M3, E5M2 = ml_dtypes.bfloat16, ml_dtypes.float8_e4m3fn, ml_dtypes.float8_e5m2
SPECIAL = [0.0, -0.0, 1.0, -2.5, 2.0 ** -133, 3.0e38, np.inf, -np.inf, np.nan]


def same_bits(a, b):
    """a and b of one dtype, bit for bit (NaN payloads, -0.0 and subnormals included)."""
    return (a is not None and b is not None and a.dtype == b.dtype and a.shape == b.shape
            and np.array_equal(wire.carried(a), wire.carried(b)))


def values(rank, dtype, n=18):
    """Rank ``rank``'s array: the special values, then rank-dependent ones, in ``dtype``."""
    v = np.array(SPECIAL * 2, np.float32)[:n]
    v[len(SPECIAL):] = np.arange(n - len(SPECIAL)) * 0.37 - rank
    return v.astype(dtype)


def reduce_input(rank, shape=(4, 3)):
    return np.full(shape, 1.0 if rank == 0 else 2.0 ** -9, np.float32).astype(BF16)


def expected_sum(size, shape=(4, 3)):
    """float32 sum of every rank's input, rounded once to bf16."""
    return np.full(shape, 1.0 + (size - 1) * 2.0 ** -9, np.float32).astype(BF16)


# --- the checks a mutant must fail ------------------------------------------------------------

def reduces_in_float32(all_reduce, g):
    """``all_reduce`` of bf16 returns bf16(float32 sum): not the bf16 sum, not an error."""
    try:
        got = all_reduce(reduce_input(g.rank), g)
    except BufferError:
        return False
    return same_bits(got, expected_sum(g.size))


def moves_bits_at_half(all_gather, g):
    """``all_gather`` of bf16: every bit arrives, and the trace counts 2 bytes an element."""
    x = values(g.rank, BF16)
    trace.reset()
    try:
        got = all_gather(x, g)
    except BufferError:
        return False
    want = np.concatenate([values(r, BF16) for r in range(g.size)])
    sent = [s["bytes_sent"] for s in trace.spans() if s["op"] == "all_gather"]
    return same_bits(got, want) and sent == [(g.size - 1) * x.size * 2]


def bf16_sum_mutant(x, g):
    """A reduction done in bf16: the bits gathered, then added in bf16, rank by rank."""
    parts = comm.all_gather(x[None], g)                             # (N, ...) bf16
    return functools.reduce(np.add, list(parts))


def float32_move_mutant(x, g):
    """A move that converts to float32 (the bits arrive, at twice the bytes)."""
    return comm.all_gather(x.astype(np.float32), g).astype(x.dtype)


def mutants(g):
    return {"reduce_in_float32": reduces_in_float32(comm.all_reduce, g),
            "reduce_in_bf16_mutant": reduces_in_float32(bf16_sum_mutant, g),
            "reduce_no_view_mutant": reduces_in_float32(comm.all_reduce.__wrapped__, g),
            "move_bits": moves_bits_at_half(comm.all_gather, g),
            "move_no_view_mutant": moves_bits_at_half(comm.all_gather.__wrapped__, g),
            "move_float32_mutant": moves_bits_at_half(float32_move_mutant, g)}


# --- every collective ----------------------------------------------------------------------------

def reductions(g):
    """Every reduction of bf16 against bf16(float32 sum), each way of taking the result."""
    x, want, last = reduce_input(g.rank), expected_sum(g.size), g.size - 1
    inplace = x.copy()
    out = np.empty_like(x)
    checks = {
        "all_reduce": same_bits(comm.all_reduce(x, g), want),
        "all_reduce_inplace": comm.all_reduce(inplace, g, inplace=True) is inplace
        and same_bits(inplace, want),
        "all_reduce_out": comm.all_reduce(x, g, out=out) is out and same_bits(out, want),
        "iall_reduce": same_bits(comm.iall_reduce(x, g).wait(), want),
        "reduce": (same_bits(comm.reduce(x, g, root=last), want) if g.rank == last
                   else comm.reduce(x, g, root=last) is None),
        "reduce_scatter": same_bits(comm.reduce_scatter(np.tile(x, (g.size, 1)), g), want),
        "ireduce_scatter": same_bits(comm.ireduce_scatter(np.tile(x, (g.size, 1)), g).wait(),
                                     want),
        "mean": same_bits(comm.all_reduce(x, g, op="mean"),
                          (want.astype(np.float32) / g.size).astype(BF16)),
        "input_unchanged": same_bits(x, reduce_input(g.rank)),
    }
    return checks


def moves(g, dtype):
    """Every move of ``dtype``: the bits of the NumPy reference, exactly."""
    N, r, last = g.size, g.rank, g.size - 1
    xs = [values(q, dtype) for q in range(N)]
    b = xs[r].copy() if r == last else np.zeros_like(xs[r])
    ib = xs[r].copy() if r == last else np.zeros_like(xs[r])
    square = np.stack([values(q, dtype, 4 * N) for q in range(N)])      # (N, 4N)
    swapped = [square[q].reshape(N, 4)[r] for q in range(N)]
    uneven = values(0, dtype, 3 * (N + 1)).reshape(N + 1, 3)          # (N+1, 3): Scatterv
    out = np.empty(N * xs[r].size, dtype)
    got = comm.all_gather(xs[r], g, out=out)
    checks = {
        "all_gather": same_bits(comm.all_gather(xs[r], g), np.concatenate(xs)),
        "all_gather_out": got is out and same_bits(out, np.concatenate(xs)),
        "iall_gather": same_bits(comm.iall_gather(xs[r], g).wait(), np.concatenate(xs)),
        "broadcast": comm.broadcast(b, g, root=last) is b and same_bits(b, xs[last]),
        "ibroadcast": comm.ibroadcast(ib, g, root=last).wait() is ib and same_bits(ib, xs[last]),
        "gather": (same_bits(comm.gather(xs[r], g, root=0), np.concatenate(xs)) if r == 0
                   else comm.gather(xs[r], g, root=0) is None),
        "all_to_all": same_bits(comm.all_to_all(square[r], g),
                                np.concatenate(swapped)),
        "iall_to_all": same_bits(comm.iall_to_all(square[r], g).wait(),
                                 np.concatenate(swapped)),
        "all_to_allv": same_bits(comm.all_to_allv(square[r], g, [4] * N, [4] * N),
                                 np.concatenate(swapped)),
        "scatter": same_bits(comm.scatter(square if r == last else None, g, root=last),
                             square[r:r + 1]),
        "scatterv": same_bits(comm.scatter(uneven if r == last else None, g, root=last),
                              np.array_split(uneven, N)[r]),
    }
    peer = r ^ 1                                          # 0 <-> 1, 2 <-> 3 in each group
    if peer < N:
        buf, ibuf = np.zeros_like(xs[r]), np.zeros_like(xs[r])
        if r % 2 == 0:
            comm.send(xs[r], peer, g)
            comm.recv(buf, peer, g)
            comm.isend(xs[r], peer, g, tag=1).wait()
            got = comm.irecv(ibuf, peer, g, tag=1).wait()
        else:
            comm.recv(buf, peer, g)
            comm.send(xs[r], peer, g)
            got = comm.irecv(ibuf, peer, g, tag=1).wait()
            comm.isend(xs[r], peer, g, tag=1).wait()
        checks["send_recv"] = same_bits(buf, xs[peer])
        checks["isend_irecv"] = got is ibuf and same_bits(ibuf, xs[peer])
    return {f"{k}[{np.dtype(dtype).name}]": v for k, v in checks.items()}


def trace_bytes(g):
    """Bytes per element the trace records, per (op, dtype)."""
    out = {}
    for dtype in (np.float32, BF16, E4M3, E5M2):
        x = np.ones(96, dtype)
        for op, call in (("all_gather", lambda: comm.all_gather(x, g)),
                         ("broadcast", lambda: comm.broadcast(x.copy(), g)),
                         ("all_reduce", lambda: comm.all_reduce(x, g))):
            if op == "all_reduce" and np.dtype(dtype).itemsize == 1:
                continue                                  # fp8 is never summed on the wire
            trace.reset()
            call()
            [span] = [s for s in trace.spans() if s["op"] == op]
            out[f"{op}[{np.dtype(dtype).name}]"] = [span["nbytes"] / x.size,
                                                    span["bytes_sent"] / x.size]
    return out


def direct_to_mpi(g):
    """What mpi4py says when a bf16 array is handed to it as it is."""
    x = np.ones(4, BF16)
    try:
        g.mpi.Allreduce(x, np.empty_like(x))
    except BufferError as err:
        return f"BufferError: {err}"
    return "no error"


def check_all():
    world = comm.world()
    half = world.split(world.rank // 2, name="half")
    out = {"buffer_error": direct_to_mpi(world)}
    for g in (world, half):
        checks = reductions(g)
        for dtype in (BF16, E4M3, E5M2):
            checks.update(moves(g, dtype))
        out[g.name] = checks
    out["mutants"] = mutants(world)     # 2 terms round once either way: 3+ tell bf16 sums
    out["bytes"] = trace_bytes(world)
    return out
