"""The GPT with its sequence split over cp ranks: attention by one of the three variants.

The idea. Every op of a GPT but attention acts on each token alone (embedding
lookups, LayerNorm, the linears, GeLU, the head and the loss), so rank i of a
cp group runs them on its S/cp tokens with the FULL weights (replicated, as in
data parallelism). Attention is the one place tokens meet: there the chosen
variant (allgather.py, ring.py or ulysses.py) moves K and V (or re-cuts the
heads). Position embeddings use each token's global position (zigzag.py).

The math of the gradient. Rank i's loss L_i is the mean over its S/cp tokens
(and its B/dp rows), so the full-batch loss is L = mean_i L_i and
dL/dW = mean_i dL_i/dW: after backward the gradients are averaged over dp x cp
(``average_gradients``, one all-reduce of one flat buffer over ``grid.dp_cp``),
and every rank steps the same weights, as one process does.

Communication per step: the attention variant's bytes per layer, forward and
backward (see its file), plus one all-reduce of the gradients, 2(N-1)/N * 8P
bytes in float64 for P parameters and N = dp*cp ranks. Dropout is refused:
its masks would have to follow the tokens. ``generate`` is not offered: the
last position lives on one rank. Checked against one process by
checks/context.py (tests/test_context_parallel.py, ``minimegatron verify``).
Tutorial: ``minimegatron run -n 4 tutorials/12_context_parallel.py``.
"""
from minimegatron import trace
from minimegatron.backend import xp
from minimegatron.comm import all_reduce
from minimegatron.nn.gpt import GPT, CausalSelfAttention
from minimegatron.ops import split as split_columns
from minimegatron.parallel.context_parallel.allgather import allgather_attention
from minimegatron.parallel.context_parallel.ring import ring_attention
from minimegatron.parallel.context_parallel.ulysses import check_heads, ulysses_attention
from minimegatron.parallel.context_parallel.zigzag import check_split, positions, split_sequence
from minimegatron.parallel.split import flatten, unflatten

ATTENTION = ("ring", "allgather", "ulysses")


def check_config(config, cp, attention, split):
    """The same ValueError on every rank, before any collective, for a GPT cp cannot split."""
    if attention not in ATTENTION:
        raise ValueError(f"context parallel: attention must be one of {ATTENTION}, "
                         f"got {attention!r}")
    if config.dropout:
        raise ValueError(f"context parallel: dropout={config.dropout} is not supported "
                         "(its masks would have to follow the tokens); use dropout=0")
    if attention == "ulysses":
        if split != "contiguous":
            raise ValueError("context parallel: Ulysses needs the contiguous split")
        check_heads(config.n_head, cp)
    check_split(config.seq_len, cp, split)


class ContextParallelSelfAttention(CausalSelfAttention):
    """The serial attention's weights (qkv, proj); the attention itself by a cp variant."""

    def __init__(self, config, group, attention, split, name="attn"):
        super().__init__(config, name)
        self.group, self.attention, self.split = group, attention, split

    def forward(self, x):                                            # x: (B, S/cp, D)
        q, k, v = split_columns(self.qkv(x), 3, axis=-1)             # 3 x (B, S/cp, D)
        if self.attention == "ulysses":
            y = ulysses_attention(q, k, v, self.group, self.n_head)
        elif self.attention == "ring":
            y = ring_attention(q, k, v, self.group, self.n_head, self.split)
        else:
            y = allgather_attention(q, k, v, self.group, self.n_head, self.split)
        return self.resid_drop(self.proj(y))                         # (B, S/cp, D)


class ContextParallelGPT(GPT):
    """GPT(config) on this rank's tokens; same initial weights as one process."""

    def __init__(self, config, group, attention="ring", split=None):
        split = split or ("contiguous" if attention == "ulysses" else "zigzag")
        check_config(config, group.size, attention, split)
        super().__init__(config)
        self.group, self.attention, self.split = group, attention, split
        for i, block in enumerate(self.blocks):
            serial = block.attn
            block.attn = ContextParallelSelfAttention(config, group, attention, split,
                                                      f"blocks.{i}.attn")
            block.attn.load_state_dict(serial.state_dict())

    def shard(self, tokens):
        """This rank's tokens of (B, S) ids or targets: (B, S) -> (B, S/cp)."""
        return split_sequence(tokens, self.group.rank, self.group.size, self.split)

    def embed(self, idx):
        """Token plus position embedding at each token's global position: (B, S/cp, D)."""
        steps = idx.shape[-1] * self.group.size
        if steps > self.config.seq_len:
            raise ValueError(f"sequence of {steps} tokens, but seq_len is {self.config.seq_len}")
        where = positions(steps, self.group.rank, self.group.size, self.split)   # (S/cp,)
        return self.drop(self.wte(idx) + self.wpe(where))

    def last_logits(self, x):
        raise NotImplementedError("context parallel: the last position lives on one rank; "
                                  "generate with the serial GPT")


def average_gradients(model, group):
    """dL/dW = mean over ``group`` (dp x cp) of each rank's gradient: one flat all-reduce."""
    params = [p for p in model.parameters() if p.grad is not None]
    if group.size == 1 or not params:
        return
    flat = flatten([p.grad for p in params], params[0].grad.dtype)   # (P,)
    with trace.label("cp.grads"):
        all_reduce(flat, group, op="mean", inplace=True)
    for p, grad in zip(params, unflatten(flat, [p.grad.shape for p in params])):
        p.grad = xp.ascontiguousarray(grad)
