"""Exercises 4.1 (DDP), 5.1 and 5.2 (ZeRO): the references PASS, every wrong answer misses its
point.

Each mutant is the reference package with one block replaced by an answer a student
could plausibly write (``grader.grade_variants``); the three exercises' variants are
graded together in one launch of 4 ranks (dp groups [0, 2] and [1, 3], then the world).
Each must FAIL, and among the points it misses must be the one named here, in English
and in Korean (the judge reads the same evidence in both languages). Many of these
reached the right final numbers and PASSED the grader that compared numbers only.
"""
import pytest

from lesson_mutants import assert_mutants, block_of, grade_lessons

I4, I5, I6 = " " * 12, " " * 16, " " * 8          # the blocks' indentation: 4.1, 5.1, 5.2
READABLE = (I4 + "bucket.handle = comm.iall_reduce(bucket.reduce, self.group, op=\"mean\", "
            "inplace=True)")
FREE = [I5 + "for p in flat.params:", I5 + "    p.grad = None"]
UPDATE = [I6 + 'with no_grad(), trace.span("optimizer"):',
          I6 + "    self.optimizer.update(self.shard, self.grad_shard, flat.state,",
          I6 + "                          self.step_count)"]
GATHER = [I6 + "full = comm.all_gather(self.shard, self.group)"]

