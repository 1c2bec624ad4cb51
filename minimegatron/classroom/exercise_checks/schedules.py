"""Exercises 2.1, 2.2 and 6.1, pipeline schedules as data: what each teaches, and its evidence.

A schedule is a pure function ``(num_stages, num_micro_batches, stage) -> [Action]``
(``parallel/pipeline_parallel/schedules.py``). The student side (``collect``, one
process, no MPI) calls the student's schedule for every stage of many settings:
the edge cases (K = 1, M = 1, M < K) and settings drawn from the grading seed,
some past K = 6 and M = 8 (interleaved: past K = 5, v = 4), and returns the
lists as data, ``[op, micro-batch, chunk]`` per action. The judge turns them
back into the grader's own Actions and checks each point itself, with the
grader's ``simulate`` (every receive waits for its send; a deadlock raises) and
``peak_in_flight``; it never calls a schedule (in self-check mode the grader's
own blocks are blank), and it draws the settings from the seed again itself, so
evidence for other settings misses every point. Passing every point means the
lists equal the reference's for every setting drawn. Points, with K stages, M
micro-batches, stage k:

    2.1 GPipe   forwards_first  compute order F0 .. F(M-1), B0 .. B(M-1): M held at once
                messages        each forward is recv_act (k > 0), forward, send_act (k < K-1),
                                each backward recv_grad (k < K-1), backward, send_grad (k > 0):
                                one message per micro-batch and boundary, and the lists of
                                all stages run to the end (simulated)
                bubble          simulated idle share (K-1)/(M+K-1), at t_b = t_f and t_b = 2 t_f
    2.2 1F1B    warmup          min(K-k, M) forwards before the first backward (warm-up
                                min(K-k-1, M), then the first pair): min(M, K-k) held at once
                alternate       then forward, backward, forward, ... while forwards are left,
                                then the backwards left; both in micro-batch order
                messages, bubble    as 2.1
    6.1         warmup          where w = 2(K-k-1) + (v-1)K < Mv: w + 1 chunk forwards before
                                the first backward (w + 1 chunk activations held)
                capped          where w >= Mv: all Mv forwards first; and everywhere every
                                (micro-batch, chunk) pair runs forward once and backward once
                runs            each chunk backward after its forward, and the lists of all
                                ranks run to the end (simulated)
                bubble          idle / busy = (1/v)(K-1)/M, at t_b = t_f and t_b = 2 t_f
"""
from fractions import Fraction

import numpy as np

from minimegatron.classroom.exercise_checks.common import CheckFailed
from minimegatron.classroom.exercise_checks.lesson import Lesson, Point
from minimegatron.i18n import text

SHOWN = 24          # actions quoted in a message at most
NAMES = {"2.1": "gpipe", "2.2": "one_f_one_b"}


def plain_settings(seed):
    """[(K, M)]: edge cases (K = 1, M = 1, M < K), then five drawn from the seed, two of
    them past the old fixed grid (K > 6, and M > 8)."""
    rng = np.random.default_rng([seed, 2])
    drawn = [(int(rng.integers(2, 6)), int(rng.integers(1, 10))) for _ in range(3)]
    drawn += [(int(rng.integers(7, 11)), int(rng.integers(2, 7))),
              (int(rng.integers(7, 11)), int(rng.integers(9, 21)))]
    return [(1, 1), (1, 4), (5, 1), (6, 2), (3, 3), (2, 7)] + drawn


def interleaved_settings(seed):
    """[(K, v, M)], M a multiple of K: edge cases (K = 1, v = 1, M = K, warm-ups past Mv),
    then four drawn from the seed, two past the old grid (K > 5, and v > 4)."""
    rng = np.random.default_rng([seed, 6])
    drawn = []
    for low_k, high_k, low_v, high_v, rounds in ((2, 6, 1, 5, 6), (2, 6, 2, 5, 4),
                                                  (6, 9, 2, 4, 3), (2, 5, 5, 7, 4)):
        k = int(rng.integers(low_k, high_k))
        drawn.append((k, int(rng.integers(low_v, high_v)), k * int(rng.integers(1, rounds))))
    return [(1, 1, 1), (1, 3, 2), (2, 1, 2), (4, 1, 4), (3, 2, 3), (4, 3, 4)] + drawn


# ---------------------------------------------------------------- student side

def _as_data(actions):
    return [[a.op, a.micro_batch, a.chunk] for a in actions]


