"""The Megatron GPT: every block split over tp ranks with 2 all-reduces forward, 2 backward.

    MLP        X -f-> [X A_i] -> GeLU -> [.. B_i] -g-> dropout    A by columns, B by rows
    attention  X -f-> [Q_i K_i V_i] (heads r*H/tp..) -> attention per local head
                 -> [.. W_i] -g-> dropout                          qkv by columns, proj by rows
    block      x + attn(ln1(x)), then + mlp(ln2(x)); LayerNorms replicated

GeLU and attention act on each rank's own columns / heads, so no communication
sits between the two linears: per block, forward = 2 g's, backward = 2 f's,
each an all-reduce of b*s*h values (Megatron-LM's "4 communication operations").

Vocabulary (vocab.py): wte is split by rows (VocabParallelEmbedding: each rank looks
up the ids it owns, zeros the rest, one all-reduce). The head is split by vocabulary
columns and NOT gathered: the logits stay (B, T, V/tp) and the fused
vocab-parallel cross entropy needs exactly 3 all-reduces of b*s values (the max,
the target logit, the sum of exp); no rank ever holds (B, T, V). The vocabulary
is padded to a multiple of tp with zero rows/columns whose logits are -inf.

Sampling (``generate``) all-gathers only the last position's logits, (B, V/tp) ->
(B, V) on every rank, and every rank draws the same token (nn/generate.py).

Per training step with L blocks: forward 2L + 1 (embedding) + 3 (loss)
all-reduces, backward 2L + 1 (the head's f). Collectives are labelled with the
block's name ("blocks.3", backward "blocks.3.backward") for counting.

``sequence_parallel=True`` (sequence.py, tp > 1): LayerNorms, dropouts and
residuals work on (B, T/tp, D), this rank's tokens. The embedding ends in a
reduce-scatter (g-bar) instead of g, every block's f/g pair becomes g/g-bar
(all-gather / reduce-scatter), and ln_f's output is all-gathered into the head.
``config.fp8``: the blocks' matmuls in scaled fp8 (autodiff/fp8.py), each scale agreed by
a MAX all-reduce of one float32 over tp (2 per matmul forward, 1 backward).
Tutorial: ``minimegatron run -n 8 tutorials/04_megatron_gpt.py``.
"""
from minimegatron.autodiff import fp8, functional as F
from minimegatron.comm import trace
from minimegatron.backend import xp
from minimegatron.comm import all_gather, all_reduce
from minimegatron.autodiff.cast import float32_if_half
from minimegatron.nn import Embedding, LayerNorm, Module, ModuleList, causal_attention, gpt_init
from minimegatron.nn.generate import generate
from minimegatron.autodiff.ops import split
from minimegatron.parallel.split import pad as pad_to_tp, padded, row_slice, rows_of
from minimegatron.parallel.tensor_parallel.linear import ColumnParallelLinear, RowParallelLinear
from minimegatron.parallel.tensor_parallel.rng import ParallelDropout, RNGTracker
from minimegatron.parallel.tensor_parallel.sequence import (SequenceParallelLayerNorm,
                                                            check_sequence_length,
                                                            scatter_to_sequence)
from minimegatron.parallel.tensor_parallel.vocab import (VocabParallelEmbedding,
                                                         vocab_parallel_cross_entropy)
from minimegatron.autodiff.tensor import unwrap


def check_tp_config(config, tp, pad_vocab_ok=True):
    """The same ValueError on every rank, before any collective, if config does not split."""
    checks = [("d_model", config.d_model, ""), ("n_head", config.n_head, ""),
              ("ffn size 4*d_model", 4 * config.d_model, "")]
    if not pad_vocab_ok:
        checks.append(("vocab_size", config.vocab_size,
                       " (pad_vocab=False; pad_vocab=True pads it to a multiple of tp)"))
    for what, value, hint in checks:
        if value % tp:
            raise ValueError(f"tensor parallel: {what}={value} is not divisible by "
                             f"tp={tp}{hint}")


def _label(name):
    """Label the collectives inside with ``name`` (nested under an outer label, if any)."""
    outer = trace.current_label()
    return trace.label(f"{outer}/{name}" if outer else name)


def _init(config, name, shape):
    return gpt_init(name, shape, config)


