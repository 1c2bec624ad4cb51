"""Exercises 8.1 (the online-softmax merge) and 8.2 (the zigzag assignment): the reference
PASSes, and every wrong answer misses its point.

Each mutant is the reference package with the exercise's block replaced by an answer a
student could plausibly write, graded on 4 ranks (dp groups [0, 2] and [1, 3], and the
world as a cp group of 4); both exercises and all their mutants are graded in one go
(``grade_lessons``). Each must FAIL, and among the points it misses must be the one named
here, in English and in Korean.
"""
import pytest

from lesson_mutants import assert_mutants, block_of, grade_lessons

RETURN_MERGED = ["    return (xp.exp(lse - new_lse)[..., None] * out",
                 "            + xp.exp(block_lse - new_lse)[..., None] * block_out), new_lse"]
STABLE_LSE = ["    top = xp.maximum(lse, block_lse)",
              "    new_lse = top + xp.log(xp.exp(lse - top) + xp.exp(block_lse - top))"]

MERGE_MUTANTS = {
    "forgets to rescale the old output by exp(lse - new_lse)": (STABLE_LSE + [
        "    return out + xp.exp(block_lse - new_lse)[..., None] * block_out, new_lse"],
        "union"),
    "weights swapped between the two pieces": (STABLE_LSE + [
        "    return (xp.exp(block_lse - new_lse)[..., None] * out",
        "            + xp.exp(lse - new_lse)[..., None] * block_out), new_lse"], "union"),
    "log(exp(a) + exp(b)) without a shift (overflows)": ([
        "    new_lse = xp.log(xp.exp(lse) + xp.exp(block_lse))"] + RETURN_MERGED, "stable"),
    "shift by the minimum instead of the maximum": ([
        "    top = xp.minimum(lse, block_lse)",
        "    new_lse = top + xp.log(xp.exp(lse - top) + xp.exp(block_lse - top))"]
        + RETURN_MERGED, "stable"),
    "one max over the whole array, not per row": ([
        "    top = max(float(lse.max()), float(block_lse.max()))",
        "    new_lse = top + xp.log(xp.exp(lse - top) + xp.exp(block_lse - top))"]
        + RETURN_MERGED, "stable"),
    "returns the old lse (the next merge is wrong)": (STABLE_LSE + [
        "    return (xp.exp(lse - new_lse)[..., None] * out",
        "            + xp.exp(block_lse - new_lse)[..., None] * block_out), lse"], "chain"),
    "merges in place into the output it was handed": (STABLE_LSE + [
        "    out *= xp.exp(lse - new_lse)[..., None]",
        "    out += xp.exp(block_lse - new_lse)[..., None] * block_out",
        "    return out, new_lse"], "chain"),
    "merges in float64, cast back (right dtypes, a float64 shortcut)": ([
        "    a, b = lse.astype(xp.float64), block_lse.astype(xp.float64)",
        "    top = xp.maximum(a, b)",
        "    new = top + xp.log(xp.exp(a - top) + xp.exp(b - top))",
        "    merged = xp.exp(a - new)[..., None] * out + xp.exp(b - new)[..., None] * block_out",
        "    return merged.astype(out.dtype), new.astype(lse.dtype)"], "union"),
}

