"""Make tests/mpi_harness.py and the repository's minimegatron importable from every test."""
import importlib.util
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

# Without a real CuPy, the CuPy cases run on the device stand-in (tests/device_standin:
# NumPy's arithmetic behind CuPy's rules), in this process and in every rank a test starts.
# MINIMEGATRON_STANDIN=0 keeps them skipped instead.
STANDIN_DIR = os.path.join(TESTS_DIR, "device_standin")
if (importlib.util.find_spec("cupy") is None
        and os.environ.get("MINIMEGATRON_STANDIN", "1") != "0"):
    sys.path.append(STANDIN_DIR)
    os.environ["PYTHONPATH"] = os.pathsep.join(
        p for p in (os.environ.get("PYTHONPATH", ""), STANDIN_DIR) if p)


def cupy_skip_reason():
    """None when CuPy (or the device stand-in) and a GPU are usable here, else why the CuPy
    cases are skipped."""
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
