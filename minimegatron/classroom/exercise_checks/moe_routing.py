"""Exercise 10.1, MoE routing, top-k with capacity: what it teaches, and the evidence.

The student's block is ``nn/moe/routing.choose_experts(probs, k, capacity)``, which
returns (choice, slot, kept), each (b, T, k). The student side (one process) calls it on
problems drawn from the grading seed, in float64 and float32, and runs the serial MoE
layer (which routes through it) on a zero router and a random one. The judge draws the
same problems again and computes every expected value itself with NumPy:

    top_k     choice = the k experts of largest prob, largest first; equal probs go to
              the LOWER expert id (rows full of ties, E = 4 .. 32, k = 1, 2, 3, and a
              single token: (2, 1, 5) and (1, 1, 4)); near
              ties (two float32 one step apart) are no ties: the larger comes first
    queue     slot = the assignment's place in its expert's queue of ITS sequence,
              slot-major: every token's first choice in token order, then every second
              choice (judged on the student's own choices, so a top-k slip is not
              counted twice); also a single token per sequence, and a sequence of more
              than 2048 tokens whose expert 0 queues every one (a count kept in float16,
              or in 8 bits, goes wrong only there)
    capacity  kept = slot < C, C = ceil(k T f / E) for f = 0.5, 1, 1.25, 2; dropless
              (capacity None) keeps every assignment
    layer     the MoE layer on this routing (zero and random routers, capacity factors
              1, 0.5, 1.25 and None: the no-capacity layer on both routers) equals the
              judge's loop over tokens:
              y_t = sum over t's kept choices e of p_{t,e} expert_e(x_t) (the router's
              probability, not renormalised); a token whose every choice was dropped has
              y_t = 0 exactly, so x + y = x (the residual carries it); and the layer's
              plan counts the assignments it dropped (``RoutePlan.dropped``, ~kept): none
              without capacity (kept as integer ones counts -2 each there)
"""
import math

import numpy as np

from minimegatron.classroom.exercise_checks.common import CheckFailed, expect_close, show
from minimegatron.classroom.exercise_checks.lesson import Lesson, Point
from minimegatron.i18n import text

DTYPES = ("float64", "float32")
FACTORS = (0.5, 1.0, 1.25, 2.0, None)               # None: dropless
WIDTH, LAYER_E, LAYER_K, LAYER_T, LAYER_B = 4, 4, 2, 8, 2
LAYERS = (("zero", 1.0), ("random", 0.5), ("random", 1.25), ("random", None), ("zero", None))
LONG = 2050             # tokens of the long sequence: more than float16 counts exactly
TOLERANCE = {"float64": 1e-10, "float32": 1e-4}


def _rng(seed, *tag):
    return np.random.default_rng([seed, 10, *tag])


def capacity(k, steps, factor, experts):
    """C = ceil(k T f / E), or None (dropless): the judge's own."""
    return None if factor is None else math.ceil(k * steps * factor / experts)


def tie_cases(seed):
    """[(probs (b, T, E), k)]: probs in quarters, so most rows hold ties."""
    rng = _rng(seed, 1)
    shapes = [(4, 1), (8, 2), (8, 3), (32, 2), (int(rng.integers(5, 13)), int(rng.integers(1, 4)))]
    cases = []
    for experts, k in shapes:
        q = rng.integers(1, 5, size=(2, int(rng.integers(4, 9)), experts)).astype(np.float64)
        cases.append((q / q.sum(axis=-1, keepdims=True), k))
    for b, experts, k in ((2, 5, 2), (1, 4, 1)):                # a single token (b, 1, E)
        q = rng.integers(1, 3, size=(b, 1, experts)).astype(np.float64)
        cases.append((q / q.sum(axis=-1, keepdims=True), k))
    return cases + [(near_ties(rng), 2)]


