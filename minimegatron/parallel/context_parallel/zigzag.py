"""Who holds which tokens under context parallelism: the contiguous and the zigzag split.

Causal attention is lopsided: query t looks at keys 0..t. Cut a sequence of S
tokens into cp contiguous shards and rank i's queries see the keys of ranks
0..i: rank 0 does one block of work, rank cp-1 does cp of them, and everyone
waits for the last one. The zigzag split (Megatron-LM, ring-flash-attention)
cuts the sequence into 2*cp chunks of c = S/(2cp) tokens and gives rank i

    chunks  i  and  2cp-1-i          (cp = 2: rank 0 holds 0,3 and rank 1 holds 1,2)

an early chunk (little work) and its mirror image (much work), so every rank
computes the same number of causal (query, key) pairs (``causal_pairs``):

    chunk i: c*i*c + c(c+1)/2,  chunk 2cp-1-i: c*(2cp-1-i)*c + c(c+1)/2,  sum 2cp*c^2 + c

With a contiguous split rank i computes (i+1/2)(S/cp)^2 + S/(2cp) pairs instead.
Positions 0..S-1 of each rank's tokens (``positions``) are all an attention
kernel needs to build its mask.

No communication here: index arithmetic on xp arrays, checked without MPI.
"""
from minimegatron.backend import xp

SPLITS = ("contiguous", "zigzag")


def check_split(steps, cp, split):
    """The same ValueError on every rank, before any collective, for a bad split."""
    if split not in SPLITS:
        raise ValueError(f"context parallel: split must be one of {SPLITS}, got {split!r}")
    parts = 2 * cp if split == "zigzag" else cp
    if steps % parts:
        raise ValueError(f"context parallel: a sequence of {steps} tokens does not split into "
                         f"{parts} equal chunks ({split} split over cp={cp} ranks); use a "
                         f"length divisible by {parts}")


def positions(steps, rank, cp, split):
    """Global token positions of rank ``rank``'s shard, in the order it holds them:
    contiguous, tokens i*S/cp .. (i+1)*S/cp; zigzag, chunk i then chunk 2cp-1-i of 2cp."""
    check_split(steps, cp, split)
    if split == "contiguous":
        size = steps // cp
        return xp.arange(rank * size, (rank + 1) * size)               # (S/cp,)
    # EXERCISE 8.2 begin
    size = steps // (2 * cp)                                           # c = S/(2cp) per chunk
    early, late = rank, 2 * cp - 1 - rank                              # chunk i, its mirror
    return xp.concatenate([xp.arange(early * size, (early + 1) * size),
                           xp.arange(late * size, (late + 1) * size)])   # (S/cp,)
    # EXERCISE 8.2 end


def split_sequence(x, rank, cp, split="zigzag", axis=1):
    """Rank ``rank``'s tokens of a full sequence x along ``axis``, a copy: (B, S, ...) ->
    (B, S/cp, ...), chunks i and 2cp-1-i side by side for zigzag."""
    return xp.take(x, positions(x.shape[axis], rank, cp, split), axis=axis)


def unsplit_sequence(shards, split="zigzag", axis=1):
    """The inverse: every rank's shard (in rank order) -> the full sequence along ``axis``."""
    cp = len(shards)
    steps = shards[0].shape[axis] * cp
    order = xp.concatenate([positions(steps, r, cp, split) for r in range(cp)])
    stacked = xp.concatenate(shards, axis=axis)                 # (B, S, ...) in rank order
    return xp.take(stacked, xp.argsort(order), axis=axis)       # (B, S, ...) in token order


def causal_mask(query_positions, key_positions):
    """(Tq, Tk) booleans: key position <= query position (the causal rule, any split)."""
    return key_positions[None, :] <= query_positions[:, None]


def ring_blocks(cp, split, steps=None):
    """Per rank, how many of the cp (query shard, key shard) blocks of a ring hold any
    causal pair. Contiguous: rank i needs the shards of ranks 0..i -> [1, 2, ..., cp].
    Zigzag: every shard holds an early chunk, so every block is needed -> [cp] * cp."""
    steps = 2 * cp if steps is None else steps
    pos = [positions(steps, r, cp, split) for r in range(cp)]
    return [sum(bool(causal_mask(pos[i], pos[j]).any()) for j in range(cp)) for i in range(cp)]


def causal_pairs(cp, split, steps=None):
    """Per rank, the (query, key) pairs its causal attention computes: the work.
    Zigzag gives every rank the same count; contiguous grows with the rank."""
    steps = 2 * cp if steps is None else steps
    every = xp.arange(steps)
    return [int(causal_mask(positions(steps, r, cp, split), every).sum()) for r in range(cp)]
