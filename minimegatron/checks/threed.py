"""3D parallelism checked against one process, run on every rank of the world.

- ``check_3d(grid_dims)``: builds a fresh ProcessGrid(dp, pp, tp) and a Trainer3D,
  trains it next to ``serial_reference`` on the same global batches and returns
  this rank's max abs differences: the loss (global mean, every rank), every
  gradient this rank holds (after the dp average; local shard vs
  ``shard_of(serial full grad)``) and every weight after each AdamW step.
  Options: any schedule and M (interleaved: ``chunks`` = v), ``zero_stage`` 1 or 2
  (ShardedOptimizer over dp in place of DDP), activation checkpointing, sequence
  parallelism.
  float64: ~1e-15 .. 1e-13 in practice; tolerance 1e-10 (float32: ~1e-5). float16:
  mixed precision (checks/precision.py), found-inf MAX over the whole grid.
- ``check_3d((dp, pp, tp, cp), attention=...)``: the same with context parallelism
  (the sequence split over cp, one of the three attention variants; gradients
  and the loss averaged over dp x cp). ``grad_group="dp"`` averages the
  gradients over dp alone, a deliberate bug the tests expect to fail.
- ``check_all_grids(world_size)``: every factorisation dp x pp x tp of the world,
  one after the other in ONE launch (each a fresh ProcessGrid).
- ``measured_vs_predicted(grid_dims)``: one traced step of the demo GPT (tutorial 8):
  bytes held (weights, grads, Adam state; tools/memory_measure.py) and bytes sent
  by dp / pp / tp group (``comm_by_dimension``, from the trace) next to the
  calculator (tools/memory.rank_report, float64, same ZeRO stage). Weights, grads and
  optimizer state agree exactly (ZeRO: up to the flat buffer's padding); the
  traffic exactly up to the loss bookkeeping the calculator leaves out:
  2(N-1)/N * 8 B over dp (the loss all-reduce) and 8(K-1) B over pp on the last
  stage (the loss broadcast), under 0.1% (the tests allow 1%).
"""
import copy

from minimegatron import comm
from minimegatron.comm import trace
from minimegatron.checks.common import max_abs_diff, serial_reference
from minimegatron.checks.precision import check_optimizer, unscaled
from minimegatron.data.demo import DEMO_CONFIG, VERIFY_CONFIG, batch, make_optimizer
from minimegatron.parallel.data_parallel.fsdp2 import shard_rows
from minimegatron.parallel.grid import ProcessGrid, factorisations
from minimegatron.parallel.split import flatten
from minimegatron.parallel.tensor_parallel.shards import shard_of
from minimegatron.parallel.threed import Trainer3D
from minimegatron.tools.memory import rank_report
from minimegatron.tools.memory_measure import measure



def check_3d(grid_dims, steps=3, schedule="1f1b", micro_batches=2, batch_size=8,
             config=VERIFY_CONFIG, mpi_comm=None, zero_stage=0, checkpoint_activations=False,
             chunks=1, sequence_parallel=False, attention="ring", grad_group="dp_cp",
             fsdp=0):
    """{"loss", "grad", "weight": max abs diff, "compared": #params, "losses": [..]}.

    ``grid_dims``: (dp, pp, tp) or (dp, pp, tp, cp). ``mpi_comm``: the communicator
    the grid spans (default the world). ZeRO-2 keeps only a slice of the flat
    gradient: it is compared with the same slice of the flattened serial gradient
    shards. ``grad_group="dp"`` (cp > 1): gradients and loss averaged over dp only (wrong).
    """
    dp, pp, tp, cp = tuple(grid_dims) + (1,) * (4 - len(grid_dims))
    grid = ProcessGrid(dp, pp, tp, comm=mpi_comm, cp=cp)
    if grad_group == "dp":                           # the bug: cp ranks never meet
        grid = copy.copy(grid)
        grid.dp_cp = grid.dp
    trainer = Trainer3D(config, grid, schedule=schedule, micro_batches=micro_batches,
                        zero_stage=zero_stage, checkpoint_activations=checkpoint_activations,
                        chunks=chunks, sequence_parallel=sequence_parallel,
                        attention=attention, fsdp=fsdp,
                        optimizer_fn=lambda ps: check_optimizer(ps, config, grid.world))
    ref = serial_reference(config, steps, batch_size)
    diffs = {"loss": 0.0, "grad": 0.0, "weight": 0.0, "compared": 0, "losses": []}

    def worst(key, value):
        diffs[key] = max(diffs[key], value)

    def shard(name, full):
        mine = shard_of(name, full, grid.tp_rank, grid.tp_size)
        rows = trainer.fsdp_shard                      # FSDP2: my rows of my tp shard
        return mine if rows is None else shard_rows(mine, rows.rank, rows.size)
    for step in range(steps):
        x, y = batch(config, batch_size, step)
        loss = trainer.forward_backward(x, y)
        diffs["losses"].append(loss)
        worst("loss", abs(loss - ref["loss"][step]))
        if zero_stage == 2:
            worst("grad", _zero2_grad_diff(trainer, ref["grads"][step], grid))
        else:
            for name, p in trainer.named_parameters():
                want = shard(name, ref["grads"][step][name])
                worst("grad", max_abs_diff(unscaled(p.grad, trainer.rule), want))
        trainer.step()
        for name, p in trainer.named_parameters():
            worst("weight", max_abs_diff(p.data, shard(name, ref["weights"][step][name])))
    diffs["compared"] = len(list(trainer.named_parameters()))
    return diffs


