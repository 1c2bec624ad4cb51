"""The backend switch: numpy by default, unknown names rejected, cupy only on request."""
import subprocess
import sys

import numpy as np
import pytest

from minimegatron import backend


def test_default_is_numpy_and_xp_forwards():
    assert backend.backend_name() == "numpy"
    assert backend.xp.zeros(3).__class__ is np.ndarray
    assert backend.to_numpy([1, 2]).tolist() == [1, 2]


def test_unknown_backend_is_rejected():
    with pytest.raises(ValueError, match="unknown backend 'torch'"):
        backend.use_backend("torch")


def test_environment_variable_chooses_backend_and_cupy_is_not_imported_by_default():
    code = ("import sys, minimegatron as mm; mm.Tensor([1.0]); "
            "print(mm.backend.backend_name(), 'cupy' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env={"MINIMEGATRON_BACKEND": "numpy", "PATH": ""}, check=True)
    assert out.stdout.split() == ["numpy", "False"]
    bad = subprocess.run([sys.executable, "-c", "import minimegatron as mm; mm.Tensor([1.0])"],
                         capture_output=True, text=True, env={"MINIMEGATRON_BACKEND": "jax"})
    assert bad.returncode != 0 and "unknown backend 'jax'" in bad.stderr


def test_host_rng_is_keyed_by_seed_and_name():
    a = backend.host_rng(1, "w").random(3)
    np.testing.assert_array_equal(a, backend.host_rng(1, "w").random(3))
    assert not np.allclose(a, backend.host_rng(1, "v").random(3))


def test_scatter_add_sums_repeated_indices_on_the_add_at_path(monkeypatch):
    """The CuPy branch calls the module's ``add.at``: run it with NumPy standing in for CuPy."""
    monkeypatch.setitem(backend._active, "name", "cupy")
    monkeypatch.setitem(backend._active, "module", np)
    target = np.zeros((4, 2))
    backend.scatter_add(target, np.array([1, 0, 1]), np.ones((3, 2)))
    assert target.tolist() == [[1, 1], [2, 2], [0, 0], [0, 0]]
