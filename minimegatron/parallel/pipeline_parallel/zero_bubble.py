"""Zero-bubble pipeline schedules: the backward split into B and W (Qi et al., ICLR 2024).

ZB-H1, ZB-H2 and ZBV (two chunks per stage in a V, Qi et al., "Pipeline
Parallelism with Controllable Memory", 2024). The engine splits the backward
itself (autodiff/split_backward.py); PipelineEngine runs these lists on ranks.

The idea. A layer Y = XA has two gradients. B, the input gradient
dL/dX = dL/dY A^T, is what the previous stage waits for; W, the weight
gradient dL/dA = X^T dL/dY, is needed by nobody until the optimizer step. 1F1B
runs them as one backward, so every stage waits for B *and* W of the stage
after it. Split them: a stage sends dL/dX as soon as B is done and runs W
later, in a gap it would otherwise sit idle in. In a schedule that has W
actions ("W3"), "backward" ("B3") is the input gradient only; the activations
a micro-batch holds are freed by its W.

The schedules. Both keep 1F1B's order of F and B; they differ in how many
forwards a stage runs before its first B (the warm-up w) and how many
micro-batches it may hold (F done, W not: the cap C):

    ZB-H1   w = K - k        C = K        1F1B's F, B order; W waits until K are held
    ZB-H2   w = 2(K - k) - 1 C = 2K - 1   extra warm-up forwards fill the first bubble

Stage k (of K, M micro-batches) runs w forwards, then for each micro-batch
left: B, one W if it holds C, F; then the last w backwards, each followed by
one W; then the W's still pending. The first stage's warm-up is the longest,
so both need M >= w_0 micro-batches (K for ZB-H1, 2K - 1 for ZB-H2).

ZBV. Each stage holds two chunks of half its layers: chunk 0 is virtual stage
k, chunk 1 is 2K-1-k (``v_placement``), so a micro-batch goes down the ranks
and back up, and the last rank turns it round in memory. Stage k runs
2(K-k)-1 chunk-0 forwards, k pairs (F1 F0), K-k triples (F1 B1 W1), then
F0 B0 W0 F1 B1 W1 until every forward is done, then B0 B1 (k times), B0 W0
(K-k times) and the W's left (``zbv``; M >= 2K-1). Its first stage gets its
first gradient back from its own chunk 1, so the warm-up bubble is gone; with
T_F = T_B = T_W every stage works without a gap and stage k starts k T_F/2
late (makespan M(T_F + T_B + T_W) + (K-1) T_F/2). It holds 2K chunk
activations, K micro-batches' worth: 1F1B's peak.

The math (the paper's Table 2; p = K stages, times T_F, T_B, T_W per micro-batch):

    schedule   bubble                  peak activations   holds if
    1F1B       (p-1)(T_F + T_B + T_W)  p                  always (backward = B + W)
    ZB-H1      (p-1)(T_F + T_B - T_W)  p                  T_W <= T_F
    ZB-H2      (p-1)(T_F + T_B - 2T_W) 2p - 1             T_W <= T_F, 2T_W <= T_F + T_B
    ZBV        0                       p (2p half chunks) T_F = T_B = T_W

with T_F = T_B = T_W: 3(p-1), p-1 (a third) and 0. The paper draws its
schedules with equal times; the last column is where the simulator finds the
table exact (tests/test_zero_bubble.py, in Fractions); beyond it a W does not
fit the gap one F leaves and the bubble is larger.

*Bubble* here is the paper's: the time a stage sits idle between the start of
its first step and the end of its last, the largest over the stages
(``Simulation.bubble``; each stage's: ``Simulation.stage_bubble``). The paper
removes the synchronisation before the optimizer step, so each stage starts
its next iteration when it is done and only its own span counts. The first
stage waits most. For 1F1B (and ZB-H1 if also T_W <= T_B) every stage ends at
the makespan, so the bubble is also each stage's idle time over the makespan;
ZB-H2's stages form a parallelogram (T_F = T_B = T_W: stage k starts and ends
k T_F late), each busy from its first step to its last.

*Peak activations*: the most micro-batches whose F is done and W is not, on
the stage that holds most (``peak_in_flight``). Every stage of ZB-H1 holds up
to p, so later stages hold more than under 1F1B (min(M, K - k)) while the
peak, the first stage's, stays p. No schedule can keep each stage at or below
its 1F1B count and beat (p-1)(T_F + T_B): the last stage would have to run
F, B, W back to back.

Communication is 1F1B's: one activation and one gradient send per micro-batch
and stage boundary; W sends nothing (ZBV: 2M(2K-2) messages, the V's turn is
none). PipelineEngine (engine.py) runs B as ``backward(defer_weight_grads=True)``
and W as the call of what it returned; ``minimegatron verify --schemes pp-zbv``
compares it with one process:

    minimegatron timeline --schedule zb-h1 --stages 4 --micro-batches 8
    minimegatron timeline --schedule zb-h2 --stages 4 --micro-batches 8 --t-weight 0.5
    minimegatron timeline --schedule zbv --stages 4 --micro-batches 8
    minimegatron run -n 4 verify --schemes pp-zb-h1,pp-zb-h2,pp-zbv
"""
from minimegatron.parallel.pipeline_parallel.actions import (Action, backward_actions,
                                                             check_stage, forward_actions)


