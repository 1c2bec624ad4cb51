"""Exercises 10.1 (MoE routing: top-k with capacity), 10.2 (the expert-parallel dispatch
layout) and 10.3 (aux-loss-free balancing: the expert bias): the reference PASSes, right
answers written another way PASS, and every wrong answer misses its point.

10.1 and 10.3 are graded in one process; 10.2 on 4 ranks (dp groups [0, 2] and [1, 3] as ep groups
of 2, the world as an ep group of 4). Both exercises and all their mutants are graded in
one go (``grade_lessons``); each mutant must FAIL, and among the points it misses must be
the one named here, in English and in Korean.
"""
import pytest

from lesson_mutants import assert_mutants, block_of, grade_lessons

SHAPE = ["    b, steps, num_experts = probs.shape"]
TOP = ["    choice = xp.argsort(-probs, axis=-1, kind=\"stable\")[..., :k]"]
QUEUE = ["    queue = choice.transpose(0, 2, 1).reshape(b, k * steps)"]
COUNT = ["    onehot = queue[..., None] == xp.arange(num_experts)",
         "    before = xp.cumsum(onehot, axis=1) - 1",
         "    slot = xp.take_along_axis(before, queue[..., None], axis=2)[..., 0]",
         "    slot = slot.reshape(b, k, steps).transpose(0, 2, 1)"]
KEEP = ["    kept = xp.ones(choice.shape, dtype=bool) if capacity is None else slot < capacity",
        "    return choice, slot, kept"]

NO_CAPACITY = "dropless kept as integer ones (read as True, but ~1 = -2: the plan's drops)"
ROUTING_MUTANTS = {
    "ties go to the higher expert id (sort p, reverse)": (SHAPE + [
        "    choice = xp.argsort(probs, axis=-1, kind=\"stable\")[..., ::-1][..., :k]"]
        + QUEUE + COUNT + KEEP, "top_k"),
    "the k largest, smallest first": (SHAPE + [
        "    choice = xp.argsort(-probs, axis=-1, kind=\"stable\")[..., :k][..., ::-1]"]
        + QUEUE + COUNT + KEEP, "top_k"),
    "ranked by 1 - p (near-tied float32 probabilities become ties)": (SHAPE + [
        "    choice = xp.argsort(1 - probs, axis=-1, kind=\"stable\")[..., :k]"]
        + QUEUE + COUNT + KEEP, "top_k"),
    "token-major queue (each token's k choices, then the next token)": (SHAPE + TOP + [
        "    queue = choice.reshape(b, steps * k)"] + COUNT[:3] + [
        "    slot = slot.reshape(b, steps, k)"] + KEEP, "queue"),
    "one queue over the whole batch, not per sequence": (SHAPE + TOP + [
        "    queue = choice.transpose(0, 2, 1).reshape(1, b * k * steps)"] + COUNT[:3] + [
        "    slot = slot.reshape(b, k, steps).transpose(0, 2, 1)"] + KEEP, "queue"),
    "the most probable keep their slot (drop by probability)": (SHAPE + TOP + [
        "    p = xp.take_along_axis(probs, choice, axis=-1)",
        "    order = xp.argsort(-p.reshape(b, -1), axis=1, kind=\"stable\")",
        "    queue = xp.take_along_axis(choice.reshape(b, -1), order, axis=1)"] + COUNT[:3] + [
        "    back = xp.empty_like(slot)",
        "    xp.put_along_axis(back, order, slot, axis=1)",
        "    slot = back.reshape(b, steps, k)"] + KEEP, "queue"),
    "kept = slot <= capacity (one slot too many)": (SHAPE + TOP + QUEUE + COUNT + [
        "    kept = xp.ones(choice.shape, dtype=bool) if capacity is None "
        "else slot <= capacity",
        "    return choice, slot, kept"], "capacity"),
    "the assignments over capacity take the last slot instead of dropping": (
        SHAPE + TOP + QUEUE + COUNT + [
            "    if capacity is not None:",
            "        slot = xp.minimum(slot, capacity - 1)",
            "    return choice, slot, xp.ones(choice.shape, dtype=bool)"], "layer"),
    "queue counts kept in float16 (exact up to 2048 only; passed the old grader)": (
        SHAPE + TOP + QUEUE + [
            COUNT[0], "    before = xp.cumsum(onehot, axis=1, dtype=xp.float16) - 1"]
        + COUNT[2:] + KEEP, "queue"),
    "queue counts kept in uint8 (wrap at 256; passed the old grader)": (
        SHAPE + TOP + QUEUE + [
            COUNT[0], "    before = xp.cumsum(onehot, axis=1, dtype=xp.uint8).astype(int) - 1"]
        + COUNT[2:] + KEEP, "queue"),
    "probs squeezed first (a single token loses its axis; passed the old grader)": ([
        "    probs = probs.squeeze()"] + SHAPE + TOP + QUEUE + COUNT + KEEP, "top_k"),
    NO_CAPACITY: (SHAPE + TOP + QUEUE + COUNT + [
        "    kept = xp.ones(choice.shape, dtype=int) if capacity is None else slot < capacity",
        "    return choice, slot, kept"], "layer"),
}