class ParallelMLP(Module):
    """fc1 column-parallel -> GeLU -> fc2 row-parallel (input already split) -> dropout."""

    def __init__(self, config, tp_group, name="mlp", tracker=None, sequence_parallel=False):
        super().__init__()
        d, h, dt = config.d_model, 4 * config.d_model, config.dtype
        tracker = tracker or RNGTracker(config.seed, tp_group.rank)
        sp = sequence_parallel
        self.fc1 = ColumnParallelLinear(d, h, tp_group, dtype=dt, sequence_parallel=sp,
                                        master_weight=_init(config, f"{name}.fc1.weight", (d, h)),
                                        master_bias=_init(config, f"{name}.fc1.bias", (h,)))
        self.fc2 = RowParallelLinear(h, d, tp_group, input_is_parallel=True, dtype=dt,
                                     master_weight=_init(config, f"{name}.fc2.weight", (h, d)),
                                     master_bias=_init(config, f"{name}.fc2.bias", (d,)),
                                     sequence_parallel=sp)
        self.drop = ParallelDropout(config.dropout, tracker, f"{name}.drop",   # replicated
                                    seq_group=tp_group if sp else None)

    def forward(self, x):
        h = F.gelu(self.fc1(x))                          # (B, T, 4D/tp), no communication
        return self.drop(self.fc2(h))                    # (B, T, D) after g (T/tp: g-bar)


def qkv_rank_major(full, tp):
    """Reorder the last axis [Q | K | V] to [Q_0 K_0 V_0 | Q_1 K_1 V_1 | ...].

    Then a plain column split (ColumnParallelLinear) gives rank r exactly
    [Q_r | K_r | V_r]: its own heads of each of Q, K and V (shards.py's qkv rule).
    """
    q, k, v = xp.split(full, 3, axis=-1)                               # (..., D) each
    return xp.concatenate([rows_of(part, r, tp, axis=-1)               # Q_r: (..., D/tp)
                           for r in range(tp) for part in (q, k, v)], axis=-1)


class ParallelSelfAttention(Module):
    """qkv column-parallel by heads ([Q_r | K_r | V_r]), local attention, proj row-parallel."""

    def __init__(self, config, tp_group, name="attn", tracker=None, sequence_parallel=False):
        super().__init__()
        d, dt, tp, sp = config.d_model, config.dtype, tp_group.size, sequence_parallel
        tracker = tracker or RNGTracker(config.seed, tp_group.rank)
        self.local_heads = config.n_head // tp
        qkv_w = qkv_rank_major(_init(config, f"{name}.qkv.weight", (d, 3 * d)), tp)
        qkv_b = qkv_rank_major(_init(config, f"{name}.qkv.bias", (3 * d,)), tp)
        self.qkv = ColumnParallelLinear(d, 3 * d, tp_group, dtype=dt, master_weight=qkv_w,
                                        master_bias=qkv_b, sequence_parallel=sp)
        self.proj = RowParallelLinear(d, d, tp_group, input_is_parallel=True, dtype=dt,
                                      master_weight=_init(config, f"{name}.proj.weight", (d, d)),
                                      master_bias=_init(config, f"{name}.proj.bias", (d,)),
                                      sequence_parallel=sp)
        self.attn_drop = ParallelDropout(config.dropout, tracker, f"{name}.attn_drop",
                                         sharded=True)
        self.resid_drop = ParallelDropout(config.dropout, tracker, f"{name}.resid_drop",
                                          seq_group=tp_group if sp else None)

    def forward(self, x):
        q, k, v = split(self.qkv(x), 3, axis=-1)        # 3 x (B, T, D/tp): local heads
        y = causal_attention(q, k, v, self.local_heads, self.attn_drop)   # (B, T, D/tp)
        return self.resid_drop(self.proj(y))             # (B, T, D) after g (T/tp: g-bar)


class ParallelBlock(Module):
    """x = x + Attn(LN1(x)); x = x + MLP(LN2(x)); LayerNorms replicated (or split by tokens)."""

    def __init__(self, config, tp_group, name="block", tracker=None, sequence_parallel=False):
        super().__init__()
        self.name, sp = name, sequence_parallel
        self.ln1 = _layer_norm(config, tp_group, sp)
        self.attn = ParallelSelfAttention(config, tp_group, f"{name}.attn", tracker, sp)
        self.ln2 = _layer_norm(config, tp_group, sp)
        self.mlp = ParallelMLP(config, tp_group, f"{name}.mlp", tracker, sp)

    def forward(self, x):
        with _label(self.name):
            x = x + self.attn(self.ln1(x))
            return x + self.mlp(self.ln2(x))


def _layer_norm(config, tp_group, sequence_parallel):
    if sequence_parallel:
        return SequenceParallelLayerNorm(config.d_model, tp_group, dtype=config.dtype)
    return LayerNorm(config.d_model, dtype=config.dtype)


