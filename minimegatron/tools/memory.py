"""Parameters, memory, FLOPs and communication of a GPT, in closed form.

Notation (Megatron's): L layers, h hidden, a heads, V vocabulary, s sequence,
b micro-batch, B batch, t = tp size, K = pp stages, N = dp size, M micro-batches,
c = cp size (context parallel: each rank holds s/c tokens, ``--cp`` and ``--attention``).
Our GPT: pre-LayerNorm blocks with biases, FFN 4h, learned positions, final
LayerNorm, UNTIED head (h x V, no bias). Per layer: ln1 2h, qkv 3h^2+3h,
proj h^2+h, ln2 2h, fc1 4h^2+4h, fc2 4h^2+h, so 12h^2 + 13h.

    minimegatron memory --layers 72 --hidden 3072 --heads 32 --dp 64 --tp 8 --zero 1
    minimegatron memory table1 | table2 | zero | scaling [--hardware calib.json]
    minimegatron memory --tp 8 --sequence-parallel        (Korthikanti et al. 2022)
    minimegatron memory --cp 4 --attention ring            (context parallel)

GB = 1e9 bytes everywhere. The page ``docs/memory.md`` walks through every formula.
"""
import math
from dataclasses import dataclass

from minimegatron.parallel.pipeline_parallel.schedules import (SCHEDULES, chunk_share,
                                                               chunks_per_stage, get_schedule,
                                                               peak_in_flight)
from minimegatron.parallel.split import padded
from minimegatron.i18n import text as say
from minimegatron.i18n.columns import fit

MIXED = "mixed"                                  # fp16 weights/grads + fp32 Adam state
PRECISIONS = {MIXED: 2, "float32": 4, "float64": 8}  # bytes per element (activations, comm)
RULE_OF_THUMB_BYTES_PER_PARAM = 20               # 16 B model state + activations/buffers


@dataclass(frozen=True)
class GPTShape:
    """The five numbers the arithmetic needs (vocab V, seq_len s, n_layer L, d_model h)."""
    vocab: int
    seq_len: int
    n_layer: int
    d_model: int
    n_head: int

    @classmethod
    def of(cls, cfg):
        """A GPTShape from any config object (nn.GPTConfig spellings accepted)."""
        if isinstance(cfg, cls):
            return cfg

        def pick(*names):
            return next(getattr(cfg, n) for n in names if hasattr(cfg, n))
        return cls(pick("vocab", "vocab_size"), pick("seq_len", "block_size", "seq"),
                   pick("n_layer", "layers"), pick("d_model", "n_embd", "hidden"),
                   pick("n_head", "heads"))


# ---------------------------------------------------------------- parameters

def megatron_param_count(L, h, V=51200, s=1024):
    """Megatron-LM's count (tied head, final LN not counted): 12Lh^2 + 13Lh + (V + s)h."""
    return 12 * L * h * h + 13 * L * h + (V + s) * h


def param_count(cfg, tied_head=False):
    """L(12h^2 + 13h) + Vh (wte) + sh (wpe) + 2h (ln_f) + hV (head, omitted if tied)."""
    g = GPTShape.of(cfg)
    h = g.d_model
    head = 0 if tied_head else h * g.vocab
    return g.n_layer * (12 * h * h + 13 * h) + (g.vocab + g.seq_len) * h + 2 * h + head


