"""The exercises: id, title, the one-line hint a student copy raises, and the source note.

Each exercise is a block fenced by ``# EXERCISE <id> begin`` / ``end`` in the
reference code (see ``minimegatron.classroom.exercises``). What it teaches is the
``Lesson`` ``LESSONS[id]`` of the module named here (``autodiff``,
``schedules``, ...; see ``lesson.py``): its ``collect`` runs the student's block
in a fresh process (on 4 MPI ranks under mpiexec when nprocs > 1, a 2 x 2
grid, on the tp or dp groups named by ``group``, each a strict subset of the
world, so "the group" and "the world" differ; else in a plain subprocess) and
records evidence; its points are judged in the grader's own process
(``judge.py``), each with a message and a hint when it is missed.

This module is plain data: importing it imports nothing of the package, so the
grader can list exercises without touching the copy under test. ``note`` quotes
the line of the source notes (SEEDS, in English) that the exercise is about.
The Korean title, hint and note of each id are in ``minimegatron/i18n/ko.py``
(shown by the grader under MINIMEGATRON_LANG=ko); the English hint here stays
what a student copy raises, which ``exercises.is_blank`` compares.
"""
from dataclasses import dataclass


@dataclass(frozen=True)
class Exercise:
    id: str
    title: str
    module: str         # minimegatron.classroom.exercise_checks.<module> holds LESSONS[id]
    nprocs: int         # 1: plain subprocess; 4: MPI ranks as a 2 x 2 grid
    hint: str           # what the student copy's NotImplementedError says
    note: str           # the idea, quoted from the source notes
    group: str = ""     # multi-rank checks: "tp" (groups [0, 1] [2, 3]) or "dp" ([0, 2] [1, 3])


F_AND_G = ("Operators f and g are conjugate: f is identity in forward and all-reduce in "
           "backward; g is all-reduce in forward and identity in backward.")

