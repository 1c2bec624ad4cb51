"""ZeRO 1/2 for an MoE model: dense weights sharded over dp x cp, experts over edp.

The idea (Megatron's distributed optimizer with experts). A dense weight is the
same on the N = dp*cp ranks of ``grid.dp_cp``; an expert's weights are the same
on the N/ep ranks of its ``grid.edp`` group only. So the parameters form two flat
buffers, each a ShardedOptimizer (data_parallel/zero.py) over the group that
holds it: rank r owns 1/N of the dense buffer and 1/(N/ep) of its experts' buffer.

Gradients (grads.py): dense dL/dW = mean over dp x cp, as ZeRO does. An expert's
holder already has the sum over its ep group's tokens, and one process's gradient
is (1/N) sum over edp of it = (1/ep) mean over edp. So the expert gradients are
divided by ep first, then ZeRO's own mean over edp (all-reduce for stage 1,
reduce-scatter for stage 2) gives dL/dV_e.

    stage 1  all-reduce(G_dense, dp x cp) + all-reduce(G_exp / ep, edp); update the
             two owned slices; all-gather each slice over its group.
    stage 2  the same with reduce-scatters: each rank keeps only its two slices of G.

One step, one found-inf: the update rule's ``check`` (mixed precision: the
all-reduce of the overflow flag over the whole grid) runs ONCE over both slices,
then each part updates and all-gathers (``ShardedOptimizer.step(checked=True)``),
so the loss scale and the step count move as one process's.
"""
from minimegatron.parallel.data_parallel.zero import ShardedOptimizer
from minimegatron.parallel.expert_parallel.gpt import is_expert


class ExpertShardedOptimizer:
    """``ExpertShardedOptimizer(named_params, grid, stage, rule, expert_group=None)``.

    ``parts``: the ShardedOptimizer of the dense parameters (over grid.dp_cp) and of
    the expert parameters (over ``expert_group``, default grid.edp); a stage without
    one kind has no such part. ``optimizer``: the rule (lends ``update`` and ``check``).
    """

    def __init__(self, named_params, grid, stage, rule, expert_group=None):
        named = [(n, p) for n, p in named_params if p.requires_grad]
        dense = [p for n, p in named if not is_expert(n)]
        experts = [p for n, p in named if is_expert(n)]
        self.ep_size, self.optimizer, self.stage = grid.ep_size, rule, stage
        self.dense = ShardedOptimizer(dense, grid.dp_cp, stage, rule) if dense else None
        self.experts = (ShardedOptimizer(experts, expert_group or grid.edp, stage, rule)
                        if experts else None)
        self.parts = [part for part in (self.dense, self.experts) if part is not None]
        self._reduced = False

    @property
    def step_count(self):
        """Steps taken: every part's (each passes it to the rule: AdamW's bias correction)."""
        return self.parts[0].step_count if self.parts else 0

    @step_count.setter
    def step_count(self, value):                # a loaded checkpoint sets it for every part
        for part in self.parts:
            part.step_count = value

    def reduce_gradients(self):
        """Experts' gradients / ep, then each part's ZeRO reduction over its group."""
        if self._reduced:
            return
        if self.experts is not None and self.ep_size > 1:
            for p in self.experts.flat.params:
                if p.grad is not None:
                    p.grad = p.grad / self.ep_size          # (1/N) sum_edp = (1/ep) mean_edp
        for part in self.parts:
            part.reduce_gradients()
        self._reduced = True

    def step(self):
        """One check over both slices, then each part's update and all-gather."""
        self.reduce_gradients()
        self.optimizer.check([part.shard for part in self.parts],
                             [part.grad_shard for part in self.parts], self.step_count + 1)
        for part in self.parts:
            part.step(checked=True)
        self._reduced = False

    def zero_grad(self):
        self._reduced = False
        for part in self.parts:
            part.zero_grad()

    def local_shards(self):
        """[(FlatShard, weight slice, grad slice or None)] of both parts."""
        return [shard for part in self.parts for shard in part.local_shards()]

    def held_arrays(self):
        held = [part.held_arrays() for part in self.parts]
        return {kind: [a for h in held for a in h[kind]] for kind in ("weights", "grads",
                                                                        "optimizer")}

    def full_weights(self):
        return {k: v for part in self.parts for k, v in part.full_weights().items()}