def rank_param_count(cfg, pp=1, tp=1, stage=0):
    """Parameters held by one rank of pipeline stage `stage` (identical on every tp rank).

    A stage owns L/K layers. Per layer per tp rank: qkv and fc1 are column parallel
    (weight and bias split), proj and fc2 row parallel (weight split, bias replicated),
    LayerNorms replicated: (12h^2 + 7h)/t + 6h. Stage 0 adds wte (V_pad/t rows, vocab
    parallel) and wpe (sh, replicated); stage K-1 adds ln_f (2h) and the head
    (h x V_pad/t). So sum over the t*K ranks = param_count + replicated extras
    L*6h(t-1) + (t-1)(sh + 2h) + 2h(V_pad - V).
    """
    g = GPTShape.of(cfg)
    h, t = g.d_model, tp
    if g.n_layer % pp or h % t or g.n_head % t or not 0 <= stage < pp:
        raise ValueError(f"layers {g.n_layer} % pp {pp}, hidden {h} and heads {g.n_head}"
                         f" % tp {t} must be 0, and 0 <= stage {stage} < pp")
    per_layer = (12 * h * h + 7 * h) // t + 6 * h
    count = g.n_layer // pp * per_layer
    vocab_shard = padded(g.vocab, t) // t * h
    if stage == 0:
        count += vocab_shard + g.seq_len * h
    if stage == pp - 1:
        count += 2 * h + vocab_shard
    return count


def pipeline_param_count(cfg, pp=1, tp=1, stage=0, schedule="1f1b"):
    """Parameters one rank holds under ``schedule``: its stage's (``rank_param_count``), or

    zbv, dualpipev  virtual stages k and 2K-1-k of 2K (a V: L/K layers, rank 0 both ends)
    dualpipe        stages k and K-1-k of K: 2L/K layers, every stage held twice
                    (DeepSeek's "2x parameters"; ranks k and K-1-k hold the same).
    """
    if schedule in ("zbv", "dualpipev"):
        return sum(rank_param_count(cfg, 2 * pp, tp, v) for v in (stage, 2 * pp - 1 - stage))
    if schedule == "dualpipe":
        return sum(rank_param_count(cfg, pp, tp, k) for k in {stage, pp - 1 - stage})
    return rank_param_count(cfg, pp, tp, stage)


# ---------------------------------------------------------------- model state

def model_state_bytes(params, dp=1, zero=0, precision=MIXED):
    """Weights, gradients and Adam state of one rank, in bytes, under ZeRO stage 0-3 over dp.

    Mixed precision (ZeRO paper, K = 12): fp16 weights 2P, fp16 grads 2P, fp32 master
    weights + m + v 12P. Stage 1 shards the 12P, stage 2 also the grads, stage 3 also
    the weights:  16P | 4P + 12P/N | 2P + 14P/N | 16P/N.
    One precision of b bytes (float32 b=4, float64 b=8, this project's code): weights bP,
    grads bP, Adam m and v 2bP:  4bP | 2bP + 2bP/N | bP + 3bP/N | 4bP/N.
    Steady state, as in the paper: transient full-size buffers are not counted.
    """
    b = PRECISIONS[precision]
    per_param = {"weights": b, "grads": b, "optimizer": 12 if precision == MIXED else 2 * b}
    return sharded_state_bytes(per_param, params, dp, zero)


def sharded_state_bytes(per_param, params, dp=1, zero=0):
    """{"weights", "grads", "optimizer", "total"} bytes of one rank from bytes PER PARAMETER.

    ``per_param``: unsharded bytes per parameter of each kind, e.g. {2, 2, 12} in mixed
    precision (a formula's, or measured from a run: tools/memory_measure.per_param_bytes).
    ZeRO stage s divides the optimizer (s >= 1), the grads (s >= 2), the weights (s = 3) by dp.
    """
    if zero not in (0, 1, 2, 3):
        raise ValueError(f"ZeRO stage must be 0, 1, 2 or 3, got {zero}")
    shard_from = {"weights": 3, "grads": 2, "optimizer": 1}
    out = {kind: params * per_param[kind] / (dp if zero >= stage else 1)
           for kind, stage in shard_from.items()}
    out["total"] = sum(out.values())
    return out


# ---------------------------------------------------------------- activations

RECOMPUTE = (None, "selective", "full")


ATTENTION = ("ring", "allgather", "ulysses")       # context_parallel/: what a cp layer keeps