def near_ties(rng):
    """(2, 4, 6) probs, float32 values: in each row two near-tied ones, a and the next
    float32 above it, the larger at the HIGHER expert id. Distinct, so no tie: the larger
    comes first. Chosen so that 1 - a and 1 - next(a) are one float32 (a ranking by
    1 - p, or in float16, calls them tied and puts the lower id first)."""
    one = np.float32(1.0)
    pairs = []
    while len(pairs) < 8:
        a = np.float32(rng.uniform(0.3, 0.45))
        above = np.nextafter(a, one)
        if one - a == one - above:
            pairs.append((a, above))
    probs = rng.uniform(0.0, 0.2, size=(8, 6)).astype(np.float32)
    for row, (a, above) in enumerate(pairs):
        low, high = sorted(rng.choice(6, size=2, replace=False).tolist())
        probs[row, low], probs[row, high] = a, above
    return probs.reshape(2, 4, 6).astype(np.float64)


def queue_cases(seed):
    """[(probs (b, T, E), k, C)]: skewed routers, every capacity factor, drops included."""
    rng = _rng(seed, 2)
    cases = []
    for experts, k in ((4, 1), (8, 2), (int(rng.choice([4, 8])), 2)):
        steps = int(rng.integers(6, 13))
        probs = rng.dirichlet(0.3 * np.ones(experts), size=(3, steps))
        cases += [(probs, k, capacity(k, steps, f, experts)) for f in FACTORS]
    single = rng.dirichlet(np.ones(4), size=(3, 1))              # a single token per sequence
    cases += [(single, 2, capacity(2, 1, f, 4)) for f in FACTORS]
    steps = int(rng.integers(LONG, LONG + 150))                  # a long sequence: expert 0
    rest = rng.dirichlet(np.ones(3), size=(1, steps)) / 2        # is in every token's top 2,
    long = np.concatenate([np.full((1, steps, 1), 0.5), rest], axis=-1)    # a queue > 2048
    return cases + [(long, 2, capacity(2, steps, f, 4)) for f in (1.25, None)]


def layer_problem(seed, router, dtype):
    """x (b, T, D) and the layer's weights {name: array}: a zero router (every prob 1/E)
    or a random one."""
    rng = _rng(seed, 3, int(router == "zero"), DTYPES.index(dtype))
    d, e = WIDTH, LAYER_E
    weights = {"router.weight": rng.normal(0, 0.8, (d, e)) * (router != "zero"),
               "experts.fc1.weight": rng.normal(0, 0.5, (e, d, 4 * d)),
               "experts.fc1.bias": rng.normal(0, 0.5, (e, 4 * d)),
               "experts.fc2.weight": rng.normal(0, 0.5, (e, 4 * d, d)),
               "experts.fc2.bias": rng.normal(0, 0.5, (e, d))}
    x = rng.normal(size=(LAYER_B, LAYER_T, d))
    return x.astype(dtype), {n: w.astype(dtype) for n, w in weights.items()}


def _choose(probs, k, cap):
    """The student's (choice, slot, kept) as int/bool arrays, or the error they raised."""
    from minimegatron.backend import asarray, to_numpy
    from minimegatron.nn.moe.routing import choose_experts
    try:
        choice, slot, kept = choose_experts(asarray(probs), k, cap)
        return [to_numpy(choice).astype(np.int64), to_numpy(slot).astype(np.int64),
                to_numpy(kept).astype(bool)]
    except NotImplementedError:
        raise
    except Exception as err:   # noqa: BLE001 -- a wrong answer may raise: that is evidence
        return f"{type(err).__name__}: {err}"


def _layer(seed, router, factor, dtype):
    """{"probs", "y"} of the serial MoE layer (routing through the student's block)."""
    from minimegatron.autodiff import functional as F
    from minimegatron.autodiff.tensor import Tensor
    from minimegatron.backend import asarray, to_numpy
    from minimegatron.nn.moe import MoE, MoEConfig
    x, weights = layer_problem(seed, router, dtype)
    moe = MoEConfig(LAYER_E, LAYER_K, factor, aux_loss_coeff=0.0, z_loss_coeff=0.0)
    layer = MoE(WIDTH, moe, dtype)
    for name, p in layer.named_parameters():
        p.data = asarray(weights[name].copy())
    probs = F.softmax(layer.router(Tensor(asarray(x))), axis=-1).data      # what forward sees
    try:
        y = layer(Tensor(asarray(x))).data
        dropped = int(layer.last_plan.dropped)          # what the plan tells the training log
    except NotImplementedError:
        raise
    except Exception as err:   # noqa: BLE001 -- a wrong routing may break the layer: evidence
        return {"probs": to_numpy(probs), "y": f"{type(err).__name__}: {err}"}
    return {"probs": to_numpy(probs), "y": to_numpy(y), "dropped": dropped}


