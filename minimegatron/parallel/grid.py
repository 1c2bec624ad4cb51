"""ProcessGrid(dp, pp, tp, cp=1): which rank does what, and the kinds of groups.

Megatron's rank order tp-cp-dp-pp (tensor parallel fastest)::

    world_rank = pp_rank * (dp * cp * tp) + dp_rank * (cp * tp) + cp_rank * tp + tp_rank

so the ranks of one tensor-parallel group are neighbours (on one node, where
the links are fastest: TP communicates inside every layer). On 8 ranks with
dp = pp = tp = 2::

    tp groups  [0,1] [2,3] [4,5] [6,7]      all-reduce activations inside each layer
    dp groups  [0,2] [1,3] [4,6] [5,7]      all-reduce gradients once per step
    pp groups  [0,4] [1,5] [2,6] [3,7]      send activations stage -> stage

Context parallelism (cp > 1, context_parallel/) splits the sequence between tp
and dp. On 16 ranks with tp = cp = dp = pp = 2::

    cp groups  [0,2] [1,3] [4,6] [5,7] ...  pass K/V (ring) or gather them, per layer
    dp groups  [0,4] [1,5] [2,6] [3,7] ...
    pp groups  [0,8] [1,9] ...
    dp_cp      [0,2,4,6] [1,3,5,7] [8,10,12,14] [9,11,13,15]

A cp rank holds other tokens of the same weights, so gradients are summed over
dp x cp (``grid.dp_cp``), not dp alone. With cp = 1 everything is as before
and ``dp_cp`` is the dp group.

Expert parallelism (ep > 1, expert_parallel/groups.py) folds over dp x cp: each
dp_cp group is cut into blocks of ep consecutive ranks (``grid.ep``, the
all-to-all) and the ranks that hold the same experts (``grid.edp``, expert
gradients). With ep = 1, ``grid.ep`` is this rank alone and ``grid.edp`` is dp_cp.

``grid_layout`` computes these lists without MPI; ``ProcessGrid`` builds one
``Group`` per kind with ``Split`` (one collective each, after the check that
dp * pp * tp * cp equals the world size, so a wrong grid fails with the same
ValueError on every rank instead of hanging). Tutorial:
``minimegatron run -n 8 tutorials/01_collectives.py``.
"""
import numbers

from minimegatron.comm import Group, world
from minimegatron.comm.agreement import agree_fields
from minimegatron.comm.local import self_group
from minimegatron.parallel.expert_parallel.groups import check_expert_parallel, expert_groups


def check_grid(world_size, dp, pp, tp, cp=1):
    """The same ValueError on every rank when dp * pp * tp * cp != world size (or a bad size)."""
    sizes = f"dp={dp!r}, pp={pp!r}, tp={tp!r}" + ("" if cp == 1 else f", cp={cp!r}")
    for name, value in (("dp", dp), ("pp", pp), ("tp", tp), ("cp", cp)):
        if not isinstance(value, numbers.Integral) or isinstance(value, bool) or value < 1:
            raise ValueError(f"grid size {name}={value!r} must be an integer >= 1 "
                             f"(got {sizes})")
    if dp * pp * tp * cp != world_size:
        product = f"dp={dp} x pp={pp} x tp={tp}" + ("" if cp == 1 else f" x cp={cp}")
        raise ValueError(f"grid {product} = {dp * pp * tp * cp} ranks, but the "
                         f"job has {world_size} ranks; choose sizes whose product is "
                         f"{world_size}")


def grid_rank(dp_rank, pp_rank, tp_rank, dp, tp, cp_rank=0, cp=1):
    """World rank of a grid coordinate (tp fastest, then cp, then dp, then pp)."""
    return ((pp_rank * dp + dp_rank) * cp + cp_rank) * tp + tp_rank