EXERCISES = [
    Exercise("1.1", "MatMul backward", "autodiff", 1,
             "dL/dX = dL/dZ @ A^T and dL/dA = X^T @ dL/dZ (A^T: swap the last two axes), "
             "each unbroadcast to its input's shape",
             "Z = X @ A    dL/dX = dL/dZ @ A^T, dL/dA = X^T @ dL/dZ  (batched, broadcast)"),
    Exercise("1.2", "Exp backward", "autodiff", 1,
             "z = e^x, so dz/dx = z: multiply grad_out by the saved output ctx.saved[0]",
             "z = e^x    dz/dx = z"),
    Exercise("1.3", "Tanh backward", "autodiff", 1,
             "dz/dx = 1 - z^2, where z = tanh(x) is the saved output ctx.saved[0]",
             "z = tanh x    dz/dx = 1 - z^2"),
    Exercise("1.4", "Max backward (ties share the gradient)", "autodiff", 1,
             "ctx.saved[0] is 1/k at each of the k maxima, 0 elsewhere: multiply it by "
             "grad_out given back the reduced axes (_expand_reduced(grad_out, *ctx.args))",
             "z = max_i x_i    dz/dx_i = 1/k where x_i is one of k tied maxima, else 0"),
    Exercise("1.5", "unbroadcast (the backward of broadcasting)", "autodiff", 1,
             "sum grad over the leading axes that shape lacks, then (keepdims=True) over "
             "every axis where shape has size 1 but grad does not",
             "Broadcasting follows NumPy everywhere; its backward is unbroadcast: sum the "
             "gradient over every axis that was stretched, so dL/dx always has x's shape."),
    Exercise("1.6", "Sum backward", "autodiff", 1,
             "dz/dx_i = 1: give grad_out back the reduced axes and broadcast it to x's "
             "shape (_expand_reduced(grad_out, *ctx.args))",
             "z = sum_i x_i    dz/dx_i = 1"),
    Exercise("2.1", "GPipe schedule", "schedules", 1,
             "all M forwards (forward_actions) for micro-batches 0..M-1, then all M backwards "
             "(backward_actions) in the same order",
             "GPipe splits the mini-batch into micro-batches and pipelines them so several "
             "stages work at once. Bubble fraction with K stages and M micro-batches: "
             "(K-1)/(M+K-1) of the schedule."),
    Exercise("2.2", "1F1B schedule", "schedules", 1,
             "warm up with min(K-k-1, M) forwards, then one forward and one backward per "
             "step, then the backwards that are left",
             "1F1B keeps at most min(M, K - k) micro-batches of activations in flight on "
             "stage k; GPipe keeps M."),
    Exercise("3.1", "f: identity forward, all-reduce backward", "mappings", 4,
             "f's backward: every rank's dL/dX is the SUM of grad_out over the ranks of "
             "ctx.group (one collective); return it and None for the group argument",
             F_AND_G, group="tp"),
    Exercise("3.2", "g: all-reduce forward, identity backward", "mappings", 4,
             "g's forward: every rank gets the SUM of x over the ranks of group (one "
             "collective; nothing to do when group.size == 1)", F_AND_G, group="tp"),
    Exercise("3.3", "column split of A (ColumnParallelLinear)", "linear", 4,
             "rank r keeps columns r*w .. (r+1)*w of the (in, out) weight and of the bias, "
             "w = out_features / tp: set width and the slice cols",
             "Column-wise split of A (input X is broadcast to both workers; outputs are "
             "all-gathered / concatenated): A1 = [10, 11, 12, 13]^T -> Y1 = X.A1 = "
             "[74, 258]^T; A2 = [14, 15, 16, 17]^T -> Y2 = X.A2 = [98, 346]^T", group="tp"),
    Exercise("3.4", "row split of A (RowParallelLinear)", "linear", 4,
             "rank r keeps rows r*h .. (r+1)*h of the (in, out) weight, h = in_features / "
             "tp: set height and the slice rows",
             "Row-wise split of A (X is scattered by columns; partial outputs are summed "
             "with all-reduce): X1 = [[0, 1], [4, 5]], A1 = [[10, 14], [11, 15]] -> "
             "Y1 = [[11, 15], [95, 131]]", group="tp"),
    Exercise("3.5", "row-parallel forward: partial products, then g", "linear", 4,
             "partial = X_i A_i (keep its .data in self.last_partial), then y = g(partial): "
             "reduce_from_tp(partial, self.tp_group)",
             "Row-wise split of A (X is scattered by columns; partial outputs are summed "
             "with all-reduce) ... Y1 + Y2 = Y", group="tp"),
    Exercise("4.1", "DDP: all-reduce the gradients", "data_parallel", 4,
             "start ONE nonblocking all-reduce (op mean) of the bucket's slice of the "
             "flat gradient buffer (bucket.reduce), in place, and keep its handle in "
             "bucket.handle",
             "DistributedDataParallel: one process per worker. forward -> backward -> "
             "(all-reduce grads) -> update. No rank is special.", group="dp"),
    Exercise("5.1", "ZeRO stage 2: reduce-scatter the gradients", "zero", 4,
             "each rank keeps only its slice of the MEAN gradient: reduce-scatter (op mean) "
             "the flat gradients into self.grad_shard, then free every p.grad",
             "ZeRO (optimizer-state, gradient and parameter partitioning) is named as the "
             "memory fix for data parallelism. / Ring all-reduce sends 2(N-1)/N of the "
             "buffer per rank; reduce-scatter and all-gather each (N-1)/N.", group="dp"),
    Exercise("5.2", "ZeRO: update your shard, all-gather the weights", "zero", 4,
             "apply self.optimizer.update to this rank's slice only (self.shard, "
             "self.grad_shard, flat.state, self.step_count) under no_grad(), then "
             "all-gather the slices into the full flat weights: full",
             "ZeRO memory per device with mixed-precision Adam (K = 12): baseline 16*P "
             "bytes; stage 1: 4P + 12P/N; stage 2: 2P + 14P/N; stage 3: 16P/N.", group="dp"),
    Exercise("6.1", "interleaved 1F1B: the warm-up count", "schedules", 1,
             "rank k of K with v chunks warms up with (K-k-1)*2 + (v-1)*K chunk forwards, "
             "but never more than all M*v of them (total)",
             "Interleaved 1F1B (Megatron-LM 2021): each of K ranks holds v model chunks; the "
             "bubble shrinks by v to (1/v)(K-1)/M, for v times the messages."),
    Exercise("6.2", "g-bar: reduce-scatter along the sequence", "sequence_parallel", 4,
             "g-bar's forward: rank r gets tokens r*T/tp .. (r+1)*T/tp (axis SEQ) of the SUM "
             "of x over the ranks of group (one collective; nothing to do when "
             "group.size == 1)",
             "Korthikanti et al. 2022: g-bar is a reduce-scatter in the forward pass and an "
             "all-gather in the backward pass. / Ring all-reduce sends 2(N-1)/N of the "
             "buffer per rank; reduce-scatter and all-gather each (N-1)/N.", group="tp"),
    Exercise("7.1", "loss scaling: skip and halve on an overflow", "mixed_precision", 4,
             "set local to 1.0 if any of grads is not finite (all_finite), all-reduce it with "
             "op max over group; on an overflow halve self.scale (backoff_factor, not below "
             "min_scale) and reset clean_steps, else count a clean step and grow the scale "
             "after growth_interval of them",
             "Mixed-precision training (Megatron, DeepSpeed): 20 bytes per parameter; on an "
             "inf/nan gradient every rank skips the step and the loss scale is halved.",
             group="dp"),
    Exercise("7.2", "fp8: per-tensor scales, cast, multiply, unscale", "fp8_scale", 1,
             "sx, sw = each tensor's own scale_for(..., E4M3, agree) (rows for X, w for W); "
             "qx, qw = e4m3 casts of the float32 tensors times their scales; y = the float32 "
             "product of qx and qw (matmul(..., np.float32)) divided by sx * sw",
             "fp8 training (Transformer Engine, torchao, nanochat): e4m3 in forward, e5m2 for "
             "gradients, each tensor scaled by a power of two from its own amax so that its "
             "largest value lands near the format's max; products accumulate in float32 and "
             "are unscaled by 1/(s_X s_W)."),
    Exercise("8.1", "context parallel: the online-softmax merge", "context_parallel", 4,
             "new_lse = log(e^lse + e^block_lse), computed from top = the larger of lse and "
             "block_lse in each row (top + log(e^(lse-top) + e^(block_lse-top))); return "
             "e^(lse-new_lse) out + e^(block_lse-new_lse) block_out and new_lse",
             "Online softmax (Milakov & Gimelshein 2018; flash attention, ring attention): two "
             "partial attentions over disjoint keys merge as lse = log(e^lse_1 + e^lse_2), "
             "O = e^(lse_1 - lse) O_1 + e^(lse_2 - lse) O_2.", group="dp"),
    Exercise("8.2", "context parallel: the zigzag assignment", "context_parallel", 4,
             "cut the S tokens into 2cp chunks of size = steps // (2 * cp); return the positions "
             "of chunk rank, then of chunk 2*cp - 1 - rank, in increasing order",
             "Zigzag (Megatron-LM context parallelism): rank i of cp holds chunks i and "
             "2cp-1-i of the sequence, an early chunk and its mirror, so every rank does the "
             "same causal attention work.", group="dp"),
    Exercise("9.1", "zero bubble: split the backward into B and W", "zb_split", 1,
             "weights = which of node.inputs are weights (is_weight); none: return the whole "
             "node.fn.backward now; else append (node.fn, node.ctx, node.inputs, grad_outs, "
             "weights) to self.steps for W and return masked_backward(...) with the mask of "
             "the inputs that need a gradient and are not weights",
             "Zero bubble (Qi et al. 2024): Y = XW has two gradients: B, dL/dX = dL/dY W^T, "
             "which the previous stage waits for, and W, dL/dW = X^T dL/dY, which only the "
             "optimizer step needs, so it can run later."),
    Exercise("9.2", "zero bubble: place the W steps of ZB-H1", "zb_schedule", 1,
             "for each micro-batch j left after the warm-up: its B, then the W of the oldest "
             "micro-batch without one if cap are held (F done, W not), then the next F; then "
             "the last B's, each followed by a W; then every W still pending",
             "ZB-H1 (Qi et al. 2024) keeps 1F1B's order of F and B and its peak of K "
             "micro-batches held, and runs each W later, in the gaps: bubble "
             "(p-1)(T_F+T_B-T_W) instead of 1F1B's (p-1)(T_F+T_B+T_W)."),
    # mixture of experts: 10.1 (one process), 10.2 (ep groups of 2 and 4), 10.3 (one)
    Exercise("10.1", "MoE routing: top-k with capacity", "moe_routing", 1,
             "choice: the k experts of largest prob, largest first, ties to the LOWER id "
             "(a stable argsort of -probs); queue each sequence's k*T assignments slot-major "
             "(every first choice in token order, then every second choice): slot = how many "
             "earlier ones chose the same expert; kept = slot < capacity (all True if None)",
             "GShard / Switch routing: each token goes to its top-k experts; each expert takes "
             "at most C = ceil(k T f / E) tokens of a group, first come first served, and a "
             "token over capacity is dropped and passes through the residual."),
    Exercise("10.2", "expert parallel: the dispatch layout", "moe_dispatch", 4,
             "rows are expert-major (ep, E/ep, b*C, h): ONE all-to-all of them over group "
             "(all_to_all_rows, under trace.label('ep.dispatch')) sends chunk j to rank j; "
             "what arrives is [source rank][my expert][slot]: transpose it to [my expert]"
             "[source rank][slot] and return it as (E/ep*ep*b*C, h) rows",
             "Expert parallelism (GShard, Switch, Megatron): E/ep experts per rank; tokens "
             "travel to their experts' ranks and back with two all-to-alls, each sending "
             "(ep-1)/ep of a capacity-padded buffer of E x C x h per sequence.", group="dp"),
    Exercise("10.3", "aux-loss-free balancing: the expert bias", "moe_balancing", 1,
             "return bias + rate * xp.sign(load.mean() - load): each expert above the mean "
             "load down by gamma, below it up by gamma, at the mean unchanged",
             "Auxiliary-loss-free balancing (DeepSeek-V3): a per-expert bias added to the "
             "router's scores for the choice only, nudged after each step by the sign of the "
             "load's deviation, b_i <- b_i + gamma sign(mean(load) - load_i)."),
]


