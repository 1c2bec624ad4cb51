"""A GPT small enough to read: pre-LayerNorm blocks of attention and an MLP.

    x = wte[idx] + wpe[0..T)                     (B, T, D)
    for each block:  x = x + Attn(LN1(x));  x = x + MLP(LN2(x))
    logits = LN_f(x) @ W_head                    (B, T, V)

MLP: Linear1 (D -> 4D) -> GeLU -> Linear2 (4D -> D) -> Dropout, as in the
source notes. Attention: one Linear makes [Q | K | V] (D -> 3D, head h owns
columns h*hd..(h+1)*hd of each part), causal softmax(Q K^T / sqrt(hd)) V per
head, then Linear ``proj`` (D -> D). The head is not tied to the embedding,
so the first pipeline stage owns the embedding and the last owns the head.

Every parameter starts from ``gpt_init(name, shape, config)`` (nn/init.py).
``generate`` writes text: sampling, temperature, top-k, why no KV cache (nn/generate.py).
"""
import math
import numbers
from dataclasses import dataclass

from minimegatron.autodiff import fp8, functional as F
from minimegatron.backend import xp
from minimegatron.autodiff.cast import float32_if_half
from minimegatron.nn.generate import generate
from minimegatron.nn.init import gpt_init
from minimegatron.nn.layers import Dropout, Embedding, LayerNorm, Linear
from minimegatron.nn.module import Module, ModuleList
from minimegatron.autodiff.ops import split
from minimegatron.autodiff.tensor import unwrap


@dataclass(frozen=True)
class GPTConfig:
    vocab_size: int = 16
    seq_len: int = 16
    n_layer: int = 2
    n_head: int = 2
    d_model: int = 32
    dropout: float = 0.0
    seed: int = 0
    dtype: str = "float64"
    fp8: bool = False         # the blocks' Linear matmuls in scaled fp8 (autodiff/fp8.py)

    def __post_init__(self):
        for field in ("vocab_size", "seq_len", "n_layer", "n_head", "d_model", "seed"):
            value, low = getattr(self, field), 0 if field == "seed" else 1
            if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < low:
                raise ValueError(f"GPTConfig.{field} must be an int >= {low}, got {value!r}")
            object.__setattr__(self, field, int(value))     # np.int64 -> int: saved as JSON
        if self.d_model % self.n_head:
            raise ValueError(f"GPTConfig: d_model={self.d_model} is not divisible by "
                             f"n_head={self.n_head}")
        if not 0.0 <= self.dropout < 1.0:
            raise ValueError(f"GPTConfig.dropout must be in [0, 1), got {self.dropout}")


def causal_attention(q, k, v, n_head, dropout=None):
    """softmax(Q K^T / sqrt(hd) + causal mask) V for ``n_head`` heads side by side.

    q, k, v: (B, T, n_head*hd) -> output (B, T, n_head*hd). Tensor parallel
    attention calls this with its local heads only.
    """
    batch, steps, width = q.shape
    hd = width // n_head

    def heads(t):
        return t.reshape(batch, steps, n_head, hd).transpose(0, 2, 1, 3)  # (B, H, T, hd)

    q, k, v = heads(q), heads(k), heads(v)
    scores = q @ k.transpose(0, 1, 3, 2)                                 # (B, H, T, T)
    # softmax(where(causal, scores / sqrt(hd), -inf)) as one fused node (F.softmax)
    att = F.softmax(scores, axis=-1, scale=1.0 / math.sqrt(hd), causal=True)
    if dropout is not None:
        att = dropout(att)
    y = att @ v                                                          # (B, H, T, hd)
    return y.transpose(0, 2, 1, 3).reshape(batch, steps, width)          # (B, T, H*hd)


