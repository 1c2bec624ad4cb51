"""``ndarray``: a NumPy array behind a wall, with CuPy's rules at the wall (``_rules.py``).

The data is an ordinary NumPy array (``self._host``, on the CPU), so every result
is NumPy's arithmetic; what the stand-in adds is the wall. Every operation
unwraps device arrays, refuses host arrays mixed in, runs NumPy, and wraps
what comes back. Like CuPy, a reduction returns a 0-d device array, not a
Python number, and ``numpy.asarray`` of a device array raises.
"""
import numpy
from numpy.lib.mixins import NDArrayOperatorsMixin

from cupy import _rules

# Attributes of NumPy's ndarray that CuPy's ndarray has not: reaching for one is a
# host-only habit (ctypes addresses, the writeable flag, raw bytes).
HOST_ONLY = frozenset({"ctypes", "tobytes", "tofile", "dump", "dumps", "getfield", "setfield",
                       "itemset", "byteswap", "newbyteorder"})


def wrap(value):
    """Device arrays for NumPy arrays and scalars (tuples and lists element-wise)."""
    if isinstance(value, numpy.ndarray):
        return ndarray(value)
    if isinstance(value, numpy.generic):
        return ndarray(numpy.asarray(value))      # CuPy: a reduction gives a 0-d array
    if isinstance(value, tuple):
        return tuple(wrap(v) for v in value)
    if isinstance(value, list):
        return [wrap(v) for v in value]
    return value


def unwrap(value):
    """The NumPy arrays behind device arrays (tuples, lists and dicts element-wise)."""
    if isinstance(value, ndarray):
        return value._host
    if isinstance(value, tuple):
        return tuple(unwrap(v) for v in value)
    if isinstance(value, list):
        return [unwrap(v) for v in value]
    if isinstance(value, dict):
        return {k: unwrap(v) for k, v in value.items()}
    return value


def unwrap_index(index):
    """An index with device arrays unwrapped; host index arrays pass (CuPy copies them in)."""
    if isinstance(index, tuple):
        return tuple(unwrap_index(i) for i in index)
    return unwrap(index)


class _Flags:
    """CuPy's flags: c_contiguous, f_contiguous, owndata (no ``writeable``)."""

    def __init__(self, host):
        self.c_contiguous = host.flags.c_contiguous
        self.f_contiguous = host.flags.f_contiguous
        self.owndata = host.flags.owndata


class _Pointer:
    """``a.data``: CuPy's MemoryPointer; ``.ptr`` is the address of the first element."""

    def __init__(self, host):
        self.ptr = host.__array_interface__["data"][0]


class ndarray(NDArrayOperatorsMixin):
    """A device array of the stand-in (see the module docstring)."""

    __array_priority__ = 100
    __hash__ = None

    def __init__(self, host):
        if not isinstance(host, numpy.ndarray):
            raise TypeError("the stand-in's ndarray wraps a NumPy array; build one with "
                            "cupy.asarray / cupy.empty / cupy.zeros")
        self._host = host
        _rules.ARRAYS["count"] += 1

    # --- the wall -------------------------------------------------------------------------
    def __array__(self, dtype=None, copy=None):
        raise TypeError(_rules.IMPLICIT)

    @property
    def __cuda_array_interface__(self):
        """Marks a device array (backend.is_device_array). The pointer is not host memory
        MPI may read: a device array handed to MPI unstaged crashes instead of working."""
        return {"shape": self._host.shape, "typestr": self._host.dtype.str,
                "data": (1, False), "strides": None, "version": 3}

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        _rules.refuse_host(inputs, f"numpy.{ufunc.__name__}")
        out = kwargs.get("out")
        if out is not None:
            _rules.refuse_host(out, f"numpy.{ufunc.__name__}(out=)")
            kwargs["out"] = unwrap(out)
        result = getattr(ufunc, method)(*unwrap(inputs), **kwargs)
        if out is not None:
            return out[0] if len(out) == 1 else out
        return wrap(result)

    def __array_function__(self, func, types, args, kwargs):
        _rules.refuse_host(args, f"numpy.{func.__name__}")
        _rules.refuse_host(tuple(kwargs.values()), f"numpy.{func.__name__}")
        out = kwargs.get("out")
        result = func(*unwrap(args), **unwrap(kwargs))
        return out if isinstance(out, ndarray) else wrap(result)

    # --- host reads: explicit, each one a sync ---------------------------------------------
    def get(self, out=None):
        _rules.synced("ndarray.get()")
        if out is None:
            return self._host.copy()
        out[...] = self._host
        return out

    def set(self, host):
        if not isinstance(host, numpy.ndarray):
            raise TypeError("ndarray.set takes a NumPy array")
        self._host[...] = host

    def item(self):
        _rules.synced("ndarray.item()")
        return self._host.item()

    def tolist(self):
        _rules.synced("ndarray.tolist()")
        return self._host.tolist()

    def __bool__(self):
        _rules.synced("bool(device array)")
        return bool(self._host)

    def __float__(self):
        _rules.synced("float(device array)")
        return float(self._host)

    def __int__(self):
        _rules.synced("int(device array)")
        return int(self._host)

    def __format__(self, spec):
        _rules.synced("format(device array)")
        return format(self._host, spec)

    def __index__(self):
        _rules.synced("a device array used as an index")
        return self._host.__index__()

    # --- the rest of the ndarray, forwarded -----------------------------------------------
    @property
    def flags(self):
        return _Flags(self._host)

    @property
    def data(self):
        return _Pointer(self._host)

    @property
    def T(self):
        return ndarray(self._host.T)

    def __getattr__(self, name):
        if name.startswith("__"):                  # __array_struct__ & co: no way around
            raise AttributeError(name)             # __array__'s refusal
        if name in HOST_ONLY:
            raise AttributeError(f"'cupy.ndarray' object has no attribute {name!r} (a NumPy "
                                 "host-array attribute)")
        attr = getattr(self._host, name)
        if not callable(attr):
            return wrap(attr) if isinstance(attr, numpy.ndarray) else attr

        def method(*args, **kwargs):
            _rules.refuse_host(args, f"ndarray.{name}")
            _rules.refuse_host(tuple(kwargs.values()), f"ndarray.{name}")
            return wrap(attr(*unwrap(args), **unwrap(kwargs)))
        return method

    def __len__(self):
        return len(self._host)

    def __iter__(self):
        return (wrap(row) for row in self._host)

    def __getitem__(self, index):
        return wrap(self._host[unwrap_index(index)])

    def __setitem__(self, index, value):
        whole = index is Ellipsis or (isinstance(index, slice) and index == slice(None))
        if isinstance(value, numpy.ndarray) and not whole:
            raise TypeError("a host (NumPy) array assigned into part of a device array: "
                            "copy it with cupy.asarray first")
        self._host[unwrap_index(index)] = unwrap(value)

    def __repr__(self):
        return f"array({self._host.tolist()!r}, dtype={self._host.dtype}) [device stand-in]"

    def __reduce__(self):
        raise TypeError("a device array cannot be pickled by the stand-in: "
                        "move it to the host with .get() first")
