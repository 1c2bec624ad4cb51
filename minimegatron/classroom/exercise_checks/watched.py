"""Arrays that say what was done with them: how many products, and whether float32 was
widened to float64 on the way (student side of a check).

``Watched`` is a NumPy array subclass. A check hands the student's code views of its
arrays as ``Watched`` (``watch(a, log)``); every NumPy function or ufunc that meets one
returns ``Watched`` too, so what the code computes from them stays watched, and each
call at the top level (not the calls NumPy makes inside it) is noted in ``log``:

    log["products"]   matmul / @, dot, vdot, inner, outer, tensordot, einsum, kron
    log["widened"]    a float32 input gave a float64 result: ``dtype=float64``, an
                      ``astype(float64)``, a float64 array of ones, then cast back or not

The values are NumPy's own; only the bookkeeping is added. A float64 shortcut that is
cast back to float32 has the right dtype and, often, better values, so only this can
see it. ``plain(a)`` gives a result back as an ordinary array.
"""
import numpy as np

PRODUCTS = {"matmul", "dot", "vdot", "inner", "outer", "tensordot", "einsum", "kron"}
_depth = [0]


def _note(log, name, inputs, result):
    if name in PRODUCTS:
        log["products"] += 1
    wide = [r for r in (result if isinstance(result, tuple) else (result,))
            if getattr(r, "dtype", None) == np.float64]
    if wide and any(getattr(a, "dtype", None) == np.float32 for a in inputs):
        log["widened"] += 1


class Watched(np.ndarray):
    """An ndarray whose operations are noted in ``self.log`` (see the module)."""

    def __array_finalize__(self, obj):
        self.log = getattr(obj, "log", None)

    def _log(self, inputs):
        return self.log or next((a.log for a in inputs if isinstance(a, Watched) and a.log),
                                None)

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        log = self._log(inputs)
        raw = [np.asarray(a) if isinstance(a, Watched) else a for a in inputs]
        if "out" in kwargs:
            kwargs["out"] = tuple(np.asarray(o) if isinstance(o, Watched) else o
                                  for o in kwargs["out"])
        _depth[0] += 1
        try:
            result = getattr(ufunc, method)(*raw, **kwargs)
        finally:
            _depth[0] -= 1
        if log is not None and _depth[0] == 0:
            _note(log, ufunc.__name__ if method == "__call__" else "", inputs, result)
        if "out" in kwargs:
            return result
        return _rewatch(result, log)

    def __array_function__(self, func, types, args, kwargs):
        log = self._log(args)
        _depth[0] += 1
        try:
            result = super().__array_function__(func, types, args, kwargs)
        finally:
            _depth[0] -= 1
        if log is not None and _depth[0] == 0:
            arrays = [a for a in args if hasattr(a, "dtype")]
            _note(log, func.__name__, arrays, result)
        return _rewatch(result, log)          # einsum, tensordot: their result is watched too

    def astype(self, dtype, *args, **kwargs):
        out = super().astype(dtype, *args, **kwargs)
        if self.log is not None and self.dtype == np.float32 and out.dtype == np.float64:
            self.log["widened"] += 1
        return out


def _rewatch(result, log):
    if isinstance(result, tuple):
        return tuple(_rewatch(r, log) for r in result)
    if isinstance(result, np.ndarray) and not isinstance(result, Watched):
        result = result.view(Watched)
        result.log = log
    return result


def new_log():
    return {"products": 0, "widened": 0}


def watch(a, log):
    """A Watched view of the NumPy array ``a`` (anything else unchanged) noting into log."""
    if type(a) is not np.ndarray:
        return a
    view = a.view(Watched)
    view.log = log
    return view


def plain(a):
    """An ordinary ndarray of a Watched one (anything else unchanged)."""
    return a.view(np.ndarray) if isinstance(a, Watched) else a
