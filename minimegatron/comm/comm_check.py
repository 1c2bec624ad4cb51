"""Collective checking: the ranks of a group agree on a call before any data moves.

MPI trusts every rank to make the same call. When they do not, it returns
garbage (shapes (4,) vs (8,), float64 vs float32, sum vs max, two roots) or
waits forever (all_reduce against broadcast). In checking mode every
collective in collectives.py first makes ONE small blocking call, the same on
every rank whatever the collective (so two different collectives meet in it):

    Allreduce(MAX) of [key, axis >= 0, axis < 0, -key, -(axis >= 0), -(axis < 0)]

``key`` is a hash of what must agree (op, dtype, shape, root, reduce op, sizes,
axis, and rows where they must be equal); per field, max == -max(-v) = min
holds iff every rank sent the same value. Scatter's non-root ranks know no
shape: they send their raw axis in the field of its sign, the root both forms
of its axis (a and a - ndim), and a rank with nothing to say sends
``DONT_CARE``. A rank that finds a problem of its own (a root outside the
group, ``sizes`` that miss its rows) folds it into its key. Cost: one 48-byte
all-reduce; no extra round of Python tables (docs/performance.md).

Only when the fast check fails (or a rank's own problem) do the ranks swap
their full rows (``Iallgather`` of N x 9 int64)::

    [op, dtype, root, reduce op, shape, sizes | axis, ndim, rows]
     \\_________ must be equal _____________/   \\_ compared per op _/

and ``disagreement`` finds the reason on the same table on every rank (the
gathers' rows may differ when ``sizes`` is given; then rank r must hold
sizes[r] rows; scatter's axis is compared modulo the root's ndim). The ranks
then swap readable descriptions (512 bytes each) and all raise the same
``CollectiveMismatch``, naming each side: rank, op, shape, dtype, root / reduce
op, sizes and call site. A false alarm of the fast check (a hash collision the
other way round, an axis written two ways) finds no reason and goes on.

Point-to-point: ``send`` also sends a 320-byte signature (dtype, element
count, its text) on tag ``tag + TAG_SHIFT``; the receiver waits for it before
it looks at the data and raises when dtype or element count differ. Only the
receiving rank raises (a reply would make every send wait for its receiver);
the abort hook then ends the job. Wildcard sources and tags >= TAG_SHIFT are
not checked.

The switch: on by default; ``MINIMEGATRON_CHECK=0`` in the environment turns
it off at import, ``enable()`` / ``disable()`` / ``with checking(False):`` at
run time. Benchmarks call ``disable()``. Every rank must use the same mode.
The checks are not recorded in the trace.
"""
import contextlib
import os
import sys
import zlib
from array import array

import numpy as np
from mpi4py import MPI

from minimegatron.comm.polling import wait_all, waits


class CollectiveMismatch(RuntimeError):
    """The ranks of a group called different collectives (raised on every rank)."""


def _mode_from_env():
    text = os.environ.get("MINIMEGATRON_CHECK", "1").strip()
    if text not in ("0", "1"):
        raise ValueError(f"MINIMEGATRON_CHECK must be 0 or 1, got {text!r}")
    return text == "1"


_state = {"on": _mode_from_env()}


def enable():
    _state["on"] = True


def disable():
    _state["on"] = False


def enabled():
    return _state["on"]


@contextlib.contextmanager
def checking(on=True):
    """``with checking(False): ...`` runs the block with the mode set, then restores it."""
    before, _state["on"] = _state["on"], bool(on)
    try:
        yield
    finally:
        _state["on"] = before


# --- the signature row ----------------------------------------------------------------------

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


def _code(text):
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
        dtype, ndim = _code(x.dtype.str), x.ndim
        if op in GATHERS or op in ("reduce_scatter", "all_to_all", "all_to_allv"):
            axis = axis % max(ndim, 1)
        if op in GATHERS or op == "all_to_allv":          # rows along axis may differ
            shape = hash(x.shape[:axis] + x.shape[axis + 1:])
            rows = x.shape[axis] if op in GATHERS else -1
        else:
            shape = hash(tuple(x.shape))
    reduce_code = -1 if reduce_op is None else (
        REDUCE_OPS.index(reduce_op) if reduce_op in REDUCE_OPS else _code(repr(reduce_op)))
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


# --- the check before each collective -------------------------------------------------------

DONT_CARE = -(1 << 63)                  # a field this rank has no value for (int64's least)
KEY_MASK = (1 << 62) - 1
AXIS_OPS = GATHERS + ("reduce_scatter", "all_to_all", "all_to_allv")
_OP_CODES = {op: MAGIC + i for i, op in enumerate(OPS)}
_REDUCE_CODES = {op: i for i, op in enumerate(REDUCE_OPS)}
_dtype_codes = {}
_fast = array("q", [0] * 6)   # [key, axis >= 0, axis < 0, -key, -(axis >= 0), -(axis < 0)]