def activation_bytes_per_layer(cfg, micro_batch, tp=1, precision=MIXED, sequence_parallel=False,
                               recompute=None, cp=1, attention="ring"):
    """Bytes one transformer layer keeps for backward, per micro-batch (Table 2 of
    Korthikanti et al. 2022 in mixed precision; this code's exact count in float).

    mixed (16-bit values, 1-byte dropout masks), ``table2_text`` prints them:
        tensor parallel t (t = 1: none)       sbh(10 + 24/t + 5as/(ht))  -> sbh(34 + 5as/h)
        + sequence parallel                   sbh/t (34 + 5as/h)
        + selective recompute (no as^2b)      sbh(10 + 24/t)   |  sp: sbh 34/t
        full recompute (the layer's input)    2sbh             |  sp: 2sbh/t
    The 10sbh a tensor-parallel layer keeps whole on every rank (LayerNorm inputs
    4sbh, dropout inputs 4sbh and masks 2sbh) is what sequence parallelism splits.
    float32/float64, this code's blocks with dropout 0, b bytes a value: EXACTLY
    the arrays its autograd keeps with the fused ops of fused.py (LayerNorm, GeLU
    and the causal softmax are one node each; tools/activation_memory.py measures
    the same):
        replicated  5sbh + 2sb     (2 LayerNorms: normalized input xhat and 1/std;
                                    the qkv and fc1 inputs; the block's output)
        split by t  16sbh + as^2b  (qkv output 3sbh, which q, k, v view; the proj
                                    input; GeLU's input, tanh and output 12sbh;
                                    the softmax output, which att @ v reuses)
    so tp: b[sbh(5 + 16/t + as/(ht)) + 2sb], tp + sequence parallel:
    b[sbh(21 + as/h) + 2sb]/t, and full recompute b*sbh (/t with sp).

    Context parallel (cp = c > 1, context_parallel/): every per-token array holds s/c
    tokens, s' = s/c; attention keeps, instead of q, k, v and the s x s softmax
    (float, exact; t divides the head-split parts as above):
        ring       q (heads copy), its own K and V, O: 4s'bh, lse as'b: no s x s matrix;
                   + the cp position arrays, 8s bytes (int64)
                   -> b[s'bh(5 + 17/t) + 2s'b + as'b/t] + 8s
        allgather  q and O 2s'bh, the GATHERED K and V 2sbh, lse as'b, the s' x s mask
                   (1 byte) -> b[s'bh(5 + 15/t) + 2sbh/t + 2s'b + as'b/t] + s's
        ulysses    q, k, v of every token of its a/c heads 3s'bh, softmax as^2b/c
                   -> b[s'bh(5 + 16/t) + 2s'b + as^2b/(ct)]
    (sequence parallelism divides the replicated part by t once more). Mixed
    precision: the per-token sbh(10/t_sp + 24/t) divided by c; ring and allgather keep no
    s x s softmax (their 5as/(ht) term is gone), allgather adds the gathered K and V
    4sbh/t, Ulysses keeps 5as^2b/(ct). The ring's K/V blocks in flight are transient,
    not kept: ``ring_in_flight_bytes``.
    """
    g = GPTShape.of(cfg)
    s, h, a, t, b = g.seq_len, g.d_model, g.n_head, tp, micro_batch
    if recompute not in RECOMPUTE:
        raise ValueError(f"recompute must be one of {RECOMPUTE}, got {recompute!r}")
    if cp > 1 and attention not in ATTENTION:
        raise ValueError(f"attention must be one of {ATTENTION}, got {attention!r}")
    split = t if sequence_parallel else 1               # what sequence parallelism divides
    local = s // cp                                     # s' = s/c tokens on this rank
    sbh = local * b * h
    if precision == MIXED:
        if recompute == "full":
            return 2 * sbh / split
        if cp > 1 and recompute != "selective":
            extra = {"ring": 0, "allgather": 4 * s * b * h / t,
                     "ulysses": 5 * a * s * s * b / (cp * t)}[attention]
            return sbh * (10 / split + 24 / t) + extra
        attention_term = 0 if recompute == "selective" else 5 * a * s / (h * t)
        return sbh * (10 / split + 24 / t + attention_term)
    if recompute == "selective":
        raise ValueError("this code has no selective recomputation (only full: recompute.py)")
    itemsize = PRECISIONS[precision]
    if recompute == "full":
        return itemsize * sbh / split
    replicated = 5 * sbh + 2 * local * b
    if cp == 1:
        return itemsize * (replicated / split + (16 * sbh + a * s * s * b) / t)
    if attention == "ring":
        return itemsize * (replicated / split + (17 * sbh + a * local * b) / t) + 8 * s
    if attention == "allgather":
        sharded = 15 * sbh + 2 * s * b * h + a * local * b
        return itemsize * (replicated / split + sharded / t) + local * s
    return itemsize * (replicated / split + (16 * sbh + a * s * s * b / cp) / t)


