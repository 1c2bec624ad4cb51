"""What CuPy refuses, and the syncs it counts: the stand-in's rules in one place.

A GPU array lives in device memory. CuPy therefore refuses three things that
NumPy does silently, and the stand-in refuses the same:

1. an implicit device -> host conversion: ``numpy.asarray(d)`` raises TypeError
   ("Implicit conversion to a NumPy array is not allowed"); ``d.get()`` is the
   explicit way;
2. mixing host and device arrays in one operation: ``d + numpy_array``,
   ``cupy.add(d, numpy_array)``, ``numpy.concatenate([d, numpy_array])``,
   ``d[1:3] = numpy_array`` all raise TypeError (a host array may be copied in
   explicitly: ``cupy.asarray(h)``, ``d.set(h)``, or ``d[...] = h`` / ``d[:] = h``
   on the whole array, as CuPy allows);
3. nothing else is refused, but a read of a device value on the host
   (``float(d)``, ``bool(d)``, ``d.item()``, ``d.get()``, ``d.tolist()``) waits for the
   GPU: a *sync*. Each one is counted in ``SYNCS``; inside ``no_sync()`` one raises,
   so a test can hold code to its promise of none.
"""
import atexit
import contextlib
import json
import os

import numpy

IMPLICIT = ("Implicit conversion to a NumPy array is not allowed. Please use `.get()` to "
            "construct a NumPy array explicitly.")
SYNCS = {"count": 0, "forbidden": 0}
ARRAYS = {"count": 0}                 # device arrays made: proof a run used the "device"
REPORT_DIR = "MINIMEGATRON_STANDIN_REPORT"  # if set: each process writes its counts there


class SyncForbidden(RuntimeError):
    """A host read of a device value inside ``no_sync()``."""


def synced(what):
    """Count one device -> host read; refuse it inside ``no_sync()``."""
    if SYNCS["forbidden"]:
        raise SyncForbidden(f"{what} reads a device value on the host (a GPU sync) "
                            "where the code promises none")
    SYNCS["count"] += 1


@contextlib.contextmanager
def no_sync():
    """Any device -> host read inside the block raises SyncForbidden."""
    SYNCS["forbidden"] += 1
    try:
        yield
    finally:
        SYNCS["forbidden"] -= 1


def refuse_host(values, where):
    """TypeError if a host (NumPy) array sits among ``values`` (searched into lists/tuples)."""
    for value in values:
        if isinstance(value, numpy.ndarray):
            raise TypeError(f"Unsupported type {type(value)} in {where}: a host (NumPy) array "
                            "mixed with device arrays (copy it with cupy.asarray first)")
        if isinstance(value, (list, tuple)):
            refuse_host(value, where)


def _report():
    """At exit, {"arrays": n, "syncs": n} into $MINIMEGATRON_STANDIN_REPORT/<pid>.json."""
    folder = os.environ.get(REPORT_DIR)
    if folder and os.path.isdir(folder):
        with open(os.path.join(folder, f"{os.getpid()}.json"), "w") as f:
            json.dump({"arrays": ARRAYS["count"], "syncs": SYNCS["count"]}, f)


atexit.register(_report)