ROUTING_RIGHT = {
    "ranked by lexsort on (id, -p) (ties to the lower id, no arithmetic on p)": SHAPE + [
        "    ids = xp.broadcast_to(xp.arange(num_experts), probs.shape)",
        "    choice = xp.lexsort((ids, -probs), axis=-1)[..., :k]"] + QUEUE + COUNT + KEEP,
    "a loop over sequences and slots": SHAPE + TOP + [
        "    slot = xp.zeros(choice.shape, dtype=xp.int64)",
        "    for s in range(b):",
        "        seen = [0] * num_experts",
        "        for j in range(k):",
        "            for t in range(steps):",
        "                e = int(choice[s, t, j])",
        "                slot[s, t, j], seen[e] = seen[e], seen[e] + 1"] + KEEP,
}

HEAD = ["    ep, width = group.size, rows.shape[-1]",
        "    block = rows.shape[0] // (ep * local_experts)",
        "    send = rows.reshape(ep, local_experts, block, width)"]
SEND = ["    with trace.label(\"ep.dispatch\"):",
        "        received = all_to_all_rows(send.reshape(-1, width), group)"]
TAIL = ["    received = received.reshape(ep, local_experts, block, width)",
        "    mine = received.transpose(1, 0, 2, 3)",
        "    return mine.reshape(local_experts * ep * block, width)"]

DISPATCH_MUTANTS = {
    "the all-to-all over the world, not the ep group": (HEAD + [
        "    from minimegatron.comm import world",
        "    received = all_to_all_rows(send.reshape(-1, width), world())"] + TAIL,
        "all_to_all"),
    "all-gather every rank's rows, keep my experts' (ep times the bytes)": (HEAD + [
        "    from minimegatron.comm import all_gather",
        "    from minimegatron.autodiff.tensor import Tensor",
        "    every = all_gather(xp.ascontiguousarray(rows.data), group)",
        "    every = every.reshape(ep, ep, local_experts, block, width)[:, group.rank]",
        "    mine = every.transpose(1, 0, 2, 3)",
        "    return Tensor(mine.reshape(local_experts * ep * block, width))"], "all_to_all"),
    "no transpose: source-major rows handed to the experts": (HEAD + SEND + [
        "    return received"], "layout"),
    "transposed before sending ([my expert][rank] instead of [rank][its expert])": (HEAD + [
        "    send = send.transpose(1, 0, 2, 3)",
        "    with trace.label(\"ep.dispatch\"):",
        "        received = all_to_all_rows(send.reshape(-1, width), group)"] + TAIL,
        "layout"),
    "arrivals read as [my expert][source] (reshaped the wrong way)": (HEAD + SEND + [
        "    received = received.reshape(local_experts, ep, block, width)",
        "    return received.reshape(local_experts * ep * block, width)"], "layout"),
    "an extra blocking allgather_object (the pickle API, untraced)": (HEAD + [
        "    from minimegatron.comm import allgather_object",
        "    allgather_object(block, group)"] + SEND + TAIL, "all_to_all"),
    "the raw all-to-all on arrays (no backward)": (HEAD + [
        "    from minimegatron.comm import all_to_all",
        "    from minimegatron.autodiff.tensor import Tensor",
        "    with trace.label(\"ep.dispatch\"):",
        "        received = Tensor(all_to_all(xp.ascontiguousarray(send.data.reshape(-1, "
        "width)), group))"] + TAIL, "layer"),
}

