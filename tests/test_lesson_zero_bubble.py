"""Exercises 9.1 (split the backward into B and W) and 9.2 (place ZB-H1's W steps): the
reference PASSes every point, every wrong answer misses its point, and right answers
written another way PASS.

Each mutant is the reference package with one block replaced by an answer a student
could plausibly write (``grader.grade_variants``). 9.1 runs two Linears through a split
backward in float64 and float32 and records which products each half asked for; 9.2 is
graded as data (every stage's list for settings drawn from the seed). Each mutant must
FAIL, and among the points it misses must be the one named here, in English and in
Korean. Both exercises' variants run in ONE launch.
"""
import pytest

from lesson_mutants import assert_mutants, block_of, grade_lessons

RECORD = ["        self.steps.append((node.fn, node.ctx, node.inputs, grad_outs, weights))"]
OTHERS = ["        others = tuple(need and not w for need, w in zip(node.ctx.needs_input_grad, "
          "weights))"]
NO_WEIGHT = ["        weights = tuple(is_weight(t) for t in node.inputs)",
             "        if True not in weights:",
             "            return node.fn.backward(node.ctx, *grad_outs)"]
B_HALF = ["        if True not in others:",
          "            return (None,) * len(weights)",
          "        return masked_backward(node.fn, node.ctx, grad_outs, others)"]

SPLIT_MUTANTS = {
    "the whole backward in B, nothing left for W": ([
        "        return node.fn.backward(node.ctx, *grad_outs)"], "b_no_weight"),
    "B computes both products and drops the weight's": (NO_WEIGHT + RECORD + [
        "        grads = node.fn.backward(node.ctx, *grad_outs)",
        "        grads = grads if isinstance(grads, tuple) else (grads,)",
        "        return tuple(None if w else g for g, w in zip(grads, weights))"],
        "b_no_weight"),
    "weights told apart by requires_grad (x is deferred too)": ([
        "        weights = tuple(t is not None and t._node is None and t.requires_grad",
        "                        for t in node.inputs)",
        "        if True not in weights:",
        "            return node.fn.backward(node.ctx, *grad_outs)"] + RECORD + OTHERS + B_HALF,
        "input_now"),
    "masks swapped: B computes the weights, W the inputs": (NO_WEIGHT + OTHERS + [
        "        self.steps.append((node.fn, node.ctx, node.inputs, grad_outs, others))",
        "        return masked_backward(node.fn, node.ctx, grad_outs, weights)"], "input_now"),
    "W records needs_input_grad (recomputes dY W^T)": (NO_WEIGHT + [
        "        self.steps.append((node.fn, node.ctx, node.inputs, grad_outs,",
        "                           node.ctx.needs_input_grad))"] + OTHERS + B_HALF,
        "w_no_input"),
    "every op recorded for W, with or without a weight": ([
        "        weights = tuple(is_weight(t) for t in node.inputs)"] + RECORD + OTHERS + [
        "        return masked_backward(node.fn, node.ctx, grad_outs, others)"], "w_no_input"),
    "W half never recorded": (NO_WEIGHT + OTHERS + B_HALF, "values"),
    "W steps recorded in reverse (a weight used three times sums in another order)": (
        NO_WEIGHT + [
            "        self.steps.insert(0, (node.fn, node.ctx, node.inputs, grad_outs, weights))"]
        + OTHERS + B_HALF, "values"),
    "dY W^T in B even for an input that needs no gradient": (NO_WEIGHT + RECORD + [
        "        others = tuple(not w for w in weights)"] + B_HALF, "b_no_weight"),
    "only the second input looked at for a weight (passed the old grader)": ([
        "        weights = (False,) * (len(node.inputs) - 1) + (is_weight(node.inputs[-1]),)",
        "        if True not in weights:",
        "            return node.fn.backward(node.ctx, *grad_outs)"] + RECORD + OTHERS + B_HALF,
        "either_order"),
    "the input first, the weight second, hard-coded (passed the old grader)": (NO_WEIGHT
        + RECORD + [
        "        others = (node.ctx.needs_input_grad[0],) + (False,) * (len(weights) - 1)"]
        + B_HALF, "either_order"),
}

CAP = ["        if held == cap:",
       "            actions.append(Action('weight', weights))",
       "            weights, held = weights + 1, held - 1"]
STEADY_B = ["    for j in range(num_micro_batches - w):",
            "        actions += backward_actions(num_stages, stage, j)"]
STEADY_F = ["        actions += forward_actions(num_stages, stage, w + j)",
            "        held += 1"]
COOL = ["    for j in range(num_micro_batches - w, num_micro_batches):",
        "        actions += backward_actions(num_stages, stage, j) + [Action('weight', weights)]",
        "        weights += 1"]
PENDING = ["    actions += [Action('weight', i) for i in range(weights, num_micro_batches)]"]

