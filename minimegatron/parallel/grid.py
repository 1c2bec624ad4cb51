"""ProcessGrid(dp, pp, tp): which rank does what, and the three kinds of groups.

Megatron's rank order tp-dp-pp (tensor parallel fastest)::

    world_rank = pp_rank * (dp * tp) + dp_rank * tp + tp_rank

so the ranks of one tensor-parallel group are neighbours (on one node, where
the links are fastest: TP communicates inside every layer). On 8 ranks with
dp = pp = tp = 2::

    tp groups  [0,1] [2,3] [4,5] [6,7]      all-reduce activations inside each layer
    dp groups  [0,2] [1,3] [4,6] [5,7]      all-reduce gradients once per step
    pp groups  [0,4] [1,5] [2,6] [3,7]      send activations stage -> stage

``grid_layout`` computes these lists without MPI; ``ProcessGrid`` builds one
``Group`` per kind with ``Split`` (three collectives, after the check that
dp * pp * tp equals the world size, so a wrong grid fails with the same
ValueError on every rank instead of hanging). Tutorial:
``mpirun -n 8 python tutorials/01_collectives.py``.
"""
import numbers

from mpi4py import MPI

from minimegatron.comm import Group, world


def check_grid(world_size, dp, pp, tp):
    """The same ValueError on every rank when dp * pp * tp != world size (or a bad size)."""
    for name, value in (("dp", dp), ("pp", pp), ("tp", tp)):
        if not isinstance(value, numbers.Integral) or isinstance(value, bool) or value < 1:
            raise ValueError(f"grid size {name}={value!r} must be an integer >= 1 "
                             f"(got dp={dp!r}, pp={pp!r}, tp={tp!r})")
    if dp * pp * tp != world_size:
        raise ValueError(f"grid dp={dp} x pp={pp} x tp={tp} = {dp * pp * tp} ranks, but the "
                         f"job has {world_size} ranks; choose sizes whose product is "
                         f"{world_size}")


def grid_rank(dp_rank, pp_rank, tp_rank, dp, tp):
    """World rank of a grid coordinate (tp fastest, then dp, then pp)."""
    return pp_rank * dp * tp + dp_rank * tp + tp_rank


def grid_coordinates(rank, dp, tp):
    """(dp_rank, pp_rank, tp_rank) of a world rank."""
    return (rank // tp) % dp, rank // (dp * tp), rank % tp


def grid_layout(world_size, dp, pp, tp):
    """{"tp": [...], "dp": [...], "pp": [...]}: every group's world ranks, group index order."""
    check_grid(world_size, dp, pp, tp)

    def at(d, p, t):
        return grid_rank(d, p, t, dp, tp)
    return {
        "tp": [[at(d, p, t) for t in range(tp)] for p in range(pp) for d in range(dp)],
        "dp": [[at(d, p, t) for d in range(dp)] for p in range(pp) for t in range(tp)],
        "pp": [[at(d, p, t) for p in range(pp)] for d in range(dp) for t in range(tp)],
    }


def factorisations(world_size):
    """Every (dp, pp, tp) with dp * pp * tp = world_size, tp fastest-varying last."""
    return [(dp, pp, world_size // (dp * pp)) for dp in range(1, world_size + 1)
            if world_size % dp == 0 for pp in range(1, world_size // dp + 1)
            if (world_size // dp) % pp == 0]


def group_indices(rank, dp, pp, tp):
    """Index of the tp, dp and pp group that ``rank`` belongs to (as in grid_layout)."""
    d, p, t = grid_coordinates(rank, dp, tp)
    return {"tp": p * dp + d, "dp": p * tp + t, "pp": d * tp + t}


class ProcessGrid:
    """This rank's place in a dp x pp x tp grid and its groups ``.tp``, ``.dp``, ``.pp``."""

    def __init__(self, dp=1, pp=1, tp=1, comm=None):
        comm = MPI.COMM_WORLD if comm is None else comm
        check_grid(comm.Get_size(), dp, pp, tp)  # before any collective
        self.dp_size, self.pp_size, self.tp_size = dp, pp, tp
        self.world = world() if comm == MPI.COMM_WORLD else Group(comm, "grid")
        rank = comm.Get_rank()
        self.dp_rank, self.pp_rank, self.tp_rank = grid_coordinates(rank, dp, tp)
        index = group_indices(rank, dp, pp, tp)
        self.tp = Group(comm.Split(index["tp"], rank), f"tp{index['tp']}")
        self.dp = Group(comm.Split(index["dp"], rank), f"dp{index['dp']}")
        self.pp = Group(comm.Split(index["pp"], rank), f"pp{index['pp']}")

    @property
    def is_first_stage(self):
        return self.pp_rank == 0

    @property
    def is_last_stage(self):
        return self.pp_rank == self.pp_size - 1

    def describe(self):
        """A text table of every rank's coordinates and groups (computed, no messages)."""
        dp, pp, tp = self.dp_size, self.pp_size, self.tp_size
        layout = grid_layout(dp * pp * tp, dp, pp, tp)
        lines = [f"ProcessGrid dp={dp} x pp={pp} x tp={tp} = {dp * pp * tp} ranks "
                 f"(rank = pp*{dp * tp} + dp*{tp} + tp)",
                 f"{'rank':>4} {'dp':>3} {'pp':>3} {'tp':>3}  {'tp group':<14}"
                 f"{'dp group':<14}{'pp group':<14}"]
        for rank in range(dp * pp * tp):
            d, p, t = grid_coordinates(rank, dp, tp)
            index = group_indices(rank, dp, pp, tp)
            cells = [f"{kind}{index[kind]} {layout[kind][index[kind]]}".replace(" ", "")
                     for kind in ("tp", "dp", "pp")]
            row = f"{rank:>4} {d:>3} {p:>3} {t:>3}  " + "".join(f"{c:<14}" for c in cells)
            lines.append(row.rstrip())
        return "\n".join(lines)

    def __repr__(self):
        return (f"ProcessGrid(dp={self.dp_size}, pp={self.pp_size}, tp={self.tp_size}; "
                f"rank {self.world.rank} at dp={self.dp_rank} pp={self.pp_rank} "
                f"tp={self.tp_rank})")
