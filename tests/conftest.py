"""Make tests/mpi_harness.py and the repository's minimegatron importable from every test."""
import ast
import inspect
import importlib.util
import os
import re
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


# ---- pytest --quick: a few minutes on 2 cores ----------------------------------------------
# Every test runs by default (CI: .ci/run runs README's command, which is everything). With
# --quick a student runs the single-process tests and the few multi-rank ones below: a test
# is multi-rank when it, a fixture it uses or a function of its module that it calls starts
# processes (the names of LAUNCHES).
LAUNCHES = re.compile(r"\b(run_mpi|run_script|minimegatron_run|run_job|grade_class|"
                      r"grade_variants|grade_lessons|grade_with_reference|grade_main|"
                      r"grade|supervise|Popen|subprocess\.run|mpiexec)\(")
QUICK_MULTI_RANK = ("test_i18n.py::test_tutorial_02_in_korean",
                    "test_tutorials_ko.py::test_tutorial_in_korean[03]",
                    "test_data_parallel.py::test_ddp_equals_one_process[2]",
                    "test_tensor_parallel.py::test_gpt_matches_serial_for_three_adamw_steps[2]",
                    "test_launcher.py::test_exception_on_rank3_aborts_job_via_run")


def pytest_addoption(parser):
    parser.addoption("--quick", action="store_true",
                     help="single-process tests and a few multi-rank ones (a few minutes on "
                          "2 cores); without it every test runs, as in CI")


def _launching_names(module):
    """Names of the module's functions (fixtures too) and classes that start processes,
    directly or through another function or class of the module."""
    try:
        source = inspect.getsource(module)
    except (OSError, TypeError):
        return set()
    sources = {node.name: ast.get_source_segment(source, node) for node in ast.parse(source).body
               if isinstance(node, (ast.FunctionDef, ast.ClassDef))}
    launching = {name for name, text in sources.items() if LAUNCHES.search(text)}
    grown = True
    while grown:
        calls = {name for name, text in sources.items() if name not in launching
                 and any(re.search(rf"\b{other}\b", text) for other in launching)}
        grown = bool(calls)
        launching |= calls
    return launching


def pytest_collection_modifyitems(config, items):
    if not config.getoption("--quick"):
        return
    cache, keep, drop = {}, [], []
    for item in items:
        module = item.module
        if module not in cache:
            cache[module] = _launching_names(module)
        launching = cache[module]
        names = {item.function.__name__, *getattr(item, "fixturenames", ())}
        multi = bool(names & launching)
        quick = any(item.nodeid.split("tests/")[-1].startswith(q) for q in QUICK_MULTI_RANK)
        (keep if quick or not multi else drop).append(item)
    config.hook.pytest_deselected(items=drop)
    items[:] = keep
