"""Zero-bubble pipeline schedules: the backward split into B and W (Qi et al., ICLR 2024).

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

The math (the paper's Table 2; p = K stages, times T_F, T_B, T_W per micro-batch):

    schedule   bubble                  peak activations   holds if
    1F1B       (p-1)(T_F + T_B + T_W)  p                  always (backward = B + W)
    ZB-H1      (p-1)(T_F + T_B - T_W)  p                  T_W <= T_F
    ZB-H2      (p-1)(T_F + T_B - 2T_W) 2p - 1             T_W <= T_F, 2T_W <= T_F + T_B

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
and stage boundary; W sends nothing. The executor (engine.py) runs the
backward whole, so these schedules are simulated and drawn, not run on ranks:

    minimegatron timeline --schedule zb-h1 --stages 4 --micro-batches 8
    minimegatron timeline --schedule zb-h2 --stages 4 --micro-batches 8 --t-weight 0.5
"""
from minimegatron.parallel.pipeline_parallel.schedules import (Action, _backward, _check,
                                                               _forward)


def _split_backward(num_stages, num_micro_batches, stage, warmup, cap, name):
    """w warm-up forwards; then B, W (if holding ``cap``), F; then B, W; then the W's left."""
    _check(num_stages, num_micro_batches, stage)
    least = warmup(num_stages, 0)
    if num_micro_batches < least:
        raise ValueError(f"schedule {name!r} needs at least {least} micro-batches for "
                         f"{num_stages} stages (the first stage's warm-up); "
                         f"got {num_micro_batches}")
    w = warmup(num_stages, stage)
    actions, held, weights = [], w, 0
    for i in range(w):
        actions += _forward(num_stages, stage, i)
    for j in range(num_micro_batches - w):
        actions += _backward(num_stages, stage, j)
        if held == cap:                                 # free one micro-batch before the F
            actions.append(Action("weight", weights))
            weights, held = weights + 1, held - 1
        actions += _forward(num_stages, stage, w + j)
        held += 1
    for j in range(num_micro_batches - w, num_micro_batches):
        actions += _backward(num_stages, stage, j) + [Action("weight", weights)]
        weights += 1
    return actions + [Action("weight", i) for i in range(weights, num_micro_batches)]


def zb_h1(num_stages, num_micro_batches, stage):
    """ZB-H1: 1F1B's order, W deferred until K micro-batches are held (M >= K)."""
    return _split_backward(num_stages, num_micro_batches, stage,
                           lambda K, k: K - k, num_stages, "zb-h1")


def zb_h2(num_stages, num_micro_batches, stage):
    """ZB-H2: 2(K-k)-1 warm-up forwards, up to 2K-1 micro-batches held (M >= 2K-1)."""
    return _split_backward(num_stages, num_micro_batches, stage,
                           lambda K, k: 2 * (K - k) - 1, 2 * num_stages - 1, "zb-h2")


ZERO_BUBBLE = {"zb-h1": zb_h1, "zb-h2": zb_h2}
# the paper's Table 2: bubble (p-1)(T_F + T_B + sign T_W), and when it holds
TABLE = {"1f1b": (1, "(p-1)(T_F+T_B+T_W)", lambda t_f, t_b, t_w: True),
         "zb-h1": (-1, "(p-1)(T_F+T_B-T_W)", lambda t_f, t_b, t_w: t_w <= t_f),
         "zb-h2": (-2, "(p-1)(T_F+T_B-2T_W)", lambda t_f, t_b, t_w: t_w <= t_f
                   and 2 * t_w <= t_f + t_b)}


def bubble_table(schedule, num_stages, t_forward, t_backward, t_weight):
    """(bubble, formula, holds) from the paper's table for 1f1b, zb-h1 or zb-h2.

    ``holds``: whether the times meet the table's assumption (module docstring);
    where they do, ``simulate(...).bubble`` equals the bubble exactly.
    """
    sign, formula, holds = TABLE[schedule]
    bubble = (num_stages - 1) * (t_forward + t_backward + sign * t_weight)
    return bubble, formula, holds(t_forward, t_backward, t_weight)


def check_executable(schedule):
    """ValueError for a schedule with W actions: the engine runs the backward whole."""
    if schedule in ZERO_BUBBLE:
        raise ValueError(f"schedule {schedule!r} splits the backward into B and W, which "
                         f"the pipeline engine does not do yet; it runs naive, gpipe, 1f1b "
                         f"and interleaved (simulate {schedule!r}: minimegatron timeline)")
