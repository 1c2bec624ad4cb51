"""Exercises 2.1 (GPipe), 2.2 (1F1B) and 6.1 (interleaved warm-up): the reference PASSes
every point, and every wrong answer misses its point.

Each mutant is the reference package with one block replaced by an answer a
student could plausibly write (``grader.grade_variants``). The schedules are
graded as data in one process: every stage's action list for settings drawn
from the seed (K = 1, M = 1, M < K, and past the old fixed grid). Each mutant
must FAIL, and among the points it misses must be the one named here, in
English and in Korean. All three exercises' variants run in ONE launch.
"""
import pytest

from lesson_mutants import assert_mutants, block_of, grade_lessons

REFERENCE = {ex_id: block_of(ex_id) for ex_id in ("2.1", "2.2", "6.1")}
FORWARDS = ["    for i in range(num_micro_batches):",
            "        actions += forward_actions(num_stages, stage, i)"]
BACKWARDS = ["    for i in range(num_micro_batches):",
             "        actions += backward_actions(num_stages, stage, i)"]
WARMUP = ["    warmup = min(num_stages - stage - 1, num_micro_batches)"]
WARM = ["    for i in range(warmup):",
        "        actions += forward_actions(num_stages, stage, i)"]
STEADY = ["    for i in range(num_micro_batches - warmup):",
          "        actions += forward_actions(num_stages, stage, warmup + i)",
          "        actions += backward_actions(num_stages, stage, i)"]
COOL = ["    for i in range(num_micro_batches - warmup, num_micro_batches):",
        "        actions += backward_actions(num_stages, stage, i)"]
MEGATRON = "(K - stage - 1) * 2 + (v - 1) * K"

MUTANTS = {"2.1": {
    "backwards in reverse order": (FORWARDS + [
        "    for i in reversed(range(num_micro_batches)):",
        "        actions += backward_actions(num_stages, stage, i)"], "forwards_first"),
    "one micro-batch at a time": (FORWARDS + [
        "        actions += backward_actions(num_stages, stage, i)"], "forwards_first"),
    "the last stage runs each backward right after its forward": ([
        "    for i in range(num_micro_batches):",
        "        actions += forward_actions(num_stages, stage, i)",
        "        if stage == num_stages - 1:",
        "            actions += backward_actions(num_stages, stage, i)",
        "    if stage < num_stages - 1:"] + ["    " + line for line in BACKWARDS],
        "forwards_first"),
    "right only up to 8 micro-batches (the old grader's grid)": ([
        "    for i in range(min(num_micro_batches, 8)):",
        "        actions += forward_actions(num_stages, stage, i)",
        "    for i in range(min(num_micro_batches, 8)):",
        "        actions += backward_actions(num_stages, stage, i)"], "forwards_first"),
    "activation sent before its forward ran": ([
        "    for i in range(num_micro_batches):",
        "        step = forward_actions(num_stages, stage, i)",
        "        actions += step[:-2] + step[-1:] + step[-2:-1] if stage < num_stages - 1 "
        "else step"] + BACKWARDS, "messages"),
    "every activation sent and received twice (twice the bytes)": ([
        "    for i in range(num_micro_batches):",
        "        step = forward_actions(num_stages, stage, i)",
        "        actions += [a for a in step for _ in range(1 if a.op == 'forward' else 2)]"]
        + BACKWARDS, "messages"),
    "compute only, no messages between stages": ([
        "    from minimegatron.parallel.pipeline_parallel.actions import Action",
        "    actions += [Action('forward', i) for i in range(num_micro_batches)]",
        "    actions += [Action('backward', i) for i in range(num_micro_batches)]"],
        "messages"),
}, "2.2": {
    "warm-up one too long": ([
        "    warmup = min(num_stages - stage, num_micro_batches)"] + WARM + STEADY + COOL,
        "warmup"),
    "warm-up not capped at M (M < K)": ([
        "    warmup = num_stages - stage - 1"] + WARM + STEADY + COOL, "warmup"),
    "warm-up capped at 5 (right on the old grader's K <= 6)": ([
        "    warmup = min(num_stages - stage - 1, num_micro_batches, 5)"] + WARM + STEADY
        + COOL, "warmup"),
    "GPipe instead of 1F1B (all forwards first)": (FORWARDS + BACKWARDS, "warmup"),
    "no cool-down": (WARMUP + WARM + STEADY, "alternate"),
    "two forwards, then two backwards": (WARMUP + WARM + [
        "    left = list(range(warmup, num_micro_batches))",
        "    done = 0",
        "    while left:",
        "        for i in left[:2]:",
        "            actions += forward_actions(num_stages, stage, i)",
        "        for i in range(done, done + len(left[:2])):",
        "            actions += backward_actions(num_stages, stage, i)",
        "        done += len(left[:2])",
        "        left = left[2:]",
        "    for i in range(done, num_micro_batches):",
        "        actions += backward_actions(num_stages, stage, i)"], "alternate"),
    "gradient received before the activation is sent (the next stage waits)": (
        WARMUP + WARM + [
            "    for i in range(num_micro_batches - warmup):",
            "        step = forward_actions(num_stages, stage, warmup + i)",
            "        back = backward_actions(num_stages, stage, i)",
            "        if stage < num_stages - 1:",
            "            actions += step[:-1] + back[:1] + step[-1:] + back[1:]",
            "        else:",
            "            actions += step + back"] + COOL, "messages"),
}, "6.1": {
    "forgot (v-1)*K": (["    warmup = min((K - stage - 1) * 2, total)"], "warmup"),
    "plain 1F1B's warm-up plus (v-1)*K": ([
        "    warmup = min(K - stage - 1 + (v - 1) * K, total)"], "warmup"),
    "Megatron's M == K special case (all forwards first)": ([
        f"    warmup = total if num_micro_batches == K else min({MEGATRON}, total)"],
        "warmup"),
    "right only on the old grader's grid (K <= 5)": ([
        f"    warmup = min({MEGATRON} if K <= 5 else K - stage - 1, total)"], "warmup"),
    "not capped at M*v": ([f"    warmup = {MEGATRON}"], "capped"),
    "capped at M instead of M*v": ([
        f"    warmup = min({MEGATRON}, num_micro_batches)"], "capped"),
    "2(K-k-1) for each of the v chunks": ([
        "    warmup = min((K - stage - 1) * 2 * v, total)"], "runs"),
    "no warm-up at all": (["    warmup = 0"], "bubble"),
}}


@pytest.fixture(scope="module")
def verdicts():
    return grade_lessons(REFERENCE, MUTANTS)


@pytest.mark.parametrize("ex_id", list(MUTANTS))
def test_the_reference_passes_every_point(verdicts, ex_id):
    verdict = verdicts[ex_id]["reference"]
    assert verdict.passed, "\n".join(verdict.lines)


@pytest.mark.parametrize("ex_id, name", [(ex_id, name) for ex_id, mutants in MUTANTS.items()
                                         for name in mutants])
def test_a_wrong_answer_misses_its_point(verdicts, ex_id, name):
    assert_mutants(verdicts[ex_id], ex_id, {name: MUTANTS[ex_id][name]})


@pytest.mark.parametrize("ex_id", list(MUTANTS))
def test_at_least_four_kinds_of_mistake(ex_id):
    assert len(MUTANTS[ex_id]) >= 4
    assert len({point for _, point in MUTANTS[ex_id].values()}) >= 2