def _split_backward(num_stages, num_micro_batches, stage, warmup, cap, name):
    """w warm-up forwards; then B, W (if holding ``cap``), F; then B, W; then the W's left."""
    check_stage(num_stages, num_micro_batches, stage)
    least = warmup(num_stages, 0)
    if num_micro_batches < least:
        raise ValueError(f"schedule {name!r} needs at least {least} micro-batches for "
                         f"{num_stages} stages (the first stage's warm-up); "
                         f"got {num_micro_batches}")
    w = warmup(num_stages, stage)
    actions, held, weights = [], w, 0      # held: F done, W not; weights: W's placed so far
    for i in range(w):
        actions += forward_actions(num_stages, stage, i)
    # EXERCISE 9.2 begin
    for j in range(num_micro_batches - w):
        actions += backward_actions(num_stages, stage, j)
        if held == cap:                                 # free one micro-batch before the F
            actions.append(Action("weight", weights))
            weights, held = weights + 1, held - 1
        actions += forward_actions(num_stages, stage, w + j)
        held += 1
    for j in range(num_micro_batches - w, num_micro_batches):
        actions += backward_actions(num_stages, stage, j) + [Action("weight", weights)]
        weights += 1
    actions += [Action("weight", i) for i in range(weights, num_micro_batches)]
    # EXERCISE 9.2 end
    return actions


def zb_h1(num_stages, num_micro_batches, stage):
    """ZB-H1: 1F1B's order, W deferred until K micro-batches are held (M >= K)."""
    return _split_backward(num_stages, num_micro_batches, stage,
                           lambda K, k: K - k, num_stages, "zb-h1")


def zb_h2(num_stages, num_micro_batches, stage):
    """ZB-H2: 2(K-k)-1 warm-up forwards, up to 2K-1 micro-batches held (M >= 2K-1)."""
    return _split_backward(num_stages, num_micro_batches, stage,
                           lambda K, k: 2 * (K - k) - 1, 2 * num_stages - 1, "zb-h2")


def v_placement(num_stages, stage, chunk):
    """The V: chunk 0 of stage k is virtual stage k, chunk 1 is 2K-1-k (down, then back up)."""
    return stage if chunk == 0 else 2 * num_stages - 1 - stage


