"""The grader cannot be passed by wrong code: plausible bugs, planted one at a time, all FAIL.

Each mutant is the reference package with ONE exercise block replaced by a
wrong answer a student could plausibly write (``grader.grade_variants``):
the world instead of the group, a missing f or g, a missing transpose, sum
instead of mean, a reversed micro-batch order, an off-by-one 1F1B warm-up, a
wrong shard slice, a shape that differs between ranks. The multi-rank
exercises run on 4 ranks as a 2 x 2 grid, so "the group" is a strict subset
of "the world". Every mutant must FAIL, and its message must say what is
wrong (the expected text below), never just "crashed".

All single-process mutants run in one process and all 4-rank mutants in one
mpiexec launch (a hang costs one relaunch of those left).
"""
import re

import pytest

from minimegatron.grader import grade_variants

WORLD = "from minimegatron.comm import world"

MUTANTS = {
    # 1.x autodiff: the backward formulas
    "1.1 no transpose": ("1.1", [
        "        if ctx.needs_input_grad[0]:",
        "            gx = unbroadcast(g @ a2, x2.shape).reshape(x.shape)",
        "        if ctx.needs_input_grad[1]:",
        "            ga = unbroadcast(x2 @ g, a2.shape).reshape(a.shape)"],
        r"MatMul|autodiff|shape|broadcast"),
    "1.1 no unbroadcast": ("1.1", [
        "        if ctx.needs_input_grad[0]:",
        "            gx = (g @ xp.swapaxes(a2, -1, -2)).reshape(x.shape)",
        "        if ctx.needs_input_grad[1]:",
        "            ga = (xp.swapaxes(x2, -1, -2) @ g).reshape(a.shape)"],
        r"reshape|shape|broadcast|size"),
    "1.1 the one-GEMM form for a batched A too": ("1.1", [
        "        g2 = g.reshape(-1, g.shape[-1])",
        "        if ctx.needs_input_grad[0]:",
        "            gx = (g2 @ xp.swapaxes(a2, -1, -2)).reshape(x.shape)",
        "        if ctx.needs_input_grad[1]:",
        "            ga = (x2.reshape(-1, x2.shape[-1]).T @ g2).reshape(a.shape)"],
        r"reshape|shape|broadcast|size"),
    "1.2 forgot the chain rule": ("1.2", ["        return grad_out"],
                                  r"autodiff -?\d.* vs numerical"),
    "1.2 ignores grad_out": ("1.2", ["        return ctx.saved[0]"],
                             r"autodiff -?\d.* vs numerical"),
    "1.3 no square": ("1.3", ["        return grad_out * (1 - ctx.saved[0])"],
                      r"autodiff -?\d.* vs numerical"),
    "1.3 wrong sign": ("1.3", ["        return grad_out * (1 + ctx.saved[0] ** 2)"],
                       r"autodiff -?\d.* vs numerical"),
    "1.4 every entry gets the gradient": ("1.4", [
        "        return xp.ones_like(ctx.saved[0]) * _expand_reduced(grad_out, *ctx.args)"],
        r"tied 3s share the gradient.*\n.*expected"),
    "1.4 reduced axes not restored": ("1.4", ["        return ctx.saved[0] * grad_out"],
                                      r"broadcast|shape"),
    "1.5 leading axes only": ("1.5", [
        "    while grad.ndim > len(shape):",
        "        grad = grad.sum(axis=0)"], r"shape|broadcast|unbroadcast"),
    "1.5 drops the size-1 axes": ("1.5", [
        "    while grad.ndim > len(shape):",
        "        grad = grad.sum(axis=0)",
        "    for axis, size in enumerate(shape):",
        "        if size == 1 and grad.shape[axis] != 1:",
        "            grad = grad.sum(axis=axis)"], r"shape|broadcast|unbroadcast|axis"),
    "1.6 gradient not spread back": ("1.6", ["        return grad_out"],
                                     r"shape|broadcast|autodiff"),
    "1.6 ignores grad_out": ("1.6", [
        "        return xp.ones_like(_expand_reduced(grad_out, *ctx.args))"],
        r"autodiff -?\d.* vs numerical"),
    # 2.x schedules: data, checked without MPI
    "2.1 backwards in reverse order": ("2.1", [
        "    for i in range(num_micro_batches):",
        "        actions += _forward(num_stages, stage, i)",
        "    for i in reversed(range(num_micro_batches)):",
        "        actions += _backward(num_stages, stage, i)"], r"backward micro-batches, in order"),
    "2.1 one micro-batch at a time": ("2.1", [
        "    for i in range(num_micro_batches):",
        "        actions += _forward(num_stages, stage, i)",
        "        actions += _backward(num_stages, stage, i)"], r"bubble|held|simulat|deadlock"),
    "2.2 warm-up one too long": ("2.2", [
        "    warmup = min(num_stages - stage, num_micro_batches)",
        "    for i in range(warmup):",
        "        actions += _forward(num_stages, stage, i)",
        "    for i in range(num_micro_batches - warmup):",
        "        actions += _forward(num_stages, stage, warmup + i)",
        "        actions += _backward(num_stages, stage, i)",
        "    for i in range(num_micro_batches - warmup, num_micro_batches):",
        "        actions += _backward(num_stages, stage, i)"], r"most activations held at once"),
    "2.2 no cool-down": ("2.2", [
        "    warmup = min(num_stages - stage - 1, num_micro_batches)",
        "    for i in range(warmup):",
        "        actions += _forward(num_stages, stage, i)",
        "    for i in range(num_micro_batches - warmup):",
        "        actions += _forward(num_stages, stage, warmup + i)",
        "        actions += _backward(num_stages, stage, i)"], r"backward micro-batches"),
    # 3.x tensor parallel, on the tp groups [0, 1] [2, 3]
    "3.1 all-reduce over the world": ("3.1", [
        f"            {WORLD}",
        "            return all_reduce(grad_out, world()), None"], r"expected .*\n.*got"),
    "3.1 missing all-reduce": ("3.1", ["            return grad_out, None"],
                               r"expected .*\n.*got"),
    "3.2 all-reduce over the world": ("3.2", [
        f"        {WORLD}",
        "        return x if group.size == 1 else all_reduce(x, world())"],
        r"reduce_from_tp forward.*\n.*expected"),
    "3.2 missing all-reduce (g is identity)": ("3.2", ["        return x"],
                                               r"reduce_from_tp forward.*\n.*expected"),
    "3.3 rank-divergent shape": ("3.3", [
        "        width = in_features // tp_group.size",
        "        cols = slice(tp_group.rank * width, (tp_group.rank + 1) * width)"],
        r"HANG|shape|expected"),
    "3.3 strided columns": ("3.3", [
        "        width = out_features // tp_group.size",
        "        cols = slice(tp_group.rank, None, tp_group.size)"], r"expected|error"),
    "3.3 world rank": ("3.3", [
        f"        {WORLD}",
        "        width = out_features // tp_group.size",
        "        cols = slice(world().rank * width, (world().rank + 1) * width)"],
        r"HANG|shape|expected"),
    "3.4 strided rows": ("3.4", [
        "        height = in_features // tp_group.size",
        "        rows = slice(tp_group.rank, None, tp_group.size)"], r"expected|error"),
    "3.4 rows from the other end": ("3.4", [
        "        height = in_features // tp_group.size",
        "        r = tp_group.size - 1 - tp_group.rank",
        "        rows = slice(r * height, (r + 1) * height)"], r"expected|error"),
    "3.5 missing g": ("3.5", [
        "        partial = x @ self.weight",
        "        self.last_partial = partial.data",
        "        y = partial"], r"expected|error"),
    "3.5 g over the world": ("3.5", [
        f"        {WORLD}",
        "        partial = x @ self.weight",
        "        self.last_partial = partial.data",
        "        y = reduce_from_tp(partial, world())"], r"expected|error"),
    # 4.1 DDP and 5.x ZeRO, on the dp groups [0, 2] [1, 3]
    "4.1 all-reduce over the world": ("4.1", [
        "            bucket.handle = comm.iall_reduce(bucket.reduce, comm.world(), op=\"mean\",",
        "                                             inplace=True)"],
        r"mean over THIS group|differs by up to"),
    "4.1 sum instead of mean": ("4.1", [
        "            bucket.handle = comm.iall_reduce(bucket.reduce, self.group, op=\"sum\",",
        "                                             inplace=True)"],
        r"mean over THIS group|differs by up to"),
    "4.1 not in place (the result lands in a new array)": ("4.1", [
        "            bucket.handle = comm.iall_reduce(bucket.reduce, self.group, op=\"mean\")"],
        r"mean over THIS group|differs by up to"),
    "5.1 sum instead of mean": ("5.1", [
        "                self.grad_shard = comm.reduce_scatter(flat.flat_grads(), self.group,",
        "                                                      op=\"sum\")",
        "                for p in flat.params:",
        "                    p.grad = None"], r"differs by up to"),
    "5.1 reduce-scatter over the world": ("5.1", [
        "                self.grad_shard = comm.reduce_scatter(flat.flat_grads(), comm.world(),",
        "                                                      op=\"mean\")",
        "                for p in flat.params:",
        "                    p.grad = None"], r"differs by up to|shape|error|HANG"),
    "5.2 all-gather over the world": ("5.2", [
        "        with no_grad(), trace.span(\"optimizer\"):",
        "            self.optimizer.update(self.shard, self.grad_shard, flat.state,",
        "                                  self.step_count)",
        "        full = comm.all_gather(self.shard, comm.world())"], r"error|shape|differs|HANG"),
    "5.2 no update of the shard": ("5.2", [
        "        full = comm.all_gather(self.shard, self.group)"], r"differs by up to"),
    # 6.1 the interleaved warm-up count
    "6.1 forgot (v-1)*K": ("6.1", [
        "    warmup = min((K - stage - 1) * 2, total)"], r"chunk activations held"),
    "6.1 not capped at M*v": ("6.1", [
        "    warmup = (K - stage - 1) * 2 + (v - 1) * K"], r"\(micro-batch, chunk\) pairs"),
    "6.1 plain 1F1B's warm-up plus (v-1)*K": ("6.1", [
        "    warmup = min(K - stage - 1 + (v - 1) * K, total)"], r"chunk activations held"),
    # 6.2 sequence parallel g-bar, on the tp groups [0, 1] [2, 3]
    "6.2 all-reduce, no split": ("6.2", [
        "        from minimegatron.comm import all_reduce",
        "        return x if group.size == 1 else all_reduce(x, group)"],
        r"reduce_scatter_to_sequence forward.*shape"),
    "6.2 reduce-scatter along the hidden axis": ("6.2", [
        "        return x if group.size == 1 else reduce_scatter(x, group, axis=-1)"],
        r"reduce_scatter_to_sequence forward.*shape"),
    "6.2 reduce-scatter over the world": ("6.2", [
        f"        {WORLD}",
        "        return x if group.size == 1 else reduce_scatter(x, world(), axis=SEQ)"],
        r"reduce_scatter_to_sequence forward.*shape"),
    "6.2 reduce-scatter along the batch axis": ("6.2", [
        "        return x if group.size == 1 else reduce_scatter(x, group, axis=0)"],
        r"reduce_scatter_to_sequence forward.*shape"),
    # 7.1 loss scaling, on the dp groups [0, 2] [1, 3]
    "7.1 skip only on the rank that overflowed": ("7.1", [
        "        local = xp.asarray([0.0 if all_finite(grads) else 1.0])",
        "        found_inf = bool(local[0] > 0)",
        "        if found_inf:",
        "            self.scale = max(self.scale * self.backoff_factor, self.min_scale)",
        "            self.clean_steps = 0",
        "        else:",
        "            self.clean_steps += 1",
        "            if self.clean_steps == self.growth_interval:",
        "                self.scale *= self.growth_factor",
        "                self.clean_steps = 0"], r"skipped, scale.*\n?.*expected|expected"),
    "7.1 no halving": ("7.1", [
        "        local = xp.asarray([0.0 if all_finite(grads) else 1.0])",
        "        if group is not None:",
        "            local = comm.all_reduce(local, group, op=\"max\")",
        "        found_inf = bool(local[0] > 0)",
        "        if not found_inf:",
        "            self.clean_steps += 1",
        "            if self.clean_steps == self.growth_interval:",
        "                self.scale *= self.growth_factor",
        "                self.clean_steps = 0"], r"expected"),
    "7.1 flag reduced over the world": ("7.1", [
        "        local = xp.asarray([0.0 if all_finite(grads) else 1.0])",
        "        local = comm.all_reduce(local, comm.world(), op=\"max\")",
        "        found_inf = bool(local[0] > 0)",
        "        if found_inf:",
        "            self.scale = max(self.scale * self.backoff_factor, self.min_scale)",
        "            self.clean_steps = 0",
        "        else:",
        "            self.clean_steps += 1",
        "            if self.clean_steps == self.growth_interval:",
        "                self.scale *= self.growth_factor",
        "                self.clean_steps = 0"], r"THIS group.*\n?.*expected|expected"),
}