class ParallelGPT(Module):
    """nn.GPT split over ``tp_group``: the same parameter names, each holding its shard.

    Offers the GPT protocol (embed, blocks, head_loss, loss). Which slice each
    parameter holds follows from its name alone: shards.py maps full <-> shard.
    ``sequence_parallel`` (only with tp > 1; tp = 1 is exactly the plain model):
    blocks take and return this rank's tokens (B, T/tp, D).
    """

    def __init__(self, config, tp_group, pad_vocab=True, sequence_parallel=False):
        super().__init__()
        tp = tp_group.size
        check_tp_config(config, tp, pad_vocab_ok=pad_vocab)
        self.config, self.tp_group = config, tp_group
        self.sequence_parallel = sp = sequence_parallel and tp > 1
        d, v, dt = config.d_model, config.vocab_size, config.dtype
        self.vocab_padded = padded(v, tp)
        self.vocab_start = row_slice(self.vocab_padded, tp_group.rank, tp).start
        tracker = RNGTracker(config.seed, tp_group.rank)
        self.wte = VocabParallelEmbedding(self.vocab_padded, d, tp_group, dtype=dt,
                                          master_weight=pad_vocab_rows(config, tp),
                                          vocab_size=v, sequence_parallel=sp)
        self.wpe = Embedding(config.seq_len, d, dtype=dt)
        self.wpe.weight.data = _init(config, "wpe.weight", (config.seq_len, d))
        self.drop = ParallelDropout(config.dropout, tracker, "drop",   # replicated
                                    seq_group=tp_group if sp else None)
        self.blocks = ModuleList(ParallelBlock(config, tp_group, f"blocks.{i}", tracker, sp)
                                 for i in range(config.n_layer))
        self.ln_f = _layer_norm(config, tp_group, sp)
        head = pad_to_tp(_init(config, "head.weight", (d, v)), 1, tp)  # (D, Vp)
        self.head = ColumnParallelLinear(d, self.vocab_padded, tp_group, bias=False, dtype=dt,
                                         master_weight=head, sequence_parallel=sp)
        self.last_logits_shape = None
        if config.fp8:                     # the blocks' matmuls in fp8, scales agreed over tp
            fp8.mark(self.blocks, agree=lambda amax: all_reduce(amax, tp_group, op="max"))

    def embed(self, idx):
        """Token (vocab-parallel, one all-reduce) plus position embedding: (B, T) -> (B, T, D)."""
        idx = unwrap(idx)
        steps = idx.shape[-1]
        if steps > self.config.seq_len:
            raise ValueError(f"sequence of {steps} tokens, but seq_len is {self.config.seq_len}")
        if not self.sequence_parallel:
            with _label("embed"):
                return self.drop(self.wte(idx) + self.wpe(xp.arange(steps)))
        check_sequence_length(steps, self.tp_group.size)              # before any collective
        with _label("embed"):
            pos = self.wpe(xp.arange(steps)).reshape(1, steps, self.config.d_model)
            pos = scatter_to_sequence(pos, self.tp_group)              # (1, T/tp, D)
            return self.drop(self.wte(idx) + pos)                      # (B, T/tp, D)

    def boundary_shape(self, batch, steps):
        """The activation between blocks (and pipeline stages): (B, T, D) or (B, T/tp, D)."""
        tp = self.tp_group.size if self.sequence_parallel else 1
        return (batch, steps // tp, self.config.d_model)

    def head_loss(self, x, targets):
        """ln_f, head split by vocabulary (f, no gather; sequence parallel: g, the all-gather
        of ln_f's tokens), vocab-parallel cross entropy."""
        with _label("head"):
            logits = float32_if_half(self.head(self.ln_f(x)))          # (B, T, Vp/tp)
            self.last_logits_shape = tuple(logits.shape)
            return vocab_parallel_cross_entropy(logits, targets, self.tp_group,
                                                self.vocab_start, self.config.vocab_size)

    def loss(self, idx, targets):
        x = self.embed(idx)
        for block in self.blocks:
            x = block(x)
        return self.head_loss(x, targets)

    def last_logits(self, x):
        """The last position's logits over the WHOLE vocabulary, on every tp rank: (B, T, D) ->
        (B, V). Sampling needs every token's logit (the loss never does): one all-gather
        of B * Vp values over tp, then the padding columns are dropped."""
        with _label("head"):
            local = self.head(self.ln_f(x[:, -1])).data                # (B, Vp/tp)
            full = all_gather(local, self.tp_group, axis=-1)           # (B, Vp)
        return full[:, :self.config.vocab_size]                        # (B, V)

    def generate(self, idx, max_new_tokens, temperature=1.0, top_k=None, seed=0):
        """nn.GPT.generate on tp ranks: every rank gets the same (B, T + n) ids, the serial
        model's. Each rank draws the same u from the same seed (nn/generate.py).
        Not with sequence parallelism (a growing context does not split over tp):
        the same ValueError on every rank, before any collective."""
        if self.sequence_parallel:
            raise ValueError("ParallelGPT.generate: build the model without sequence "
                             "parallelism to sample (the same weights work), or use "
                             "minimegatron sample --checkpoint FILE")
        return generate(self, idx, max_new_tokens, temperature, top_k, seed)


def pad_vocab_rows(config, tp):
    """The full wte (V, D) with zero rows appended up to a multiple of tp."""
    return pad_to_tp(_init(config, "wte.weight", (config.vocab_size, config.d_model)), 0, tp)


__all__ = ["ParallelMLP", "ParallelSelfAttention", "ParallelBlock", "ParallelGPT",
           "check_tp_config"]
