"""Exercise 7.1, dynamic loss scaling: what it teaches, and the evidence of each point.

The grader runs this on 4 ranks, on the dp groups [0, 2] and [1, 3]. Each group
gets its own pattern of overflows, drawn from the grading seed; in each overflow
ONE rank of the group (drawn too) holds a non-finite value (NaN, inf or -inf, in
one of its two gradient arrays), and in every other overflow EVERY rank of the
group holds one (several ranks overflowing at once: a flag summed and compared with
1, or a backoff once per rank, goes wrong only then). Points:

    group_flag   one all-reduce of a one-element flag per update, over THIS group
                 (a flag over the world mixes the two groups' overflows)
    together     every rank of the group skips the same steps, and the other group's
                 steps are not skipped; the bad value is a NaN, an inf or a -inf, in
                 the first or the second gradient array (a test for inf only, or of
                 grads[0] only, misses some); a third array, float16, holds values
                 near 65504 (each finite, their SUM is not: not an overflow)
    backoff      on an overflow S = max(S * backoff_factor, min_scale): checked with
                 backoff 0.25 and a min_scale that is reached and is no power of the
                 backoff (64 * 0.25^n never lands on 3: "back off while S > min_scale"
                 goes below it)
    growth       after growth_interval clean steps in a row S = S * growth_factor, and
                 the count starts again after a growth AND after an overflow (interval 3,
                 30 steps: a counter never reset grows far too often)
    zero_skip    in real training (ZeRO-2, float16) a skipped step leaves every weight
                 bitwise unchanged on every rank

The judge replays the rule of the module docstring of
``mixed_precision/loss_scaler.py`` for each group and compares every step.
"""
import warnings

import numpy as np

from minimegatron.classroom.exercise_checks.common import CheckFailed
from minimegatron.classroom.exercise_checks.lesson import Lesson, Point, comm_log
from minimegatron.i18n import text

STEPS = 30
SETTINGS = ({"init_scale": 8.0, "growth_interval": 2},                    # the defaults' rule
            {"init_scale": 64.0, "growth_interval": 3, "backoff_factor": 0.25,
             "growth_factor": 4.0, "min_scale": 3.0})     # none default; 3 is no 64 * 0.25^n
LARGE = 60000.0       # a float16 gradient near its largest value 65504: two of them sum to inf


def overflows(seed, group_ranks, settings_index):
    """[(step, ranks in the group holding an inf)], drawn from the seed for one group: one
    rank (drawn) in the 1st, 3rd, ... overflow, every rank of the group in the 2nd, 4th, ..."""
    rng = np.random.default_rng([seed, min(group_ranks), settings_index])
    count = 8 if settings_index == 0 else 3
    steps = sorted(rng.choice(STEPS, size=count, replace=False).tolist())
    if settings_index == 1:                     # four in a row: min_scale is reached
        steps = sorted(set(steps) | {4, 5, 6, 7})
    everyone = tuple(range(len(group_ranks)))
    return [(step, everyone if i % 2 else (int(rng.integers(len(group_ranks))),))
            for i, step in enumerate(steps)]


POISONS = (("NaN", np.nan, 0), ("inf", np.inf, 1), ("-inf", -np.inf, 0), ("NaN", np.nan, 1),
           ("inf", np.inf, 0), ("-inf", -np.inf, 1))


def poison(count):
    """(name, value, which array of grads) of a group's ``count``-th overflow: NaN, inf and
    -inf, in the first and in the second gradient array, so that a test for inf only, or of
    grads[0] only, misses some."""
    return POISONS[count % len(POISONS)]


def replay(settings, bad_steps):
    """[(scale used, skipped)] per step by the rule, for one group's overflow steps."""
    scale, clean = settings["init_scale"], 0
    backoff = settings.get("backoff_factor", 0.5)
    growth, floor = settings.get("growth_factor", 2.0), settings.get("min_scale", 1.0)
    out = []
    for step in range(STEPS):
        out.append((scale, step in bad_steps))
        if step in bad_steps:
            scale, clean = max(scale * backoff, floor), 0
        else:
            clean += 1
            if clean == settings["growth_interval"]:
                scale, clean = scale * growth, 0
    return out


