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
bytes in float64 for P parameters and N = dp*cp ranks. At construction the cp
ranks agree on the variant and the split (comm/agreement.py: one 8-byte Allgather;
zigzag on one rank and contiguous on another move messages of the same size, so
nothing else would notice). Dropout is refused:
its masks would have to follow the tokens. ``generate`` is not offered: the
last position lives on one rank. Checked against one process by
checks/context.py (tests/test_context_parallel.py, ``minimegatron verify``).

With the other axes (``context_parallel_model``, used by threed.Trainer3D):
``TensorContextParallelGPT`` is ParallelGPT (tensor_parallel/gpt.py) whose
attention runs the cp variant on this tp rank's H/tp heads: qkv and proj stay
split by heads / rows over tp, the tokens stay split over cp, and the two
never meet (a tp all-reduce sums over heads of the same tokens, a cp ring
moves tokens of the same heads). Sequence parallelism splits the rank's S/cp
tokens once more, (B, S/(cp*tp), D) between the linears; the column-parallel
qkv gathers them back over tp before attention. Pipeline stages cut either
model by blocks (pipeline_parallel/stage.py): the activation between stages is
(B/M, S/cp, D), or (B/M, S/(cp*tp), D) with sequence parallelism.
Tutorial: ``minimegatron run -n 4 tutorials/12_context_parallel.py``.
"""
from minimegatron.comm import trace
from minimegatron.backend import xp
from minimegatron.comm import all_reduce
from minimegatron.comm.agreement import agree_fields
from minimegatron.nn.gpt import GPT, CausalSelfAttention
from minimegatron.autodiff.ops import split as split_columns
from minimegatron.parallel.context_parallel.allgather import allgather_attention
from minimegatron.parallel.context_parallel.ring import ring_attention
from minimegatron.parallel.context_parallel.ulysses import check_heads, ulysses_attention
from minimegatron.parallel.context_parallel.zigzag import check_split, positions, split_sequence
from minimegatron.parallel.split import flatten, unflatten
from minimegatron.parallel.tensor_parallel.gpt import ParallelGPT, ParallelSelfAttention
from minimegatron.parallel.tensor_parallel.sequence import (check_sequence_length,
                                                            scatter_to_sequence)
from minimegatron.autodiff.tensor import unwrap

ATTENTION = ("ring", "allgather", "ulysses")


def check_config(config, cp, attention, split, tp=1):
    """The same ValueError on every rank, before any collective, for a GPT cp cannot split
    (``tp``: the heads are first split over tp, Ulysses then splits the H/tp over cp)."""
    if attention not in ATTENTION:
        raise ValueError(f"context parallel: attention must be one of {ATTENTION}, "
                         f"got {attention!r}")
    if config.dropout:
        raise ValueError(f"context parallel: dropout={config.dropout} is not supported "
                         "(its masks would have to follow the tokens); use dropout=0")
    if attention == "ulysses":
        if split != "contiguous":
            raise ValueError("context parallel: Ulysses needs the contiguous split")
        if tp > 1 and (config.n_head // tp) % cp:
            raise ValueError(f"Ulysses: the {config.n_head // tp} heads of a tp rank "
                             f"({config.n_head} heads / tp={tp}) do not split over cp={cp} "
                             "ranks; use fewer tp or cp ranks (or ring / all-gather attention)")
        check_heads(config.n_head // tp, cp)
    check_split(config.seq_len, cp, split)


class ContextParallelSelfAttention(CausalSelfAttention):
    """The serial attention's weights (qkv, proj); the attention itself by a cp variant."""

    def __init__(self, config, group, attention, split, name="attn"):
        super().__init__(config, name)
        self.group, self.attention, self.split = group, attention, split

    def forward(self, x):                                            # x: (B, S/cp, D)
        q, k, v = split_columns(self.qkv(x), 3, axis=-1)             # 3 x (B, S/cp, D)
        y = attend(self.attention, q, k, v, self.group, self.n_head, self.split)
        return self.resid_drop(self.proj(y))                         # (B, S/cp, D)


def attend(attention, q, k, v, group, n_head, split):
    """Causal attention of this rank's tokens by the named variant: (B, S/cp, n_head*hd)."""
    if attention == "ulysses":
        return ulysses_attention(q, k, v, group, n_head)
    if attention == "ring":
        return ring_attention(q, k, v, group, n_head, split)
    return allgather_attention(q, k, v, group, n_head, split)