def _zero2_grad_diff(trainer, full_grads, grid):
    """ZeRO-2's gradient slice vs the same slice of the flat serial gradient shards."""
    flat = trainer.optimizer.flat
    serial = flatten([shard_of(name, full_grads[name], grid.tp_rank, grid.tp_size)
                      for name, _ in trainer.named_parameters()], flat.dtype)
    return max_abs_diff(unscaled(trainer.optimizer.grad_shard, trainer.rule),
                        flat.own(flat.pad(serial)))


def check_all_grids(world_size=None, steps=3, schedule="1f1b", micro_batches=2,
                    batch_size=8, config=VERIFY_CONFIG):
    """{"dpxppxtp": check_3d(...)} for every factorisation of the world size.

    Each grid runs min(micro_batches, batch_size / dp) micro-batches (dp = 8 of a
    batch of 8: one sequence per replica, so one micro-batch).
    """
    world_size = comm.world().size if world_size is None else world_size
    return {f"{dp}x{pp}x{tp}": check_3d((dp, pp, tp), steps, schedule,
                                        min(micro_batches, batch_size // dp), batch_size,
                                        config)
            for dp, pp, tp in factorisations(world_size)}


def measured_vs_predicted(grid_dims, schedule="1f1b", micro_batches=2, batch_size=8,
                          config=DEMO_CONFIG, zero_stage=0, sequence_parallel=False,
                          checkpoint_activations=False):
    """{"measured": {...}, "predicted": {...}} bytes of this rank, steady-state step."""
    dp, pp, tp = grid_dims
    grid = ProcessGrid(dp, pp, tp)
    trainer = Trainer3D(config, grid, schedule=schedule, micro_batches=micro_batches,
                        zero_stage=zero_stage, sequence_parallel=sequence_parallel,
                        checkpoint_activations=checkpoint_activations, optimizer_fn=make_optimizer)
    trainer.train_step(*batch(config, batch_size, 0))     # the optimizer state now exists
    comm.barrier(grid.world)
    trace.reset()
    trainer.forward_backward(*batch(config, batch_size, 1))   # the step that is measured
    held = measure(trainer.parameters(), trainer.optimizer)  # grads (or ZeRO-2's slice) held
    trainer.step()
    M = trainer.micro_batches
    report = rank_report(config, batch_size // (dp * M), M, dp, pp, tp, stage=grid.pp_rank,
                         zero=zero_stage, checkpoint=checkpoint_activations,
                         precision="float64", sequence_parallel=sequence_parallel)
    kinds = ("weights", "grads", "optimizer")
    return {"measured": dict({k: held[k] for k in kinds},
                             params=sum(p.size for p in trainer.parameters()),
                             **trace.comm_by_dimension()),
            "predicted": dict({k: report[k] for k in kinds}, params=report["params"],
                              **{k: report["comm"][k] for k in ("dp", "pp", "tp")}),
            "stage": grid.pp_rank}
