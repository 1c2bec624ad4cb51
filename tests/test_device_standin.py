"""The CuPy path on a machine without a GPU: the device stand-in (tests/device_standin).

The stand-in is imported as ``cupy``: NumPy's arithmetic behind CuPy's rules (no
implicit device -> host conversion, no host arrays mixed into device work, host
reads counted as syncs). Here:

1. the stand-in refuses what CuPy refuses (a synthetic implicit conversion, mixing,
   a partial copy-in, a sync inside ``no_sync()``), and its kernels compute their
   C body;
2. every verify row on 8 ranks passes on it (MINIMEGATRON_BACKEND=cupy);
3. every tutorial runs to the end on it, every rank making device arrays.

The CuPy cases of the other test files (``backend_name`` fixture, test_fused,
test_flat_params, test_backends) run on the stand-in too (conftest.py). On a
machine with a real CuPy these tests still run the stand-in, by path.
"""
import glob
import json
import os
import subprocess
import sys

import pytest

from conftest import STANDIN_DIR
from mpi_harness import REPO_ROOT, TESTS_DIR, run_mpi

STANDIN_ENV = {"MINIMEGATRON_BACKEND": "cupy",
               "PYTHONPATH": os.pathsep.join([STANDIN_DIR, REPO_ROOT])}

# (ranks, short arguments) per tutorial; the numbers they print are checked on NumPy by
# test_tutorials.py and the scheme tests, here that the device path runs to the end on
# every rank. Tutorial 01 shows the collectives on NumPy arrays it makes itself, so only
# some of its ranks touch the device.
HOST_ARRAYS = {"01_collectives.py"}
TUTORIALS = {
    "00_autodiff_and_gpt.py": (1, ["--steps", "5"]),
    "01_collectives.py": (8, []),
    "02_worked_example.py": (2, []),
    "03_tensor_parallel_mlp.py": (4, []),
    "04_megatron_gpt.py": (8, ["--steps", "2"]),
    "05_data_parallel.py": (8, ["--steps", "2"]),
    "06_zero.py": (8, ["--steps", "2"]),
    "07_pipeline.py": (4, ["--out", "{out}", "--repeats", "1"]),
    "08_3d_parallel.py": (8, ["--out", "{out}"]),
    "09_interleaved_1f1b.py": (4, []),
    "10_sequence_parallel.py": (4, ["--steps", "2", "--out", "{out}"]),
    "11_mixed_precision.py": (4, ["--steps", "4"]),
    "12_context_parallel.py": (4, ["--steps", "2", "--out", "{out}"]),
    "13_zero_bubble.py": (4, ["--out", "{out}"]),
    "14_mixture_of_experts.py": (8, ["--steps", "2", "--out", "{out}"]),
}


def test_every_tutorial_is_listed():
    names = sorted(os.path.basename(p) for p in glob.glob(os.path.join(REPO_ROOT, "tutorials",
                                                                        "[0-9]*.py")))
    assert names == sorted(TUTORIALS)


def test_the_standin_refuses_what_cupy_refuses():
    code = ("import json, sys; sys.path.insert(0, sys.argv[1]); import standin_checks; "
            "print(json.dumps(standin_checks.rules()))")
    out = subprocess.run([sys.executable, "-c", code, os.path.join(TESTS_DIR, "workers")],
                         env={**os.environ, **STANDIN_ENV}, capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    r = json.loads(out.stdout.splitlines()[-1])
    assert r["standin"] is True
    for refused in ("numpy.asarray(device)", "device + host", "host + device",
                    "cupy.add(device, host)", "numpy.concatenate([device, host])",
                    "device[0] = host", "cupy.asarray([device, 1.0])",
                    "implicit conversion inside an op"):
        assert r[refused] == "TypeError", (refused, r[refused])
    assert r["item() inside no_sync()"] == "SyncForbidden"
    assert r["whole-array copy in"] == [[1.0] * 3] * 2          # d[...] = host is allowed
    assert r["float(device) value"] == 15.0 and r["float(device) syncs"] == 1
    assert r["sum is a 0-d device array"] is True
    assert r["numpy ufunc on device stays on device"] == "cupy._array"
    assert r["kernel"] == r["kernel expected"]


def test_every_verify_row_passes_on_the_standin_on_8_ranks():
    results = run_mpi(8, "workers/standin_checks.py:verify_rows", timeout=900, env=STANDIN_ENV)
    for rank, r in enumerate(results):
        assert r["standin"] is True and r["backend"] == "cupy", rank
        statuses = {status for _, _, status, _ in r["rows"]}
        assert statuses <= {"PASS", "SKIP"}, [row for row in r["rows"]
                                              if row[2] not in ("PASS", "SKIP")]
        assert sum(status == "PASS" for _, _, status, _ in r["rows"]) >= 80, len(r["rows"])


@pytest.mark.parametrize("name", sorted(TUTORIALS))
def test_every_tutorial_runs_on_the_standin(name, tmp_path):
    ranks, args = TUTORIALS[name]
    report = tmp_path / "counts"
    report.mkdir()
    args = [a.format(out=tmp_path) for a in args]
    cmd = [sys.executable, "-m", "minimegatron", "run", "-n", str(ranks),
           os.path.join(REPO_ROOT, "tutorials", name), *args]
    if ranks == 1:
        cmd = [sys.executable, os.path.join(REPO_ROOT, "tutorials", name), *args]
    env = {**os.environ, **STANDIN_ENV, "MINIMEGATRON_STANDIN_REPORT": str(report)}
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=400,
                         cwd=tmp_path)
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-4000:]
    assert "FAIL" not in out.stdout
    counts = [json.loads(p.read_text()) for p in report.iterdir()]
    assert len(counts) >= (1 if name in HOST_ARRAYS else ranks), counts   # every rank ...
    assert all(c["arrays"] > 0 for c in counts), counts   # ... computed on the device
