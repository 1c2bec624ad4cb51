"""The BLAS thread budget, read back through threadpoolctl.

- ``set_loaded_blas_threads(n)`` limits the BLAS NumPy loaded, whatever its symbols are
  called (NumPy 1.x: ``openblas_*64_``, NumPy 2: ``scipy_openblas_*64_``);
- ``limit_blas_threads()`` gives a rank ``cores // local ranks`` threads both when it runs
  before NumPy is imported (environment variables) and after (threadpoolctl), checked in a
  fresh process started as one of ``cores`` ranks on this host.
"""
import json
import os
import subprocess
import sys

import numpy
from threadpoolctl import threadpool_info, threadpool_limits

from minimegatron.runtime import rank_setup, threads

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def counts_seen_by_threadpoolctl():
    return [lib["num_threads"] for lib in threadpool_info() if lib["user_api"] == "blas"]


def test_numpy_has_a_blas_that_threadpoolctl_finds():
    libraries = threads.loaded_blas()
    assert libraries, f"threadpoolctl finds no BLAS library loaded with NumPy {numpy.__version__}"
    assert {lib["internal_api"] for lib in libraries} <= {"openblas", "mkl", "blis", "flexiblas"}
    assert threads.blas_threads() == counts_seen_by_threadpoolctl()


def test_set_loaded_blas_threads_limits_and_reads_back():
    with threadpool_limits(limits=None):               # puts the original counts back after
        assert threads.set_loaded_blas_threads(1) == len(threads.loaded_blas()) >= 1
        assert set(counts_seen_by_threadpoolctl()) == {1}
        if threads.cores() >= 2:
            threads.set_loaded_blas_threads(2)
            assert set(counts_seen_by_threadpoolctl()) == {2}


def report_in_fresh_process(numpy_first, ranks, minimegatron=True):
    """[OPENBLAS_NUM_THREADS, BLAS thread counts] in a process told it is one of ranks."""
    env = {k: v for k, v in os.environ.items()
           if not k.endswith("_NUM_THREADS") and k not in threads.LOCAL_SIZE_ENV
           and k not in rank_setup.WORLD_SIZE_ENV}
    env.update(PYTHONPATH=ROOT, MPI_LOCALNRANKS=str(ranks))
    setup = "import minimegatron.runtime\nminimegatron.runtime.setup()\n"
    code = ("import numpy\n" if numpy_first else "") + (setup if minimegatron else "") + (
        "import json, os, numpy\n"
        "from threadpoolctl import threadpool_info\n"
        "print(json.dumps([os.environ.get('OPENBLAS_NUM_THREADS'), sorted({lib['num_threads']\n"
        "      for lib in threadpool_info() if lib['user_api'] == 'blas'})]))\n")
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_one_of_several_ranks_gets_its_share_before_and_after_numpy_import():
    ranks = max(2, threads.cores())                    # so each rank gets 1 thread
    untouched = report_in_fresh_process(True, ranks, minimegatron=False)
    assert untouched[0] is None and untouched[1], untouched
    for numpy_first in (False, True):
        seen = report_in_fresh_process(numpy_first, ranks)
        assert seen == ["1", [1]], (numpy_first, seen)


def test_a_single_process_keeps_the_blas_default():
    """One process is not a rank among others: NumPy's BLAS keeps the threads it chose."""
    untouched = report_in_fresh_process(True, 1, minimegatron=False)
    assert report_in_fresh_process(True, 1) == untouched == [None, untouched[1]]
    assert untouched[1] and untouched[1][0] >= 1, untouched