def collect_routing(group, seed):
    """The student's routing on every tie case and queue case (float64, float32), and the
    MoE layer on each router and capacity factor."""
    ties = {dtype: [_choose(p.astype(dtype), k, None) for p, k in tie_cases(seed)]
            for dtype in DTYPES}
    queues = {dtype: [_choose(p.astype(dtype), k, cap) for p, k, cap in queue_cases(seed)]
              for dtype in DTYPES}
    layers = {dtype: [_layer(seed, router, f, dtype) for router, f in LAYERS]
              for dtype in DTYPES}
    return {"ties": ties, "queues": queues, "layers": layers}


# --- the judge's own routing -----------------------------------------------------------------

def judge_top_k(probs, k):
    return np.argsort(-probs, axis=-1, kind="stable")[..., :k]


def judge_slots(choice, experts):
    """Slot-major queue positions per sequence: (b, T, k) -> (b, T, k)."""
    b, steps, k = choice.shape
    slot, seen = np.zeros_like(choice), np.zeros((b, experts), dtype=np.int64)
    for j in range(k):
        for t in range(steps):
            for s in range(b):
                slot[s, t, j] = seen[s, choice[s, t, j]]
                seen[s, choice[s, t, j]] += 1
    return slot


def _raised(got, what):
    if isinstance(got, str):
        raise CheckFailed(text("moe.raised", what=what, error=got))


def _student_choice(got, probs, k, what):
    """The student's choice, checked to be (b, T, k) expert ids (else the point is missed)."""
    _raised(got, what)
    choice = np.asarray(got[0])
    if choice.shape != probs.shape[:2] + (k,) or choice.min() < 0 or \
            choice.max() >= probs.shape[-1]:
        raise CheckFailed(text("moe.bad_choice", what=what, shape=choice.shape,
                               want=probs.shape[:2] + (k,)))
    return choice


def _case_name(probs, k, cap, dtype):
    b, steps, experts = probs.shape
    return text("moe.case", b=b, steps=steps, experts=experts, k=k, dtype=dtype,
                capacity="None" if cap is None else cap)


def _first_row(got, want):
    """(sequence, token) of the first row where two (b, T, k) arrays differ."""
    s, t = (int(i) for i in np.argwhere((got != want).any(axis=-1))[0])
    return s, t


def judge_top_k_point(ev, seed):
    for dtype in DTYPES:
        for (probs, k), got in zip(tie_cases(seed), ev["ties"][dtype]):
            probs = probs.astype(dtype)
            what = _case_name(probs, k, None, dtype)
            choice, want = _student_choice(got, probs, k, what), judge_top_k(probs, k)
            if not np.array_equal(choice, want):
                s, t = _first_row(choice, want)
                raise CheckFailed(text("moe.choice_wrong", what=what, s=s, t=t,
                                       probs=show(probs[s, t]), got=show(choice[s, t]),
                                       want=show(want[s, t])))


def _queue_evidence(ev, seed):
    """(what, probs, C, the student's choice, slot, kept, the judge's slot of that choice)."""
    for dtype in DTYPES:
        for (probs, k, cap), got in zip(queue_cases(seed), ev["queues"][dtype]):
            probs = probs.astype(dtype)
            what = _case_name(probs, k, cap, dtype)
            choice = _student_choice(got, probs, k, what)
            yield what, cap, choice, np.asarray(got[1]), np.asarray(got[2]), \
                judge_slots(choice, probs.shape[-1])


