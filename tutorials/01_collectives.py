"""Tutorial 01: every collective on tiny arrays, each rank's input and output in rank order.

    minimegatron run -n 8 tutorials/01_collectives.py   (or: mpirun -n 8 python ...)

Read each block as "what every rank holds before -> after". Rank r starts
with x = [10r, 10r + 1] so you can see where each number travels. The last
table is the 2 x 2 x 2 ProcessGrid used by 3D parallelism (dp x pp x tp).
MINIMEGATRON_LANG=ko prints the headings in Korean (minimegatron.i18n).
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# ^ import the minimegatron beside tutorials/ (a student copy's own), not another install

import numpy as np

from minimegatron import comm
from minimegatron.parallel.grid import ProcessGrid
from minimegatron.commands.entry import banner, usage_error
from minimegatron.i18n import language, text

banner("tutorials/01_collectives.py")
try:
    language()                  # an unknown MINIMEGATRON_LANG: one line, before any collective
except ValueError as err:
    usage_error(str(err))
g = comm.world()
N, r = g.size, g.rank
x = np.array([10.0 * r, 10.0 * r + 1])


def show(title, before, after):
    comm.print0(f"\n== {title} ==")
    comm.print_ranks(f"{before}  ->  {after}", g)


show(text("t01.all_reduce"), x, comm.all_reduce(x, g))
show(text("t01.reduce"), x, comm.reduce(x, g, root=0))
show(text("t01.broadcast"), x, comm.broadcast(x.copy(), g, root=0))
full = np.arange(2.0 * N) if r == 0 else None
show(text("t01.scatter"), full, comm.scatter(full, g))
show(text("t01.gather"), x, comm.gather(x, g, root=0))
show(text("t01.all_gather"), x, comm.all_gather(x, g))
y = np.arange(2.0 * N) + r
show(text("t01.reduce_scatter"), y, comm.reduce_scatter(y, g))
left, right = (r - 1) % N, (r + 1) % N
handles = [comm.irecv(np.empty(2), left, g), comm.isend(x, right, g)]
show(text("t01.ring"), x, handles[0].wait())
handles[1].wait()

if N == 8:
    grid = ProcessGrid(dp=2, pp=2, tp=2)
else:
    comm.print0(text("t01.small_world", n=N))
    grid = ProcessGrid(dp=1, pp=1, tp=N)
comm.print0("\n" + grid.describe(group=text("t01.group")))
total = comm.all_reduce(np.array([float(r)]), grid.tp)
show(text("t01.tp_all_reduce"), r, total)
