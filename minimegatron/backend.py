"""The array backend: NumPy on a CPU, CuPy on a GPU, chosen once per process.

Every array operation in minimegatron goes through ``xp``::

    from minimegatron.backend import xp
    y = xp.matmul(a, b)

``xp`` is a thin proxy that forwards each attribute to the active module, so
``use_backend("cupy")`` takes effect everywhere, including in modules that
imported ``xp`` before the switch. The choice comes from, in order:

1. ``minimegatron.use_backend("numpy" | "cupy")``,
2. the environment variable ``MINIMEGATRON_BACKEND``,
3. the default, ``numpy``.

CuPy is imported only when it is asked for, so a machine without a GPU never
imports it. Random numbers are drawn on the host by NumPy (``host_rng``) and
then moved with ``asarray``, so both backends start from bit-identical weights.

Before any MPI call, ``sync()`` waits for the GPU stream so that MPI reads
finished data; on NumPy it does nothing.
"""
import os
import zlib

import ml_dtypes  # noqa: F401 - registers bfloat16, float8_e4m3fn, float8_e5m2 with NumPy
import numpy

BACKENDS = ("numpy", "cupy")
_active = {"name": None, "module": None}


def _load(name):
    if name not in BACKENDS:
        raise ValueError(f"unknown backend {name!r}; choose one of {BACKENDS}")
    if name == "numpy":
        return numpy
    try:
        import cupy
    except ImportError as err:  # pragma: no cover - depends on the machine
        raise ImportError(
            "backend 'cupy' needs CuPy and a GPU: pip install 'minimegatron[gpu-cuda12]' "
            "(or [gpu-cuda13], the prebuilt wheel for your CUDA)"
        ) from err
    return cupy


def use_backend(name):
    """Switch the array backend for this process ('numpy' or 'cupy')."""
    _active["module"] = _load(name)
    _active["name"] = name
    if name == "cupy":
        _select_device()
    return _active["module"]


def _select_device():
    """Rank r uses GPU (local rank mod visible GPUs); several ranks may share one."""
    local = os.environ.get("MPI_LOCALRANKID") or os.environ.get("OMPI_COMM_WORLD_LOCAL_RANK")
    count = _active["module"].cuda.runtime.getDeviceCount()
    if local is not None and count > 0:
        _active["module"].cuda.Device(int(local) % count).use()


def get_backend():
    """The active array module (numpy or cupy)."""
    if _active["module"] is None:
        use_backend(os.environ.get("MINIMEGATRON_BACKEND", "numpy").strip().lower())
    return _active["module"]


def backend_name():
    get_backend()
    return _active["name"]


class _XP:
    """Forwards ``xp.anything`` to the active backend module."""

    def __getattr__(self, attr):
        return getattr(get_backend(), attr)

    def __repr__(self):
        return f"<minimegatron xp -> {backend_name()}>"


xp = _XP()


def to_numpy(a):
    """A NumPy copy (or view) of an xp array, a Tensor's data, or a Python number."""
    if hasattr(a, "_node"):  # a Tensor: take its array
        a = a.data
    if isinstance(a, numpy.ndarray):
        return a
    if hasattr(a, "get"):  # cupy.ndarray
        return a.get()
    return numpy.asarray(a)


def asarray(a, dtype=None):
    """Move a host (NumPy) array or a list onto the active backend."""
    return get_backend().asarray(a, dtype=dtype)


def is_device_array(a):
    """True for a CuPy array (it lives on a GPU and MPI may need it staged)."""
    return not isinstance(a, numpy.ndarray) and hasattr(a, "__cuda_array_interface__")


def sync():
    """Wait for queued GPU work so MPI sees finished data. No-op on NumPy."""
    if _active["name"] == "cupy":
        _active["module"].cuda.get_current_stream().synchronize()


def host_rng(seed, name=""):
    """A NumPy Generator keyed by (seed, name): the one source of random numbers.

    Keying by a parameter's dotted name lets a pipeline stage or a tensor
    parallel shard draw exactly the full weight the serial model draws,
    without building the rest of the model. Host-side on both backends.
    """
    return numpy.random.default_rng([int(seed), zlib.crc32(name.encode())])


def scatter_add(target, index, values):
    """target[index] += values, summing repeated indices (NumPy's add.at).

    CuPy 13 and later have the same ``cupy.add.at`` (and deprecate the older
    ``cupyx.scatter_add``, which is kept only for CuPy releases without it).
    """
    if _active["name"] == "cupy":
        add_at = getattr(_active["module"].add, "at", None)
        if add_at is None:
            import cupyx
            add_at = cupyx.scatter_add
        add_at(target, index, values)
    else:
        numpy.add.at(target, index, values)
    return target


def to_pinned_host(a):
    """A host copy of a CuPy array in page-locked (pinned) memory, for MPI to read.

    Pinned memory lets the GPU copy run at full PCIe/NVLink speed; CuPy keeps a
    pool of it, so repeated staging reuses buffers. NumPy arrays pass through.
    """
    if not is_device_array(a):
        return a
    import cupyx
    buf = cupyx.empty_pinned(a.shape, a.dtype)
    a.get(out=buf)
    return buf
