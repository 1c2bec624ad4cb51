"""Process groups: a named MPI communicator, and the communicator its collectives call.

    g = world()                              # every process, named "world"
    tp = g.split(color, name="tp0")          # collective: one group per color

``group.comm`` is the communicator the collectives call (``.rank``, ``.size``,
``.ranks``: its ranks' world ranks). It is the mpi4py communicator itself,
``group.raw``, unless something must guard its calls: in checking mode
(comm_check.py, on by default) or when ranks share cores (polling.py) it is
``checked.Checked``, which wraps the raw one as a PMPI tool wraps MPI (checked.py).
``group.mpi`` is what the guard's own blocking calls use: ``raw`` while each
rank has a core of its own, else ``polling.Yielding(raw)``, whose blocking calls
start the nonblocking form and yield the CPU while they wait.

The first ``world()`` of a multi-rank job also installs the book's abort guard
(ending.py): an uncaught exception on one rank ends the job, naming the rank.
"""
from mpi4py import MPI

from minimegatron.comm import checked, ending


class Group:
    """A communicator with a name: ``.comm``, ``.rank``, ``.size``, ``.ranks`` (world ranks)."""

    def __init__(self, comm, name):
        self.raw, self.name = comm, name
        self.rank, self.size = comm.Get_rank(), comm.Get_size()
        self.ranks = comm.Get_group().Translate_ranks(list(range(self.size)),
                                                      MPI.COMM_WORLD.Get_group())
        self.checked = checked.Checked(self, comm)

    @property
    def comm(self):
        """The communicator collectives call: the checked one while anything guards a call
        (checking mode, or ranks that share cores), else the mpi4py communicator itself."""
        return self.checked if checked.guarding() else self.raw

    @comm.setter
    def comm(self, raw):
        """Put another mpi4py communicator under this group (a test's or the classroom's
        stand-in that counts or refuses calls); the seam wraps it as it wrapped the first."""
        self.raw, self.checked = raw, checked.Checked(self, raw)

    @property
    def mpi(self):
        """The communicator the guard's blocking calls use: ``raw``, or its yielding stand-in."""
        return self.checked.mpi()

    def split(self, color, key=None, name=None):
        """Collective: ranks with the same color form a new Group (ordered by key)."""
        comm = self.raw.Split(color, self.rank if key is None else key)
        return Group(comm, name or f"{self.name}.{color}")

    def __repr__(self):
        return f"Group({self.name!r}, rank={self.rank}, size={self.size}, ranks={self.ranks})"


_world = []


def world():
    """The Group of every process, named "world" (the first call installs ending.py's guard)."""
    if not _world:
        _world.append(Group(MPI.COMM_WORLD, "world"))
        ending.install()
    return _world[0]
