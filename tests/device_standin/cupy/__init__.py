"""A device stand-in for CI: imported as ``cupy``, it runs on NumPy and refuses what CuPy
refuses (tests only; it never ships in the package).

    PYTHONPATH=tests/device_standin MINIMEGATRON_BACKEND=cupy python3 -m pytest ...

A machine without a GPU cannot run CuPy, so without a stand-in the CuPy path
(backend.py's ``"cupy"`` branches, the fused kernels, host staging for MPI)
would go untested between GPU runs. This package takes CuPy's place: its
arrays (``_array.py``) hold NumPy data behind CuPy's rules (``_rules.py``: no
implicit device -> host conversion, no host arrays mixed into device work, every
host read of a device value counted as a sync), its kernels (``_kernels.py``)
run the C bodies as NumPy expressions, and ``cuda`` (``cuda.py``) is one
device with one stream. Every other name is NumPy's function behind the same
wall: device arrays in, device arrays out.

What it cannot catch: anything about real device memory or speed (a kernel
that is slow, a race between streams, a CUDA-aware MPI).
"""
import functools

import numpy

from cupy import _rules, cuda
from cupy._array import ndarray, unwrap, wrap
from cupy._kernels import ElementwiseKernel, ReductionKernel

STANDIN = True                   # tests tell the stand-in from a real CuPy by this name
no_sync = _rules.no_sync
SYNCS = _rules.SYNCS
SyncForbidden = _rules.SyncForbidden


def asarray(a, dtype=None, order=None):
    """Host -> device is explicit here, as in CuPy: a COPY of a NumPy array or list."""
    if isinstance(a, ndarray):
        return a if dtype is None or a.dtype == dtype else a.astype(dtype)
    if isinstance(a, (list, tuple)):
        leaves = list(_leaves(a))
        if any(isinstance(v, ndarray) for v in leaves):
            if not all(isinstance(v, ndarray) for v in leaves):
                raise TypeError(_rules.IMPLICIT)       # CuPy: device arrays mixed with numbers
            a = unwrap(a)                               # a list of device arrays stays on device
    return ndarray(numpy.array(a, dtype=dtype, order=order or "K", copy=True))


def _leaves(nested):
    for v in nested:
        if isinstance(v, (list, tuple)):
            yield from _leaves(v)
        else:
            yield v


array = asarray


def asnumpy(a, out=None):
    """Device -> host, explicit (a sync)."""
    return a.get(out=out) if isinstance(a, ndarray) else numpy.asarray(a)


def get_array_module(*args):
    return __import__("cupy") if any(isinstance(a, ndarray) for a in args) else numpy


class _Ufunc:
    """A NumPy ufunc behind the wall (``cupy.add(d, e)``, ``cupy.add.at(d, i, v)``)."""

    def __init__(self, ufunc):
        self.ufunc = ufunc
        self.__name__ = ufunc.__name__

    def __call__(self, *args, **kwargs):
        _rules.refuse_host(args, f"cupy.{self.__name__}")
        for a in args:
            if isinstance(a, list):
                raise TypeError(f"Unsupported type {type(a)} in cupy.{self.__name__}")
        out = kwargs.get("out")
        result = self.ufunc(*unwrap(args), **unwrap(kwargs))
        return out if isinstance(out, ndarray) else wrap(result)

    def at(self, target, index, values):
        _rules.refuse_host((target, values), f"cupy.{self.__name__}.at")
        self.ufunc.at(unwrap(target), unwrap(index), unwrap(values))

    def __getattr__(self, name):                       # .reduce, .outer, ...
        method = getattr(self.ufunc, name)
        return lambda *args, **kwargs: wrap(method(*unwrap(args), **unwrap(kwargs)))


def _function(name, function):
    @functools.wraps(function)
    def call(*args, **kwargs):
        _rules.refuse_host(args, f"cupy.{name}")
        _rules.refuse_host(tuple(kwargs.values()), f"cupy.{name}")
        out = kwargs.get("out")
        result = function(*unwrap(args), **unwrap(kwargs))
        return out if isinstance(out, ndarray) else wrap(result)
    return call


@functools.lru_cache(maxsize=None)
def _lookup(name):
    value = getattr(numpy, name)
    if isinstance(value, numpy.ufunc):
        return _Ufunc(value)
    if callable(value) and not isinstance(value, type):
        return _function(name, value)
    return value                                       # dtypes, constants, newaxis


def __getattr__(name):
    if name.startswith("__"):
        raise AttributeError(name)
    try:
        return _lookup(name)
    except AttributeError:
        raise AttributeError(f"the device stand-in has no cupy.{name}") from None