MUTANTS = {
    "4.1": {
        "the whole gradient buffer per bucket (same numbers, N times the bytes)": ([
            I4 + "bucket.handle = comm.iall_reduce(self.reduce_buffer.data, self.group,",
            I4 + '                                 op="mean", inplace=True)'], "one_per_bucket"),
        "all-reduce over the world": ([
            I4 + 'bucket.handle = comm.iall_reduce(bucket.reduce, comm.world(), op="mean",',
            I4 + "                                 inplace=True)"], "one_per_bucket"),
        "two all-reduces per bucket (the same mean, twice the traffic)": ([
            I4 + 'comm.all_reduce(bucket.reduce, self.group, op="mean", inplace=True)',
            READABLE], "one_per_bucket"),
        "all-gather, then the mean by hand (another collective, same numbers)": ([
            I4 + "parts = comm.all_gather(bucket.reduce, self.group)",
            I4 + "bucket.reduce[...] = parts.reshape(self.group.size, -1).mean(axis=0)",
            I4 + "bucket.handle = comm.iall_reduce(bucket.reduce[:0], self.group)"],
            "one_per_bucket"),
        "bucket.grads instead of bucket.reduce (float16 reduced in float16)": ([
            I4 + 'bucket.handle = comm.iall_reduce(bucket.grads, self.group, op="mean",',
            I4 + "                                 inplace=True)"], "one_per_bucket"),
        "waits at once (no overlap with backward)": ([
            READABLE, I4 + "bucket.handle.wait()"], "overlap"),
        "sum instead of mean": ([
            I4 + 'bucket.handle = comm.iall_reduce(bucket.reduce, self.group, op="sum",',
            I4 + "                                 inplace=True)"], "mean_in_place"),
        "not in place (the mean lands in a new array)": ([
            I4 + 'bucket.handle = comm.iall_reduce(bucket.reduce, self.group, op="mean")'],
            "mean_in_place"),
        "sum, then divided by a hard-coded 2": ([
            I4 + 'bucket.handle = comm.iall_reduce(bucket.reduce, self.group, op="sum",',
            I4 + "                                 inplace=True)",
            I4 + "bucket.handle.wait()",
            I4 + "bucket.reduce[...] /= 2"], "mean_in_place"),
        "a copy all-reduced, the mean put back with out= (not in place)": ([
            I4 + "bucket.handle = comm.iall_reduce(bucket.reduce.copy(), self.group,",
            I4 + '                                 op="mean", out=bucket.reduce)'],
            "mean_in_place"),
        "waits for every earlier bucket before launching the next (one in flight)": ([
            I4 + "for other in self.buckets:",
            I4 + "    if other is not bucket and other.handle is not None:",
            I4 + "        other.handle.wait()",
            READABLE], "overlap"),
        "an extra blocking allgather_object per bucket (the pickle API, untraced)": ([
            I4 + "comm.allgather_object(bucket.index, self.group)",
            READABLE], "one_per_bucket"),
        "every handle kept in a list (passed the old grader)": ([
            READABLE,
            I4 + "self.handles = getattr(self, 'handles', []) + [bucket.handle]"], "freed"),
        "every handle kept in a global, by bucket and step (passed the old grader)": ([
            READABLE,
            I4 + "globals().setdefault('_HANDLES', []).append(bucket.handle)"], "freed"),
        "a copy of each bucket's gradients kept for later (passed the old grader)": ([
            READABLE,
            I4 + "globals().setdefault('_SENT', []).append(bucket.grads.copy())"], "freed"),
    },
    "5.1": {
        "all-reduce, then this rank's slice (a view: the full buffer stays)": ([
            I5 + 'averaged = comm.all_reduce(flat.flat_grads(), self.group, op="mean")',
            I5 + "self.grad_shard = flat.own(averaged)"] + FREE, "reduce_scatter"),
        "all-reduce, then a copy of the slice (twice the bytes)": ([
            I5 + 'averaged = comm.all_reduce(flat.flat_grads(), self.group, op="mean")',
            I5 + "self.grad_shard = flat.own(averaged).copy()"] + FREE, "reduce_scatter"),
        "reduce-scatter into a slice of a full-size buffer (memory held)": ([
            I5 + "full = xp.zeros(flat.padded, flat.dtype)",
            I5 + "self.grad_shard = comm.reduce_scatter(flat.flat_grads(), self.group,",
            I5 + '                                      op="mean", out=flat.own(full))']
            + FREE, "freed"),
        "reduce-scatter over the world": ([
            I5 + "self.grad_shard = comm.reduce_scatter(flat.flat_grads(), comm.world(),",
            I5 + '                                      op="mean")'] + FREE, "reduce_scatter"),
        "the full flat gradients kept in an attribute (memory never freed)": ([
            I5 + "self.flat_grads = flat.flat_grads()",
            I5 + "self.grad_shard = comm.reduce_scatter(self.flat_grads, self.group, "
            "op=\"mean\")"] + FREE, "freed"),
        "p.grad not freed": ([
            I5 + "self.grad_shard = comm.reduce_scatter(flat.flat_grads(), self.group,",
            I5 + '                                      op="mean")'], "freed"),
        "sum instead of mean": ([
            I5 + "self.grad_shard = comm.reduce_scatter(flat.flat_grads(), self.group,",
            I5 + '                                      op="sum")'] + FREE, "own_slice"),
        "sum, then divided by a hard-coded 2": ([
            I5 + "self.grad_shard = comm.reduce_scatter(flat.flat_grads(), self.group,",
            I5 + '                                      op="sum") / 2'] + FREE, "own_slice"),
        "the full flat gradients kept on the optimizer (no attribute of ZeRO's own)": ([
            I5 + "flat_grads = flat.flat_grads()",
            I5 + "self.optimizer.flat_grads = flat_grads",
            I5 + "self.grad_shard = comm.reduce_scatter(flat_grads, self.group, op=\"mean\")"]
            + FREE, "freed"),
        "the p.grad arrays kept in a list on the group before they are freed": ([
            I5 + "self.group.old_grads = [p.grad for p in flat.params]",
            I5 + "self.grad_shard = comm.reduce_scatter(flat.flat_grads(), self.group,",
            I5 + '                                      op="mean")'] + FREE, "freed"),
    },
    "5.2": {
        "no update of the shard": (GATHER, "own_update"),
        "the step count hard-coded to 1": ([
            I6 + 'with no_grad(), trace.span("optimizer"):',
            I6 + "    self.optimizer.update(self.shard, self.grad_shard, flat.state, 1)"]
            + GATHER, "own_update"),
        "a fresh optimizer state every step (state not kept)": ([
            I6 + 'with no_grad(), trace.span("optimizer"):',
            I6 + "    self.optimizer.update(self.shard, self.grad_shard, {}, self.step_count)"]
            + GATHER, "own_update"),
        "updates a copy of the shard": ([
            I6 + 'with no_grad(), trace.span("optimizer"):',
            I6 + "    self.optimizer.update(self.shard.copy(), self.grad_shard, flat.state,",
            I6 + "                          self.step_count)"] + GATHER, "own_update"),
        "all-reduce of a zero-padded full buffer (same weights, twice the bytes)": (UPDATE + [
            I6 + "full = xp.zeros(flat.padded, flat.dtype)",
            I6 + "flat.own(full)[...] = self.shard",
            I6 + "full = comm.all_reduce(full, self.group)"], "all_gather"),
        "all-gather over the world": (UPDATE + [
            I6 + "full = comm.all_gather(self.shard, comm.world())"], "all_gather"),
        "all-gather before the update (the old weights)": (GATHER + UPDATE, "weights"),
        "gathered in float64 (right for float64 only)": (UPDATE + [
            I6 + "full = comm.all_gather(self.shard.astype(xp.float64), self.group)"],
            "weights"),
        "the old slice kept on the optimizer (the old full weights stay alive)": ([
            I6 + "self.optimizer.previous = self.shard"] + UPDATE + GATHER, "weights"),
        "an extra blocking allgather_object (the pickle API, untraced)": (UPDATE + [
            I6 + "comm.allgather_object(self.step_count, self.group)"] + GATHER,
            "all_gather"),
    },
}

