"""Every 3D check in one 8-rank launch: all grids, the errors, measured vs predicted bytes."""
from dataclasses import replace

from mpi4py import MPI

from minimegatron.checks.threed import check_3d, check_all_grids, measured_vs_predicted
from minimegatron.data.demo import VERIFY_CONFIG, batch, make_optimizer
from minimegatron.parallel.grid import ProcessGrid
from minimegatron.parallel.threed import Trainer3D

# ZeRO in place of DDP, the other schedules, activation checkpointing (name, grid, options)
VARIANTS = [("2x2x2 zero1", (2, 2, 2), {"zero_stage": 1}),
            ("2x2x2 zero2", (2, 2, 2), {"zero_stage": 2}),
            ("4x1x2 zero2", (4, 1, 2), {"zero_stage": 2}),
            ("2x2x2 gpipe M4", (2, 2, 2), {"schedule": "gpipe", "micro_batches": 4}),
            ("1x4x2 naive", (1, 4, 2), {"schedule": "naive"}),
            ("1x2x4 1f1b checkpointed", (1, 2, 4), {"checkpoint_activations": True})]


def _error(fn):
    """The ValueError text fn raises on this rank (None if it raises nothing)."""
    try:
        fn()
    except ValueError as error:
        return str(error)
    return None


def errors():
    """Bad configurations: each raises ValueError on every rank, before any message."""
    grid = ProcessGrid(2, 2, 2)
    trainer = Trainer3D(VERIFY_CONFIG, grid, micro_batches=2, optimizer_fn=make_optimizer)
    x, y = batch(VERIFY_CONFIG, 6, 0)                    # 6 % (dp 2 * M 2) != 0
    return {
        "batch": _error(lambda: trainer.train_step(x, y)),
        "heads": _error(lambda: Trainer3D(replace(VERIFY_CONFIG, d_model=30, n_head=5), grid,
                                          optimizer_fn=make_optimizer)),
        "layers": _error(lambda: Trainer3D(replace(VERIFY_CONFIG, n_layer=1), grid,
                                           optimizer_fn=make_optimizer)),
        "zero": _error(lambda: Trainer3D(VERIFY_CONFIG, grid, zero_stage=3,
                                         optimizer_fn=make_optimizer)),
        "schedule": _error(lambda: Trainer3D(VERIFY_CONFIG, grid, schedule="zigzag",
                                             optimizer_fn=make_optimizer)),
        "micro_batches": _error(lambda: Trainer3D(VERIFY_CONFIG, grid, micro_batches=0,
                                                  optimizer_fn=make_optimizer)),
        "world": _error(lambda: ProcessGrid(2, 2, 3)),
        "still_works": trainer.train_step(*batch(VERIFY_CONFIG, 8, 0)),
    }


def check_everything():
    """{"grids": {grid: diffs}, "errors": {...}, "bytes": {...}} on this rank."""
    out = {"grids": check_all_grids(), "errors": errors(),
           "bytes": measured_vs_predicted((2, 2, 2)),
           "variants": {name: check_3d(dims, **options) for name, dims, options in VARIANTS},
           "zero_bytes": {z: measured_vs_predicted((4, 1, 2), zero_stage=z) for z in (1, 2)}}
    if MPI.COMM_WORLD.Get_rank() == 0:                   # 1 x 1 x 1: one process alone
        out["grids"]["1x1x1"] = check_3d((1, 1, 1), mpi_comm=MPI.COMM_SELF)
    return out
