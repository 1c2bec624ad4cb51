"""Make tests/mpi_harness.py and the repository's minimegatron importable from every test."""
import os
import sys

# Collective checking (comm_check) on in every test and every rank a test launches, even
# when a developer exported MINIMEGATRON_CHECK=0 for a benchmark.
os.environ["MINIMEGATRON_CHECK"] = "1"

TESTS_DIR = os.path.dirname(os.path.abspath(__file__))
for path in (TESTS_DIR, os.path.dirname(TESTS_DIR)):
    if path not in sys.path:
        sys.path.insert(0, path)

import pytest  # noqa: E402


def cupy_skip_reason():
    """None when CuPy and a GPU are usable here, else why the CuPy cases are skipped."""
    try:
        import cupy
        count = cupy.cuda.runtime.getDeviceCount()
    except Exception as err:  # ImportError, or CUDA driver/runtime errors
        return f"CuPy backend skipped: no usable CuPy/GPU here ({type(err).__name__}: {err})"
    return None if count > 0 else "CuPy backend skipped: CuPy found no GPU"


BACKENDS = [
    pytest.param("numpy", id="numpy"),
    pytest.param("cupy", id="cupy",
                 marks=pytest.mark.skipif(cupy_skip_reason() is not None,
                                          reason=cupy_skip_reason() or "")),
]


@pytest.fixture(params=BACKENDS)
def backend_name(request):
    """Run the test once per backend, switching ``xp`` and switching back afterwards."""
    from minimegatron import backend
    previous = backend.backend_name()
    backend.use_backend(request.param)
    yield request.param
    backend.use_backend(previous)
