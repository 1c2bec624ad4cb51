"""Every rank meets a NaN loss (the book's NonFiniteError): the job ends, the error said once
per rank in the reader's language after the traceback."""
import numpy as np

import minimegatron.runtime
from minimegatron.autodiff.guards import check_finite

minimegatron.runtime.setup()      # a script of one's own under plain mpirun: the abort hook
check_finite("loss", [np.array([np.nan])], 3)
