"""Agreed steps: a training step compares its fields once per group, not every call.

Checking mode (comm_check.py) checks every collective with one small blocking
all-reduce, and every send with a signature. A training step of the library's
trainers (``Trainer3D.train_step``, ``PipelineEngine.train_step``, a ``verify``
row) makes many collectives on a few groups, and every argument of every one
follows from the plan the ranks agreed at construction (agreement.py) and the
step's FIELDS: the step number, the batch's shapes and dtypes. The same code
runs on every rank. So inside ``comm_check.agreed_step(what, fields, groups)``:

    at entry     each group of ``groups`` posts ``Iallreduce(MAX)`` of [key, -key]
                 (16 bytes, key = crc32 of the fields), which MPI moves while the
                 step computes
    first call   the group's first collective, send or receive waits for it
                 (usually long done) and compares, before its own data moves; its
                 later calls follow from the fields and go unchecked, and its
                 sends carry no signature (``signed``)
    at exit      the groups that made no call wait and compare theirs

A rank whose fields differ makes the comparison fail on every rank of the group;
``compare_fields`` (agreement.agree_fields) then names the fields that differ.
A group not in ``groups`` gets one check at its first collective: the call's own
signature with the key folded in (``first_call``), and keeps its sends'
signatures. A nested step is covered by the outer one. Cost and figures:
docs/performance.md, "What checking mode costs".
"""
import contextlib
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


@contextlib.contextmanager
def step(what, fields, groups=()):
    """Run the block as one agreed step (module docstring); nested: covered by the outer."""
    if STATE["step"] is not None:
        yield
        return
    key = zlib.crc32(field_text(fields).encode())
    posted = {}
    for group in groups:
        if group.size > 1 and id(group) not in posted:
            posted[id(group)] = (group, *post_step_check(group, key))
    now = STATE["step"] = {"what": what, "fields": fields, "key": key, "checked": set(),
                           "posted": posted, "groups": set(posted)}
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
    agree_fields(group, now["what"], now["fields"], why=WHY)


def first_call(now, group):
    """What a collective on ``group`` inside step ``now`` still checks: None for nothing (a
    later call, or the group's posted comparison, waited for here), else the step's key to
    fold into the call's own check (a group the step did not post)."""
    if id(group) in now["checked"]:
        return None
    now["checked"].add(id(group))
    if id(group) in now["posted"]:
        finish_step_check(now, group)
        return None
    return now["key"]


def signed(group):
    """True when a send or receive on ``group`` carries a signature now: False inside an
    agreed step that posted the group's fields (the group's first send or receive waits
    for them instead, before its data moves; both sides are in the same step)."""
    now = STATE["step"]
    if now is None or id(group) not in now["groups"]:
        return True
    if id(group) in now["posted"]:
        now["checked"].add(id(group))
        finish_step_check(now, group)
    return False
