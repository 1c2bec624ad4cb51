"""Naming a mismatch: the slow path of checking mode, taken only when the ranks disagree.

comm_check.py's fast check (one 48-byte all-reduce) says THAT the ranks of a
group called different collectives; this module says HOW, the same way on
every rank. Each rank's call becomes one fixed row of int64, the rows are
swapped (``Allgather`` of N x 9 x 8 bytes) and compared::

    [op, dtype, root, reduce op, shape, sizes | axis, ndim, rows]
     \\_________ must be equal _____________/   \\_ compared per op _/

``shape`` is a code of what must agree: the whole shape, or for the gathers
the shape without ``axis`` (rows may differ when ``sizes`` is given; then
rank r must hold exactly sizes[r] rows; without ``sizes`` all rows are equal;
all_to_allv's rows may differ, its counts are the caller's). Scatter's
non-root ranks know no shape; its axis is compared modulo the root's ndim.
Every rank holds the same table, so every rank finds the same reason; then the
ranks swap readable descriptions (``Allgather``, 512 bytes each) and all raise
the same ``CollectiveMismatch``, naming each side: rank, op, shape, dtype,
root / reduce op, sizes and call site. A false alarm of the fast check finds
no reason here and the collective goes on.
"""
import os
import sys
import zlib

import numpy as np

from minimegatron.comm.waits import waits


class CollectiveMismatch(RuntimeError):
    """The ranks of a group called different collectives (raised on every rank)."""


# --- the row of one rank's call ------------------------------------------------------------

MAGIC = 0x5167_0000
OPS = ("all_reduce", "all_gather", "reduce_scatter", "broadcast", "reduce", "scatter",
       "gather", "barrier", "send", "all_to_all", "all_to_allv")
REDUCE_OPS = ("sum", "mean", "max", "min")
AGREE = ("the collective", "dtype", "root", "reduce op", "shape", "sizes")
AXIS, NDIM, ROWS = 6, 7, 8
WIDTH = 9
ROOTED = ("broadcast", "reduce", "scatter", "gather")
GATHERS = ("all_gather", "gather")
_codes = {}


def code(text):
    """A stable int for a string (crc32: the same in every process, unlike hash(str))."""
    if text not in _codes:
        _codes[text] = zlib.crc32(text.encode()) + 1
    return _codes[text]


def signature(op, x, root=-1, reduce_op=None, axis=0, sizes=None):
    """This rank's row (int64, WIDTH) for ``op`` on array ``x`` (None: a non-root scatter)."""
    ndim, rows, dtype, shape = -1, -1, 0, 0
    if op == "scatter":
        ndim = -1 if x is None else x.ndim       # only the root's x counts
    elif x is not None:
        dtype, ndim = code(x.dtype.str), x.ndim
        if op in GATHERS or op in ("reduce_scatter", "all_to_all", "all_to_allv"):
            axis = axis % max(ndim, 1)
        if op in GATHERS or op == "all_to_allv":          # rows along axis may differ
            shape = hash(x.shape[:axis] + x.shape[axis + 1:])
            rows = x.shape[axis] if op in GATHERS else -1
        else:
            shape = hash(tuple(x.shape))
    reduce_code = -1 if reduce_op is None else (
        REDUCE_OPS.index(reduce_op) if reduce_op in REDUCE_OPS else code(repr(reduce_op)))
    # hash() of an int tuple is the same in every process (only str/bytes hashes are salted)
    sizes_code = -1 if sizes is None else hash(tuple(int(s) for s in sizes))
    return np.array([MAGIC + OPS.index(op), dtype, root, reduce_code, shape, sizes_code,
                     axis, ndim, rows], np.int64)