def ring_in_flight_bytes(cfg, micro_batch, tp=1, cp=1, precision=MIXED):
    """{"forward", "backward"}: the ring's transient K/V buffers in one layer (ring.py).

    A K/V block is 2s'bh values (s' = s/c, h/t with tp). Forward: the block being
    attended and the one arriving, 2 blocks beside the rank's own (kept as an
    activation); backward: the block and the one arriving, and their dK/dV
    accumulators (the one travelling and the one arriving), 4 blocks. Freed after
    the layer: added to the peak of one layer, not to every layer's activations.
    """
    g = GPTShape.of(cfg)
    if cp == 1:
        return {"forward": 0, "backward": 0}
    block = 2 * (g.seq_len // cp) * micro_batch * g.d_model / tp * PRECISIONS[precision]
    return {"forward": 2 * block, "backward": 4 * block}


def in_flight(pp, micro_batches, stage, schedule="1f1b"):
    """Micro-batches whose activations stage k holds at peak, in whole-stage units.

    GPipe M, 1F1B min(M, K - k); any schedule of the registry (``SCHEDULES``) is read
    off its own action list (``peak_in_flight``: forward done, backward (or W) not).
    With v chunks per stage a chunk holds 1/v of the stage's layers, so interleaved
    (v = 2) holds K(1 + (K-1)/(Kv)) on stage 0 (Megatron-LM 2021), zbv (two chunks in
    a V) K, as 1F1B does. DualPipe's chunks are whole stages (``chunk_share``): it holds
    K + 1 (DeepSeek's PP + 1), dualpipev K + 1/2 (2K + 1 chunks of half a stage).
    ValueError (the schedule's own rule) when M or K do not fit.
    """
    if schedule == "gpipe":
        return micro_batches
    if schedule == "1f1b":
        return min(micro_batches, pp - stage)
    if schedule not in SCHEDULES:
        raise ValueError(f"unknown schedule {schedule!r}; valid: {', '.join(SCHEDULES)}")
    chunks = chunks_per_stage(schedule, 2 if schedule == "interleaved" else 1)
    actions = get_schedule(schedule, chunks)(pp, micro_batches, stage)
    held = peak_in_flight(actions) * chunk_share(schedule, chunks)
    return int(held) if held.denominator == 1 else float(held)


def activation_bytes(cfg, micro_batch, micro_batches=1, pp=1, tp=1, stage=0,
                     schedule="1f1b", checkpoint=False, precision=MIXED, sequence_parallel=False,
                     cp=1, attention="ring"):
    """Peak activation bytes of one rank: in_flight * (L/K) * per-layer.

    With checkpointing each layer keeps only its input, sbh*b_elem (/t with sequence
    parallel), and one layer's full activations live during its recompute:
    in_flight * (L/K) * sbh*b_elem + per_layer.
    Transformer layers only: the logits (sbV/t values) come on top on the last stage.
    Context parallel: s/c tokens per rank (``activation_bytes_per_layer``).
    """
    g = GPTShape.of(cfg)
    layers = g.n_layer // pp
    per_layer = activation_bytes_per_layer(g, micro_batch, tp, precision, sequence_parallel,
                                           cp=cp, attention=attention)
    held = in_flight(pp, micro_batches, stage, schedule)
    if not checkpoint:
        return held * layers * per_layer
    block_input = g.seq_len // cp * micro_batch * g.d_model * PRECISIONS[precision]
    return held * layers * block_input / (tp if sequence_parallel else 1) + per_layer


# ---------------------------------------------------------------- FLOPs

def forward_flops(B, T, D, H):
    """The source notes' forward FLOPs: 2BH(12TD^2 + 2T^2D).

    Per layer and sequence, multiply-adds count 2: qkv 6TD^2, QK^T 2T^2D, attention
    times V 2T^2D, proj 2TD^2, MLP 16TD^2, total 24TD^2 + 4T^2D.
    """
    return 2 * B * H * (12 * T * D * D + 2 * T * T * D)


def training_flops(cfg, batch, recompute=False):
    """FLOPs of one training step on `batch` sequences.

    backward = 2 x forward, so layers cost 3F; activation recomputation runs the forward
    once more, 4F. The logits layer adds 2BsVh forward, 6BsVh in training.
    """
    g = GPTShape.of(cfg)
    passes = 4 if recompute else 3
    logits = 6 * batch * g.seq_len * g.d_model * g.vocab
    return passes * forward_flops(batch, g.seq_len, g.d_model, g.n_layer) + logits


def megatron_flops(B, s, L, h, V=51200):
    """Narayanan et al. 2021 (Megatron-LM), with recomputation: 96BsLh^2(1 + s/6h + V/16Lh)."""
    return 96 * B * s * L * h * h * (1 + s / (6 * h) + V / (16 * L * h))


# ---------------------------------------------------------------- communication

def all_reduce_bytes(nbytes, n):
    """Bytes a rank sends in a ring all-reduce of an n-rank group: 2(n-1)/n * nbytes."""
    return 2 * (n - 1) / n * nbytes


def reduce_scatter_bytes(nbytes, n):
    """Ring reduce-scatter (and all-gather) of an nbytes buffer: (n-1)/n * nbytes per rank."""
    return (n - 1) / n * nbytes


all_gather_bytes = reduce_scatter_bytes


def cp_attention_bytes(cfg, micro_batch, tp=1, cp=1, attention="ring", precision=MIXED):
    """{"forward", "backward"}: bytes one rank sends inside ONE layer's attention over cp
    (context_parallel/; s tokens, h/t the width of K on a tp rank, b bytes a value):
        allgather  2 all-gathers (K, V) of (c-1)/c sbh forward, 2 reduce-scatters backward
        ring       c-1 hops of a K/V block 2(s/c)bh forward; c-1 of K/V and c of dK/dV
        ulysses    4 all-to-alls of (c-1)/c (s/c)bh forward, 4 backward
    """
    g = GPTShape.of(cfg)
    c = cp
    if c == 1:
        return {"forward": 0, "backward": 0}
    kv = g.seq_len * micro_batch * g.d_model / tp * PRECISIONS[precision]     # sbh/t * bytes
    if attention == "allgather":
        forward = backward = 2 * (c - 1) / c * kv
    elif attention == "ring":
        forward, backward = (c - 1) * 2 * kv / c, (2 * c - 1) * 2 * kv / c
    elif attention == "ulysses":
        forward = backward = 4 * (c - 1) / c * kv / c
    else:
        raise ValueError(f"attention must be one of {ATTENTION}, got {attention!r}")
    return {"forward": forward, "backward": backward}


def comm_bytes(cfg, micro_batch, micro_batches=1, dp=1, pp=1, tp=1, stage=0, zero=0,
               recompute=False, precision=MIXED, sequence_parallel=False, cp=1,
               attention="ring", schedule="1f1b"):
    """Bytes one rank of stage `stage` sends per training step, by parallel dimension.

    dp: gradients G = P_rank * b: all-reduce (ZeRO 0), 2(N-1)/N * G; ZeRO 2 reduce-scatter
        + all-gather of the weights, the same 2(N-1)/N * G; ZeRO 1 as built here
        (data_parallel/zero.py) all-reduces the gradients and then all-gathers the weights,
        3(N-1)/N * G; ZeRO 3 gathers the weights once more, 3(N-1)/N * G.
    tp: per layer per micro-batch 4 all-reduces of sbh values (2 forward, 2 backward;
        2 more with recomputation); the embedding (forward) and the head input (backward)
        add one all-reduce of sbh each, the vocab-parallel loss three of sb values.
    pp: sbh values per micro-batch to the next stage (forward), as many back (backward).
        Interleaved (v = 2 model chunks per rank, pp > 1): a micro-batch crosses every rank
        v times, so a rank sends v activations (v - 1 on the last stage) and v gradients
        (v - 1 on the first) per micro-batch: 2v - [first] - [last] sends, not 2. zbv and
        dualpipev (two chunks in a V): twice 1F1B's, the V's turn on the last rank in memory;
        dualpipe: 1F1B's (half the micro-batches go down, half up). The dp gradients are the
        rank's whole ``pipeline_param_count`` (dualpipe: two stages); tp's first / last
        stage terms stay 1F1B's placement. (Each found by benchmarks/explorer_measured.py.)
    sequence parallel (tensor_parallel/sequence.py), counted in all-reduces of the same
    bytes (an all-gather or reduce-scatter is half of one): per layer the 4 (or 6) of tp
    plus 1 for the 2 backward re-gathers and 6 all-reduces of h
    values (LayerNorm and bias gradients); the embedding sbh (reduce-scatter, all-gather
    back) and half of sh (the position embedding's all-gather), the head 1.5 sbh (all-gather,
    re-gather, reduce-scatter) and 2h (ln_f); pp sends shrink to sbh/t.
    cp (context parallel, c ranks): every s above is the rank's s/c tokens; the gradients
    are reduced over dp x cp (N = dp * c); "cp" is ``cp_attention_bytes`` per layer and
    micro-batch (its forward twice with recomputation).
    """
    g = GPTShape.of(cfg)
    b = PRECISIONS[precision]
    local = g.seq_len // cp                                       # tokens on this rank
    sbh = local * micro_batch * g.d_model * b
    grads = pipeline_param_count(g, pp, tp, stage, schedule) * b
    ranks = dp * cp                                               # who sums the gradients
    dp_bytes = (3 if zero in (1, 3) else 2) * (ranks - 1) / ranks * grads
    sp = sequence_parallel and tp > 1
    per_layer = (6 if recompute else 4) + sp                # + sp: the 2 re-gathers
    h_b = g.d_model * b
    tp_values = g.n_layer // pp * (per_layer * sbh + sp * 6 * h_b)
    first, last = (sbh + 0.5 * local * h_b, 1.5 * sbh + 2 * h_b) if sp else (sbh, sbh)
    tp_values += (stage == 0) * first + (stage == pp - 1) * (last + 3 * sbh / g.d_model)
    tp_bytes = micro_batches * all_reduce_bytes(tp_values, tp)
    sends = (stage < pp - 1) + (stage > 0)                    # 1F1B's, gpipe's, dualpipe's
    if schedule == "interleaved" and pp > 1:
        sends = 2 * 2 - (stage == pp - 1) - (stage == 0)      # v = 2 chunks in a loop
    elif schedule in ("zbv", "dualpipev"):
        sends = 2 * sends                                     # a V: down and back up
    pp_bytes = micro_batches * sbh / (tp if sp else 1) * sends
    attn = cp_attention_bytes(g, micro_batch, tp, cp, attention, precision)
    cp_bytes = micro_batches * g.n_layer // pp * (attn["forward"] * (2 if recompute else 1)
                                                  + attn["backward"])
    return {"dp": dp_bytes, "tp": tp_bytes, "pp": pp_bytes, "cp": cp_bytes,
            "total": dp_bytes + tp_bytes + pp_bytes + cp_bytes}


