"""DualPipe and DualPipeV: DeepSeek-V3's bidirectional schedule and its V-shaped half.

DualPipe (DeepSeek-V3 technical report, 2024). Feed micro-batches from BOTH
ends of the pipeline. Rank r of P (P even) holds two stages of the same P-stage
model: stage r for the micro-batches that go down (chunk 0, entering at rank 0)
and stage P-1-r for those that go up (chunk 1, entering at rank P-1). So every
stage's parameters are held twice, on ranks r and P-1-r, and each copy's
gradient covers only the micro-batches of its own direction: the copies' grads
are summed over the mirror pair {r, P-1-r} after the step (one all-reduce of
the rank's gradients, 2 stages' worth of bytes; engine.py), then both copies
take the same optimizer step and stay equal. While the down micro-batches fill
the pipeline from rank 0, the up ones fill it from rank P-1, so the two
warm-ups overlap and the middle of the step pairs a forward of one direction
with a backward of the other ("F&B", which DeepSeek overlaps with its
communication).

DualPipeV (DeepSeek's "cut in half", as PyTorch's ScheduleDualPipeV). The same
program folded into a V on P ranks: rank r holds chunk 0 = virtual stage r and
chunk 1 = virtual stage 2P-1-r of a 2P-stage model (``v_placement``, as ZBV),
every micro-batch goes down the ranks and back up, parameters held once.

One program, both schedules. Write n for the ranks on one side (DualPipe P/2,
DualPipeV P), h for the rank's distance from its end (DualPipe min(r, P-1-r),
DualPipeV r), N for the micro-batches per chunk (DualPipe M/2, DualPipeV M),
"near" for the chunk whose micro-batches enter on the rank's side and "far"
for the other (DualPipe: near = down on the first half of the ranks, up on the
second; DualPipeV: near = chunk 0). Each rank runs, in order (``program``):

    1  2(n-h-1) x  F near
    2  h+1      x  F near, F far
    3  n-h-1    x  B far, W, F far                (B and W apart: zero bubble)
    4  N-2n+h+1 x  F near & B far, F far & B near (the main part, full backwards)
    5  n-h-1    x  B far, F far & B near
    6  h+1      x  B far, B near                  (the second half with W apart)
    7  n-h-1    x  W, B near
    8  h+1      x  W

W runs the oldest weight gradient waiting (first in, first out). A full
backward is "B, W" of one micro-batch back to back with its gradient sent
after both (as one backward); "F & B" is a forward and a backward run one
after the other, DeepSeek's overlapped pair. Constraints (the reference's):
DualPipe needs P even, M even and M >= 2P; DualPipeV M >= 2P (step 4 runs at
least once on rank 0).

The math (DeepSeek's table; F, B = full backward, W per stage-sized chunk; F&B
a forward and a backward overlapped; PP pipeline stages):

    schedule   bubble                 parameters  activations  ranks
    1F1B       (PP-1)(F+B)            1x          PP           PP
    ZB1P       (PP-1)(F+B-2W)         1x          PP           PP
    DualPipe   (PP/2-1)(F&B+B-3W)     2x          PP+1         PP
    DualPipeV  (PP/2-1)(F&B+B-3W)     2x          PP+1         PP/2

DualPipeV's PP counts its virtual stages: on P ranks PP = 2P, each chunk a
stage. With F = 1, B = 2 (B = 1 + W = 1), F&B = F + B and PP = 8: 21, 7, 6 and
6 (``bubble_table``; the simulator finds these exactly: tests/test_dualpipe.py).

    minimegatron timeline --schedule dualpipe --stages 4 --micro-batches 8
    minimegatron run -n 4 verify --schemes pp-dualpipe,pp-dualpipev
"""
from fractions import Fraction

from minimegatron import comm
from minimegatron.backend import xp
from minimegatron.parallel.pipeline_parallel.actions import (Action, backward_actions,
                                                             check_stage, forward_actions)
from minimegatron.parallel.pipeline_parallel.zero_bubble import v_placement

NEAR, FAR = "near", "far"