def fast_signature(op, x, root, reduce_op, axis, sizes, group):
    """(key, axis >= 0, axis < 0, problem): this rank's part of the fast check.

    hash() of a tuple of ints is the same in every process (only str and bytes
    hashes are salted), so strings enter as crc32 codes.
    """
    positive = negative = DONT_CARE
    dtype, shape, rows = 0, None, 0
    problem = op in ROOTED and not 0 <= root < group.size
    if op == "scatter":                          # the root's x alone has a shape
        if x is not None and x.ndim > 0:         # the root: its axis, written both ways
            positive, negative = axis % x.ndim, axis % x.ndim - x.ndim
        elif x is not None:
            positive = negative = axis
        elif axis >= 0:                          # the others: the axis in its sign's field
            positive = axis
        else:
            negative = axis
        axis = 0
    elif x is not None:
        dtype, shape = _dtype_codes.get(x.dtype) or _dtype_code(x.dtype), tuple(x.shape)
        if op in AXIS_OPS:
            axis %= max(x.ndim, 1)
        if op in GATHERS or op == "all_to_allv":          # rows along axis may differ
            rows, shape = shape[axis], shape[:axis] + shape[axis + 1:]
            if op == "all_to_allv":
                rows = 0
            elif sizes is not None:                       # then rank r holds sizes[r] rows
                problem = problem or len(sizes) != group.size or rows != sizes[group.rank]
                rows = 0
    reduce_code = -1 if reduce_op is None else (_REDUCE_CODES[reduce_op] if reduce_op in
                                                _REDUCE_CODES else _code(repr(reduce_op)))
    sizes = None if sizes is None else tuple(int(s) for s in sizes)
    key = hash((_OP_CODES[op], dtype, shape, root, reduce_code, sizes, axis, rows, problem))
    return key & KEY_MASK, positive, negative, problem


def _dtype_code(dtype):
    _dtype_codes[dtype] = _code(dtype.str)
    return _dtype_codes[dtype]


@waits()
def check(group, op, x=None, root=-1, reduce_op=None, axis=0, sizes=None):
    """Raise the same CollectiveMismatch on every rank of ``group`` unless the calls agree.

    One ``Allreduce`` (MAX) of this rank's fast signature and its negation: for
    every field, max == min on every rank iff every rank sent the same value.
    """
    if not _state["on"] or group.size == 1:
        return
    key, positive, negative, problem = fast_signature(op, x, root, reduce_op, axis, sizes,
                                                      group)
    sig = _fast
    sig[0], sig[1], sig[2] = key, positive, negative
    sig[3] = -key
    sig[4] = DONT_CARE if positive == DONT_CARE else -positive
    sig[5] = DONT_CARE if negative == DONT_CARE else -negative
    group.mpi.Allreduce(MPI.IN_PLACE, sig, op=MPI.MAX)
    if not problem and sig[0] == -sig[3] and sig[1] in (-sig[4], DONT_CARE) and \
            sig[2] in (-sig[5], DONT_CARE):
        return
    diagnose(group, op, x, root, reduce_op, axis, sizes)


@waits()
def diagnose(group, op, x=None, root=-1, reduce_op=None, axis=0, sizes=None):
    """The slow path: swap full rows, find the reason on every rank, raise it (or go on)."""
    row = signature(op, x, root, reduce_op, axis, sizes)
    table = np.empty((group.size, WIDTH), np.int64)
    group.mpi.Allgather(row, table)
    reason = disagreement(table, op, root, sizes)
    if reason:
        text = describe(op, x, root, reduce_op, axis, sizes) + " at " + call_site()
        _raise_on_every_rank(group, reason, text)


@waits()
def agree(group, what, description):
    """Raise the same CollectiveMismatch on every rank unless all hold the same description.

    One ``Allgather`` of a crc32 per rank (for example DDP's bucket layout at
    construction); the texts travel only on a mismatch, as in ``check``.
    """
    if group.size == 1:
        return
    table = np.empty(group.size, np.int64)
    group.mpi.Allgather(np.array([_code(description)], np.int64), table)
    if (table != table[0]).any():
        _raise_on_every_rank(group, f"{what} differs", f"{description} at {call_site()}")


TEXT_BYTES = 512


@waits("collective mismatch report")
def _raise_on_every_rank(group, reason, text):
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


# --- point-to-point: the receiver checks the sender's signature -------------------------------

SIG_BYTES, TEXT_AT = 320, 32
_tag_shift = []