DISPATCH_RIGHT = {
    "the rows sent as they are, one chain, the label left out": HEAD[:2] + [
        "    received = all_to_all_rows(rows, group)",
        "    return received.reshape(ep, local_experts, block, width).transpose(",
        "        1, 0, 2, 3).reshape(-1, width)"],
}

MEAN = ["    mean = load.mean()"]
BALANCING_MUTANTS = {
    "the overloaded expert made MORE attractive (sign of load - mean)": ([
        "    return bias + rate * xp.sign(load - load.mean())"], "direction"),
    "the step alone, the old bias dropped": ([
        "    return rate * xp.sign(load.mean() - load)"], "direction"),
    "the median in place of the mean": ([
        "    return bias + rate * xp.sign(xp.median(load) - load)"], "direction"),
    "by the deviation's size: rate * (mean - load)": ([
        "    return bias + rate * (load.mean() - load)"], "sign_only"),
    "an expert at the mean nudged up (where(load > mean, -rate, rate))": (MEAN + [
        "    return bias + xp.where(load > mean, -rate, rate)"], "at_mean"),
    "a step that shrinks as the bias grows (state creeping into the rate)": ([
        "    step = rate / (1.0 + 10.0 * xp.abs(bias).max())",
        "    return bias + step * xp.sign(load.mean() - load)"], "balances"),
}

BALANCING_RIGHT = {
    "two wheres, the mean as sum / E": [
        "    mean = load.sum() / load.size",
        "    up = xp.where(load < mean, rate, 0.0)",
        "    return bias + up - xp.where(load > mean, rate, 0.0)"],
    "minus the sign of load - mean, on a copy": [
        "    new = bias.copy()",
        "    new -= rate * xp.sign(load - load.mean())",
        "    return new"],
}

MUTANTS = {"10.1": ROUTING_MUTANTS, "10.2": DISPATCH_MUTANTS, "10.3": BALANCING_MUTANTS}
RIGHT = {"10.1": ROUTING_RIGHT, "10.2": DISPATCH_RIGHT, "10.3": BALANCING_RIGHT}


@pytest.fixture(scope="module")
def verdicts():
    return grade_lessons({ex: block_of(ex) for ex in MUTANTS}, MUTANTS, RIGHT, timeout=120)


@pytest.mark.parametrize("ex", list(MUTANTS))
def test_the_reference_passes_every_point(verdicts, ex):
    assert verdicts[ex]["reference"].passed, "\n".join(verdicts[ex]["reference"].lines)


@pytest.mark.parametrize("ex, name", [(ex, name) for ex in RIGHT for name in RIGHT[ex]])
def test_a_right_answer_written_another_way_passes(verdicts, ex, name):
    assert verdicts[ex][name].passed, "\n".join(verdicts[ex][name].lines)


@pytest.mark.parametrize("ex, name", [(ex, name) for ex in MUTANTS for name in MUTANTS[ex]])
def test_a_wrong_answer_misses_its_point(verdicts, ex, name):
    assert_mutants(verdicts[ex], ex, {name: MUTANTS[ex][name]})


def test_a_top_k_slip_is_not_counted_against_the_queue(verdicts):
    """The queue and the capacity are judged on the student's own choices."""
    missed = verdicts["10.1"]["the k largest, smallest first"].missed
    assert "top_k" in missed and "queue" not in missed and "capacity" not in missed


def test_the_no_capacity_layer_alone_catches_integer_ones(verdicts):
    """kept of 1s, not Trues, when capacity is None: every queue case reads it as True, so
    only the MoE layer without capacity misses: its plan counts ~1 = -2 drops for each
    assignment (RoutePlan.dropped), in both languages."""
    verdict = verdicts["10.1"][NO_CAPACITY]
    assert verdict.missed == ["layer"], verdict.lines
    shown, ko = "\n".join(verdict.lines), "\n".join(verdict.ko.lines)
    assert "capacity None" in shown and "counts -64 dropped" in shown, shown
    assert "용량 None" in ko and "-64개" in ko, ko


def test_only_the_gradient_is_missing_without_the_autograd_all_to_all(verdicts):
    assert verdicts["10.2"]["the raw all-to-all on arrays (no backward)"].missed == ["layer"]


def test_at_least_four_kinds_of_mistake_each():
    for ex, mutants in MUTANTS.items():
        assert len(mutants) >= 4, ex
        assert len({point for _, point in mutants.values()}) >= 3, ex
