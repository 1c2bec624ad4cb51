"""FSDP2 and HSDP on a ProcessGrid: which grids take them, and their groups.

Trainer3D (parallel/threed.py) runs FSDP2 in DDP's place with ``fsdp`` = R: every
weight a rank holds (its tp shard, with tp > 1) is cut again on dim 0 over the ranks
that hold the same weights, dp x cp (fsdp2.py). R = 1 shards over all of them; R > 1 is
HSDP, consecutive blocks of dp x cp / R ranks shard and the R ranks at the same place of
each block replicate (``hsdp_groups``). The data group of a tp rank never holds another
tp rank's shard, so a dp x tp grid of 2 x 2 gathers and reduce-scatters over groups of 2.

Refused, the same ValueError on every rank before any message: FSDP2 with ZeRO (it takes
ZeRO-3's place: one sharding per run) and with a pipeline (the per-unit all-gather and
reduce-scatter would run once per micro-batch inside the schedule, as ZeRO-3's would).
"""
import numbers

from minimegatron.parallel.data_parallel.fsdp2 import hsdp_groups


def check_fsdp(grid, zero_stage, fsdp):
    """ValueError unless FSDP2 (``fsdp`` = R >= 1 replicas, 0: off) fits the grid."""
    if isinstance(fsdp, bool) or not isinstance(fsdp, numbers.Integral) or fsdp < 0:
        raise ValueError(f"fsdp must be an int >= 0 (0: off, 1: FSDP2, R > 1: HSDP with R "
                         f"replicas), got {fsdp!r}")
    if not fsdp:
        return
    if zero_stage:
        raise ValueError(f"FSDP2 shards every weight, its gradient and its optimizer state "
                         f"(ZeRO-3's place): it replaces zero_stage={zero_stage}, a run has "
                         f"one sharding")
    if grid.pp_size > 1:
        raise ValueError("FSDP2 is not composed with the pipeline here: its per-unit "
                         "all-gather and reduce-scatter would run once per micro-batch inside "
                         "the schedule (as ZeRO-3); pp must be 1")
    if (grid.dp_size * grid.cp_size) % fsdp:
        raise ValueError(f"HSDP: {fsdp} replicas do not divide dp x cp = "
                         f"{grid.dp_size * grid.cp_size} ranks")


def fsdp_groups(grid, fsdp):
    """(shard group, replicate group or None) of FSDP2 / HSDP over dp x cp."""
    if fsdp == 1:
        return grid.dp_cp, None
    return hsdp_groups(grid.dp_cp, grid.dp_cp.size // fsdp)
