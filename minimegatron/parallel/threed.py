"""3D parallelism: data x pipeline x tensor parallel on one dp x pp x tp grid.

The idea (DeepSpeed / Megatron-LM "3D"). The world is a ProcessGrid
(parallel/grid.py, rank = pp*(dp*tp) + dp*tp + tp):

- TENSOR parallel inside every layer: the tp ranks of one (dp, pp) cell hold
  one shard each of every weight (ParallelGPT, parallel/tensor_parallel/gpt.py;
  nn.GPT when tp = 1).
- PIPELINE parallel across layers: the pp ranks of one (dp, tp) column hold
  consecutive blocks (PipelineStage), run by PipelineEngine with any schedule
  (naive, gpipe, 1f1b) over M micro-batches; pp = 1 is a one-stage pipeline.
  "interleaved" with ``chunks`` = v: each rank holds v groups of blocks
  (ChunkedStage), M a multiple of pp. Zero-bubble "zb-h1", "zb-h2" and "zbv" (two
  chunks in a V) run B and W apart (zero_bubble.py); DDP / ZeRO sync after the step.
- DATA parallel across replicas: the dp ranks of one (pp, tp) cell hold the
  same shard of the same stage; each takes rows r*B/dp .. (r+1)*B/dp of the
  global batch, and their gradients are averaged: DistributedDataParallel
  (zero_stage=0, overlap off, ``finish()`` after the pipeline step), or
  ShardedOptimizer stage 1 (all-reduce, then each rank updates its 1/dp slice of
  the stage's flat parameters and all-gathers them) or stage 2 (reduce-scatter:
  each rank keeps only its slice of the gradient).

Why it equals one process. A dp replica's loss is the mean over its B/dp rows,
the pipeline's is (1/M) sum_i loss_i over equal micro-batches, so
L = (1/dp) sum_r L_r = the serial mean over B rows, and the averaged gradient
(1/dp) sum_r dL_r/dW = dL/dW. Tensor parallelism computes the same sums split
over ranks. So one 3D step, then AdamW on each rank's shard, equals one serial
step on the matching slice (checks/threed.py compares every factorisation of 8).

Communication per step, b = B/(dp*M) sequences per micro-batch, s tokens, h
hidden, 8 bytes per float64 value, P_rank the rank's parameters:

    tp  per block per micro-batch 4 all-reduces of b*s*h values (2 forward g,
        2 backward f), + 1 embedding and 1 head-input all-reduce of b*s*h and 3 of
        b*s values (vocab-parallel loss) on the first / last stage
    pp  M sends of b*s*h values forward, M back (isend/irecv), + 8 B loss broadcast
    dp  ZeRO 0: one all-reduce (mean) of the rank's gradients, P_rank * 8 bytes;
        ZeRO 1: the same all-reduce + an all-gather of the weights; ZeRO 2:
        reduce-scatter + all-gather (data_parallel/zero.py); + one 8 B all-reduce of the loss

Sequence parallel (``sequence_parallel=True``, tensor_parallel/sequence.py):
the tp all-reduces become all-gathers / reduce-scatters along the sequence,
and the activation between stages is this rank's tokens (B/M, T/tp, D): the pp
sends shrink by tp. The sequence length must divide by tp (checked first).

Context parallel (``grid.cp_size`` > 1, ``attention`` ring / allgather / ulysses,
context_parallel/gpt.py): each rank also keeps its S/cp tokens of its rows
(zigzag, contiguous for Ulysses) and the model attends over ``grid.cp``; the
pipeline then carries (B/M, S/cp, D) (S/(cp*tp) with sequence parallelism).
Every rank of dp x cp holds the same weights (shard), so DDP / ZeRO and the
loss mean run over ``grid.dp_cp`` instead of ``grid.dp`` (with cp = 1 the two
are one group): cp adds to dp's all-reduce only its extra ranks, and per layer
the attention variant's K/V traffic over cp.

Which combinations are supported: any dp x pp x tp that divides the world,
tp dividing d_model and n_head (the vocabulary is padded), pp <= n_layer, with
zero_stage 0 (DDP), 1 or 2 over dp, or (pp = 1) FSDP2 / HSDP over dp x cp (``fsdp``).
ZeRO-3 and FSDP2 are not composed with the pipeline here (their per-unit gathers would
run inside every micro-batch): ValueError.

    minimegatron run -n 8 tutorials/08_3d_parallel.py --dp 2 --pp 2 --tp 2
"""
import contextlib
import dataclasses
import numbers