def disagreement(table, op, root, sizes):
    """Why the rows of ``table`` (N, WIDTH) do not describe one legal call; "" if they do."""
    N, same = len(table), table.tobytes() == table[0].tobytes() * len(table)   # usual: same
    for col, what in enumerate(AGREE):
        if not same and (table[:, col] != table[0, col]).any():
            return f"{what} differs"
    if op in ROOTED and not 0 <= root < N:
        return f"root {root} is not a rank of this {N}-rank group"
    axes = table[:, AXIS]
    if op == "scatter" and table[root, NDIM] > 0:
        axes = axes % table[root, NDIM]
    if not same and (axes != axes[0]).any():
        return "axis differs"
    if op not in GATHERS:
        return ""
    rows = [int(r) for r in table[:, ROWS]]
    if sizes is None:
        return "row counts differ and no sizes were given" if len(set(rows)) > 1 else ""
    sizes = [int(s) for s in sizes]
    if len(sizes) != N:
        return f"sizes has {len(sizes)} entries for {N} ranks"
    return "" if rows == sizes else f"sizes {sizes} does not match the rows each rank holds {rows}"


# --- the diagnosis ---------------------------------------------------------------------------

@waits()
def diagnose(group, op, x=None, root=-1, reduce_op=None, axis=0, sizes=None):
    """The slow path: swap full rows, find the reason on every rank, raise it (or go on)."""
    row = signature(op, x, root, reduce_op, axis, sizes)
    table = np.empty((group.size, WIDTH), np.int64)
    group.mpi.Allgather(row, table)
    reason = disagreement(table, op, root, sizes)
    if reason:
        text = describe(op, x, root, reduce_op, axis, sizes) + " at " + call_site()
        raise_on_every_rank(group, reason, text)


TEXT_BYTES = 512


@waits("collective mismatch report")
def raise_on_every_rank(group, reason, text):
    """Swap every rank's text (``Allgather`` of TEXT_BYTES each) and raise one message."""
    mine, table = np.zeros(TEXT_BYTES, np.uint8), np.empty((group.size, TEXT_BYTES), np.uint8)
    encoded = text.encode()[:TEXT_BYTES]
    mine[:len(encoded)] = np.frombuffer(encoded, np.uint8)
    group.mpi.Allgather(mine, table)
    texts = [bytes(row).rstrip(b"\0").decode(errors="replace") for row in table]
    lines, seen = [], []
    for t in texts:
        if t not in seen:
            seen.append(t)
    for t in seen:
        ranks = [r for r, other in enumerate(texts) if other == t]
        world = [group.ranks[r] for r in ranks]
        who = f"rank {ranks[0]}" if len(ranks) == 1 else f"ranks {ranks}"
        lines.append(f"  {who} (world {world if len(world) > 1 else world[0]}): {t}")
    raise CollectiveMismatch(f"collective mismatch in group {group.name!r} ({reason}); "
                             "no data was moved:\n" + "\n".join(lines))


def describe(op, x, root=-1, reduce_op=None, axis=0, sizes=None):
    """One rank's call in words: 'all_gather(shape=(5, 3), dtype=float64, axis=0, sizes=...)'."""
    parts = [] if x is None else [f"shape={tuple(x.shape)}", f"dtype={x.dtype}"]
    if op in ROOTED:
        parts.append(f"root={root}")
    if reduce_op is not None:
        parts.append(f"op={reduce_op!r}")
    if op in GATHERS or op in ("reduce_scatter", "scatter", "all_to_all", "all_to_allv"):
        parts.append(f"axis={axis}")
    if op in GATHERS:
        parts.append(f"sizes={None if sizes is None else [int(s) for s in sizes]}")
    return f"{op}({', '.join(parts)})"


_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_COMM = __name__.rpartition(".")[0]          # "minimegatron.comm": the layer, not a file


def call_site():
    """'file:line' of the caller of the comm layer, plus the first frame outside minimegatron."""
    frame = sys._getframe(1)
    while frame is not None and frame.f_globals.get("__name__", "").startswith(_COMM):
        frame = frame.f_back
    inner, outer = frame, frame
    while outer is not None and os.path.abspath(outer.f_code.co_filename).startswith(
            _PACKAGE + os.sep):
        outer = outer.f_back
    if inner is None:
        return "?"
    if outer is None or outer is inner:
        return _where(inner)
    return f"{_where(inner)} (from {_where(outer)})"


def _where(frame):
    path = os.path.abspath(frame.f_code.co_filename)
    if path.startswith(_PACKAGE + os.sep):
        path = os.path.relpath(path, os.path.dirname(_PACKAGE))
    else:
        rel = os.path.relpath(path)
        path = path if rel.startswith("..") else rel
    return f"{path}:{frame.f_lineno}"
