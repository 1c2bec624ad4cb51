"""Run with the device stand-in as ``cupy`` (tests/test_device_standin.py).

``rules()`` runs in one process and reports what the stand-in refused; ``verify_rows()``
runs on every rank of an mpiexec launch with MINIMEGATRON_BACKEND=cupy.
"""
import numpy as np


def _raises(fn):
    """The exception's type name, or None if ``fn()`` returned."""
    try:
        fn()
    except Exception as error:                     # noqa: BLE001 - the type is the answer
        return type(error).__name__
    return None


def rules():
    import cupy
    import minimegatron as mm
    from minimegatron import backend
    backend.use_backend("cupy")
    d, h = cupy.arange(6.0).reshape(2, 3), np.ones((2, 3))

    def implicit_in_the_engine():
        """A synthetic op that converts its input to the host implicitly, as a bug would."""
        x = mm.Tensor(cupy.ones((2, 3)), requires_grad=True)
        return np.asarray(x.data) * 2

    def item_inside_no_sync():
        with cupy.no_sync():
            d.sum().item()

    before = cupy.SYNCS["count"]
    value = float(d.sum())
    counted = cupy.SYNCS["count"] - before
    kernel = cupy.ElementwiseKernel("T x, float64 a", "T y", "T t = a * x; y = t * t + 1;", "k")
    part = cupy.zeros((2, 3))
    whole = cupy.zeros((2, 3))
    whole[...] = h
    return {
        "standin": getattr(cupy, "STANDIN", False),
        "numpy.asarray(device)": _raises(lambda: np.asarray(d)),
        "device + host": _raises(lambda: d + h),
        "host + device": _raises(lambda: h + d),
        "cupy.add(device, host)": _raises(lambda: cupy.add(d, h)),
        "numpy.concatenate([device, host])": _raises(lambda: np.concatenate([d, h])),
        "device[0] = host": _raises(lambda: part.__setitem__(0, h[0])),
        "cupy.asarray([device, 1.0])": _raises(lambda: cupy.asarray([d[0, 0], 1.0])),
        "implicit conversion inside an op": _raises(implicit_in_the_engine),
        "item() inside no_sync()": _raises(item_inside_no_sync),
        "whole-array copy in": whole.get().tolist(),
        "float(device) value": value,
        "float(device) syncs": counted,
        "sum is a 0-d device array": type(d.sum()).__name__ == "ndarray" and d.sum().ndim == 0,
        "numpy ufunc on device stays on device": type(np.exp(d)).__module__,
        "kernel": kernel(d, 2.0).get().tolist(),
        "kernel expected": ((2.0 * np.arange(6.0).reshape(2, 3)) ** 2 + 1).tolist(),
    }


def verify_rows():
    """Every verify row of this world size on the stand-in: (scheme, grid, status, note)."""
    import cupy
    from minimegatron import backend
    from minimegatron.checks import verify
    rows = verify.run_rows(schemes=None, dtype="float64", steps=2)
    return {"standin": getattr(cupy, "STANDIN", False), "backend": backend.backend_name(),
            "rows": [(r["scheme"], r["grid"], r["status"], r.get("note") or "") for r in rows]}