class TokenShards:
    """What a GPT on cp ranks adds: its tokens of a batch, their global positions."""

    def shard(self, tokens):
        """This rank's tokens of (B, S) ids or targets: (B, S) -> (B, S/cp)."""
        return split_sequence(tokens, self.group.rank, self.group.size, self.split)

    def global_positions(self, local_steps):
        """Positions 0..S-1 of this rank's S/cp tokens (ValueError past seq_len)."""
        steps = local_steps * self.group.size
        if steps > self.config.seq_len:
            raise ValueError(f"sequence of {steps} tokens, but seq_len is {self.config.seq_len}")
        return positions(steps, self.group.rank, self.group.size, self.split)   # (S/cp,)

    def last_logits(self, x):
        raise NotImplementedError("context parallel: the last position lives on one rank; "
                                  "generate with the serial GPT")


class ContextParallelGPT(TokenShards, GPT):
    """GPT(config) on this rank's tokens; same initial weights as one process."""

    def __init__(self, config, group, attention="ring", split=None):
        split = split or ("contiguous" if attention == "ulysses" else "zigzag")
        check_config(config, group.size, attention, split)
        agree_fields(group, "context parallelism", {"attention": attention, "split": split})
        super().__init__(config)
        self.group, self.attention, self.split = group, attention, split
        for i, block in enumerate(self.blocks):
            serial = block.attn
            block.attn = ContextParallelSelfAttention(config, group, attention, split,
                                                      f"blocks.{i}.attn")
            block.attn.load_state_dict(serial.state_dict())

    def embed(self, idx):
        """Token plus position embedding at each token's global position: (B, S/cp, D)."""
        return self.drop(self.wte(idx) + self.wpe(self.global_positions(idx.shape[-1])))


class TensorContextParallelSelfAttention(ParallelSelfAttention):
    """ParallelSelfAttention's shards (qkv by heads, proj by rows); its H/tp heads attend
    over the cp group by a cp variant."""

    def __init__(self, config, tp_group, cp_group, attention, split, name, sequence_parallel):
        super().__init__(config, tp_group, name, sequence_parallel=sequence_parallel)
        self.group, self.attention, self.split = cp_group, attention, split

    def forward(self, x):                              # (B, S/cp, D), sp: (B, S/(cp*tp), D)
        q, k, v = split_columns(self.qkv(x), 3, axis=-1)             # 3 x (B, S/cp, D/tp)
        y = attend(self.attention, q, k, v, self.group, self.local_heads, self.split)
        return self.resid_drop(self.proj(y))                         # (B, S/cp, D) after g


class TensorContextParallelGPT(TokenShards, ParallelGPT):
    """ParallelGPT(config, tp_group) on this cp rank's tokens; each parameter holds its tp
    shard of one process's weight (the same names, shards.py)."""

    def __init__(self, config, tp_group, cp_group, attention="ring", split=None,
                 sequence_parallel=False):
        split = split or ("contiguous" if attention == "ulysses" else "zigzag")
        check_config(config, cp_group.size, attention, split, tp_group.size)
        agree_fields(cp_group, "context parallelism", {"attention": attention, "split": split})
        super().__init__(config, tp_group, sequence_parallel=sequence_parallel)
        self.group, self.attention, self.split = cp_group, attention, split
        for i, block in enumerate(self.blocks):
            plain = block.attn
            block.attn = TensorContextParallelSelfAttention(
                config, tp_group, cp_group, attention, split, f"blocks.{i}.attn",
                self.sequence_parallel)
            block.attn.load_state_dict(plain.state_dict())

    def embed(self, idx):
        """Vocab-parallel token embedding plus the global positions' embedding:
        (B, S/cp) -> (B, S/cp, D), or this tp rank's (B, S/(cp*tp), D) (sequence parallel)."""
        idx = unwrap(idx)
        where = self.global_positions(idx.shape[-1])                   # (S/cp,)
        outer = trace.current_label()
        label = trace.label(f"{outer}/embed" if outer else "embed")    # as ParallelGPT's
        if not self.sequence_parallel:
            with label:
                return self.drop(self.wte(idx) + self.wpe(where))
        check_sequence_length(idx.shape[-1], self.tp_group.size)      # before any collective
        with label:
            pos = self.wpe(where).reshape(1, len(where), self.config.d_model)
            pos = scatter_to_sequence(pos, self.tp_group)              # (1, S/(cp*tp), D)
            return self.drop(self.wte(idx) + pos)


def context_parallel_model(config, tp_group, cp_group, attention="ring", split=None,
                           sequence_parallel=False):
    """The GPT on a tp x cp cell: ContextParallelGPT (tp = 1) or TensorContextParallelGPT."""
    if tp_group.size == 1:
        return ContextParallelGPT(config, cp_group, attention, split)
    return TensorContextParallelGPT(config, tp_group, cp_group, attention, split,
                                    sequence_parallel)


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