def _check_tag(source, tag):
    """tag + TAG_SHIFT (half of MPI's TAG_UB) for a checked pair, None when not checked."""
    if not _state["on"]:
        return None
    if not _tag_shift:
        _tag_shift.append((MPI.COMM_WORLD.Get_attr(MPI.TAG_UB) + 1) // 2)
    return tag + _tag_shift[0] if 0 <= tag < _tag_shift[0] and source >= 0 else None


def _signature(x, group):
    """What a send tells its receiver: [op, dtype, element count] and a line of text."""
    sig = np.zeros(SIG_BYTES, np.uint8)
    sig[:TEXT_AT].view(np.int64)[:3] = [MAGIC + OPS.index("send"), _code(x.dtype.str), x.size]
    text = f"rank {group.rank} sent {describe('send', x)} at {call_site()}".encode()
    text = text[:SIG_BYTES - TEXT_AT]
    sig[TEXT_AT:TEXT_AT + len(text)] = np.frombuffer(text, np.uint8)
    return sig


@waits("send")
def send_signature(x, dest, group, tag):
    """Checking mode: send x's signature to ``dest`` before the data (blocking ``send``)."""
    check_tag = _check_tag(dest, tag)
    if check_tag is not None:
        group.mpi.Send(_signature(x, group), dest=dest, tag=check_tag)


def isend_signature(x, dest, group, tag):
    """Start sending x's signature to ``dest``: [(request, buffer)] for the send's Handle."""
    check_tag = _check_tag(dest, tag)
    if check_tag is None:
        return []
    sig = _signature(x, group)
    return [(group.comm.Isend(sig, dest=dest, tag=check_tag), sig)]


def _mismatch(sig, buf, group, tag, receiver):
    """The send/recv mismatch message when the sender's ``sig`` does not fit ``buf``, or ""."""
    op, dtype, size = sig[:TEXT_AT].view(np.int64)[:3]
    if (op, dtype, size) == (MAGIC + OPS.index("send"), _code(buf.dtype.str), buf.size):
        return ""
    sender = bytes(sig[TEXT_AT:]).rstrip(b"\0").decode(errors="replace")
    return (f"send/recv mismatch in group {group.name!r}, tag {tag} (dtype or element count "
            f"differs; raised by the receiver only):\n  {sender}\n  {receiver}")


@waits("recv")
def recv_signature(buf, host, source, group, tag):
    """Checking mode, before a blocking ``recv``: receive the sender's signature and raise
    CollectiveMismatch (after draining the data into ``host``) when it does not fit buf."""
    check_tag = _check_tag(source, tag)
    if check_tag is None:
        return
    sig = np.empty(SIG_BYTES, np.uint8)
    group.mpi.Recv(sig, source=source, tag=check_tag)
    message = _mismatch(sig, buf, group, tag, f"rank {group.rank} receives into "
                                              f"{describe('recv', buf)} at {call_site()}")
    if message:
        try:                                    # the data follows its signature: drain it
            group.mpi.Recv(host, source=source, tag=tag)
        except MPI.Exception:                   # e.g. MPI_ERR_TRUNCATE: explained below
            pass
        raise CollectiveMismatch(message)


class CheckedRecv:
    """A recv Handle that first waits for the sender's signature and compares it."""

    def __init__(self, handle, buf, source, group, tag):
        self.handle, self.group, self.tag, self.buf = handle, group, tag, buf
        self.text = f"rank {group.rank} receives into {describe('recv', buf)} at {call_site()}"
        self.sig = np.empty(SIG_BYTES, np.uint8)
        self.sig_request = group.comm.Irecv(self.sig, source=source,
                                            tag=_check_tag(source, tag))
        self.verified = False

    @classmethod
    def wrap(cls, handle, buf, source, group, tag):
        """``handle`` itself when this pair is not checked."""
        return handle if _check_tag(source, tag) is None else cls(handle, buf, source, group, tag)

    def __getattr__(self, name):
        return getattr(self.handle, name)

    @waits()
    def _verify(self):
        self.verified = True
        message = _mismatch(self.sig, self.buf, self.group, self.tag, self.text)
        if message:
            try:                                    # the data follows its signature: drain it
                MPI.Request.Waitall(self.handle.requests)
            except MPI.Exception:                   # e.g. MPI_ERR_TRUNCATE: explained below
                pass
            raise CollectiveMismatch(message)

    def test(self):
        if not self.verified:
            if not self.sig_request.Test():
                return False
            self._verify()
        return self.handle.test()

    @waits()
    def wait(self):
        if not self.verified:
            wait_all([self.sig_request])
            self._verify()
        return self.handle.wait()