@pytest.fixture(scope="module")
def verdicts():
    variants = {name: (ex_id, [line + "\n" for line in body])
                for name, (ex_id, body, _) in MUTANTS.items()}
    return grade_variants(variants, timeout=60)


def test_every_exercise_has_at_least_two_mutants():
    from minimegatron.exercise_checks import EXERCISES
    counts = {ex.id: 0 for ex in EXERCISES}
    for ex_id, _, _ in MUTANTS.values():
        counts[ex_id] += 1
    assert min(counts.values()) >= 2, counts


@pytest.mark.parametrize("name", list(MUTANTS))
def test_a_planted_bug_fails_with_a_message_to_act_on(verdicts, name):
    passed, lines = verdicts[name]
    text = "\n".join(lines)
    assert not passed, f"{name} PASSED the grader:\n{text}"
    print(f"--- {name}\n{text}")
    assert re.search(MUTANTS[name][2], text), f"{name}: unhelpful message:\n{text}"
    assert "crashed" not in text, text


def test_a_rank_divergent_hang_is_reported_as_HANG_with_where_each_rank_waits():
    """Rank 0 of each tp group waits for a message its partner never sends: no rank
    finishes, so after --timeout the grader asks every rank where it waits, then kills."""
    body = ["            if ctx.group.rank == 0:",
            "                import numpy",
            "                from minimegatron import comm",
            "                comm.recv(numpy.empty(1), 1, ctx.group)",
            "            return all_reduce(grad_out, ctx.group), None"]
    verdicts = grade_variants({"hang": ("3.1", [line + "\n" for line in body])}, timeout=8)
    passed, lines = verdicts["hang"]
    text = "\n".join(lines)
    assert not passed and text.startswith("HANG: no progress for "), text
    for rank in range(4):
        assert f"rank {rank}: still inside the check" in text, text
    assert "where each rank waited when it was killed:" in text, text
    assert re.search(r"\[rank 0\] waits in recv .*rank 1", text), text
    assert re.search(r"\[rank 0\]   called at .*mappings\.py:\d+: comm\.recv\(", text), text
