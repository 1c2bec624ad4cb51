"""One BLAS thread budget per rank: cores // ranks on this host, at least 1.

With 8 ranks on 2 cores, each NumPy matmul would otherwise start one OpenBLAS
thread per core in every rank: 16+ busy threads fighting for 2 cores. So each
rank gets ``max(1, cores // local_ranks)`` threads.

``limit_blas_threads()`` works in two situations:

- before NumPy is imported: it sets OPENBLAS_NUM_THREADS, OMP_NUM_THREADS and
  MKL_NUM_THREADS (values the user already set are respected);
- after NumPy is imported (its BLAS already sized its pool): it asks threadpoolctl,
  the field's library for exactly this, to limit every BLAS library loaded in the
  process (OpenBLAS under any of its symbol names, MKL, BLIS, FlexiBLAS; on Linux,
  macOS and Windows).

The number of ranks on this host comes from the launcher's environment
(``minimegatron/cores.py``: MPICH/Hydra's MPI_LOCALNRANKS, Open MPI's
OMPI_COMM_WORLD_LOCAL_SIZE, ...), so it also works under plain ``mpirun``.
"""
import os
import sys

from threadpoolctl import threadpool_info, threadpool_limits

from minimegatron.cores import LOCAL_SIZE_ENV, cores, local_ranks  # noqa: F401 (re-exported)

BLAS_ENV = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")


def threads_per_rank(ranks, ncores=None):
    """BLAS threads for each of ``ranks`` ranks sharing ``ncores`` cores (default: ours)."""
    return max(1, (cores() if ncores is None else ncores) // max(1, ranks))


def loaded_blas():
    """threadpoolctl's record of each BLAS library loaded in this process ([] before NumPy).

    Each is a dict: ``internal_api`` ("openblas", "mkl", "blis", ...), ``filepath``,
    ``num_threads``, ``version``.
    """
    return [library for library in threadpool_info() if library["user_api"] == "blas"]


def blas_threads():
    """The thread count each loaded BLAS library reports, in threadpoolctl's order."""
    return [library["num_threads"] for library in loaded_blas()]


def set_loaded_blas_threads(n):
    """Limit every BLAS library already loaded to n threads; returns how many it limited."""
    threadpool_limits(limits=n, user_api="blas")
    return len(loaded_blas())


def limit_blas_threads():
    """Give this rank cores // local ranks BLAS threads; returns the number, or None.

    Does nothing outside a multi-rank launch or when OPENBLAS_NUM_THREADS is
    already set (by the user, or by ``minimegatron run`` before Python started).
    """
    ranks = local_ranks()
    if ranks <= 1 or "OPENBLAS_NUM_THREADS" in os.environ:
        return None
    n = threads_per_rank(ranks)
    for name in BLAS_ENV:
        os.environ.setdefault(name, str(n))
    if "numpy" in sys.modules:
        set_loaded_blas_threads(n)
    return n
