"""Agreed steps: a training step compares its fields once per group, not every call.

Checking mode (comm_check.py) checks every collective with one small blocking
all-reduce, and every send with a signature. A training step of the library's
trainers (``Trainer3D.train_step``, ``PipelineEngine.train_step``, a ``verify``
row) makes many collectives on a few groups, and every argument of every one
follows from the plan the ranks agreed at construction (agreement.py) and the
step's FIELDS: the step number, the batch's shapes and dtypes, the optimizer's
settings now. The same code runs on every rank. So inside
``comm_check.agreed_step(what, fields, groups, shared)``:

    at entry     each group of ``groups`` posts ``Iallreduce(MAX)`` of [key, -key]
                 (16 bytes, key = crc32 of the fields), which MPI moves while the
                 step computes
    first call   the group's first collective, send or receive waits for it
                 (usually long done) and compares, before its own data moves; its
                 later calls follow from the fields and go unchecked, and its
                 sends carry no signature (``signed``)
    at exit      the groups that made no call wait and compare theirs

``shared`` = (more fields, groups): fields only some groups' ranks hold alike, folded
into those groups' keys (a trainer's crc32 of the batch rows, ``rows_digest``, on tp,
pp and cp: the ranks of one dp slice hold the same rows; dp ranks hold others).

A rank whose fields differ makes the comparison fail on every rank of the group;
``compare_fields`` (agreement.agree_fields) then names the fields that differ.
A group not in ``groups`` gets one check at its first collective: the call's own
signature with the key folded in (``first_call``), and keeps its sends'
signatures. A nested step is covered by the outer one.

Only the plan's calls go unchecked: a collective whose first frame outside comm/ is
not in the package (a user's own call inside the step) is checked as outside any
step (``planned``), so a shorter or longer one on one rank is named, not hung or
truncated. ``every_call`` (MINIMEGATRON_CHECK=all): the fields are compared as above
and every call is checked too. Cost and figures: docs/reliability.md and
docs/performance.md, "What checking mode costs".
"""
import contextlib
import sys
import zlib

import numpy as np
from mpi4py import MPI

from minimegatron.comm.agreement import agree_fields, field_text
from minimegatron.comm.polling import wait_all
from minimegatron.comm.waits import waits

STATE = {"step": None}     # the agreed step running on this rank, or None
WHY = ("agreed once per step and group; the step's collectives follow from it and are not "
       "checked one by one")
_left_behind = []          # posted comparisons a step left on an error, with their buffers
_PACKAGE, _COMM = "minimegatron.", "minimegatron.comm"


def rows_digest(*arrays):
    """crc32 of the arrays' bytes, their shapes and dtypes: what ranks that must hold the
    same rows compare (about 1 GB/s, docs/reliability.md); None stays None."""
    crc = 0
    for array in arrays:
        if array is None:
            continue
        array = np.ascontiguousarray(array.get() if hasattr(array, "get") else array)
        crc = zlib.crc32(f"{array.shape}{array.dtype.str}".encode(), crc)
        crc = zlib.crc32(array.reshape(-1).view(np.uint8), crc)
    return crc


@contextlib.contextmanager
def step(what, fields, groups=(), shared=None, every_call=False):
    """Run the block as one agreed step (module docstring); nested: covered by the outer.
    ``shared``: (more fields, the groups whose ranks hold them alike), e.g. a digest of the
    batch's rows on tp, pp and cp; those groups compare them with ``fields``.
    ``every_call`` (MINIMEGATRON_CHECK=all): the fields are compared, and every call too."""
    if STATE["step"] is not None:
        yield
        return
    more, sharing = shared or ({}, ())
    wide = {**fields, **more}
    of = {id(g): wide for g in sharing}
    posted = {}
    for group in (*groups, *sharing):
        if group.size > 1 and id(group) not in posted:
            text = field_text(of.get(id(group), fields))
            posted[id(group)] = (group, *post_step_check(group, zlib.crc32(text.encode())))
    now = STATE["step"] = {"what": what, "fields": fields, "of": of, "checked": set(),
                           "key": zlib.crc32(field_text(fields).encode()), "posted": posted,
                           "groups": set(posted), "every_call": every_call}
    try:
        yield
        for group, request, sig in list(posted.values()):   # groups that made no call
            finish_step_check(now, group)
    finally:
        STATE["step"] = None
        _left_behind.extend(posted.values())   # after an error: MPI may still write them
        _left_behind[:] = [(g, r, b) for g, r, b in _left_behind if not r.Test()]


def post_step_check(group, key):
    """Start this group's comparison of the step's key: (request, its buffer)."""
    sig = np.array([key, -key], np.int64)
    return group.comm.Iallreduce(MPI.IN_PLACE, sig, op=MPI.MAX), sig


@waits("step agreement")
def finish_step_check(now, group):
    """Wait for the group's posted comparison; on a mismatch every rank of the group raises
    the same CollectiveMismatch naming the fields that differ."""
    _, request, sig = now["posted"].pop(id(group))
    wait_all([request])
    if sig[0] != -sig[1]:
        compare_fields(now, group)


def compare_fields(now, group):
    """The slow path: every rank of ``group`` raises the same CollectiveMismatch naming the
    step's fields that differ (agreement.agree_fields); returns if none does."""
    agree_fields(group, now["what"], now["of"].get(id(group), now["fields"]), why=WHY)


def planned():
    """True when the collective being made comes from the library (a trainer's plan, which
    the step's fields decide), False from a user's own code inside the step: the first
    frame outside comm/ tells (a few frames walked, well under a microsecond each)."""
    frame = sys._getframe(1)
    while frame is not None and frame.f_globals.get("__name__", "").startswith(_COMM):
        frame = frame.f_back
    return frame is not None and frame.f_globals.get("__name__", "").startswith(_PACKAGE)


def first_call(now, group):
    """What a collective on ``group`` inside step ``now`` still checks: None for nothing (a
    later call of the plan, or the group's posted comparison, waited for here), else a
    number to fold into the call's own check: the step's key at a group's first call
    when the step did not post the group, 0 for a call checked as outside any step (a
    user's own collective inside the step, or every call under MINIMEGATRON_CHECK=all)."""
    fold = None
    if id(group) not in now["checked"]:
        now["checked"].add(id(group))
        if id(group) in now["posted"]:
            finish_step_check(now, group)
        else:
            fold = now["key"]
    if fold is None and (now["every_call"] or not planned()):
        return 0                                 # checked as a call of its own
    return fold


def signed(group):
    """True when a send or receive on ``group`` carries a signature now: False inside an
    agreed step that posted the group's fields, for the plan's sends (the group's first
    send or receive waits for them instead, before its data moves; both sides are in the
    same step); a user's own send or receive there, or any under MINIMEGATRON_CHECK=all,
    is signed as outside a step."""
    now = STATE["step"]
    if now is None or id(group) not in now["groups"]:
        return True
    if id(group) in now["posted"]:
        now["checked"].add(id(group))
        finish_step_check(now, group)
    return now["every_call"] or not planned()
