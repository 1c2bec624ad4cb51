"""Exercise 9.2, zero-bubble pipelines: the W steps of ZB-H1; its evidence.

9.2, the W steps of ZB-H1 (``_split_backward`` in
parallel/pipeline_parallel/zero_bubble.py). The student side returns every
stage's list of ``zb_h1`` for (K, M) settings drawn from the seed, and of
``zb_h2`` (the same code, other warm-up and cap). The judge reads them as data
(it never calls a schedule) and simulates them itself:

    once      every micro-batch's W exactly once on every stage, and without the W's
              the list is 1F1B's (same F, B and messages)
    after_b   each W after its own B
    memory    at most K micro-batches held (F done, W not): 1F1B's peak
    bubble    simulated bubble at most (K-1)(T_F+T_B-T_W), below 1F1B's
              (K-1)(T_F+T_B+T_W), at T_W = T_F and T_W = T_F/2
    h2        the same code under ZB-H2's warm-up and cap: W's once and after their B,
              at most 2K-1 held, bubble at most (K-1)(T_F+T_B-2T_W)

Exercise 9.1, the backward split into B and W, is zb_split.py.
"""
from fractions import Fraction

import numpy as np

from minimegatron.classroom.exercise_checks.common import CheckFailed
from minimegatron.classroom.exercise_checks.lesson import Lesson, Point
from minimegatron.i18n import text

SHOWN = 24


def _rng(seed, *tag):
    return np.random.default_rng([seed, 9, *tag])      # the same draws as zb_split.py's


def h1_settings(seed):
    """[(K, M)], M >= K: edge cases, then four drawn from the seed (two past K = 5)."""
    rng = _rng(seed, 2)
    drawn = []
    for low, high in ((2, 6), (2, 6), (6, 9), (6, 9)):
        k = int(rng.integers(low, high))
        drawn.append((k, k + int(rng.integers(0, 8))))
    return [(1, 1), (1, 3), (2, 2), (4, 4), (3, 7)] + drawn


def h2_settings(seed):
    """[(K, M)], M >= 2K - 1: edge cases, then three drawn from the seed."""
    rng = _rng(seed, 3)
    drawn = []
    for _ in range(3):
        k = int(rng.integers(2, 7))
        drawn.append((k, 2 * k - 1 + int(rng.integers(0, 6))))
    return [(1, 1), (2, 3), (3, 5), (4, 9)] + drawn


def collect_schedules(group, seed):
    """Every stage's list of the student's zb_h1 and zb_h2, for each setting."""
    from minimegatron.parallel.pipeline_parallel.zero_bubble import zb_h1, zb_h2
    out = {}
    for name, schedule, settings in (("zb-h1", zb_h1, h1_settings),
                                     ("zb-h2", zb_h2, h2_settings)):
        out[name] = [{"stages": k, "micro": m,
                      "programs": [[[a.op, a.micro_batch, a.chunk] for a in schedule(k, m, s)]
                                   for s in range(k)]} for k, m in settings(seed)]
    return out


def _where(name, run, stage):
    return text("sched.where", name=name, stages=run["stages"], micro=run["micro"], stage=stage)


def _show(actions):
    return " ".join(str(a) for a in actions[:SHOWN]) + (" ..." if len(actions) > SHOWN else "")


def _programs(name, run):
    """The grader's own Actions for every stage of one run; CheckFailed for anything else."""
    from minimegatron.parallel.pipeline_parallel.actions import OPS, Action
    most = 60 * run["micro"] + 60
    if len(run["programs"]) != run["stages"]:
        raise CheckFailed(text("sched.stage_count", stages=run["stages"],
                               got=len(run["programs"])))
    programs = []
    for stage, raw in enumerate(run["programs"]):
        if len(raw) > most:
            raise CheckFailed(text("sched.too_long", where=_where(name, run, stage),
                                   count=len(raw), most=most))
        actions = []
        for item in raw:
            if not (isinstance(item, list) and len(item) == 3 and item[0] in OPS
                    and type(item[1]) is int and item[2] is None):
                raise CheckFailed(text("sched.bad_action", where=_where(name, run, stage),
                                       item=repr(item)))
            actions.append(Action(item[0], item[1]))
        programs.append(actions)
    return programs


def _runs_of(evidence, name, seed):
    """[(run, programs)] once the settings are the ones the judge draws from the seed."""
    want = [list(s) for s in (h1_settings if name == "zb-h1" else h2_settings)(seed)]
    got = [[run["stages"], run["micro"]] for run in evidence[name]]
    if got != want:
        raise CheckFailed(text("sched.settings", got=got, want=want))
    return [(run, _programs(name, run)) for run in evidence[name]]