# Right answers written another way: each must PASS (a false FAIL is the second worst thing).
ALTERNATIVES = {
    "4.1": {
        "divided by the group size first, then an all-reduce (sum) in place": [
            I4 + "bucket.reduce /= self.group.size",
            I4 + 'bucket.handle = comm.iall_reduce(bucket.reduce, self.group, op="sum",',
            I4 + "                                 inplace=True)"],
    },
    "5.1": {
        "reduce-scatter (sum), then divided by the group size": [
            I5 + "self.grad_shard = comm.reduce_scatter(flat.flat_grads(), self.group)",
            I5 + "self.grad_shard /= self.group.size"] + FREE,
        "the slice also kept under a name of one's own (an alias: no more memory)": [
            I5 + "self.grad_shard = comm.reduce_scatter(flat.flat_grads(), self.group,",
            I5 + '                                      op="mean")',
            I5 + "self.my_grads = self.grad_shard",
            I5 + "self.reduced = getattr(self, 'reduced', 0) + 1"] + FREE,
    },
    "5.2": {
        "the optimizer given a copy of the gradient slice": [
            I6 + 'with no_grad(), trace.span("optimizer"):',
            I6 + "    self.optimizer.update(self.shard, self.grad_shard.copy(), flat.state,",
            I6 + "                          self.step_count)"] + GATHER,
        "a copy of the slice all-gathered": UPDATE + [
            I6 + "full = comm.all_gather(self.shard.copy(), self.group)"],
    },
}


@pytest.fixture(scope="module")
def verdicts():
    return grade_lessons({ex_id: block_of(ex_id) for ex_id in MUTANTS}, MUTANTS, ALTERNATIVES,
                         timeout=120)


@pytest.mark.parametrize("ex_id,name", [(ex_id, name) for ex_id, alts in ALTERNATIVES.items()
                                        for name in alts])
def test_a_right_answer_written_another_way_passes(verdicts, ex_id, name):
    verdict = verdicts[ex_id][name]
    assert verdict.passed, f"{name}: {verdict.result}\n" + "\n".join(verdict.lines)


@pytest.mark.parametrize("ex_id", list(MUTANTS))
def test_the_reference_passes_every_point(verdicts, ex_id):
    assert verdicts[ex_id]["reference"].passed, "\n".join(verdicts[ex_id]["reference"].lines)


@pytest.mark.parametrize("ex_id,name", [(ex_id, name) for ex_id, mutants in MUTANTS.items()
                                        for name in mutants])
def test_a_wrong_answer_misses_its_point(verdicts, ex_id, name):
    assert_mutants(verdicts[ex_id], ex_id, {name: MUTANTS[ex_id][name]})


@pytest.mark.parametrize("ex_id", list(MUTANTS))
def test_at_least_four_kinds_of_mistake(ex_id):
    assert len({point for _, point in MUTANTS[ex_id].values()}) >= 2
    assert len(MUTANTS[ex_id]) >= 4
