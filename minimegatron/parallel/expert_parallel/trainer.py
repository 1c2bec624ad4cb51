"""MoETrainer: a GPT with MoE blocks on a dp x pp x tp x cp grid, its experts over ep.

Trainer3D's plan (parallel/threed.py) with three changes:

- the model is ``expert_parallel_gpt``: the grid's dense GPT whose MoE blocks
  hold E/ep experts each (ep folded over dp x cp, ``ProcessGrid(..., ep=)``);
- gradients: dense ones averaged over dp x cp, expert ones summed over edp and
  divided by dp*cp (grads.py), after the pipeline step; optional clipping by the
  norm that counts every parameter once (``clip_grad``);
- the loss: the pipeline's cross entropy, plus each stage's aux losses (mean
  over its micro-batches), summed over pp, averaged over dp x cp. Each MoE layer
  hands its aux loss the gradient S/M (losses.attach_aux_loss): the pipeline
  starts every micro-batch's backward from S x loss_m / M.
- aux-loss-free balancing (``moe.bias_update_rate`` > 0, nn/moe/balancing.py):
  each stage's loads (layers, E) of the step's micro-batches summed over dp x cp
  (``load_group``), one all-reduce of 8 L E bytes (DualPipe: and a second over the
  mirror pair, each holding a copy of the layers), then every rank nudges its
  routers' biases alike: the choices stay one process's.

Composed with every feature Trainer3D has: ZeRO-1/2 (``zero_stage``: dense
weights sharded over dp x cp, experts over edp, zero.py), sequence parallelism
(the MoE gathers the sequence, layer.py), the interleaved and zero-bubble
schedules (``chunks``; zbv's V), activation recomputation (the MoE's all-to-alls
run again in backward; its aux loss is logged once, recompute.py) and float16
mixed precision (``optimizer_fn`` a MixedPrecisionOptimizer over grid.world: one
found-inf per step, the aux losses start from S/M). Refused before any message:
dropout, clipping with ZeRO (the norm of sharded gradients is not composed here).

Non-finite numbers (``check_finite``, default on): after the pipeline step and
before any reduction, a NaN/inf gradient or aux loss raises NonFiniteError naming a
weight this rank holds (the router, its experts), else the first non-finite
activation, else the aux loss, else the gradient, as DDP does for a dense model.
"""
import dataclasses
import math
import numbers

from minimegatron import comm
from minimegatron.comm import trace
from minimegatron.backend import xp
from minimegatron.autodiff.guards import all_finite, check_finite, check_ids, check_targets
from minimegatron.nn.watch import ActivationWatch, name_non_finite
from minimegatron.nn.moe.balancing import take_load, update_expert_bias
from minimegatron.nn.moe.gpt import moe_layers, take_aux_loss
from minimegatron.parallel.context_parallel import check_split
from minimegatron.parallel.tensor_parallel.sequence import check_sequence_length
from minimegatron.parallel.expert_parallel.gpt import check_moe_grid, expert_parallel_gpt
from minimegatron.parallel.expert_parallel.grads import clip_grad_norm, reduce_gradients
from minimegatron.parallel.expert_parallel.groups import check_expert_parallel
from minimegatron.parallel.expert_parallel.zero import ExpertShardedOptimizer
from minimegatron.parallel.pipeline_parallel import PipelineEngine
from minimegatron.parallel.threed import (Trainer3D, agree_on_optimizer, agree_on_plan,
                                         build_stage, check_3d_config, cp_split)


