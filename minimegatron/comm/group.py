"""Process groups: a named MPI communicator, and the communicator its collectives call.

    g = world()                              # every process, named "world"
    tp = g.split(color, name="tp0")          # collective: one group per color

``group.comm`` is the mpi4py communicator (``.rank``, ``.size``, ``.ranks``:
its ranks' world ranks). ``group.mpi`` is what the blocking collectives call
(collectives.py): ``comm`` itself while each rank has a core of its own, so
``group.mpi.Allreduce(...)`` IS MPI's blocking ``Allreduce``; when the ranks
share cores it is ``polling.Yielding(comm)``, whose blocking calls start the
nonblocking form and yield the CPU while they wait (polling.py).
"""
from mpi4py import MPI

from minimegatron.comm import polling


class Group:
    """A communicator with a name: ``.comm``, ``.rank``, ``.size``, ``.ranks`` (world ranks)."""

    def __init__(self, comm, name):
        self.comm, self.name = comm, name
        self.rank, self.size = comm.Get_rank(), comm.Get_size()
        self.ranks = comm.Get_group().Translate_ranks(list(range(self.size)),
                                                      MPI.COMM_WORLD.Get_group())
        self.yielding = polling.Yielding(comm)

    @property
    def mpi(self):
        """The communicator blocking collectives call: ``comm``, or its yielding stand-in."""
        return self.comm if polling.spins() else self.yielding

    def split(self, color, key=None, name=None):
        """Collective: ranks with the same color form a new Group (ordered by key)."""
        comm = self.comm.Split(color, self.rank if key is None else key)
        return Group(comm, name or f"{self.name}.{color}")

    def __repr__(self):
        return f"Group({self.name!r}, rank={self.rank}, size={self.size}, ranks={self.ranks})"


_world = []


def world():
    """The Group of every process, named "world"."""
    if not _world:
        _world.append(Group(MPI.COMM_WORLD, "world"))
    return _world[0]
