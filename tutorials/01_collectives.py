"""Tutorial 01: every collective on tiny arrays, each rank's input and output in rank order.

    mpirun -n 8 python tutorials/01_collectives.py      (or: minimegatron run -n 8 ...)

Read each block as "what every rank holds before -> after". Rank r starts
with x = [10r, 10r + 1] so you can see where each number travels. The last
table is the 2 x 2 x 2 ProcessGrid used by 3D parallelism (dp x pp x tp).
"""
import numpy as np

from minimegatron import comm
from minimegatron.parallel.grid import ProcessGrid

g = comm.world()
N, r = g.size, g.rank
x = np.array([10.0 * r, 10.0 * r + 1])


def show(title, before, after):
    comm.print0(f"\n== {title} ==")
    comm.print_ranks(f"{before}  ->  {after}", g)


show("all_reduce (sum): everyone gets x_0 + ... + x_{N-1}", x, comm.all_reduce(x, g))
show("reduce to rank 0: only the root gets the sum", x, comm.reduce(x, g, root=0))
show("broadcast from rank 0: everyone gets rank 0's x", x, comm.broadcast(x.copy(), g, root=0))
full = np.arange(2.0 * N) if r == 0 else None
show("scatter from rank 0: rank r gets chunk r of [0 .. 2N-1]", full, comm.scatter(full, g))
show("gather to rank 0: the root gets cat(x_0, ..., x_{N-1})", x, comm.gather(x, g, root=0))
show("all_gather: everyone gets cat(x_0, ..., x_{N-1})", x, comm.all_gather(x, g))
y = np.arange(2.0 * N) + r
show("reduce_scatter: rank r gets chunk r of the sum of all y", y, comm.reduce_scatter(y, g))
left, right = (r - 1) % N, (r + 1) % N
handles = [comm.irecv(np.empty(2), left, g), comm.isend(x, right, g)]
show("isend right / irecv left (a ring, nonblocking so nobody deadlocks)", x, handles[0].wait())
handles[1].wait()

if N == 8:
    grid = ProcessGrid(dp=2, pp=2, tp=2)
else:
    comm.print0(f"\n(world size {N} != 8, so the grid is 1 x 1 x {N}: dp=1, pp=1, tp={N})")
    grid = ProcessGrid(dp=1, pp=1, tp=N)
comm.print0("\n" + grid.describe())
total = comm.all_reduce(np.array([float(r)]), grid.tp)
show("all_reduce of the world rank over this rank's tp group", r, total)