class MoETrainer(Trainer3D):
    """One rank of an MoE GPT: ``loss = trainer.train_step(inputs, targets)`` (global batch).

    ``expert_group``: the group expert gradients reduce over (default ``grid.edp``; a
    test passes ``grid.dp_cp`` to see the wrong group fail). ``load_group``: the group
    the expert loads of aux-loss-free balancing sum over (default ``grid.dp_cp``).
    """

    def __init__(self, config, moe, grid, schedule="1f1b", micro_batches=1, *,
                 optimizer_fn, attention="ring", clip_grad=None,
                 check_finite=True, expert_group=None, zero_stage=0,
                 checkpoint_activations=False, chunks=1, sequence_parallel=False,
                 load_group=None):
        micro_batches, zero_stage = check_3d_config(config, grid, schedule, micro_batches,
                                                    zero_stage, chunks, attention)
        check_moe_grid(config, moe, grid, sequence_parallel)
        check_expert_parallel(grid.ep_size, grid.dp_size, grid.cp_size, moe.num_experts)
        if clip_grad is not None and (isinstance(clip_grad, bool) or not isinstance(
                clip_grad, numbers.Real) or not 0 < clip_grad < math.inf):    # nan, -1: no
            raise ValueError(f"MoETrainer: clip_grad must be a finite number > 0 (or None: "
                             f"no clipping), got {clip_grad!r}")
        agree_on_plan(grid, config, schedule, micro_batches, attention, clip_grad=clip_grad,
                      ep=grid.ep_size, expert_group=(expert_group or grid.edp).size,
                      zero_stage=zero_stage, chunks=chunks, sequence_parallel=sequence_parallel,
                      recompute=checkpoint_activations,
                      **{f"moe.{k}": v for k, v in dataclasses.asdict(moe).items()})
        if zero_stage and clip_grad is not None:
            raise ValueError("MoETrainer: clip_grad with ZeRO is not composed here (the norm "
                             "of sharded gradients); use zero_stage=0 to clip")
        self.config, self.moe, self.grid, self.check_finite = config, moe, grid, check_finite
        self.sequence_parallel = sequence_parallel and grid.tp_size > 1
        self.split = cp_split(attention)
        self.clip_grad, self.expert_group, self.grad_norm = clip_grad, expert_group, None
        self.load_group = load_group or grid.dp_cp
        model = expert_parallel_gpt(config, moe, grid, attention, self.sequence_parallel)
        self.stage = build_stage(model, grid, schedule, chunks)
        self.engine = PipelineEngine(self.stage, grid.pp, schedule, micro_batches,
                                     checkpoint_activations)
        self.micro_batches = self.engine.num_micro_batches
        self.zero_stage, self.ddp = zero_stage, None
        rule = optimizer_fn(self.stage.parameters())
        self.rule = rule
        agree_on_optimizer(grid, rule)                            # before the weights move
        if zero_stage == 0:
            self.optimizer = rule
        else:
            self.optimizer = ExpertShardedOptimizer(self.named_parameters(), grid, zero_stage,
                                                    rule, expert_group)
        if hasattr(rule, "names") and len(rule.names) == len(self.stage.parameters()):
            rule.names = [name for name, _ in self.named_parameters()]     # names its errors
        if not hasattr(rule, "loss_scale"):
            rule.check_finite = check_finite
        self.watch = ActivationWatch(self.stage) if check_finite else None   # names a NaN

    def name_non_finite(self):
        """A NaN/inf gradient or aux loss on this rank, before the reductions spread it:
        NonFiniteError naming a weight this rank holds (a router, an expert), else the first
        non-finite activation, else an aux loss, else the gradient (nn/watch.py)."""
        if self.watch is None:
            return
        named = list(self.named_parameters())
        names = {id(m): n for n, m in self.stage.named_modules()}
        aux = [(names[id(m)], sum(m.aux_log)) for m in moe_layers(self.stage)]
        grads = [(n, p.grad) for n, p in named if p.grad is not None]
        if not all_finite([g for _, g in grads] + [xp.asarray([v for _, v in aux])]):
            name_non_finite([(n, p.data) for n, p in named], grads, self.watch,
                            ", before the MoE gradient reductions", aux_losses=aux,
                            overflow_ok=hasattr(self.rule, "loss_scale"))
        self.watch.clear()

    def balance_experts(self):
        """Aux-loss-free balancing: this stage's loads of the step (layers, E) summed over
        the router's replicas (dp x cp; tp ranks route the same tokens, pp stages hold
        other layers; DualPipe: and over the mirror pair, whose two copies of a layer each
        routed some of the micro-batches), then every rank nudges its biases by the same
        signs."""
        layers = moe_layers(self.stage)
        if not layers:
            return
        load = take_load(layers)                                  # (L, E) this rank's tokens
        with trace.label("dp.load"):
            load = comm.all_reduce(load, self.load_group)         # every replica's tokens
        if self.engine.mirror is not None:       # the same layers, in the same order
            with trace.label("pp.mirror.load"):
                load = comm.all_reduce(load, self.engine.mirror)  # both copies' tokens
        update_expert_bias(layers, load)

    def forward_backward(self, inputs, targets):
        """Pipeline forward/backward on this rank's rows (and tokens), then the two gradient
        reductions; returns the global mean loss, cross entropy + aux (every rank)."""
        self.check_batch(inputs.shape[0])                         # before any message
        if self.grid.cp_size > 1:
            check_split(inputs.shape[1], self.grid.cp_size, self.split)
        if self.sequence_parallel:
            check_sequence_length(inputs.shape[1] // self.grid.cp_size, self.grid.tp_size)
        check_ids(inputs, self.config.vocab_size)
        check_targets(targets, self.config.vocab_size)
        self.optimizer.zero_grad()
        x, y = self.local_batch(inputs), self.local_batch(targets)
        scale = getattr(self.rule, "loss_scale", 1.0)
        self.engine.loss_scale = scale
        for layer in moe_layers(self.stage):                      # d(S loss_m / M) / d aux_m
            layer.aux_grad_scale = scale / self.micro_batches
        take_aux_loss(self.stage)
        loss = self.engine.train_step(x, y)                       # cross entropy, every stage
        self.name_non_finite()                                    # before any reduction
        aux = take_aux_loss(self.stage) / self.micro_batches      # this stage's layers
        if self.zero_stage:
            self.optimizer.reduce_gradients()         # ZeRO: dense over dp x cp, experts edp
        else:
            reduce_gradients(self.named_parameters(), self.grid, self.expert_group)
        if self.moe.bias_update_rate:
            self.balance_experts()
        with trace.label("dp.loss"):
            aux = comm.all_reduce(xp.asarray([aux]), self.grid.pp)          # every stage's
            mean = comm.all_reduce(xp.asarray([loss + aux[0]]), self.grid.dp_cp, op="mean")
        if self.check_finite:
            check_finite("loss", [mean], self.optimizer.step_count + 1)
        if self.clip_grad is not None:
            self.grad_norm = clip_grad_norm(self.named_parameters(), self.grid, self.clip_grad)
        return float(mean[0])