def grid_coordinates(rank, dp, tp, cp=1):
    """(dp_rank, pp_rank, tp_rank) of a world rank (``cp_coordinate`` gives its cp rank)."""
    return (rank // (tp * cp)) % dp, rank // (dp * cp * tp), rank % tp


def cp_coordinate(rank, tp, cp):
    """The cp rank of a world rank: which part of the sequence it holds."""
    return (rank // tp) % cp


def grid_layout(world_size, dp, pp, tp, cp=1):
    """{"tp": [...], "dp": [...], "pp": [...]}: every group's world ranks, group index order;
    with cp > 1 also "cp" and "dp_cp" (the ranks that sum gradients)."""
    check_grid(world_size, dp, pp, tp, cp)

    def at(d, p, t, c=0):
        return grid_rank(d, p, t, dp, tp, c, cp)
    cp_ranks = range(cp)
    layout = {
        "tp": [[at(d, p, t, c) for t in range(tp)] for p in range(pp) for d in range(dp)
               for c in cp_ranks],
        "dp": [[at(d, p, t, c) for d in range(dp)] for p in range(pp) for c in cp_ranks
               for t in range(tp)],
        "pp": [[at(d, p, t, c) for p in range(pp)] for d in range(dp) for c in cp_ranks
               for t in range(tp)],
    }
    if cp > 1:
        layout["cp"] = [[at(d, p, t, c) for c in cp_ranks] for p in range(pp) for d in range(dp)
                        for t in range(tp)]
        layout["dp_cp"] = [sorted(at(d, p, t, c) for d in range(dp) for c in cp_ranks)
                           for p in range(pp) for t in range(tp)]
    return layout


def factorisations(world_size):
    """Every (dp, pp, tp) with dp * pp * tp = world_size, tp fastest-varying last."""
    return [(dp, pp, world_size // (dp * pp)) for dp in range(1, world_size + 1)
            if world_size % dp == 0 for pp in range(1, world_size // dp + 1)
            if (world_size // dp) % pp == 0]


def group_indices(rank, dp, pp, tp, cp=1):
    """Index of the tp, dp and pp group that ``rank`` belongs to (as in grid_layout);
    with cp > 1 also of its cp and dp_cp group."""
    d, p, t = grid_coordinates(rank, dp, tp, cp)
    c = cp_coordinate(rank, tp, cp)
    index = {"tp": (p * dp + d) * cp + c, "dp": (p * cp + c) * tp + t,
             "pp": (d * cp + c) * tp + t}
    if cp > 1:
        index["cp"] = (p * dp + d) * tp + t
        index["dp_cp"] = p * tp + t
    return index


class ProcessGrid:
    """This rank's place in a dp x pp x tp (x cp) grid and its groups ``.tp``, ``.dp``,
    ``.pp``, ``.cp`` and ``.dp_cp`` (gradients are reduced over dp_cp); with experts
    ``.ep`` and ``.edp`` (expert gradients), cut from dp_cp."""

    def __init__(self, dp=1, pp=1, tp=1, comm=None, cp=1, ep=1):
        whole = world()
        comm = whole.raw if comm is None else comm
        check_grid(comm.Get_size(), dp, pp, tp, cp)  # before any collective
        check_expert_parallel(ep, dp, cp)
        dp, pp, tp, cp, ep = (int(size) for size in (dp, pp, tp, cp, ep))   # numpy's too
        self.dp_size, self.pp_size, self.tp_size, self.cp_size = dp, pp, tp, cp
        self.world = whole if comm == whole.raw else Group(comm, "grid")
        agree_fields(self.world, "the process grid",                  # before any Split
                     {"dp": dp, "pp": pp, "tp": tp, "cp": cp, "ep": ep})
        rank = comm.Get_rank()
        self.dp_rank, self.pp_rank, self.tp_rank = grid_coordinates(rank, dp, tp, cp)
        self.cp_rank = cp_coordinate(rank, tp, cp)
        index = group_indices(rank, dp, pp, tp, cp)
        self.tp = Group(comm.Split(index["tp"], rank), f"tp{index['tp']}")
        self.dp = Group(comm.Split(index["dp"], rank), f"dp{index['dp']}")
        self.pp = Group(comm.Split(index["pp"], rank), f"pp{index['pp']}")
        if cp == 1:                          # no sequence split: dp x cp is dp
            self.cp, self.dp_cp = self_group("cp"), self.dp
        else:
            self.cp = Group(comm.Split(index["cp"], rank), f"cp{index['cp']}")
            self.dp_cp = Group(comm.Split(index["dp_cp"], rank), f"dp_cp{index['dp_cp']}")
        self.ep_size = ep
        if ep == 1:                          # no experts split: every rank holds them all
            self.ep, self.edp = self_group("ep"), self.dp_cp
        else:
            self.ep, self.edp = expert_groups(self.dp_cp, ep)

    @property
    def is_first_stage(self):
        return self.pp_rank == 0

    @property
    def is_last_stage(self):
        return self.pp_rank == self.pp_size - 1

    def describe(self, group="group"):
        """A text table of every rank's coordinates and groups (computed, no messages);
        ``group`` is the header's word for a group (a tutorial passes its reader's)."""
        dp, pp, tp, cp = self.dp_size, self.pp_size, self.tp_size, self.cp_size
        world_size = dp * pp * tp * cp
        layout = grid_layout(world_size, dp, pp, tp, cp)
        kinds = ("tp", "dp", "pp") + (("cp", "dp_cp") if cp > 1 else ())
        size = f"dp={dp} x pp={pp} x tp={tp}" + (f" x cp={cp}" if cp > 1 else "")
        order = (f"rank = pp*{dp * tp} + dp*{tp} + tp" if cp == 1 else
                 f"rank = pp*{dp * cp * tp} + dp*{cp * tp} + cp*{tp} + tp")
        lines = [f"ProcessGrid {size} = {world_size} ranks ({order})",
                 f"{'rank':>4} {'dp':>3} {'pp':>3} {'tp':>3}" + (f" {'cp':>3}" if cp > 1 else "")
                 + "  " + "".join(f"{kind + ' ' + group:<{16 if kind == 'dp_cp' else 14}}"
                                  for kind in kinds).rstrip()]
        for rank in range(world_size):
            d, p, t = grid_coordinates(rank, dp, tp, cp)
            index = group_indices(rank, dp, pp, tp, cp)
            cells = [f"{kind}{index[kind]} {layout[kind][index[kind]]}".replace(" ", "")
                     for kind in kinds]
            coords = f"{rank:>4} {d:>3} {p:>3} {t:>3}" + (
                f" {cp_coordinate(rank, tp, cp):>3}" if cp > 1 else "")
            row = coords + "  " + "".join(
                f"{c:<{16 if kind == 'dp_cp' else 14}}" for kind, c in zip(kinds, cells))
            lines.append(row.rstrip())
        return "\n".join(lines)

    def __repr__(self):
        cp = f", cp={self.cp_size}" if self.cp_size > 1 else ""
        at = f" cp={self.cp_rank}" if self.cp_size > 1 else ""
        return (f"ProcessGrid(dp={self.dp_size}, pp={self.pp_size}, tp={self.tp_size}{cp}; "
                f"rank {self.world.rank} at dp={self.dp_rank} pp={self.pp_rank} "
                f"tp={self.tp_rank}{at})")