def collect_plain(schedule_name):
    def collect(group, seed):
        """Every stage's list of the student's schedule, for each (K, M) setting."""
        from minimegatron.parallel.pipeline_parallel import schedules
        schedule = getattr(schedules, schedule_name)
        return {"runs": [{"stages": k, "micro": m,
                          "programs": [_as_data(schedule(k, m, s)) for s in range(k)]}
                         for k, m in plain_settings(seed)]}
    return collect


def collect_interleaved(group, seed):
    """Every rank's list of the interleaved schedule, for each (K, v, M) setting."""
    from minimegatron.parallel.pipeline_parallel.schedules import interleaved
    return {"runs": [{"stages": k, "micro": m, "chunks": v,
                      "programs": [_as_data(interleaved(k, m, s, v)) for s in range(k)]}
                     for k, v, m in interleaved_settings(seed)]}


# ---------------------------------------------------------------- judge side

def _where(run, stage, ex_id):
    if ex_id == "6.1":
        return text("sched.il_where", stages=run["stages"], micro=run["micro"],
                    chunks=run["chunks"], stage=stage)
    return text("sched.where", name=NAMES[ex_id], stages=run["stages"], micro=run["micro"],
                stage=stage)


def _show(actions):
    shown = " ".join(str(a) for a in actions[:SHOWN])
    return shown + (" ..." if len(actions) > SHOWN else "")


def _programs(run, ex_id):
    """The grader's own Actions for every stage of one run; CheckFailed for anything else,
    or a list ten times longer than the schedule (6 actions per step at most)."""
    from minimegatron.parallel.pipeline_parallel.actions import OPS, Action
    most = 60 * run["micro"] * run.get("chunks", 1) + 60
    programs = []
    for stage, raw in enumerate(run["programs"]):
        where = _where(run, stage, ex_id)
        if len(raw) > most:
            raise CheckFailed(text("sched.too_long", where=where, count=len(raw), most=most))
        actions = []
        for item in raw:
            ok = (isinstance(item, list) and len(item) == 3 and item[0] in OPS
                  and isinstance(item[1], int) and not isinstance(item[1], bool)
                  and (item[2] is None or type(item[2]) is int))
            if not ok:
                raise CheckFailed(text("sched.bad_action", where=where, item=repr(item)))
            op, micro_batch, chunk = item
            if ex_id != "6.1" and chunk == 0:   # one model chunk: 0 is None (as the executor)
                chunk = None
            actions.append(Action(op, micro_batch, chunk))
        programs.append(actions)
    if len(programs) != run["stages"]:
        raise CheckFailed(text("sched.stage_count", stages=run["stages"],
                               got=len(programs)))
    return programs


def _runs(evidence, ex_id, seed):
    """[(run, programs)] for every setting, once the settings are the ones the JUDGE draws
    from the seed (never the student process's word for them)."""
    if ex_id == "6.1":
        want = [list(s) for s in interleaved_settings(seed)]
        got = [[run["stages"], run["chunks"], run["micro"]] for run in evidence["runs"]]
    else:
        want = [list(s) for s in plain_settings(seed)]
        got = [[run["stages"], run["micro"]] for run in evidence["runs"]]
    if got != want:
        raise CheckFailed(text("sched.settings", got=got, want=want))
    return [(run, _programs(run, ex_id)) for run in evidence["runs"]]


def _compute(actions):
    return [(a.op, a.micro_batch) for a in actions if a.op in ("forward", "backward")]


def _forwards_first(actions):
    """Forwards before the first backward (all of them when there is none)."""
    ops = [op for op, _ in _compute(actions)]
    return ops.index("backward") if "backward" in ops else len(ops)


def one_f_one_b_order(num_micro_batches, warmup):
    """The compute order of 1F1B with this warm-up: warm-up forwards, pairs, backwards."""
    order = [("forward", i) for i in range(warmup)]
    for i in range(num_micro_batches - warmup):
        order += [("forward", warmup + i), ("backward", i)]
    return order + [("backward", i) for i in range(num_micro_batches - warmup,
                                                   num_micro_batches)]


def _simulate(run, programs, t_backward):
    """The grader's simulate on the student's lists; CheckFailed on a deadlock."""
    from minimegatron.parallel.pipeline_parallel.simulator import simulate

    def listed(num_stages, num_micro_batches, stage, num_chunks=1):
        return programs[stage]
    listed.__name__ = "your schedule"
    try:
        return simulate(listed, run["stages"], run["micro"], Fraction(1), Fraction(t_backward),
                        num_chunks=run.get("chunks", 1))
    except RuntimeError as err:
        raise CheckFailed(text("sched.deadlock", stages=run["stages"], micro=run["micro"],
                               chunks=run.get("chunks", 1), error=err)) from None