def judge_queue(ev, seed):
    for what, cap, choice, slot, _, want in _queue_evidence(ev, seed):
        if slot.shape != want.shape or not np.array_equal(slot, want):
            if slot.shape != want.shape:
                raise CheckFailed(text("moe.bad_slot", what=what, shape=slot.shape,
                                       want=want.shape))
            s, t = _first_row(slot, want)
            raise CheckFailed(text("moe.slot_wrong", what=what, s=s, t=t,
                                   choice=show(choice[s, t]), got=show(slot[s, t]),
                                   want=show(want[s, t])))


def judge_capacity(ev, seed):
    for what, cap, choice, _, kept, slot in _queue_evidence(ev, seed):
        want = np.ones(slot.shape, dtype=bool) if cap is None else slot < cap
        if kept.shape != want.shape:
            raise CheckFailed(text("moe.bad_slot", what=what, shape=kept.shape,
                                   want=want.shape))
        kept = kept.astype(bool)
        if not np.array_equal(kept, want):
            s, t = _first_row(kept, want)
            raise CheckFailed(text("moe.kept_wrong", what=what, s=s, t=t,
                                   choice=show(choice[s, t]), slot=show(slot[s, t]),
                                   got=show(kept[s, t]), want=show(want[s, t]),
                                   dropped=int(kept.size - kept.sum()),
                                   want_dropped=int(want.size - want.sum())))


def _gelu(z):
    return 0.5 * z * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (z + 0.044715 * z ** 3)))


def layer_output(x, weights, probs, cap):
    """The judge's loop: y_t = sum over t's kept choices e of p_{t,e} expert_e(x_t)."""
    w = {n: a.astype(np.float64) for n, a in weights.items()}
    x, probs = x.astype(np.float64), probs.astype(np.float64)
    choice = judge_top_k(probs, LAYER_K)
    slot = judge_slots(choice, LAYER_E)
    kept = np.ones(slot.shape, dtype=bool) if cap is None else slot < cap
    y = np.zeros_like(x)
    for s, t, j in zip(*np.nonzero(kept)):
        e = choice[s, t, j]
        hidden = _gelu(x[s, t] @ w["experts.fc1.weight"][e] + w["experts.fc1.bias"][e])
        out = hidden @ w["experts.fc2.weight"][e] + w["experts.fc2.bias"][e]
        y[s, t] += probs[s, t, e] * out
    return y, ~kept.any(axis=-1)                    # (b, T, D), (b, T) every choice dropped


def judge_layer(ev, seed):
    for dtype in DTYPES:
        for (router, factor), got in zip(LAYERS, ev["layers"][dtype]):
            x, weights = layer_problem(seed, router, dtype)
            cap = capacity(LAYER_K, LAYER_T, factor, LAYER_E)
            what = text("moe.layer_case", router=router, dtype=dtype,
                        capacity="None" if cap is None else cap)
            _raised(got["y"], what)
            want, dropped = layer_output(x, weights, np.asarray(got["probs"]), cap)
            if router == "zero" and factor is not None and not dropped.any():
                raise CheckFailed(text("moe.no_drop", what=what))     # the grader's own slip
            y = np.asarray(got["y"])
            if y.shape == want.shape and dropped.any() and (y[dropped] != 0).any():
                s, t = (int(i) for i in np.argwhere(dropped & (y != 0).any(axis=-1))[0])
                raise CheckFailed(text("moe.dropped_moved", what=what, s=s, t=t,
                                       got=show(y[s, t])))
            expect_close(what, y, want, TOLERANCE[dtype])
            lost = dropped_assignments(np.asarray(got["probs"]), cap)
            if got.get("dropped") != lost:          # kept read as the plan reads it (~kept)
                raise CheckFailed(text("moe.dropped_count", what=what, got=got.get("dropped"),
                                       want=lost))


def dropped_assignments(probs, cap):
    """How many of the (b, T, k) assignments find their expert full (0 when dropless)."""
    if cap is None:
        return 0
    return int((judge_slots(judge_top_k(probs, LAYER_K), LAYER_E) >= cap).sum())


LESSONS = {"10.1": Lesson(collect_routing, (Point("top_k", judge_top_k_point),
                                            Point("queue", judge_queue),
                                            Point("capacity", judge_capacity),
                                            Point("layer", judge_layer)))}