from minimegatron import comm
from minimegatron.comm import comm_check, trace
from minimegatron.comm.agreed_steps import rows_digest
from minimegatron.comm.agreement import agree_fields
from minimegatron.backend import xp
from minimegatron.autodiff.guards import check_finite, check_ids, check_targets
from minimegatron.nn import GPT
from minimegatron.nn.watch import ActivationWatch
from minimegatron.optim.settings import optimizer_fields
from minimegatron.parallel.data_parallel.ddp import DistributedDataParallel
from minimegatron.parallel.context_parallel.gpt import check_config as check_cp_config
from minimegatron.parallel.context_parallel.gpt import context_parallel_model
from minimegatron.parallel.context_parallel.zigzag import check_split, split_sequence
from minimegatron.parallel.data_parallel.fsdp2 import fully_shard
from minimegatron.parallel.data_parallel.fsdp2_grid import check_fsdp, fsdp_groups
from minimegatron.parallel.data_parallel.zero import ShardedOptimizer
from minimegatron.parallel.pipeline_parallel.engine import PipelineEngine
from minimegatron.parallel.pipeline_parallel.generate import pipeline_generate
from minimegatron.parallel.pipeline_parallel.schedules import (SPLIT, check_interleaved,
                                                               chunk_share, chunks_per_stage,
                                                               get_schedule)
from minimegatron.parallel.pipeline_parallel.stage import (ChunkedStage, PipelineStage,
                                                           stage_layers)
from minimegatron.parallel.split import rows_of
from minimegatron.parallel.tensor_parallel.gpt import ParallelGPT, check_tp_config
from minimegatron.parallel.tensor_parallel.sequence import check_sequence_length


def cp_split(attention):
    """The split a cp attention variant uses: contiguous for Ulysses, else zigzag."""
    return "contiguous" if attention == "ulysses" else "zigzag"


def check_3d_config(config, grid, schedule, micro_batches, zero_stage, chunks=1,
                    attention="ring", fsdp=0):
    """The same ValueError on every rank, before any collective, for a grid that cannot work;
    (micro_batches, zero_stage) as Python ints (numpy's accepted, True refused)."""
    check_fsdp(grid, zero_stage, fsdp)
    check_tp_config(config, grid.tp_size)
    if grid.cp_size > 1:
        check_cp_config(config, grid.cp_size, attention, cp_split(attention), grid.tp_size)
    get_schedule(schedule, chunks)                            # chunks only for interleaved
    chunks = chunks_per_stage(schedule, chunks)               # zbv: always 2
    groups = grid.pp_size / chunk_share(schedule, chunks)     # dualpipe: pp (held twice)
    stage_layers(config.n_layer, int(groups), 0)              # pp * v <= n_layer
    if isinstance(micro_batches, bool) or not isinstance(micro_batches, numbers.Integral) \
            or micro_batches < 1:
        raise ValueError(f"micro_batches must be an int >= 1, got {micro_batches!r}")
    if schedule in SPLIT:                         # M >= K (zb-h1), 2K-1, 2K (dualpipe)
        get_schedule(schedule)(grid.pp_size, micro_batches, 0)
    if schedule == "interleaved":
        check_interleaved(grid.pp_size, micro_batches, chunks)  # M a multiple of pp
    if isinstance(zero_stage, bool) or zero_stage not in (0, 1, 2):            # True == 1
        raise ValueError(f"Trainer3D composes zero_stage 0 (DDP), 1 or 2 with the pipeline;"
                         f" got zero_stage={zero_stage!r}")
    return int(micro_batches), int(zero_stage)