def _expect_order(where, got, want, actions):
    if got != want:
        raise CheckFailed(text("sched.order", where=where, got=_show_compute(got),
                               want=_show_compute(want), actions=_show(actions)))


def _show_compute(order):
    shown = " ".join(("F" if op == "forward" else "B") + str(i) for op, i in order[:SHOWN])
    return shown + (" ..." if len(order) > SHOWN else "")


def judge_forwards_first(evidence, seed):
    """2.1: F0 .. F(M-1), then B0 .. B(M-1), so M micro-batches are held at once."""
    from minimegatron.parallel.pipeline_parallel.schedules import peak_in_flight
    for run, programs in _runs(evidence, "2.1", seed):
        m = run["micro"]
        want = [("forward", i) for i in range(m)] + [("backward", i) for i in range(m)]
        for stage, actions in enumerate(programs):
            where = _where(run, stage, "2.1")
            _expect_order(where, _compute(actions), want, actions)
            if peak_in_flight(actions) != m:
                raise CheckFailed(text("sched.held", where=where, got=peak_in_flight(actions),
                                       want=m, actions=_show(actions)))


def judge_warmup_1f1b(evidence, seed):
    """2.2: min(K-k, M) forwards before the first backward; min(M, K-k) held at once."""
    from minimegatron.parallel.pipeline_parallel.schedules import peak_in_flight
    for run, programs in _runs(evidence, "2.2", seed):
        k, m = run["stages"], run["micro"]
        for stage, actions in enumerate(programs):
            where, want = _where(run, stage, "2.2"), min(k - stage, m)
            got = _forwards_first(actions)
            if got != want:
                raise CheckFailed(text("sched.warmup", where=where, got=got, want=want,
                                       warmup=min(k - stage - 1, m), actions=_show(actions)))
            if peak_in_flight(actions) != want:
                raise CheckFailed(text("sched.held", where=where, got=peak_in_flight(actions),
                                       want=want, actions=_show(actions)))


def judge_alternate(evidence, seed):
    """2.2: after this stage's own warm-up, one forward and one backward in turn, then the
    backwards left, both in micro-batch order (whatever the warm-up count was)."""
    for run, programs in _runs(evidence, "2.2", seed):
        m = run["micro"]
        for stage, actions in enumerate(programs):
            first = _forwards_first(actions)
            warmup = min(max(first - 1, 0), m)
            _expect_order(_where(run, stage, "2.2"), _compute(actions),
                          one_f_one_b_order(m, warmup), actions)


def with_messages(num_stages, stage, order):
    """The actions of a compute order, each step with its messages (no chunk)."""
    from minimegatron.parallel.pipeline_parallel.actions import Action
    actions = []
    for op, i in order:
        if op == "forward":
            before, after = ("recv_act", stage > 0), ("send_act", stage < num_stages - 1)
        else:
            before, after = ("recv_grad", stage < num_stages - 1), ("send_grad", stage > 0)
        actions += [Action(before[0], i)] if before[1] else []
        actions.append(Action(op, i))
        actions += [Action(after[0], i)] if after[1] else []
    return actions


def _judge_messages(ex_id):
    def judge_messages(evidence, seed):
        """Each compute step wrapped by exactly its own messages, one per micro-batch and
        boundary; then the lists of all stages run to the end."""
        for run, programs in _runs(evidence, ex_id, seed):
            k, m = run["stages"], run["micro"]
            for stage, actions in enumerate(programs):
                where = _where(run, stage, ex_id)
                want = with_messages(k, stage, _compute(actions))
                if actions != want:
                    at = next((i for i, (a, b) in enumerate(zip(actions, want)) if a != b),
                              min(len(actions), len(want)))
                    raise CheckFailed(text(
                        "sched.messages", where=where, index=at,
                        got=str(actions[at]) if at < len(actions) else "-",
                        want=str(want[at]) if at < len(want) else "-",
                        actions=_show(actions[max(0, at - 6):])))
                for op, exists in (("send_act", stage < k - 1), ("send_grad", stage > 0)):
                    sent = sorted(a.micro_batch for a in actions if a.op == op)
                    if sent != (list(range(m)) if exists else []):
                        raise CheckFailed(text("sched.message_count", where=where, op=op,
                                               got=sent, want=list(range(m)) if exists
                                               else []))
            _simulate(run, programs, 1)
    return judge_messages