class CausalSelfAttention(Module):
    def __init__(self, config, name="attn"):
        super().__init__()
        d, dt = config.d_model, config.dtype
        self.n_head = config.n_head
        self.qkv = Linear(d, 3 * d, dtype=dt)
        self.proj = Linear(d, d, dtype=dt)
        self.attn_drop = Dropout(config.dropout, config.seed, f"{name}.attn_drop")
        self.resid_drop = Dropout(config.dropout, config.seed, f"{name}.resid_drop")

    def forward(self, x):
        q, k, v = split(self.qkv(x), 3, axis=-1)                        # 3 x (B, T, D)
        return self.resid_drop(self.proj(causal_attention(q, k, v, self.n_head,
                                                          self.attn_drop)))


class MLP(Module):
    """Linear1 (D -> 4D) -> GeLU -> Linear2 (4D -> D) -> Dropout"""

    def __init__(self, config, name="mlp"):
        super().__init__()
        d, dt = config.d_model, config.dtype
        self.fc1 = Linear(d, 4 * d, dtype=dt)
        self.fc2 = Linear(4 * d, d, dtype=dt)
        self.drop = Dropout(config.dropout, config.seed, f"{name}.drop")

    def forward(self, x):
        return self.drop(self.fc2(F.gelu(self.fc1(x))))


class Block(Module):
    """x = x + Attn(LN1(x)); x = x + MLP(LN2(x))"""

    def __init__(self, config, name="block"):
        super().__init__()
        self.ln1 = LayerNorm(config.d_model, dtype=config.dtype)
        self.attn = CausalSelfAttention(config, f"{name}.attn")
        self.ln2 = LayerNorm(config.d_model, dtype=config.dtype)
        self.mlp = MLP(config, f"{name}.mlp")

    def forward(self, x):
        x = x + self.attn(self.ln1(x))
        return x + self.mlp(self.ln2(x))


class GPT(Module):
    def __init__(self, config):
        super().__init__()
        self.config = config
        d, dt = config.d_model, config.dtype
        self.wte = Embedding(config.vocab_size, d, dtype=dt)
        self.wpe = Embedding(config.seq_len, d, dtype=dt)
        self.drop = Dropout(config.dropout, config.seed, "drop")
        self.blocks = ModuleList(Block(config, f"blocks.{i}") for i in range(config.n_layer))
        self.ln_f = LayerNorm(d, dtype=dt)
        self.head = Linear(d, config.vocab_size, bias=False, dtype=dt)
        for name, p in self.named_parameters():
            p.data = gpt_init(name, p.shape, config)
        if config.fp8:
            fp8.mark(self.blocks)           # qkv, proj, fc1, fc2: scaled fp8 matmuls

    def embed(self, idx):
        """Token plus position embedding: (B, T) ints -> (B, T, D)."""
        idx = unwrap(idx)
        steps = idx.shape[-1]
        if steps > self.config.seq_len:
            raise ValueError(f"sequence of {steps} tokens, but seq_len is {self.config.seq_len}")
        return self.drop(self.wte(idx) + self.wpe(xp.arange(steps)))

    def logits(self, x):
        """Final LayerNorm and head: (B, T, D) -> (B, T, V)."""
        return self.head(self.ln_f(x))

    def last_logits(self, x):
        """Logits of the last position only, a plain array: (B, T, D) -> (B, V)."""
        return self.logits(x[:, -1]).data

    def head_loss(self, x, targets):
        """Mean next-token cross entropy from the last hidden state (B, T, D).

        Every GPT form (serial, tensor parallel, a pipeline's last stage) offers
        embed / blocks / head_loss, so schemes can be stacked.
        """
        return F.cross_entropy(float32_if_half(self.logits(x)), targets)   # fp16: loss in fp32

    def forward(self, idx):
        x = self.embed(idx)
        for block in self.blocks:
            x = block(x)
        return self.logits(x)

    def loss(self, idx, targets):
        """Mean next-token cross entropy over the batch."""
        x = self.embed(idx)
        for block in self.blocks:
            x = block(x)
        return self.head_loss(x, targets)

    def generate(self, idx, max_new_tokens, temperature=1.0, top_k=None, seed=0):
        """``max_new_tokens`` sampled after ``idx`` (B, T): (B, T + n) ids (nn/generate.py)."""
        return generate(self, idx, max_new_tokens, temperature, top_k, seed)