class _VStage:
    """One stage's ZBV action list, built step by step: ``run("F", chunk)`` appends the
    next micro-batch's F (with its receive and send) on that chunk; "B" and "W" alike."""

    def __init__(self, num_stages, stage):
        self.num_stages, self.stage, self.actions = num_stages, stage, []
        self.done = {(op, chunk): 0 for op in "FBW" for chunk in (0, 1)}

    def run(self, op, chunk, times=1):
        for _ in range(times):
            i, here = self.done[op, chunk], v_placement(self.num_stages, self.stage, chunk)
            self.done[op, chunk] += 1
            if op == "W":
                self.actions.append(Action("weight", i, chunk))
            else:
                make = forward_actions if op == "F" else backward_actions
                self.actions += make(2 * self.num_stages, here, i, chunk)


def zbv(num_stages, num_micro_batches, stage):
    """ZBV: two chunks per stage in a V, F/B/W of each chunk interleaved (M >= 2K-1).

    Stage k (of K; chunk 0 on the way down, chunk 1 on the way up):
    warm-up   2(K-k)-1 F0; k times F1 F0; K-k times F1 B1 W1
    steady    until every F1 is done: F0 (while any is left) B0 W0 F1 B1 W1
    cool-down k times B0 B1; K-k times B0 W0; then the W1's and W0's left.
    """
    check_stage(num_stages, num_micro_batches, stage)
    K, M, k = num_stages, num_micro_batches, stage
    if M < 2 * K - 1:
        raise ValueError(f"schedule 'zbv' needs at least {2 * K - 1} micro-batches for "
                         f"{K} stages (the first stage's warm-up); got {M}")
    v = _VStage(K, k)
    v.run("F", 0, 2 * (K - k) - 1)
    for _ in range(k):
        v.run("F", 1)
        v.run("F", 0)
    for _ in range(K - k):
        for op in "FBW":
            v.run(op, 1)
    while v.done["F", 1] < M:
        if v.done["F", 0] < M:
            v.run("F", 0)
        for op, chunk in [("B", 0), ("W", 0), ("F", 1), ("B", 1), ("W", 1)]:
            v.run(op, chunk)
    for _ in range(k):
        v.run("B", 0)
        v.run("B", 1)
    for _ in range(K - k):
        v.run("B", 0)
        v.run("W", 0)
    v.run("W", 1, M - v.done["W", 1])
    v.run("W", 0, M - v.done["W", 0])
    return v.actions


ZERO_BUBBLE = {"zb-h1": zb_h1, "zb-h2": zb_h2, "zbv": zbv}
FIXED_CHUNKS = {"zbv": 2}
PLACEMENTS = {"zbv": v_placement}
# the paper's Table 2: bubble (p-1)(T_F + T_B + sign T_W), and when it holds; zbv ("Pipeline
# Parallelism with Controllable Memory", Qi et al. 2024): no bubble when the three are equal
TABLE = {"1f1b": (1, "(p-1)(T_F+T_B+T_W)", lambda t_f, t_b, t_w: True, "any times"),
         "zb-h1": (-1, "(p-1)(T_F+T_B-T_W)", lambda t_f, t_b, t_w: t_w <= t_f, "T_W <= T_F"),
         "zb-h2": (-2, "(p-1)(T_F+T_B-2T_W)", lambda t_f, t_b, t_w: t_w <= t_f
                   and 2 * t_w <= t_f + t_b, "T_W <= T_F and 2T_W <= T_F+T_B"),
         "zbv": (None, "0", lambda t_f, t_b, t_w: t_f == t_b == t_w, "T_F = T_B = T_W")}


def bubble_table(schedule, num_stages, t_forward, t_backward, t_weight):
    """(bubble, formula, holds, assumption) from the papers' tables (1f1b, zb-h1, zb-h2, zbv).

    ``holds``: whether the times meet the table's ``assumption`` (module docstring);
    where they do, ``simulate(...).bubble`` equals the bubble exactly.
    """
    sign, formula, holds, assumption = TABLE[schedule]
    bubble = (0 * t_forward if sign is None else
              (num_stages - 1) * (t_forward + t_backward + sign * t_weight))
    return bubble, formula, holds(t_forward, t_backward, t_weight), assumption