def program(n, h, N):
    """One rank's compute steps: ("F", side), ("B", side, full), ("W",), ("F&B", f, b).

    side: NEAR or FAR; full: the B's W follows at once (one whole backward); W runs
    the oldest W waiting; "F&B": a forward and a whole backward overlapped (both
    receives before, both sends after).
    """
    steps = [("F", NEAR)] * (2 * (n - h - 1))
    steps += [("F", NEAR), ("F", FAR)] * (h + 1)
    steps += [("B", FAR, False), ("W",), ("F", FAR)] * (n - h - 1)
    steps += [("F&B", NEAR, FAR), ("F&B", FAR, NEAR)] * (N - 2 * n + h + 1)
    steps += [("B", FAR, True), ("F&B", FAR, NEAR)] * (n - h - 1)
    for i in range(h + 1):                 # from the middle on, W waits (zero bubble)
        split_far = i > (h + 1) // 2 or i == (h + 1) // 2 and h % 2 == 1
        split_near = i >= (h + 1) // 2
        steps += [("B", FAR, not split_far), ("B", NEAR, not split_near)]
    steps += [("W",), ("B", NEAR, False)] * (n - h - 1)
    steps += [("W",)] * (h + 1)
    return steps


class _Rank:
    """One rank's action list, built step by step: each chunk's next micro-batch, the
    receives and sends beside each compute, W's in first-in, first-out order."""

    def __init__(self, micro_batches, stage_of, num_stages, near):
        self.micro_batches = micro_batches   # chunk -> the micro-batch ids it runs, in order
        self.stage_of, self.num_stages = stage_of, num_stages   # chunk -> its stage of K
        self.chunk = {NEAR: near, FAR: 1 - near}
        self.done = {(op, c): 0 for op in "FB" for c in micro_batches}
        self.waiting, self.actions = [], []

    def _next(self, op, side):
        """(receive, compute, send) of the side's chunk's next micro-batch for op F or B."""
        chunk = self.chunk[side]
        i = self.micro_batches[chunk][self.done[op, chunk]]
        self.done[op, chunk] += 1
        make = forward_actions if op == "F" else backward_actions
        steps = make(self.num_stages, self.stage_of[chunk], i, chunk)
        at = [a.op for a in steps].index("forward" if op == "F" else "backward")
        return steps[:at], steps[at:at + 1], steps[at + 1:]

    def _backward(self, side, full):
        receive, b, send = self._next("B", side)
        weight = Action("weight", b[0].micro_batch, b[0].chunk)
        if full:                                   # one backward: B, W, then the send
            return receive, b + [weight], send
        self.waiting.append(weight)
        return receive, b, send

    def run(self, step):
        """Append one step of ``program``: its receives, computes and sends, in that order."""
        if step[0] == "W":
            self.actions.append(self.waiting.pop(0))
            return
        if step[0] == "F&B":
            parts = [self._next("F", step[1]), self._backward(step[2], True)]
        elif step[0] == "F":
            parts = [self._next("F", step[1])]
        else:
            parts = [self._backward(*step[1:])]
        for position in range(3):                  # receives, then computes, then sends
            for part in parts:
                self.actions += part[position]


def _build(n, h, N, near, micro_batches, stage_of, num_stages):
    rank = _Rank(micro_batches, stage_of, num_stages, near)
    for step in program(n, h, N):
        rank.run(step)
    return rank.actions


def check_dualpipe(num_stages, num_micro_batches):
    """ValueError unless P is even, M even and M >= 2P (the reference's constraints)."""
    P, M = num_stages, num_micro_batches
    if P % 2 or M % 2 or M < 2 * P:
        raise ValueError(f"schedule 'dualpipe' needs an even number of stages and an even "
                         f"number of micro-batches at least twice the stages (half go down, "
                         f"half go up): got {P} stages, {M} micro-batches")


def dualpipe(num_stages, num_micro_batches, stage):
    """DualPipe: rank r runs stage r down (chunk 0, micro-batches 0..M/2-1) and stage P-1-r
    up (chunk 1, micro-batches M/2..M-1); ``program`` with n = P/2, h = min(r, P-1-r)."""
    check_stage(num_stages, num_micro_batches, stage)
    check_dualpipe(num_stages, num_micro_batches)
    P, N = num_stages, num_micro_batches // 2
    micro_batches = {0: list(range(N)), 1: list(range(N, 2 * N))}
    return _build(P // 2, min(stage, P - 1 - stage), N, int(stage >= P // 2), micro_batches,
                  {0: stage, 1: P - 1 - stage}, P)


