"""The MoE layer with its experts spread over an ep group.

The router, the plan, the gather of token rows, the gates, the scatter back and
the aux losses are the serial layer's (nn/moe/layer.py), on this rank's
tokens. Only ``exchange`` differs: the rows travel to the ranks that hold
their experts (dispatch.py), E/ep local experts compute, and the outputs
travel back (combine). Each rank keeps rows e*E/ep .. of the full stacked
expert weights, built from the same seed ("master weight, then split").

Sequence parallelism (``sp_group`` = the tp group): the block hands the MoE this
rank's tokens (B, T/tp, D). The MoE is not split over tp, so it gathers the whole
sequence (all-gather forward, keep my chunk backward), runs as without sequence
parallelism (every tp rank alike) and keeps its tokens of the output (keep
forward, all-gather backward): 2 sequence all-gathers per layer per direction,
and router and expert gradients equal on the tp ranks, as with tp alone.
"""
from minimegatron import comm
from minimegatron.nn.init import gpt_init
from minimegatron.nn.moe.layer import MoE
from minimegatron.parallel.expert_parallel.dispatch import (combine_dropless, combine_padded,
                                                            dispatch_dropless, dispatch_padded)
from minimegatron.parallel.expert_parallel.groups import check_expert_parallel
from minimegatron.parallel.split import rows_of
from minimegatron.parallel.tensor_parallel.sequence import (gather_to_replicated,
                                                            scatter_to_sequence)


class ExpertParallelMoE(MoE):
    """MoE(d_model, moe) with E/ep experts on this rank of ``ep_group``."""

    def __init__(self, d_model, moe, ep_group, dtype="float64", seq_group=None,
                 sp_group=None):
        check_expert_parallel(ep_group.size, ep_group.size, 1, moe.num_experts)
        self.ep_group, self.seq_group = ep_group, seq_group   # seq_group: cp ranks of a sequence
        super().__init__(d_model, moe, dtype)
        self.sp_group = sp_group                              # tp ranks of sequence parallelism

    def forward(self, x):
        """(B, T, D) -> (B, T, D); with sp_group (B, T/tp, D) -> (B, T/tp, D)."""
        if self.sp_group is None or self.sp_group.size == 1:
            return super().forward(x)
        full = gather_to_replicated(x, self.sp_group)                    # (B, T, D)
        return scatter_to_sequence(super().forward(full), self.sp_group)  # (B, T/tp, D)

    def whole_sequence(self, counts):
        """A sequence split over the cp ranks of seq_group: its counts summed over them."""
        if self.seq_group is None or self.seq_group.size == 1:
            return counts, 1
        return comm.all_reduce(counts, self.seq_group), self.seq_group.size

    def local_experts(self):
        return self.moe.num_experts // self.ep_group.size

    def load_full(self, prefix, config):
        """Every weight from gpt_init(prefix + name, FULL shape); experts keep their rows."""
        ep, rank = self.ep_group.size, self.ep_group.rank
        for name, p in self.named_parameters(prefix):
            if ".experts." in name:
                full = gpt_init(name, (self.moe.num_experts,) + p.shape[1:], config)
                p.data = rows_of(full, rank, ep).copy()           # (E/ep, ...)
            else:
                p.data = gpt_init(name, p.shape, config)

    def exchange(self, rows, plan):
        """Rows to their experts' ranks, my experts, outputs back (dispatch.py)."""
        local = self.local_experts()
        if plan.capacity is not None:
            mine = dispatch_padded(rows, self.ep_group, local)            # (E_l*ep*b*C, h)
            width = mine.shape[0] // local
            out = self.experts(mine, [width] * local)
            return combine_padded(out, self.ep_group, local)               # (E*b*C, h)
        mine, counts, back = dispatch_dropless(rows, plan.counts, self.ep_group)
        return combine_dropless(self.experts(mine, counts), self.ep_group, back)