ZIGZAG_MUTANTS = {
    "contiguous instead of zigzag": ([
        "    size = steps // cp",
        "    return xp.arange(rank * size, (rank + 1) * size)"], "balance"),
    "mirror off by one (2cp - i)": ([
        "    size = steps // (2 * cp)",
        "    early, late = rank, 2 * cp - rank",
        "    return xp.concatenate([xp.arange(early * size, (early + 1) * size),",
        "                           xp.arange(late * size, (late + 1) * size)])"], "partition"),
    "mirror hard-coded for cp = 2 (3 - i)": ([
        "    size = steps // (2 * cp)",
        "    early, late = rank, 3 - rank",
        "    return xp.concatenate([xp.arange(early * size, (early + 1) * size),",
        "                           xp.arange(late * size, (late + 1) * size)])"], "mirror"),
    "the mirror chunk first": ([
        "    size = steps // (2 * cp)",
        "    early, late = rank, 2 * cp - 1 - rank",
        "    return xp.concatenate([xp.arange(late * size, (late + 1) * size),",
        "                           xp.arange(early * size, (early + 1) * size)])"], "mirror"),
    "mirror taken inside the first half (cp - 1 - i)": ([
        "    size = steps // (2 * cp)",
        "    early, late = rank, cp - 1 - rank",
        "    return xp.concatenate([xp.arange(early * size, (early + 1) * size),",
        "                           xp.arange(late * size, (late + 1) * size)])"], "partition"),
    "positions as int8 (small enough for the short sequences)": ([
        "    size = steps // (2 * cp)",
        "    early, late = rank, 2 * cp - 1 - rank",
        "    return xp.concatenate([xp.arange(early * size, (early + 1) * size),",
        "                           xp.arange(late * size, (late + 1) * size)]).astype(xp.int8)"],
        "mirror"),
    "one cached array per (S, rank, cp), handed to every caller (passed the old grader)": ([
        "    cache = globals().setdefault('_ZIGZAG', {})",
        "    if (steps, rank, cp) not in cache:",
        "        size = steps // (2 * cp)",
        "        early, late = rank, 2 * cp - 1 - rank",
        "        cache[steps, rank, cp] = xp.concatenate([",
        "            xp.arange(early * size, (early + 1) * size),",
        "            xp.arange(late * size, (late + 1) * size)])",
        "    return cache[steps, rank, cp]"], "callers"),
    "one buffer per (S, cp), refilled for each rank (passed the old grader)": ([
        "    size = steps // (2 * cp)",
        "    early, late = rank, 2 * cp - 1 - rank",
        "    buf = globals().setdefault('_ZIGZAG', {}).setdefault(",
        "        (steps, cp), xp.empty(2 * size, dtype=xp.int64))",
        "    buf[:size] = xp.arange(early * size, (early + 1) * size)",
        "    buf[size:] = xp.arange(late * size, (late + 1) * size)",
        "    return buf"], "callers"),
}

RIGHT = {
    "8.1": {"logaddexp for the new lse": [
        "    new_lse = xp.logaddexp(lse, block_lse)"] + RETURN_MERGED},
    "8.2": {"int32 positions from one arange and a mask": [
        "    size = steps // (2 * cp)",
        "    every = xp.arange(steps, dtype=xp.int32)",
        "    chunk = every // size",
        "    return every[(chunk == rank) | (chunk == 2 * cp - 1 - rank)]"]},
}

MUTANTS = {"8.1": MERGE_MUTANTS, "8.2": ZIGZAG_MUTANTS}


@pytest.fixture(scope="module")
def verdicts():
    return grade_lessons({ex: block_of(ex) for ex in MUTANTS}, MUTANTS, RIGHT)


@pytest.mark.parametrize("ex, name", [(ex, name) for ex in RIGHT for name in RIGHT[ex]])
def test_a_right_answer_written_another_way_passes(verdicts, ex, name):
    assert verdicts[ex][name].passed, "\n".join(verdicts[ex][name].lines)


@pytest.mark.parametrize("ex", list(MUTANTS))
def test_the_reference_passes_every_point(verdicts, ex):
    assert verdicts[ex]["reference"].passed, "\n".join(verdicts[ex]["reference"].lines)


@pytest.mark.parametrize("ex, name", [(ex, name) for ex in MUTANTS for name in MUTANTS[ex]])
def test_a_wrong_answer_misses_its_point(verdicts, ex, name):
    assert_mutants(verdicts[ex], ex, {name: MUTANTS[ex][name]})


def test_the_contiguous_split_is_a_partition_and_attends_right_but_is_unbalanced(verdicts):
    """The point of zigzag is the balance alone: a contiguous split is otherwise right."""
    assert verdicts["8.2"]["contiguous instead of zigzag"].missed == ["mirror", "balance"]
    assert verdicts["8.2"]["the mirror chunk first"].missed == ["mirror"]


def test_at_least_four_kinds_of_mistake_each():
    for ex, mutants in MUTANTS.items():
        assert len(mutants) >= 4, ex
        assert len({point for _, point in mutants.values()}) >= 2, ex
