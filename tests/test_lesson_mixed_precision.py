"""Exercise 7.1 (loss scaling): the reference PASSes, and every wrong answer misses its point.

Each mutant is the reference package with the 7.1 block replaced by an answer a
student could plausibly write (``grader.grade_variants``), graded on 4 ranks
(dp groups [0, 2] and [1, 3]). Each must FAIL, and among the points it misses
must be the one named here, in English and in Korean (the judge reads the
same evidence in both languages).
"""
import pytest

from lesson_mutants import assert_mutants, block_of, grade_with_reference

EX = "7.1"
REFERENCE = block_of(EX)
FLAG = ["        local = xp.asarray([0.0 if all_finite(grads) else 1.0])"]
DECIDE = ["        found_inf = bool(local[0] > 0)"]
BACKOFF = ["        if found_inf:",
           "            self.scale = max(self.scale * self.backoff_factor, self.min_scale)",
           "            self.clean_steps = 0"]
GROW = ["        else:",
        "            self.clean_steps += 1",
        "            if self.clean_steps == self.growth_interval:",
        "                self.scale *= self.growth_factor",
        "                self.clean_steps = 0"]
REDUCE = ["        if group is not None:",
          "            local = comm.all_reduce(local, group, op=\"max\")"]

SUMMED = ["        if group is not None:",
          "            local = comm.all_reduce(local, group, op=\"sum\")"]

MUTANTS = {
    "flags summed, an overflow only when exactly one rank has one (passed the old grader)": (
        FLAG + SUMMED + ["        found_inf = bool(local[0] == 1)"] + BACKOFF + GROW,
        "together"),
    "flags summed, one backoff per rank that overflowed (passed the old grader)": (
        FLAG + SUMMED + DECIDE + [
            "        if found_inf:",
            "            self.scale = max(self.scale * self.backoff_factor ** int(local[0]),",
            "                             self.min_scale)",
            "            self.clean_steps = 0"] + GROW, "backoff"),
    "flag reduced over the world (wrong group)": (FLAG + [
        "        if group is not None:",
        "            local = comm.all_reduce(local, comm.world(), op=\"max\")"]
        + DECIDE + BACKOFF + GROW, "group_flag"),
    "no reduction: only the rank with the inf skips": (FLAG + DECIDE + BACKOFF + GROW,
                                                        "together"),
    "all-gather of the flags (another collective, same answer)": (FLAG + [
        "        if group is not None:",
        "            local = comm.all_gather(local, group).max(keepdims=True)"]
        + DECIDE + BACKOFF + GROW, "group_flag"),
    "halves by a constant and ignores min_scale (hard-coded)": (FLAG + REDUCE + DECIDE + [
        "        if found_inf:",
        "            self.scale = self.scale * 0.5",
        "            self.clean_steps = 0"] + GROW, "backoff"),
    "clean count never reset after growth (state not reset)": (FLAG + REDUCE + DECIDE + BACKOFF + [
        "        else:",
        "            self.clean_steps += 1",
        "            if self.clean_steps >= self.growth_interval:",
        "                self.scale *= self.growth_factor"], "growth"),
    "clean count not reset by an overflow": (FLAG + REDUCE + DECIDE + [
        "        if found_inf:",
        "            self.scale = max(self.scale * self.backoff_factor, self.min_scale)"]
        + GROW, "growth"),
    "grows by 2 whatever growth_factor says (default only)": (FLAG + REDUCE + DECIDE + BACKOFF + [
        "        else:",
        "            self.clean_steps += 1",
        "            if self.clean_steps == self.growth_interval:",
        "                self.scale *= 2.0",
        "                self.clean_steps = 0"], "growth"),
    "looks for inf only (a NaN gradient is not an overflow)": ([
        "        local = xp.asarray([1.0 if any(bool(xp.isinf(g).any()) for g in grads) "
        "else 0.0])"] + REDUCE + DECIDE + BACKOFF + GROW, "together"),
    "tests grads[0] only (an inf in another array is missed)": ([
        "        local = xp.asarray([0.0 if all_finite([grads[0]]) else 1.0])"]
        + REDUCE + DECIDE + BACKOFF + GROW, "together"),
    "max == inf (a NaN or a -inf is missed)": ([
        "        local = xp.asarray([1.0 if max(float(g.max()) for g in grads) == float('inf') "
        "else 0.0])"] + REDUCE + DECIDE + BACKOFF + GROW, "together"),
    "backs off only while the scale is above min_scale (goes below it)": (FLAG + REDUCE
        + DECIDE + [
            "        if found_inf:",
            "            if self.scale > self.min_scale:",
            "                self.scale *= self.backoff_factor",
            "            self.clean_steps = 0"] + GROW, "backoff"),
    "tests whether the SUM of the gradients is finite (float16 sums overflow)": ([
        "        total = sum(g.sum() for g in grads)",
        "        local = xp.asarray([0.0 if xp.isfinite(total) else 1.0])"]
        + REDUCE + DECIDE + BACKOFF + GROW, "together"),
}

# Right answers written another way: each must PASS.
ALTERNATIVES = {
    "op sum for the flag, found_inf a NumPy bool, >= for the count": (FLAG + [
        "        if group is not None:",
        "            local = comm.all_reduce(local, group)",
        "        found_inf = local[0] > 0",
        "        if found_inf:",
        "            self.scale = max(self.scale * self.backoff_factor, self.min_scale)",
        "            self.clean_steps = 0",
        "        else:",
        "            self.clean_steps += 1",
        "            if self.clean_steps >= self.growth_interval:",
        "                self.scale *= self.growth_factor",
        "                self.clean_steps = 0"]),
    "back off, then lift the scale to min_scale when it fell below": (FLAG + REDUCE + DECIDE + [
        "        if found_inf:",
        "            self.scale = self.scale * self.backoff_factor",
        "            if self.scale < self.min_scale:",
        "                self.scale = self.min_scale",
        "            self.clean_steps = 0"] + GROW),
    "isfinite over every array, a float32 flag": ([
        "        bad = not all(bool(xp.isfinite(g).all()) for g in grads)",
        "        local = xp.asarray([float(bad)], dtype=xp.float32)"]
        + REDUCE + DECIDE + BACKOFF + GROW),
}


@pytest.fixture(scope="module")
def verdicts():
    return grade_with_reference(EX, REFERENCE, {**MUTANTS, **{name: (body, None) for name, body
                                                              in ALTERNATIVES.items()}})


@pytest.mark.parametrize("name", list(ALTERNATIVES))
def test_a_right_answer_written_another_way_passes(verdicts, name):
    verdict = verdicts[name]
    assert verdict.passed, f"{name}: {verdict.result}\n" + "\n".join(verdict.lines)


def test_the_reference_passes_every_point(verdicts):
    assert verdicts["reference"].passed, "\n".join(verdicts["reference"].lines)


@pytest.mark.parametrize("name", list(MUTANTS))
def test_a_wrong_answer_misses_its_point(verdicts, name):
    assert_mutants(verdicts, EX, {name: MUTANTS[name]})


def test_at_least_four_kinds_of_mistake():
    assert len(MUTANTS) >= 4