# ---------------------------------------------------------------- command line

GB = 1e9


def table1_text():
    """Megatron-LM Table 1 from 12Lh^2 + 13Lh + (V + s)h, V = 51,200, s = 1,024."""
    out = [say("report.table1.title"),
           " ".join([fit(say("report.col.hidden"), 6), fit(say("report.col.heads"), 5),
                     fit(say("report.col.layers"), 6), fit(say("report.col.params"), 14),
                     fit("B", 5), fit(say("report.col.ours"), 14),
                     fit(say("report.col.fp16_weights"), 15)])]
    for h, heads, L in [(1536, 16, 40), (1920, 20, 54), (2304, 24, 64), (3072, 32, 72)]:
        p = megatron_param_count(L, h)
        ours = param_count(GPTShape(51200, 1024, L, h, heads))
        out.append(f"{h:6d} {heads:5d} {L:6d} {p:14,d} {p / 1e9:5.2f} {ours:14,d} "
                   f"{2 * 12 * L * h * h / GB:15.1f}")
    out.append(say("report.table1.rule", bytes=RULE_OF_THUMB_BYTES_PER_PARAM,
                   gb=8.3e9 * RULE_OF_THUMB_BYTES_PER_PARAM / GB))
    return "\n".join(out)


def zero_text(params=7.5e9, dp=64):
    """The ZeRO paper's example: 7.5B parameters, Nd = 64, mixed-precision Adam."""
    out = [say("report.zero.title", billions=params / 1e9, dp=dp),
           " ".join([fit(say("report.col.stage"), 8, "<")] + [
               fit(say(f"report.col.{key}"), 8) for key in ("weights", "grads", "optim",
                                                             "total")])
           + "   " + fit(say("report.col.float64_total"), 13)]
    for zero in range(4):
        m = model_state_bytes(params, dp, zero)
        f64 = model_state_bytes(params, dp, zero, "float64")["total"]
        out.append(f"{zero:<8} {m['weights'] / GB:8.1f} {m['grads'] / GB:8.1f} "
                   f"{m['optimizer'] / GB:8.1f} {m['total'] / GB:8.1f}   {f64 / GB:13.1f}")
    return "\n".join(out)


