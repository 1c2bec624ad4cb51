"""Each rank reports its BLAS thread settings and the loaded BLAS's thread count.

The count is read through threadpoolctl, which finds OpenBLAS under every symbol
name NumPy wheels use (``openblas_get_num_threads64_`` in NumPy 1.x,
``scipy_openblas_get_num_threads64_`` in NumPy 2), and MKL or BLIS as well.
"""
import os
import sys

from threadpoolctl import threadpool_info

from minimegatron import comm
import minimegatron.runtime  # noqa: E402

minimegatron.runtime.setup()      # a script of one's own under plain mpirun: the abort hook


def blas_threads():
    """The loaded BLAS libraries' thread counts, e.g. "1" (or "-1" when none is loaded)."""
    counts = {lib["num_threads"] for lib in threadpool_info() if lib["user_api"] == "blas"}
    return ",".join(str(n) for n in sorted(counts)) or "-1"


comm.print_ranks(f"OPENBLAS_NUM_THREADS={os.environ.get('OPENBLAS_NUM_THREADS')} "
                 f"loaded={blas_threads()} args={sys.argv[1:]}")
