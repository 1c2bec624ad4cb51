"""Runs on 8 ranks (tests/test_agreed_step.py): checking mode's agreed steps.

A 3D step (dp 2 x pp 2 x tp 2, so every group is a strict subset of the world) as an
agreed step checks each group's FIRST collective only, with the step's fields folded
in; ``MINIMEGATRON_CHECK=all`` (``checking(True, steps=False)``) checks every call. The
numbers must not depend on the mode, and every mismatch must still be named.
"""
import types
from dataclasses import replace

import numpy as np

from minimegatron import comm
from minimegatron.comm import agreed_steps, comm_check
from minimegatron.data.datasets import CharTokenizer, text_batches, tiny_corpus
from minimegatron.data.demo import DEMO_CONFIG
from minimegatron.optim import AdamW
from minimegatron.parallel.grid import ProcessGrid
from minimegatron.parallel.threed import Trainer3D
from mismatch_checks import outcome            # the CollectiveMismatch text, or "no error"

STEPS, BATCH = 3, 8
MODES = {"off": dict(on=False), "agreed": dict(on=True, steps=True),
         "all": dict(on=True, steps=False)}


def setup():
    corpus = tiny_corpus()
    tokenizer = CharTokenizer(corpus)
    config = replace(DEMO_CONFIG, vocab_size=tokenizer.vocab_size, seq_len=16, n_layer=2)
    return config, tokenizer.encode(corpus)


def trainer(config, grid):
    return Trainer3D(config, grid, micro_batches=2,
                     optimizer_fn=lambda params: AdamW(params, lr=1e-2, weight_decay=0.0))


def counting(seen):
    """Wrap the checks (comm_check, agreed_steps): append "call <group>" for every 48-byte per-call check
    (fast_signature), "step <group>" for every step comparison posted on a group and
    "sign <group>" for every send's signature."""
    fast, post, sign = comm_check.fast_signature, agreed_steps.post_step_check, \
        comm_check._signature

    def signature(x, group):
        seen.append(f"sign {group.name}")
        return sign(x, group)

    def counted(op, x, root, reduce_op, axis, sizes, group):
        seen.append(f"call {group.name}")
        return fast(op, x, root, reduce_op, axis, sizes, group)

    def posted(group, key):
        seen.append(f"step {group.name}")
        return post(group, key)
    comm_check.fast_signature, agreed_steps.post_step_check = counted, posted
    comm_check._signature = signature
    return fast, post, sign


def restore(saved):
    comm_check.fast_signature, agreed_steps.post_step_check, comm_check._signature = saved


def check_all():
    config, ids = setup()
    grid = ProcessGrid(2, 2, 2)
    out = {}
    seen = []
    saved = counting(seen)
    for mode, switches in MODES.items():
        t = trainer(config, grid)
        losses, checks = [], []
        for step in range(STEPS):
            x, y = text_batches(ids, BATCH, config.seq_len, seed=config.seed, step=step)
            del seen[:]
            with comm_check.checking(**switches):
                losses.append(t.train_step(x, y))
            checks.append(list(seen))
        weights = {name: p.data.tolist() for name, p in t.named_parameters()}
        out[mode] = {"losses": losses, "checks": checks, "weights": weights}
    restore(saved)

    tp, world = grid.tp, comm.world()
    last = tp.rank == tp.size - 1
    with comm_check.checking(True, steps=True):
        out["first_call_shape"] = outcome(lambda: _in_step(
            {"step": 1}, lambda: comm.all_reduce(np.ones(8 if last else 4), tp)))
        out["fields"] = outcome(lambda: _in_step(
            {"step": 2 if last else 1, "inputs": (8, 16)},
            lambda: comm.all_reduce(np.ones(4), tp)))
        out["fields_value"] = _in_step(
            {"step": 1}, lambda: comm.all_reduce(np.full(2, float(tp.rank)), tp)).tolist()
        for where, run in (("checked_in_one_step", as_library(_calls_in_steps)),
                           ("user_calls_in_one_step", _calls_in_steps)):
            seen = []
            saved = counting(seen)
            run(grid, last)
            out[where] = list(seen)
            restore(saved)
        out["posted_fields"] = outcome(lambda: _posted_step(
            {"step": 2 if last else 1}, (grid.pp, tp), lambda: comm.all_reduce(np.ones(4), tp)))
        out["posted_unused"] = outcome(lambda: _posted_step(     # tp makes no collective:
            {"step": 2 if last else 1}, (tp,), lambda: None))    # compared at the exit
    with comm_check.checking(True, steps=False):
        out["later_call_all_mode"] = outcome(lambda: _in_step({"step": 1}, lambda: (
            comm.all_reduce(np.ones(4), tp), comm.all_reduce(np.ones(8 if last else 4), tp))))
    comm.barrier(world)
    return out


def _calls_in_steps(grid, last):
    """Two steps of collectives: one that posts nothing, one that posts tp and pp around a
    nested step (covered by the outer) and a call on dp (not posted: its first call)."""
    tp = grid.tp
    _in_step({"step": 1}, lambda: [comm.all_reduce(np.ones(3), g)      # nothing posted:
                                  for g in (tp, tp, grid.dp, tp, grid.pp, grid.dp)])
    with comm_check.agreed_step("outer", {"step": 1}, groups=(tp, grid.pp)):
        with comm_check.agreed_step("inner", {"step": 7 if last else 1}):  # covered
            comm.all_reduce(np.ones(3), tp)
        comm.all_reduce(np.ones(3), tp)
        comm.all_reduce(np.ones(3), grid.dp)                  # not posted: first call


def as_library(fn):
    """``fn`` with its globals named as a module of the package, as a trainer's code is:
    its collectives are the step's plan (agreed_steps.planned), checked at each group's
    first call only; the same code from a user's module is checked at every call."""
    names = {**fn.__globals__, "__name__": "minimegatron.stand_in_trainer"}  # its lambdas too
    return types.FunctionType(fn.__code__, names, fn.__name__, fn.__defaults__,
                              fn.__closure__)


def _in_step(fields, fn):
    with comm_check.agreed_step("the step's inputs", fields):
        return fn()


def _posted_step(fields, groups, fn):
    with comm_check.agreed_step("the step's inputs", fields, groups=groups):
        return fn()


def uneven_batch(odd_rank):
    """World rank ``odd_rank`` passes half the sequence: rank 1 (stage 0, tp partner of
    rank 0) differs at tp0's first collective; rank 5 (stage 1) at its first receive on
    pp1, from rank 1, before that message moves. The job ends naming the fields."""
    config, ids = setup()
    grid = ProcessGrid(2, 2, 2)
    t = trainer(config, grid)
    x, y = text_batches(ids, BATCH, config.seq_len, seed=config.seed, step=0)
    if comm.world().rank == odd_rank:
        x, y = x[:, :8], y[:, :8]
    t.train_step(x, y)