def rank_report(cfg, micro_batch, micro_batches=1, dp=1, pp=1, tp=1, stage=0, zero=0,
                schedule="1f1b", checkpoint=False, precision=MIXED, sequence_parallel=False,
                cp=1, attention="ring"):
    """Everything one rank of `stage` holds and sends per step (bytes): the sum of
    model_state_bytes, activation_bytes and comm_bytes (checkpointing = recomputation).
    With cp > 1 ZeRO shards over dp x cp, and "ring_in_flight" is the ring's transient
    K/V buffers of one layer (backward, the larger), added to the total."""
    params = pipeline_param_count(cfg, pp, tp, stage, schedule)     # dualpipe: two stages
    report = dict(model_state_bytes(params, dp * cp, zero, precision), params=params)
    report["activations"] = activation_bytes(cfg, micro_batch, micro_batches, pp, tp, stage,
                                             schedule, checkpoint, precision,
                                             sequence_parallel, cp, attention)
    report["ring_in_flight"] = (ring_in_flight_bytes(cfg, micro_batch, tp, cp,
                                                     precision)["backward"]
                                if attention == "ring" else 0)
    report["total"] += report["activations"] + report["ring_in_flight"]
    report["comm"] = comm_bytes(cfg, micro_batch, micro_batches, dp, pp, tp, stage, zero,
                                checkpoint, precision, sequence_parallel, cp, attention,
                                schedule)
    return report