def collect(group, seed):
    """Each rank drives its group's scaler through both settings; then ZeRO-2 in float16."""
    from minimegatron.comm import trace
    from minimegatron.checks.mixed import check_mixed
    from minimegatron.comm import world
    from minimegatron.mixed_precision.loss_scaler import DynamicLossScaler
    runs = []
    for index, settings in enumerate(SETTINGS):
        scaler = DynamicLossScaler(**settings, at_min_scale="warn")   # min_scale is reached
        bad = {step: (count, holder) for count, (step, holder)
               in enumerate(overflows(seed, group.ranks, index))}
        trace.reset()
        scales, skipped = [], []
        for step in range(STEPS):
            grads = [np.array([1.0, 2.0, 3.0]), np.ones(2),
                     np.full(2, LARGE, np.float16)]     # each finite, their sum is not
            count, holders = bad.get(step, (None, ()))
            if group.rank in holders:
                _, value, which = poison(count)
                grads[which][count % grads[which].size] = value     # not always one place
            scales.append(scaler.scale)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)       # "at the minimum scale"
                skipped.append(bool(scaler.update(grads, group)))
        runs.append({"scales": scales, "skipped": skipped,
                     "calls": comm_log(trace.spans(), [group, world()])})
    zero = check_mixed(group, "zero2", steps=4, overflow=(1, 1), growth_interval=2)
    return {"runs": runs, "zero": zero["records"]}


def _replays(rank_evidence, seed, index):
    bad = {step for step, _ in overflows(seed, rank_evidence["group"], index)}
    return replay(SETTINGS[index], bad)


def judge_group_flag(ranks, seed):
    for ev in ranks:
        for run in ev["runs"]:
            calls = run["calls"]
            wrong = [c for c in calls if c["op"] != "all_reduce" or c["group"] != ev["group"]]
            if len(calls) != STEPS or wrong:
                got = ", ".join(sorted({f"{c['op']} on {c['group']}" for c in calls}))
                raise CheckFailed(text("mp.flag_calls", rank=ev["group"][ev["rank"]],
                                       steps=STEPS, group=ev["group"], count=len(calls),
                                       got=got or "-"))
            if any(c["nbytes"] > 8 for c in calls):
                raise CheckFailed(text("mp.flag_bytes", nbytes=max(c["nbytes"] for c in calls)))


def judge_together(ranks, seed):
    for ev in ranks:
        for index, run in enumerate(ev["runs"]):
            want = [skip for _, skip in _replays(ev, seed, index)]
            if run["skipped"] != want:
                step = next(i for i, (a, b) in enumerate(zip(run["skipped"], want)) if a != b)
                bad = {s: (count, holder) for count, (s, holder)
                       in enumerate(overflows(seed, ev["group"], index))}
                if step in bad:
                    name, _, which = poison(bad[step][0])
                    holders = ", ".join(str(ev["group"][h]) for h in bad[step][1])
                    raise CheckFailed(text("mp.skip_poison", rank=ev["group"][ev["rank"]],
                                           group=ev["group"], step=step, what=name,
                                           index=which, holder=holders))
                raise CheckFailed(text("mp.skip_step", rank=ev["group"][ev["rank"]],
                                       group=ev["group"], step=step, want=want[step],
                                       got=run["skipped"][step]))


def _first_scale_error(ev, seed, index):
    want = [scale for scale, _ in _replays(ev, seed, index)]
    got = ev["runs"][index]["scales"]
    for step, (a, b) in enumerate(zip(got, want)):
        if a != b:
            return step, a, b
    return None


def judge_backoff(ranks, seed):
    """Settings 1 (backoff 0.25, min_scale reached): every step right after an overflow
    whose own scale was right."""
    for ev in ranks:
        want = [scale for scale, _ in _replays(ev, seed, 1)]
        got = ev["runs"][1]["scales"]
        for step, _ in overflows(seed, ev["group"], 1):
            if step + 1 < STEPS and got[step] == want[step] and got[step + 1] != want[step + 1]:
                raise CheckFailed(text("mp.backoff_wrong", step=step, before=got[step],
                                       got=got[step + 1], want=want[step + 1],
                                       settings=SETTINGS[1]))


def judge_growth(ranks, seed):
    for ev in ranks:
        for index in (0, 1):
            wrong = _first_scale_error(ev, seed, index)
            if wrong:
                raise CheckFailed(text("mp.scale_wrong", step=wrong[0], got=wrong[1],
                                       want=wrong[2], settings=SETTINGS[index]))


def judge_zero_skip(ranks, seed):
    for ev in ranks:
        records = ev["zero"]
        skipped = [r["skipped"] for r in records]
        if skipped != [False, True, False, False] or not records[1]["unchanged"]:
            raise CheckFailed(text("mp.zero_skip_wrong", rank=ev["group"][ev["rank"]],
                                   got=skipped, unchanged=records[1]["unchanged"]))
        scales = [r["scale"] for r in records]
        if scales != [256.0, 256.0, 128.0, 128.0]:
            raise CheckFailed(text("mp.zero_scales", got=scales))


LESSONS = {"7.1": Lesson(collect, (Point("group_flag", judge_group_flag),
                                   Point("together", judge_together),
                                   Point("backoff", judge_backoff),
                                   Point("growth", judge_growth),
                                   Point("zero_skip", judge_zero_skip)))}