def build_stage(model, grid, schedule, chunks=1):
    """This rank's part of ``model``: its pipeline stage (or v chunks for the schedule)."""
    if schedule == "interleaved":                     # v chunks: layer groups k, k+pp, ...
        return ChunkedStage(model, grid.pp_rank, grid.pp_size, chunks)
    if schedule in ("zbv", "dualpipev"):              # two chunks in a V: blocks k, 2pp-1-k
        return ChunkedStage(model, grid.pp_rank, grid.pp_size, 2, placement="v")
    if schedule == "dualpipe":                        # stages k and pp-1-k, each held twice
        return ChunkedStage(model, grid.pp_rank, grid.pp_size, 2, placement="mirror")
    return PipelineStage(model, grid.pp_rank, grid.pp_size)       # drops other layers


def agree_on_plan(grid, config, schedule, micro_batches, attention, **more):
    """Every rank of the grid holds the same plan, or all raise naming the fields that
    differ on each side (comm/agreement.py): the model config, the schedule, the cp
    variant and split, and ``more``; message sizes cannot show these."""
    fields = {f"config.{k}": v for k, v in dataclasses.asdict(config).items()}
    fields.update(schedule=schedule, micro_batches=micro_batches, attention=attention,
                  split=cp_split(attention), **more)
    agree_fields(grid.world, "the training plan", fields)


def agree_on_optimizer(grid, rule):
    """Every rank of the grid holds the same optimizer and loss-scaler settings, or all raise
    naming the fields that differ and both sides' values (optim/settings.py), before any
    weight moves: a learning rate or a scaler's growth interval moves no message."""
    agree_fields(grid.world, "the optimizer", optimizer_fields(rule))