def _check_once(name, run, programs):
    """Every W once, and without them the list is 1F1B's with this warm-up (messages too)."""
    from minimegatron.classroom.exercise_checks.schedules import one_f_one_b_order, with_messages
    k, m = run["stages"], run["micro"]
    for stage, actions in enumerate(programs):
        where = _where(name, run, stage)
        weights = sorted(a.micro_batch for a in actions if a.op == "weight")
        if weights != list(range(m)):
            raise CheckFailed(text("zb.w_once", where=where, got=weights, m=m,
                                   actions=_show(actions)))
        warmup = min(k - stage, m) if name == "zb-h1" else min(2 * (k - stage) - 1, m)
        want = with_messages(k, stage, one_f_one_b_order(m, max(warmup - 1, 0)))
        rest = [a for a in actions if a.op != "weight"]
        if rest != want:
            raise CheckFailed(text("zb.not_1f1b", where=where, got=_show(rest),
                                   want=_show(want)))


def _check_after_b(name, run, programs):
    for stage, actions in enumerate(programs):
        done = set()
        for a in actions:
            if a.op == "backward":
                done.add(a.micro_batch)
            elif a.op == "weight" and a.micro_batch not in done:
                raise CheckFailed(text("zb.w_first", where=_where(name, run, stage),
                                       step=str(a), actions=_show(actions)))


def _held(actions):
    """Most micro-batches whose F is done and W is not, at once (a W-less list: all of them)."""
    held = peak = 0
    for a in actions:
        held += (a.op == "forward") - (a.op == "weight")
        peak = max(peak, held)
    return peak


def _check_memory(name, run, programs, most):
    for stage, actions in enumerate(programs):
        held = _held(actions)
        if held > most:
            raise CheckFailed(text("zb.held", where=_where(name, run, stage), got=held,
                                   most=most, actions=_show(actions)))


TIMES = ((1, 1, 1), (2, 2, 1))          # (T_F, T_B, T_W): T_W = T_F, and T_W = T_F / 2


def _check_bubble(name, run, programs, sign):
    """Simulated bubble <= (K-1)(T_F + T_B + sign T_W), and below 1F1B's when K > 1."""
    from minimegatron.parallel.pipeline_parallel.simulator import simulate

    def listed(num_stages, num_micro_batches, stage):
        return programs[stage]
    listed.__name__ = "your schedule"
    k, m = run["stages"], run["micro"]
    for t_f, t_b, t_w in TIMES:
        try:
            sim = simulate(listed, k, m, Fraction(t_f), Fraction(t_b), t_weight=Fraction(t_w))
        except (RuntimeError, ValueError) as err:
            raise CheckFailed(text("sched.deadlock", stages=k, micro=m, chunks=1,
                                   error=err)) from None
        table = (k - 1) * (t_f + t_b + sign * t_w)
        one_f_one_b = (k - 1) * (t_f + t_b + t_w)
        if sim.bubble > table or (k > 1 and not sim.bubble < one_f_one_b):
            raise CheckFailed(text("zb.bubble", name=name, stages=k, micro=m, t_f=t_f, t_b=t_b,
                                   t_w=t_w, got=sim.bubble, table=table, plain=one_f_one_b))


def _judge(check, name="zb-h1"):
    def judge(evidence, seed):
        for run, programs in _runs_of(evidence, name, seed):
            check(name, run, programs)
    return judge


def judge_memory(evidence, seed):
    for run, programs in _runs_of(evidence, "zb-h1", seed):
        _check_memory("zb-h1", run, programs, min(run["stages"], run["micro"]))


def judge_bubble(evidence, seed):
    for run, programs in _runs_of(evidence, "zb-h1", seed):
        _check_bubble("zb-h1", run, programs, -1)


def judge_h2(evidence, seed):
    for run, programs in _runs_of(evidence, "zb-h2", seed):
        _check_once("zb-h2", run, programs)
        _check_after_b("zb-h2", run, programs)
        _check_memory("zb-h2", run, programs, 2 * run["stages"] - 1)
        _check_bubble("zb-h2", run, programs, -2)


LESSONS = {
    "9.2": Lesson(collect_schedules, (Point("once", _judge(_check_once)),
                                      Point("after_b", _judge(_check_after_b)),
                                      Point("memory", judge_memory),
                                      Point("bubble", judge_bubble),
                                      Point("h2", judge_h2))),
}