def config_text(a):
    """Per-stage table of parameters, memory parts, FLOPs and communication for a grid."""
    g = GPTShape(a.vocab, a.seq, a.layers, a.hidden, a.heads)
    batch = a.dp * a.micro_batches * a.micro_batch
    sp = getattr(a, "sequence_parallel", False)
    cp, attention = getattr(a, "cp", 1), getattr(a, "attention", "ring")
    rows = [rank_report(g, a.micro_batch, a.micro_batches, a.dp, a.pp, a.tp, stage, a.zero,
                        a.schedule, a.checkpoint, a.precision, sp, cp, attention)
            for stage in range(a.pp)]
    unit, size = next((u, v) for u, v in [("GB", GB), ("MB", 1e6), ("kB", 1e3)]
                      if max(r["total"] for r in rows) >= v or u == "kB")
    axes = ("dp", "tp", "pp") + (("cp",) if cp > 1 else ())
    out = [say("report.config.model", layers=g.n_layer, hidden=g.d_model, heads=g.n_head,
               vocab=g.vocab, seq=g.seq_len, params=param_count(g),
               megatron=megatron_param_count(g.n_layer, g.d_model, g.vocab, g.seq_len)),
           say("report.config.grid", dp=a.dp, pp=a.pp, tp=a.tp,
               cp=say("report.config.cp", cp=cp, attention=attention) if cp > 1 else "",
               ranks=a.dp * a.pp * a.tp * cp, zero=a.zero, precision=a.precision,
               micro_batch=a.micro_batch, micro_batches=a.micro_batches, schedule=a.schedule,
               checkpointing=say("report.config.on" if a.checkpoint else "report.config.off"),
               sp=say("report.config.sp") if sp else ""),
           say("report.config.unit", unit=unit, power=round(math.log10(size))),
           " ".join([fit(say("report.col.stage"), 5), fit(say("report.col.params_rank"), 14)]
                    + [fit(say(f"report.col.{key}"), 8) for key in ("weights", "grads", "optim",
                                                                   "activ", "total")]
                    + [fit(say("report.col.comm", axis=axis), 8) for axis in axes])]
    for stage, r in enumerate(rows):
        parts = [r[k] for k in ("weights", "grads", "optimizer", "activations", "total")]
        parts += [r["comm"][k] for k in ("dp", "tp", "pp") + (("cp",) if cp > 1 else ())]
        out.append(f"{stage:5d} {r['params']:14,d} " + " ".join(f"{x / size:8.2f}" for x in parts))
    flops = training_flops(g, batch, a.checkpoint)
    out.append(say("report.config.flops", batch=batch, flops=flops,
                   megatron=megatron_flops(batch, g.seq_len, g.n_layer, g.d_model, g.vocab)))
    return "\n".join(out)


