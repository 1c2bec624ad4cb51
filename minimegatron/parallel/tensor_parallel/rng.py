"""Dropout under tensor parallelism: which random streams must agree across tp ranks.

Two kinds of activations meet a dropout in a Megatron block:

- replicated activations (after a row-parallel all-reduce, the embedding sum):
  every tp rank holds the same (B, T, D) array and must drop the SAME
  elements, or the replicas drift apart. The tracker gives every tp rank the
  stream ``host_rng(seed, name)``: the very stream the serial nn.Dropout of
  that name uses, so these masks even equal the serial model's.
- sharded activations (attention probabilities of this rank's heads,
  (B, H/tp, T, T)): each rank must draw an INDEPENDENT mask for its own heads,
  or heads r and r' of different ranks would share a pattern. The tracker gives
  rank r the stream ``host_rng(seed, name + ".tp<r>")`` (Megatron's
  "model-parallel RNG", seeded with an offset + tp rank).

So with dropout on, a tp run cannot reproduce the serial run bit for bit: the
serial model draws one (B, H, T, T) mask from one stream, a tp rank draws a
(B, H/tp, T, T) mask from its own stream. Matching it would mean every rank
drawing the full mask (tp times the random numbers and the memory of all heads)
and throwing most away, which defeats the purpose; the statistics are the
same, the numbers are not. Equivalence with serial is therefore checked with
dropout off, and the masks are checked directly (agreement / independence).

Sequence parallel (sequence.py): the replicated activations are split by
tokens, (B, T/t, D). Each rank draws the WHOLE (B, T, D) mask from the
replicated stream and keeps its own rows: different masks per rank, together
exactly one process's mask (t times the random numbers, 1/t of the memory).
No communication.
"""
from minimegatron.autodiff import functional as F
from minimegatron.backend import host_rng
from minimegatron.nn.module import Module
from minimegatron.parallel.tensor_parallel.sequence import sequence_dropout


class RNGTracker:
    """Hands out the random stream of a dropout, replicated or per tp rank."""

    def __init__(self, seed, tp_rank):
        self.seed, self.tp_rank = seed, tp_rank

    def replicated(self, name):
        """The same stream on every tp rank (and in the serial model)."""
        return host_rng(self.seed, name)

    def sharded(self, name):
        """A stream of this tp rank's own."""
        return host_rng(self.seed, f"{name}.tp{self.tp_rank}")


class ParallelDropout(Module):
    """nn.Dropout whose mask stream comes from an RNGTracker: ``sharded`` picks the kind.

    ``seq_group``: the input is this rank's tokens (B, T/t, D) of a replicated
    activation; the mask is this rank's rows of one process's mask.
    """

    def __init__(self, p, tracker, name, sharded=False, seq_group=None):
        super().__init__()
        self.p, self.sharded, self.seq_group = p, sharded, seq_group
        self.rng = tracker.sharded(name) if sharded else tracker.replicated(name)

    def forward(self, x):
        if self.seq_group is not None:
            return sequence_dropout(x, self.p, self.training, self.rng, self.seq_group)
        return F.dropout(x, self.p, self.training, self.rng)
