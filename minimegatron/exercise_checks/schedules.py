"""Checks for exercises 2.x: pipeline schedules, checked as data (no MPI).

For every K stages in 1..6 and M micro-batches in 1..8, the action lists of all
stages must satisfy the invariants tests/test_schedules.py asserts: each stage
runs M forwards and M backwards, every send has its matching receive and the
lists run to the end (``simulate`` raises otherwise), the simulated bubble is
GPipe's (K-1)/(M+K-1), and the activations held at once on stage k are M for
GPipe and min(M, K-k) for 1F1B (``peak_in_flight``).

Exercise 6.1 (interleaved, v chunks): for K in 1..5, v in 1..4 and M = K, 2K,
3K, each rank runs every (micro-batch, chunk) forward once, holds at most
min(warm-up + 1, Mv) chunk activations with Megatron's warm-up
min(2(K-k-1) + (v-1)K, Mv), and the simulated idle / busy is (1/v)(K-1)/M.
"""
from fractions import Fraction

from minimegatron.exercise_checks.common import CheckFailed, expect_equal
from minimegatron.i18n import text
from minimegatron.parallel.pipeline_parallel.schedules import (bubble_formula, gpipe,
                                                               interleaved, one_f_one_b,
                                                               peak_in_flight, simulate)

GRID = [(k, m) for k in range(1, 7) for m in range(1, 9)]


def _text(actions):
    return " ".join(str(a) for a in actions)


def _micro_batches(actions, op):
    return [a.micro_batch for a in actions if a.op == op]


def _check_stage(name, actions, num_stages, num_micro_batches, stage):
    """Each micro-batch forward, then backward, in order; returns the stage's name."""
    where = text("sched.where", name=name, stages=num_stages, micro=num_micro_batches,
                 stage=stage)
    everything = list(range(num_micro_batches))
    expect_equal(text("sched.forward_order", where=where),
                 _micro_batches(actions, "forward"), everything)
    expect_equal(text("sched.backward_order", where=where),
                 _micro_batches(actions, "backward"), everything)
    for i in everything:
        if actions.index(_find(actions, "backward", i)) < actions.index(
                _find(actions, "forward", i)):
            raise CheckFailed(text("sched.backward_first", where=where, i=i,
                                   actions=_text(actions)))
    return where


def _find(actions, op, i):
    return next(a for a in actions if a.op == op and a.micro_batch == i)


def _check_schedule(name, schedule, held):
    for num_stages, num_micro_batches in GRID:
        programs = [schedule(num_stages, num_micro_batches, s) for s in range(num_stages)]
        for stage, actions in enumerate(programs):
            where = _check_stage(name, actions, num_stages, num_micro_batches, stage)
            expect_equal(text("sched.held", where=where, actions=_text(actions)),
                         peak_in_flight(actions), held(num_stages, num_micro_batches, stage))
        try:
            sim = simulate(schedule, num_stages, num_micro_batches, Fraction(1), Fraction(1))
        except RuntimeError as err:
            raise CheckFailed(text("sched.simulate", name=name, stages=num_stages,
                                   micro=num_micro_batches, error=err)) from None
        expect_equal(text("sched.bubble", name=name, stages=num_stages,
                          micro=num_micro_batches), sim.bubble_fraction,
                     bubble_formula(num_stages, num_micro_batches))
    return text("sched.pass", count=len(GRID), actions=_text(schedule(2, 3, 0)))


def check_gpipe():
    return _check_schedule("gpipe", gpipe, lambda k, m, s: m)


def check_one_f_one_b():
    return _check_schedule("one_f_one_b", one_f_one_b, lambda k, m, s: min(m, k - s))


INTERLEAVED_GRID = [(k, v, m) for k in range(1, 6) for v in range(1, 5)
                    for m in (k, 2 * k, 3 * k)]


def check_interleaved():
    for k, v, m in INTERLEAVED_GRID:
        pairs = sorted((i, c) for i in range(m) for c in range(v))
        for stage in range(k):
            actions = interleaved(k, m, stage, v)
            where = text("sched.il_where", stages=k, micro=m, chunks=v, stage=stage)
            expect_equal(text("sched.il_pairs", where=where, actions=_text(actions)),
                         sorted((a.micro_batch, a.chunk) for a in actions
                                if a.op == "forward"), pairs)
            warmup = min(2 * (k - stage - 1) + (v - 1) * k, m * v)
            expect_equal(text("sched.il_held", where=where, actions=_text(actions)),
                         peak_in_flight(actions), min(warmup + 1, m * v))
        try:
            sim = simulate(interleaved, k, m, Fraction(1), Fraction(1), num_chunks=v)
        except RuntimeError as err:
            raise CheckFailed(text("sched.simulate", name="interleaved", stages=k, micro=m,
                                   error=err)) from None
        expect_equal(text("sched.il_bubble", stages=k, micro=m, chunks=v),
                     sim.bubble_ratio, Fraction(k - 1, v * m))
    return text("sched.il_pass", count=len(INTERLEAVED_GRID),
                actions=_text(interleaved(2, 2, 0, 2)))


CHECKS = {"2.1": check_gpipe, "2.2": check_one_f_one_b, "6.1": check_interleaved}
