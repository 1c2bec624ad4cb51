"""Each rank reports its BLAS thread settings and the loaded OpenBLAS's thread count."""
import ctypes
import os
import sys

import minimegatron  # noqa: F401
from minimegatron import comm
from minimegatron.runtime import threads


def openblas_threads():
    for path in threads._loaded_blas_libraries():
        lib = ctypes.CDLL(path)
        for name in ("scipy_openblas_get_num_threads64_", "openblas_get_num_threads"):
            if hasattr(lib, name):
                return getattr(lib, name)()
    return -1


comm.print_ranks(f"OPENBLAS_NUM_THREADS={os.environ.get('OPENBLAS_NUM_THREADS')} "
                 f"loaded={openblas_threads()} args={sys.argv[1:]}")