def _judge_bubble(ex_id):
    def judge_bubble(evidence, seed):
        """Simulated: (K-1)/(M+K-1) idle share (2.x), idle / busy (1/v)(K-1)/M (6.1)."""
        from minimegatron.parallel.pipeline_parallel.schedules import bubble_formula
        for run, programs in _runs(evidence, ex_id, seed):
            k, m, v = run["stages"], run["micro"], run.get("chunks", 1)
            for t_backward in (1, 2):
                sim = _simulate(run, programs, t_backward)
                got, want = ((sim.bubble_ratio, Fraction(k - 1, v * m)) if ex_id == "6.1" else
                             (sim.bubble_fraction, bubble_formula(k, m)))
                if got != want:
                    raise CheckFailed(text("sched.il_bubble" if ex_id == "6.1" else
                                           "sched.bubble", stages=k, micro=m, chunks=v,
                                           t_backward=t_backward, got=got, want=want))
    return judge_bubble


def _megatron_warmup(num_stages, stage, num_chunks):
    return 2 * (num_stages - stage - 1) + (num_chunks - 1) * num_stages


def judge_interleaved_warmup(evidence, seed):
    """6.1, where 2(K-k-1) + (v-1)K < Mv: that many warm-up forwards, then the first pair."""
    from minimegatron.parallel.pipeline_parallel.schedules import peak_in_flight
    for run, programs in _runs(evidence, "6.1", seed):
        k, m, v = run["stages"], run["micro"], run["chunks"]
        for stage, actions in enumerate(programs):
            warmup = _megatron_warmup(k, stage, v)
            if warmup >= m * v:
                continue
            where, got = _where(run, stage, "6.1"), _forwards_first(actions)
            if got != warmup + 1 or peak_in_flight(actions) != warmup + 1:
                raise CheckFailed(text("sched.il_warmup", where=where, got=got - 1,
                                       want=warmup, held=peak_in_flight(actions),
                                       actions=_show(actions)))


def judge_capped(evidence, seed):
    """6.1: each (micro-batch, chunk) pair forward once and backward once; where the
    formula reaches Mv, all Mv forwards come first."""
    for run, programs in _runs(evidence, "6.1", seed):
        k, m, v = run["stages"], run["micro"], run["chunks"]
        pairs = sorted((i, c) for i in range(m) for c in range(v))
        for stage, actions in enumerate(programs):
            where = _where(run, stage, "6.1")
            for op in ("forward", "backward"):
                got = sorted((a.micro_batch, a.chunk) for a in actions if a.op == op)
                if got != pairs:
                    extra = sorted(set(got) - set(pairs)) or sorted(set(pairs) - set(got))
                    raise CheckFailed(text("sched.il_pairs", where=where, op=op,
                                           count=len(got), want=len(pairs),
                                           example=str(extra[:3] or got[:3])))
            if _megatron_warmup(k, stage, v) >= m * v and _forwards_first(actions) != m * v:
                raise CheckFailed(text("sched.il_capped", where=where,
                                       formula=_megatron_warmup(k, stage, v), total=m * v,
                                       got=_forwards_first(actions) - 1))


def judge_runs(evidence, seed):
    """6.1: each chunk backward after its own forward, and the lists of all ranks run to
    the end: every receive finds its send."""
    for run, programs in _runs(evidence, "6.1", seed):
        for stage, actions in enumerate(programs):
            done = set()
            for a in actions:
                if a.op == "forward":
                    done.add((a.micro_batch, a.chunk))
                elif a.op == "backward" and (a.micro_batch, a.chunk) not in done:
                    raise CheckFailed(text("sched.il_backward_first", step=str(a),
                                           where=_where(run, stage, "6.1"),
                                           actions=_show(actions)))
        _simulate(run, programs, 1)


LESSONS = {
    "2.1": Lesson(collect_plain("gpipe"), (Point("forwards_first", judge_forwards_first),
                                           Point("messages", _judge_messages("2.1")),
                                           Point("bubble", _judge_bubble("2.1")))),
    "2.2": Lesson(collect_plain("one_f_one_b"), (Point("warmup", judge_warmup_1f1b),
                                                 Point("alternate", judge_alternate),
                                                 Point("messages", _judge_messages("2.2")),
                                                 Point("bubble", _judge_bubble("2.2")))),
    "6.1": Lesson(collect_interleaved, (Point("warmup", judge_interleaved_warmup),
                                        Point("capped", judge_capped),
                                        Point("runs", judge_runs),
                                        Point("bubble", _judge_bubble("6.1")))),
}
