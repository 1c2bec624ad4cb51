"""Who holds which rows: the one slicing rule every scheme uses.

An axis of n entries split over N ranks (n a multiple of N) gives rank r

    rows  r*n/N .. (r+1)*n/N                                   (``row_slice``)

the same rule for a batch over dp ranks (``shard_batch``), a batch over M
micro-batches, a weight's columns or rows over tp ranks, the vocabulary, and
ZeRO's flat parameter buffer. Where n is not a multiple of N, pad first:

    padded(n, N) = ceil(n / N) * N        (zeros appended: ``pad``)

ZeRO pads its flat buffer, tensor parallelism the vocabulary. The uneven
alternative, array_split (the first n mod N ranks get one row more), is
``comm.chunk_sizes``: the collectives use it for uneven buffers and the
pipeline for layers per stage; it lives in comm/ because comm imports
nothing from parallel/. Both rules agree when N divides n.

``flatten``/``unflatten`` turn a list of arrays into one contiguous buffer
and back (views), so one collective moves every parameter. No communication
here: pure index arithmetic on xp arrays.
"""
import math

from minimegatron.backend import xp


def padded(n, parts):
    """n rounded up to a multiple of parts, so every rank gets an equal slice."""
    return -(-n // parts) * parts


def pad(full, axis, parts):
    """Append zeros along ``axis`` up to a multiple of ``parts`` (no copy when none needed)."""
    extra = padded(full.shape[axis], parts) - full.shape[axis]
    if extra == 0:
        return full
    widths = [(0, 0)] * full.ndim
    widths[axis] = (0, extra)
    return xp.pad(full, widths)


def row_slice(n, rank, parts):
    """slice(r*n/N, (r+1)*n/N): rank ``rank``'s rows of ``n`` split over ``parts`` ranks.

    The caller checks that ``parts`` divides ``n`` (with its own message).
    """
    size = n // parts
    return slice(rank * size, (rank + 1) * size)


def rows_of(a, rank, parts, axis=0):
    """Rank ``rank``'s slice of ``a`` along ``axis`` (a view): the rule above."""
    index = [slice(None)] * a.ndim
    index[axis] = row_slice(a.shape[axis], rank, parts)
    return a[tuple(index)]


def check_divisible(batch_size, group, name="batch"):
    """ValueError (the same on every rank) unless the group's size divides the batch."""
    if batch_size % group.size:
        raise ValueError(f"{name} of {batch_size} rows does not split evenly over the "
                         f"{group.size} ranks of group {group.name!r}: use a batch size "
                         f"divisible by {group.size}")


def shard_batch(batch, group, name="batch"):
    """Rows r*B/N .. (r+1)*B/N of a batch every rank holds; ValueError if N does not divide B.

    Equal shards make the mean of the per-rank mean losses the mean over the
    whole batch, which is what makes data parallel training equal one process.
    """
    check_divisible(batch.shape[0], group, name)
    return rows_of(batch, group.rank, group.size)                     # (B/N, ...)


def flatten(arrays, dtype):
    """One contiguous 1-D buffer holding every array, in order."""
    return xp.concatenate([xp.ravel(a) for a in arrays]).astype(dtype, copy=False)


def unflatten(flat, shapes):
    """Views of ``flat``, one per shape, in order (the inverse of ``flatten``)."""
    out, offset = [], 0
    for shape in shapes:
        size = math.prod(shape)
        out.append(flat[offset:offset + size].reshape(shape))
        offset += size
    return out