def by_id(ex_id):
    """The Exercise with this id; KeyError naming the known ids otherwise."""
    for ex in EXERCISES:
        if ex.id == ex_id:
            return ex
    raise KeyError(f"no exercise {ex_id!r}; known: {', '.join(e.id for e in EXERCISES)}")


@dataclass(frozen=True)
class Chapter:
    """The order a chapter's (a week's) exercises are best done in, and why. None of them
    must come first: each is graded alone (a block it runs through that is not written yet
    is stood in for, ``standins.py``); the order is the one the ideas build in."""
    id: str
    order: tuple        # the ids, first to last
    why: str            # a sentence; the Korean is minimegatron/i18n/ko.py's CHAPTERS[id]


CHAPTERS = [
    Chapter("1", ("1.5", "1.6", "1.1", "1.2", "1.3", "1.4"),
            "First unbroadcast and Sum's backward: MatMul's backward (1.1) sums its "
            "gradients down with unbroadcast, and Max's (1.4) gives back the reduced axes as "
            "Sum's does"),
    Chapter("2", ("2.1", "2.2"),
            "GPipe first: 1F1B runs the same forwards and backwards in another order"),
    Chapter("3", ("3.1", "3.2", "3.3", "3.4", "3.5"),
            "First f and g: the column layer's backward runs f (3.3), the row layer's forward "
            "ends in g (3.5), and 3.5 multiplies the rows that 3.4 keeps"),
    Chapter("4", ("4.1",), "One exercise: DDP's model trains through chapter 1's MatMul and "
                           "unbroadcast"),
    Chapter("5", ("5.1", "5.2"),
            "The gradient shard (5.1) before the update that reads it (5.2)"),
    Chapter("6", ("6.1", "6.2"),
            "6.1 is 2.2's warm-up per model chunk; 6.2 is chapter 3's g along the sequence"),
    Chapter("7", ("7.1", "7.2"),
            "Loss scaling (7.1) before FP8's per-tensor scales (7.2); 7.1 steps a ZeRO model "
            "(chapter 5)"),
    Chapter("8", ("8.1", "8.2"),
            "The merge of two attention pieces (8.1) before the zigzag split whose pieces "
            "ring attention merges (8.2)"),
    Chapter("9", ("9.1", "9.2"),
            "The split backward (9.1) before the schedule that places its W steps (9.2)"),
    Chapter("10", ("10.1", "10.2", "10.3"),
            "Routing first: the dispatch (10.2) sends what the router chose, and the "
            "balancing (10.3) counts its choices"),
]


def chapter_of(ex_id):
    """The Chapter that holds exercise ``ex_id``."""
    return next(chapter for chapter in CHAPTERS if ex_id in chapter.order)
