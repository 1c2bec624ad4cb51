"""A 2 x 2 x 3 grid on 8 ranks: every rank must raise the same ValueError."""
import minimegatron.runtime
minimegatron.runtime.setup()      # a script of one's own under plain mpirun: the abort hook
from minimegatron.parallel.grid import ProcessGrid

ProcessGrid(dp=2, pp=2, tp=3)