SCHEDULE_MUTANTS = {
    "a W right after every B (1F1B again)": ([
        "    for j in range(num_micro_batches - w):",
        "        actions += backward_actions(num_stages, stage, j) + [Action('weight', j)]",
        "        actions += forward_actions(num_stages, stage, w + j)",
        "    for j in range(num_micro_batches - w, num_micro_batches):",
        "        actions += backward_actions(num_stages, stage, j) + [Action('weight', j)]"],
        "bubble"),
    "every W at the end": ([
        "    for j in range(num_micro_batches - w):",
        "        actions += backward_actions(num_stages, stage, j)",
        "        actions += forward_actions(num_stages, stage, w + j)",
        "    for j in range(num_micro_batches - w, num_micro_batches):",
        "        actions += backward_actions(num_stages, stage, j)",
        "    actions += [Action('weight', i) for i in range(num_micro_batches)]"], "memory"),
    "the W's still pending at the end forgotten": (STEADY_B + CAP + STEADY_F + COOL, "once"),
    "W of the next micro-batch, before its B": (STEADY_B + [
        "        if held == cap:",
        "            actions.append(Action('weight', weights + 1))",
        "            weights, held = weights + 1, held - 1"] + STEADY_F + COOL + PENDING,
        "after_b"),
    "the cool-down's W before its B": (STEADY_B + CAP + STEADY_F + [
        "    for j in range(num_micro_batches - w, num_micro_batches):",
        "        actions += [Action('weight', weights)] + backward_actions(num_stages, stage, j)",
        "        weights += 1"] + PENDING, "after_b"),
    "cap hard-coded as K (right for ZB-H1 only)": (STEADY_B + [
        "        if held == num_stages:",
        "            actions.append(Action('weight', weights))",
        "            weights, held = weights + 1, held - 1"] + STEADY_F + COOL + PENDING, "h2"),
    "the F before the B in the steady state": ([
        "    for j in range(num_micro_batches - w):",
        "        actions += forward_actions(num_stages, stage, w + j)",
        "        held += 1",
        "        actions += backward_actions(num_stages, stage, j)"] + CAP + COOL + PENDING,
        "once"),
}

ALTERNATIVES = {
    "9.1": {
        "any() and a list comprehension": [
            "        weights = tuple(is_weight(t) for t in node.inputs)",
            "        if not any(weights):",
            "            return node.fn.backward(node.ctx, *grad_outs)",
            "        self.steps.append((node.fn, node.ctx, node.inputs, grad_outs, weights))",
            "        mask = tuple([bool(n) and not w",
            "                      for n, w in zip(node.ctx.needs_input_grad, weights)])",
            "        if not any(mask):",
            "            return tuple(None for _ in weights)",
            "        return masked_backward(node.fn, node.ctx, grad_outs, mask)"]},
    "9.2": {
        "a while loop over pending W's": [
            "    pending = list(range(num_micro_batches))",
            "    for j in range(num_micro_batches - w):",
            "        actions += backward_actions(num_stages, stage, j)",
            "        if held >= cap:",
            "            actions.append(Action('weight', pending.pop(0)))",
            "            held -= 1",
            "        actions += forward_actions(num_stages, stage, w + j)",
            "        held += 1",
            "    for j in range(num_micro_batches - w, num_micro_batches):",
            "        actions += backward_actions(num_stages, stage, j)",
            "        actions.append(Action('weight', pending.pop(0)))",
            "    while pending:",
            "        actions.append(Action('weight', pending.pop(0)))"]},
}

MUTANTS = {"9.1": SPLIT_MUTANTS, "9.2": SCHEDULE_MUTANTS}


@pytest.fixture(scope="module")
def verdicts():
    return grade_lessons({ex: block_of(ex) for ex in MUTANTS}, MUTANTS, ALTERNATIVES)


@pytest.mark.parametrize("ex", list(MUTANTS))
def test_the_reference_passes_every_point(verdicts, ex):
    assert verdicts[ex]["reference"].passed, "\n".join(verdicts[ex]["reference"].lines)


@pytest.mark.parametrize("ex, name", [(ex, name) for ex in MUTANTS for name in MUTANTS[ex]])
def test_a_wrong_answer_misses_its_point(verdicts, ex, name):
    assert_mutants(verdicts[ex], ex, {name: MUTANTS[ex][name]})


@pytest.mark.parametrize("ex, name", [(ex, name) for ex in ALTERNATIVES
                                      for name in ALTERNATIVES[ex]])
def test_a_right_answer_written_another_way_passes(verdicts, ex, name):
    assert verdicts[ex][name].passed, "\n".join(verdicts[ex][name].lines)


def test_computing_both_products_in_b_is_only_the_cost_point(verdicts):
    """Dropping the weight's gradient after computing it gives the right numbers: the
    lesson (B computes no X^T dY) is the only point missed."""
    name = "B computes both products and drops the weight's"
    assert verdicts["9.1"][name].missed == ["b_no_weight"]
    assert verdicts["9.2"]["cap hard-coded as K (right for ZB-H1 only)"].missed == ["h2"]


def test_at_least_four_kinds_of_mistake_each():
    for ex, mutants in MUTANTS.items():
        assert len(mutants) >= 4, ex
        assert len({point for _, point in mutants.values()}) >= 3, ex