def dualpipev(num_stages, num_micro_batches, stage):
    """DualPipeV: chunks 0 and 1 of rank r are virtual stages r and 2P-1-r (a V); ``program``
    with n = P, h = r, N = M, near = chunk 0 (M >= 2P)."""
    check_stage(num_stages, num_micro_batches, stage)
    P, M = num_stages, num_micro_batches
    if M < 2 * P:
        raise ValueError(f"schedule 'dualpipev' needs at least {2 * P} micro-batches for {P} "
                         f"stages (twice the stages: the V's 2P chunks); got {M}")
    micro_batches = {0: list(range(M)), 1: list(range(M))}
    return _build(P, stage, M, 0, micro_batches,
                  {c: v_placement(P, stage, c) for c in (0, 1)}, 2 * P)


def mirror_placement(num_stages, stage, chunk):
    """DualPipe's layers: chunk 0 of rank r is stage r of K, chunk 1 stage K-1-r (mirrored)."""
    return stage if chunk == 0 else num_stages - 1 - stage


DUALPIPE = {"dualpipe": dualpipe, "dualpipev": dualpipev}
FIXED_CHUNKS = {"dualpipe": 2, "dualpipev": 2}
PLACEMENTS = {"dualpipe": v_placement, "dualpipev": v_placement}   # where messages go
COPIES = {"dualpipe": 2}      # each chunk a whole stage: the parameters are held twice


def bubble_table(schedule, num_stages, t_forward, t_backward, t_weight, t_overlap=None):
    """DeepSeek's bubble for ``schedule`` with PP = num_stages stages: (value, formula).

    t_backward: the full backward B (= input part + W); t_overlap: F&B (default F + B).
    """
    pp, f, b, w = num_stages, t_forward, t_backward, t_weight
    fb = f + b if t_overlap is None else t_overlap
    rows = {"1f1b": ((pp - 1) * (f + b), "(PP-1)(F+B)"),
            "zb1p": ((pp - 1) * (f + b - 2 * w), "(PP-1)(F+B-2W)"),
            "dualpipe": ((pp // 2 - 1) * (fb + b - 3 * w), "(PP/2-1)(F&B+B-3W)"),
            "dualpipev": ((pp // 2 - 1) * (fb + b - 3 * w), "(PP/2-1)(F&B+B-3W)")}
    return rows[schedule]


def table_row(schedule, num_stages, t_forward, t_backward, t_weight):
    """(bubble, formula, holds, assumption) in the simulator's terms, as zero_bubble's.

    The simulator's times are per rank's stage (t_backward: B's input part); DeepSeek's
    F, B, W are per stage-sized chunk, B whole: DualPipe's PP = K; DualPipeV's PP = 2K
    and its chunk runs half of each time. ``holds``: T_F <= T_B and T_W <= T_B (B's
    input part), where ``simulate(...).bubble`` equals the table exactly
    (tests/test_dualpipe.py); beyond it the simulated bubble is larger.
    """
    pp, share = (num_stages, 1) if schedule == "dualpipe" else (2 * num_stages, Fraction(1, 2))
    f, b, w = (t * share for t in (t_forward, t_backward, t_weight))
    bubble, formula = bubble_table(schedule, pp, f, b + w, w)
    holds = t_forward <= t_backward and t_weight <= t_backward
    return bubble, formula, holds, "T_F <= T_B and T_W <= T_B"


def sum_mirrored_grads(parameters, mirror, before=None):
    """DualPipe's two copies: each parameter's gradient of this step summed over the mirror
    pair {k, K-1-k}, one ``all_reduce`` of all of them flattened (8 bytes per parameter in
    float64, both of the rank's stages: 2x a 1F1B stage's). ``parameters``: in the same
    order on both ranks (a mirrored ChunkedStage registers its blocks in layer order).
    ``before``: each .grad at the step's start (or None), already summed then, so only
    the step's part is reduced."""
    before = before or [None] * len(parameters)
    parts = [(xp.zeros(p.shape, p.data.dtype) if p.grad is None else p.grad)
             - (0 if b is None else b) for p, b in zip(parameters, before)]
    flat = comm.all_reduce(xp.concatenate([g.reshape(-1) for g in parts]), mirror)  # (n,)
    offset = 0
    for p, b in zip(parameters, before):
        summed = flat[offset:offset + p.data.size].reshape(p.shape)
        offset += p.data.size
        if p.grad is None:
            p.grad = summed.copy()
        else:
            p.grad[...] = summed if b is None else b + summed
