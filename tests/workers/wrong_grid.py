"""A 2 x 2 x 3 grid on 8 ranks: every rank must raise the same ValueError."""
import minimegatron  # noqa: F401
from minimegatron.parallel.grid import ProcessGrid

ProcessGrid(dp=2, pp=2, tp=3)