def table2_text(s=2048, b=1, h=12288, a=96, t=8):
    """Korthikanti et al. 2022, Table 2: activation bytes per layer under each technique
    (16-bit values), as formulas and for one layer of GPT-3 175B (s, b, h, a, t below)."""
    g = GPTShape(51200, s, 1, h, a)
    rows = [("none", "sbh(34 + 5as/h)", dict(tp=1)),
            ("tp", "sbh(10 + 24/t + 5as/(ht))", dict(tp=t)),
            ("sp", "sbh(34/t + 5as/(ht))", dict(tp=t, sequence_parallel=True)),
            ("tp_selective", "sbh(10 + 24/t)", dict(tp=t, recompute="selective")),
            ("sp_selective", "sbh(34/t)",
             dict(tp=t, sequence_parallel=True, recompute="selective")),
            ("full", "sbh(2)", dict(tp=t, recompute="full"))]
    out = [say("report.table2.title", s=s, b=b, h=h, a=a, t=t),
           fit(say("report.col.technique"), 50, "<") + fit(say("report.col.formula"), 28, "<")
           + fit("GB", 8)]
    for name, formula, kw in rows:
        out.append(fit(say(f"report.row.{name}"), 50, "<") + f"{formula:<28}"
                   f"{activation_bytes_per_layer(g, b, **kw) / GB:8.3f}")
    return "\n".join(out)
