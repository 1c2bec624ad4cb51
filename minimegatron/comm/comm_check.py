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

Only when the fast check fails (or a rank finds a problem of its own) do the
ranks take the slow path, mismatch.py: they swap their full rows, find the
reason on the same table and all raise the same ``CollectiveMismatch``, naming
each side (rank, op, shape, dtype, root / reduce op, sizes, call site). A false
alarm of the fast check (a hash collision the other way round, an axis written
two ways) finds no reason there and the collective goes on.

``all_to_allv`` adds ``check_counts`` after the fast check: one ``Allgather`` of
every rank's send and receive sizes (2N int64 each), so every rank can see that
what rank i sends to j is what j expects from i; otherwise MPI fills the missing
rows with whatever memory held (more expected) or fails with a raw MPI_ERR_TRUNCATE
(fewer expected). A disagreement raises on every rank, naming both sides.

Point-to-point: ``send`` also sends a 320-byte signature (dtype, element
count, its text) on tag ``tag + TAG_SHIFT``; the receiver waits for it before
it looks at the data and raises when dtype or element count differ. Only the
receiving rank raises (a reply would make every send wait for its receiver);
the abort hook then ends the job. Wildcard sources and tags >= TAG_SHIFT are
not checked.

Agreed steps (``agreed_step``, agreed_steps.py): a library trainer's step compares its
fields (step number, batch shapes, the optimizer's settings, a digest of the rows the
group's ranks share) once per group instead of checking every call; a user's own call
inside the step is checked as any other. ``MINIMEGATRON_CHECK=all`` compares the fields
and checks every call, also inside a step.

The switch: on by default; ``MINIMEGATRON_CHECK=0`` in the environment turns
it off at import, ``enable()`` / ``disable()`` / ``with checking(False):`` at run time.
Benchmarks call ``disable()``. Every rank must use the same mode.
The checks are not recorded in the trace.
"""
import contextlib
import os
import zlib
from array import array

import numpy as np
from mpi4py import MPI

from minimegatron.comm import agreed_steps
from minimegatron.comm.mismatch import (GATHERS, MAGIC, OPS, REDUCE_OPS, ROOTED,
                                        CollectiveMismatch, call_site, code, describe,
                                        diagnose, raise_on_every_rank)
from minimegatron.comm.polling import wait_all
from minimegatron.comm.waits import waits


def _mode_from_env():
    """(on, steps) from MINIMEGATRON_CHECK: "1" (default) on with agreed steps, "all" on
    with every call checked, "0" off."""
    text = os.environ.get("MINIMEGATRON_CHECK", "1").strip()
    if text not in ("0", "1", "all"):
        raise ValueError(f"MINIMEGATRON_CHECK must be 0, 1 or all, got {text!r}")
    return text != "0", text != "all"


_on, _steps = _mode_from_env()
_state = {"on": _on, "steps": _steps}


def enable():
    _state["on"] = True


def disable():
    _state["on"] = False


def enabled():
    return _state["on"]


@contextlib.contextmanager
def checking(on=True, steps=None):
    """``with checking(False): ...`` runs the block with the mode set, then restores it;
    ``steps=False``: every call is checked, also inside an agreed step."""
    before = dict(_state)
    _state["on"] = bool(on)
    if steps is not None:
        _state["steps"] = bool(steps)
    try:
        yield
    finally:
        _state["on"], _state["steps"] = before["on"], before["steps"]


def agreed_step(what, fields, groups=(), shared=None):
    """``with agreed_step(what, fields, groups):`` runs the block as one agreed step
    (agreed_steps.py: ``fields`` compared once per group, and ``shared`` = (fields, groups)
    on those groups, the plan's later calls not checked; a user's own call is). Under
    MINIMEGATRON_CHECK=all the fields are compared and every call is checked too."""
    if not _state["on"]:
        return contextlib.nullcontext()
    return agreed_steps.step(what, fields, groups, shared, every_call=not _state["steps"])


# --- the check before each collective -------------------------------------------------------

DONT_CARE = -(1 << 63)                  # a field this rank has no value for (int64's least)
KEY_MASK = (1 << 62) - 1
AXIS_OPS = frozenset(GATHERS + ("reduce_scatter", "all_to_all", "all_to_allv"))
ROWS_OPS = frozenset(GATHERS + ("all_to_allv",))     # rows along the axis may differ
ROOTED_OPS = frozenset(ROOTED)
_OP_CODES = {op: MAGIC + i for i, op in enumerate(OPS)}
_REDUCE_CODES = {op: i for i, op in enumerate(REDUCE_OPS)}
_fast = array("q", [0] * 6)   # [key, axis >= 0, axis < 0, -key, -(axis >= 0), -(axis < 0)]


def fast_signature(op, x, root, reduce_op, axis, sizes, group):
    """(key, axis >= 0, axis < 0, problem): this rank's part of the fast check.

    hash() of a tuple of ints is the same in every process, but not of str and
    bytes (salted) nor of None (its address, before Python 3.12): names enter as
    numbers (the dtype as numpy's type number), a missing value as -1.
    """
    positive = negative = DONT_CARE
    dtype, shape, rows = -1, (), 0
    problem = op in ROOTED_OPS and not 0 <= root < group.size
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
        dtype, shape = dtype_code(x.dtype), x.shape
        if op in AXIS_OPS and axis:
            axis %= max(x.ndim, 1)
        if op in ROWS_OPS:                                # rows along axis may differ
            rows, shape = shape[axis], (shape[1:] if axis == 0 else
                                        shape[:axis] + shape[axis + 1:])
            if op == "all_to_allv":
                rows = 0
            elif sizes is not None:                       # then rank r holds sizes[r] rows
                problem = problem or len(sizes) != group.size or rows != sizes[group.rank]
                rows = 0
    reduce_code = -1 if reduce_op is None else (_REDUCE_CODES[reduce_op] if reduce_op in
                                                _REDUCE_CODES else code(repr(reduce_op)))
    sizes = -1 if sizes is None else tuple(int(s) for s in sizes)
    key = hash((_OP_CODES[op], dtype, shape, root, reduce_code, sizes, axis, rows, problem))
    return key & KEY_MASK, positive, negative, problem


_dtype_codes = {}


def dtype_code(dtype):
    """The same int in every process for the same dtype (numpy's type number, size, order);
    computed once per dtype."""
    code = _dtype_codes.get(dtype)
    if code is None:
        code = _dtype_codes[dtype] = hash((dtype.num, dtype.itemsize, dtype.isnative))
    return code


@waits()
def check(group, op, x=None, root=-1, reduce_op=None, axis=0, sizes=None):
    """Raise the same CollectiveMismatch on every rank of ``group`` unless the calls agree.

    One ``Allreduce`` (MAX) of this rank's fast signature and its negation: for
    every field, max == min on every rank iff every rank sent the same value.
    """
    if not _state["on"] or group.size == 1:
        return
    step = agreed_steps.STATE["step"]
    if step is not None:                         # an agreed step: the group's first call only
        fold = agreed_steps.first_call(step, group)
        if fold is None:
            return
    key, positive, negative, problem = fast_signature(op, x, root, reduce_op, axis, sizes,
                                                      group)
    if step is not None:
        key = hash((key, fold)) & KEY_MASK
    sig = _fast
    sig[0], sig[1], sig[2] = key, positive, negative
    sig[3] = -key
    sig[4] = DONT_CARE if positive == DONT_CARE else -positive
    sig[5] = DONT_CARE if negative == DONT_CARE else -negative
    group.mpi.Allreduce(MPI.IN_PLACE, sig, op=MPI.MAX)
    if not problem and sig[0] == -sig[3] and sig[1] in (-sig[4], DONT_CARE) and \
            sig[2] in (-sig[5], DONT_CARE):
        return
    if step is not None:                         # the step's fields first, then the call
        agreed_steps.compare_fields(step, group)
    diagnose(group, op, x, root, reduce_op, axis, sizes)


@waits()
def agree(group, what, description):
    """Raise the same CollectiveMismatch on every rank unless all hold the same description.

    One ``Allgather`` of a crc32 per rank (for example DDP's bucket layout at
    construction); the texts travel only on a mismatch, as in ``check``.
    """
    if group.size == 1:
        return
    table = np.empty(group.size, np.int64)
    group.mpi.Allgather(np.array([zlib.crc32(description.encode())], np.int64), table)
    if (table != table[0]).any():
        raise_on_every_rank(group, f"{what} differs", f"{description} at {call_site()}")


@waits("all_to_allv counts")
def check_counts(group, x, send_sizes, recv_sizes, axis=0):
    """all_to_allv: raise the same CollectiveMismatch on every rank unless what rank i
    sends to rank j (``send_sizes[j]`` on i) is what j expects from i (``recv_sizes[i]``
    on j), naming both sides. One ``Allgather`` of 2N int64 per rank: every rank holds
    S and R (N x N) and checks S[i, j] == R[j, i] for every pair, on the same table."""
    if not _state["on"] or group.size == 1:
        return
    N = group.size
    table = np.empty((N, 2, N), np.int64)
    group.mpi.Allgather(np.array([send_sizes, recv_sizes], np.int64), table)
    sends, expects = table[:, 0, :], table[:, 1, :].T      # S[i, j], R[j, i] at [i, j]
    wrong = np.argwhere(sends != expects)
    if len(wrong):
        pairs = [f"rank {i} sends {sends[i, j]} rows to rank {j}, rank {j} expects "
                 f"{expects[i, j]} from rank {i}" for i, j in wrong[:4]]
        more = f" (and {len(wrong) - 4} more pairs)" if len(wrong) > 4 else ""
        text = (f"{describe('all_to_allv', x, axis=axis)} with send_sizes={list(send_sizes)}, "
                f"recv_sizes={list(recv_sizes)} at {call_site()}")
        raise_on_every_rank(group, "all_to_allv counts differ: " + "; ".join(pairs) + more,
                            text)


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
    sig[:TEXT_AT].view(np.int64)[:3] = [MAGIC + OPS.index("send"), dtype_code(x.dtype), x.size]
    text = f"rank {group.rank} sent {describe('send', x)} at {call_site()}".encode()
    text = text[:SIG_BYTES - TEXT_AT]
    sig[TEXT_AT:TEXT_AT + len(text)] = np.frombuffer(text, np.uint8)
    return sig


@waits("send")
def send_signature(x, dest, group, tag):
    """Checking mode: send x's signature to ``dest`` before the data (blocking ``send``)."""
    check_tag = _check_tag(dest, tag) if agreed_steps.signed(group) else None
    if check_tag is not None:
        group.mpi.Send(_signature(x, group), dest=dest, tag=check_tag)


def isend_signature(x, dest, group, tag):
    """Start sending x's signature to ``dest``: [(request, buffer)] for the send's Handle."""
    check_tag = _check_tag(dest, tag) if agreed_steps.signed(group) else None
    if check_tag is None:
        return []
    sig = _signature(x, group)
    return [(group.comm.Isend(sig, dest=dest, tag=check_tag), sig)]


def _mismatch(sig, buf, group, tag, receiver):
    """The send/recv mismatch message when the sender's ``sig`` does not fit ``buf``, or ""."""
    op, dtype, size = sig[:TEXT_AT].view(np.int64)[:3]
    if (op, dtype, size) == (MAGIC + OPS.index("send"), dtype_code(buf.dtype),
                             buf.size):
        return ""
    sender = bytes(sig[TEXT_AT:]).rstrip(b"\0").decode(errors="replace")
    return (f"send/recv mismatch in group {group.name!r}, tag {tag} (dtype or element count "
            f"differs; raised by the receiver only):\n  {sender}\n  {receiver}")


@waits("recv")
def recv_signature(buf, host, source, group, tag):
    """Checking mode, before a blocking ``recv``: receive the sender's signature and raise
    CollectiveMismatch (after draining the data into ``host``) when it does not fit buf."""
    check_tag = _check_tag(source, tag) if agreed_steps.signed(group) else None
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
