"""Runs on 8 ranks: a 2x2x2 grid, a tp=4 x pp=2 grid, and a wrong grid (ValueError everywhere);
``check_cp_grids``: grids with a cp axis (tp-cp-dp-pp order) and their dp x cp group."""
import numpy as np

from minimegatron import comm
from minimegatron.parallel.grid import ProcessGrid


def describe_groups(grid):
    return {kind: {"name": g.name, "ranks": g.ranks, "rank": g.rank, "size": g.size}
            for kind, g in (("tp", grid.tp), ("dp", grid.dp), ("pp", grid.pp))}


def check_grids():
    out = {}
    grid = ProcessGrid(dp=2, pp=2, tp=2)
    out["groups_222"] = describe_groups(grid)
    out["coords_222"] = [grid.dp_rank, grid.pp_rank, grid.tp_rank]
    out["stages_222"] = [grid.is_first_stage, grid.is_last_stage]
    out["describe"] = grid.describe()
    # the groups really communicate: sum of world ranks over each group
    for kind in ("tp", "dp", "pp"):
        group = getattr(grid, kind)
        rank = np.array([float(grid.world.rank)])
        out[f"sum_{kind}"] = float(comm.all_reduce(rank, group)[0])

    grid = ProcessGrid(dp=1, pp=2, tp=4)
    out["tp4_sum"] = float(comm.all_reduce(np.array([float(grid.world.rank)]), grid.tp)[0])
    out["groups_tp4"] = describe_groups(grid)

    for sizes in ((2, 2, 3), (0, 8, 1), (2.0, 2, 2), (8, 1, 2)):
        try:
            ProcessGrid(*sizes)
            out[f"bad_{sizes}"] = "no error"
        except ValueError as error:
            out[f"bad_{sizes}"] = str(error)
    comm.barrier(comm.world())
    return out


def check_cp_grids():
    out = {}
    for name, sizes in (("tp2cp2dp2", dict(dp=2, pp=1, tp=2, cp=2)),
                        ("cp2dp2pp2", dict(dp=2, pp=2, tp=1, cp=2)),
                        ("cp8", dict(cp=8))):
        grid = ProcessGrid(**sizes)
        groups = {kind: {"name": g.name, "ranks": g.ranks, "rank": g.rank, "size": g.size}
                  for kind in ("tp", "cp", "dp", "pp", "dp_cp") for g in [getattr(grid, kind)]}
        rank = np.array([float(grid.world.rank)])
        sums = {kind: float(comm.all_reduce(rank, getattr(grid, kind))[0])
                for kind in ("tp", "cp", "dp", "pp", "dp_cp")}
        out[name] = {"groups": groups, "sums": sums, "cp_rank": grid.cp_rank,
                     "coords": [grid.dp_rank, grid.pp_rank, grid.tp_rank],
                     "describe": grid.describe(), "repr": repr(grid)}
    for sizes in ((2, 2, 1, None, 3), (1, 1, 1, None, 0), (2, 1, 2, None, 4)):
        try:
            ProcessGrid(*sizes)
            out[f"bad_{sizes}"] = "no error"
        except ValueError as error:
            out[f"bad_{sizes}"] = str(error)
    comm.barrier(comm.world())
    return out
