"""The ranks call all_reduce with different shapes (a CollectiveMismatch on every rank): the
job fails, each rank's traceback then the error in the reader's language, and the launcher's
summary."""
import numpy as np

import minimegatron.runtime
from minimegatron import comm

minimegatron.runtime.setup()      # a script of one's own under plain mpirun: the abort hook
comm.all_reduce(np.ones(2 + comm.world().rank), comm.world())