class Trainer3D:
    """One rank of a dp x pp x tp GPT: ``loss = trainer.train_step(inputs, targets)``.

    Every rank passes the same GLOBAL batch (B, T) and keeps its dp slice (the
    first stage embeds the inputs, the last scores the targets, the others only
    read the batch shape).
    ``schedule``/``chunks``: the pipeline schedule, and v for "interleaved".
    ``optimizer`` is ``optimizer_fn(params)`` over this rank's shards (the caller's
    choice, e.g. data.demo.make_optimizer; zero_stage 1-2: a ShardedOptimizer lending
    its update rule); ``named_parameters()`` yields
    the shards under the full model's names.
    ``optimizer_fn`` may return a MixedPrecisionOptimizer (float16 config) whose
    group is the whole grid (``grid.world``): every dp x pp x tp rank then skips a
    step together; the pipeline starts backward from its loss scale S.
    ``attention``: the context-parallel variant when ``grid.cp_size`` > 1 (gradients and
    the loss then average over ``grid.dp_cp``).
    ``fsdp`` = R >= 1 (pp = 1, no ZeRO; ``check_fsdp``): FSDP2 in place of DDP: every
    weight this tp rank holds is sharded on dim 0 over dp x cp (R = 1) or over dp x cp / R
    ranks with R replicas (HSDP; data_parallel/fsdp2.py), all-gathered around each unit's
    forward and backward, its gradient reduce-scattered there: no DDP all-reduce after the
    step, and ``named_parameters()`` yields the dim-0 shards of the tp shards.
    At construction every rank of ``grid.world`` agrees on the plan (``agree_on_plan``:
    the config, schedule, M, the cp variant and split, ZeRO, sp; one 8-byte Allgather).
    ``check_finite`` (default on): a NaN/inf loss raises guards.NonFiniteError on
    every rank together (the loss is all-reduced first), a NaN/inf gradient or
    weight on the ranks that hold it (the abort hook then ends the job).
    """

    def __init__(self, config, grid, schedule="1f1b", micro_batches=1, zero_stage=0,
                 checkpoint_activations=False, *, optimizer_fn, check_finite=True,
                 chunks=1, sequence_parallel=False, attention="ring", fsdp=0):
        micro_batches, zero_stage = check_3d_config(config, grid, schedule, micro_batches,
                                                    zero_stage, chunks, attention, fsdp)
        agree_on_plan(grid, config, schedule, micro_batches, attention, chunks=chunks,
                      zero_stage=zero_stage, sequence_parallel=sequence_parallel,
                      recompute=checkpoint_activations, fsdp=int(fsdp))
        self.config, self.grid, self.check_finite = config, grid, check_finite
        self.sequence_parallel = sequence_parallel and grid.tp_size > 1
        self.split = cp_split(attention)
        if grid.cp_size > 1:                            # this rank's S/cp tokens, attention
            model = context_parallel_model(config, grid.tp, grid.cp, attention,  # over cp
                                           self.split, sequence_parallel)
        elif grid.tp_size > 1:
            model = ParallelGPT(config, grid.tp, sequence_parallel=sequence_parallel)
        else:
            model = GPT(config)
        self.fsdp_shard = None
        if fsdp:                       # each weight (its tp shard) on dim 0 over dp x cp / R
            self.fsdp_shard, replicate = fsdp_groups(grid, fsdp)
            fully_shard(model, self.fsdp_shard, replicate)
        self.stage = build_stage(model, grid, schedule, chunks)
        self.engine = PipelineEngine(self.stage, grid.pp, schedule, micro_batches,
                                     checkpoint_activations)
        self.micro_batches = self.engine.num_micro_batches      # naive: always 1
        self.zero_stage, params = zero_stage, self.stage.parameters()
        self.rule = rule = optimizer_fn(params)
        agree_on_optimizer(grid, rule)                            # before the weights move
        if fsdp:                               # the units reduce-scatter in their backward
            self.ddp, self.optimizer = None, rule
        elif zero_stage == 0:
            self.ddp = DistributedDataParallel(self.stage, grid.dp_cp, overlap=False,
                                               check_finite=check_finite)
            self.optimizer = rule
        else:
            self.ddp = None
            self.optimizer = ShardedOptimizer(
                params, grid.dp_cp, zero_stage, rule, named=self.named_parameters(),
                watch=ActivationWatch(self.stage) if check_finite else None,
                check_finite=check_finite)
        if hasattr(rule, "names") and len(rule.names) == len(params):   # an Optimizer
            rule.names = [name for name, _ in self.named_parameters()]      # names its errors
        if not hasattr(rule, "loss_scale"):      # mixed precision skips a non-finite step
            rule.check_finite = check_finite                # the optimizer's own guard

    def named_parameters(self):
        """(full-model name, local shard) of every parameter this rank holds."""
        return self.stage.named_parameters()

    def parameters(self):
        return self.stage.parameters()

    def check_batch(self, batch_size):
        """ValueError (same on every rank) unless B splits into dp shards of M micro-batches."""
        parts = self.grid.dp_size * self.micro_batches
        if batch_size < 1:
            raise ValueError(f"a global batch needs at least 1 sequence, got {batch_size}")
        if batch_size % parts:
            raise ValueError(f"a global batch of {batch_size} sequences does not split into "
                             f"dp={self.grid.dp_size} x {self.micro_batches} micro-batches: "
                             f"use a multiple of {parts}")

    def local_batch(self, array):
        """This dp rank's contiguous rows r*B/dp .. (r+1)*B/dp of a global batch, and with
        cp > 1 this cp rank's tokens of them: (B/dp, T), or (B/dp, T/cp)."""
        rows = rows_of(array, self.grid.dp_rank, self.grid.dp_size)   # (B/dp, T)
        if self.grid.cp_size == 1:
            return rows
        return split_sequence(rows, self.grid.cp_rank, self.grid.cp_size, self.split)

    def forward_backward(self, inputs, targets):
        """Pipeline forward/backward on this dp shard, then the dp gradient average.

        Returns the global mean loss (identical on every rank); ``.grad`` of every
        local parameter then holds its shard of the serial gradient (ZeRO-2: only
        ``optimizer.grad_shard``, this rank's slice of the flat gradients).
        """
        with self.agreed_step(inputs, targets):                   # inside train_step: free
            return self._forward_backward(inputs, targets)

    def _forward_backward(self, inputs, targets):
        self.check_batch(inputs.shape[0])                         # before any message
        if self.grid.cp_size > 1:
            check_split(inputs.shape[1], self.grid.cp_size, self.split)
        if self.sequence_parallel:
            check_sequence_length(inputs.shape[1] // self.grid.cp_size, self.grid.tp_size)
        check_ids(inputs, self.config.vocab_size)                 # every stage, not only the
        check_targets(targets, self.config.vocab_size)            # first / last: no hang
        self.optimizer.zero_grad()
        x, y = self.local_batch(inputs), self.local_batch(targets)
        self.engine.loss_scale = getattr(self.rule, "loss_scale", 1.0)   # mixed precision: S
        loss = self.engine.train_step(x, y)                       # every stage: the shapes
        if self.ddp is not None:
            with trace.label("dp.grads"):
                self.ddp.finish()                         # all-reduce (mean) over dp x cp
        elif self.fsdp_shard is None:
            self.optimizer.reduce_gradients()                     # ZeRO: over dp x cp
        with trace.label("dp.loss"):
            mean = comm.all_reduce(xp.asarray([loss]), self.grid.dp_cp, op="mean")
        if self.check_finite:                                     # the same on every rank
            check_finite("loss", [mean], self.optimizer.step_count + 1)
        return float(mean[0])

    def step(self):
        """The optimizer update of this rank's shards (ZeRO: + all-gather of W over dp); a
        NaN/inf gradient or weight stops it first (the optimizer's or ZeRO's own check)."""
        self.optimizer.step()

    def agreed_step(self, inputs, targets):
        """The step as one agreed step (comm_check.agreed_step): the step number, the
        batch's shapes and dtypes and the optimizer's settings now (a schedule) compared
        once per group of the grid, at its first collective; tp, pp and cp, whose ranks
        hold the same rows, also a crc32 of this dp rank's rows (``rows_crc32``). The
        step's collectives follow from them and the plan: not checked one by one."""
        grid = self.grid
        if not comm_check.enabled():                              # MINIMEGATRON_CHECK=0
            return contextlib.nullcontext()
        self.check_batch(inputs.shape[0])                         # before any message
        rows = rows_digest(rows_of(inputs, grid.dp_rank, grid.dp_size),    # (B/dp, T)
                           rows_of(targets, grid.dp_rank, grid.dp_size))
        return comm_check.agreed_step("the step's inputs", {
            "step": self.optimizer.step_count + 1,
            "inputs": (tuple(inputs.shape), str(inputs.dtype)),
            "targets": (tuple(targets.shape), str(targets.dtype)),
            **optimizer_fields(self.rule)},
            groups=(grid.dp_cp, grid.ep, grid.edp),
            shared=({"rows_crc32": rows}, (grid.tp, grid.pp, grid.cp)))

    def train_step(self, inputs, targets):
        """forward_backward, then step, as one agreed step; returns the global mean loss."""
        with self.agreed_step(inputs, targets):
            loss = self.forward_backward(inputs, targets)
            self.step()
        return loss

    def generate(self, idx, max_new_tokens, temperature=1.0, top_k=None, seed=0):
        """Sample on the grid: (B, T + n) ids on every rank, the serial model's tokens.
        Each dp replica samples the same text (pipeline_parallel/generate.py).

        Not with the interleaved schedule, sequence or context parallelism (a chunked
        stage and a split sequence need their own sampling loop): the same ValueError on
        every rank, before any message; ``minimegatron sample`` reads the checkpoint.
        """
        if isinstance(self.stage, ChunkedStage) or self.sequence_parallel or \
                self.grid.cp_size > 1:
            raise ValueError("Trainer3D.generate runs plain pipeline stages without sequence "
                             "or context parallelism; save a checkpoint (save_checkpoint) "
                             "and write text with: minimegatron sample --checkpoint FILE")
        return pipeline_generate(self.stage, self.grid.pp, idx, max_new_tokens, temperature,
                                 top_k, seed)
