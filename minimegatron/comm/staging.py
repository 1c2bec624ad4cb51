"""Host staging and preallocated outputs: the array bookkeeping around the MPI calls of
comm/collectives.py.

MPI reads and writes C-contiguous HOST memory (unless it is CUDA-aware), with the
axis it splits in front. These helpers bring an array into that layout and back:

    host(x)         a contiguous host array MPI can read (``staged``: CuPy, strided)
    like(host, x)   the result moved back next to x (onto the GPU if x lives there)
    front(x, axis)  x with ``axis`` moved to the front, contiguous, on the host
    back(h, axis)   the inverse of front: ``axis`` back in place
    output(out,..)  the buffer MPI writes: ``out=`` itself when it can, else a fresh one
                    (``output_moved``: axis not 0, an out= MPI cannot write, CuPy)
    mpi_type(dtype) MPI's datatype for a dtype (the v-variants' [buf, counts, displs, type])

``check_out`` raises ValueError before any MPI call unless ``out=`` can hold the
result (shape, dtype, kind, writable, not overlapping the input). No MPI call is
made here: every collective stays visible in comm/collectives.py.
"""
import numpy as np
from mpi4py import MPI
from mpi4py.util.dtlib import from_numpy_dtype

from minimegatron.backend import asarray, get_backend, is_device_array, sync, to_pinned_host

# True when MPI can read GPU memory itself; then CuPy arrays are not staged through the host.
CUDA_AWARE = bool(getattr(MPI, "Query_CUDA_Support", lambda: False)())
_MPI_TYPES = {}                       # np.dtype -> its MPI datatype, built once per dtype


def mpi_type(dtype):
    """MPI's datatype for ``dtype``, built ONCE per dtype and kept for the job.

    mpi4py's ``from_numpy_dtype`` returns a NEW datatype each call (a Dup of the
    predefined one) that MPI keeps until it is freed: one per all_to_allv is about
    0.45 KB a call that never comes back (20,000 calls: 9 MB). So every collective
    takes its datatype from here; tests/test_soak.py holds the memory flat.
    """
    dtype = np.dtype(dtype)
    if dtype not in _MPI_TYPES:
        _MPI_TYPES[dtype] = from_numpy_dtype(dtype)
    return _MPI_TYPES[dtype]


def host(x):
    """(a C-contiguous array MPI can read, True if it is a copy of x)."""
    sync()
    if type(x) is np.ndarray and x.flags.c_contiguous:      # the usual case, first
        return x, False
    return staged(x)


def staged(x):
    """``host`` of any other array: a GPU array (pinned host memory unless MPI is CUDA-aware)
    or a strided one (a contiguous copy)."""
    if is_device_array(x) and not CUDA_AWARE:
        return to_pinned_host(get_backend().ascontiguousarray(x)), True
    if x.flags.c_contiguous:
        return x, False
    module = get_backend() if is_device_array(x) else np
    return module.ascontiguousarray(x), True


def like(host, x):
    """``host`` moved back next to ``x`` (onto the GPU if x lives there)."""
    return asarray(host) if is_device_array(x) and not CUDA_AWARE else host


def empty(shape, dtype, x=None):
    if x is not None and is_device_array(x) and CUDA_AWARE:
        return get_backend().empty(shape, dtype)
    return np.empty(shape, dtype)


def front(x, axis):
    """x with ``axis`` moved to the front, contiguous, on the host: the layout MPI splits."""
    if axis == 0 or axis % max(x.ndim, 1) == 0:
        return host(x)[0]
    return host(np.moveaxis(x, axis, 0) if not is_device_array(x)
                 else get_backend().moveaxis(x, axis, 0))[0]


def back(host, axis, x):
    """The inverse of _front: ``axis`` back in place (no copy for axis 0), next to x."""
    if axis % max(host.ndim, 1) == 0:
        return like(host, x)
    return like(np.ascontiguousarray(np.moveaxis(host, 0, axis)), x)


def without(shape, axis):
    """``shape`` without ``axis``: the shape of one row when ``axis`` is moved to the front."""
    if axis == 0:
        return shape[1:]
    axis %= len(shape)
    return shape[:axis] + shape[axis + 1:]


def overlaps(out, x):
    """True if NumPy arrays ``out`` and ``x`` may share memory. Two distinct arrays that both
    own their memory (``base`` None) cannot: that usual case costs no ``may_share_memory``."""
    if out is x:
        return True
    if out.base is None and x.base is None:
        return False
    return np.may_share_memory(out, x)


def check_out(out, shape, dtype, x, op):
    """ValueError, before any MPI call, unless ``out`` can hold a ``shape`` ``dtype`` result."""
    numpy_out = isinstance(out, np.ndarray)
    if numpy_out and out.shape == shape and out.dtype == dtype and out.flags.writeable and (
            not isinstance(x, np.ndarray) or not overlaps(out, x)):
        return                                    # the usual case, checked first (latency)
    if not hasattr(out, "shape") or is_device_array(out) != is_device_array(x):
        why = f"must be an array of x's kind ({type(x).__name__}), got {type(out).__name__}"
    elif tuple(out.shape) != tuple(shape) or out.dtype != dtype:
        why = (f"has shape {tuple(out.shape)} and dtype {out.dtype}; the result has shape "
               f"{tuple(shape)} and dtype {np.dtype(dtype)}")
    elif numpy_out and not out.flags.writeable:
        why = "is read-only"
    elif numpy_out and isinstance(x, np.ndarray) and overlaps(out, x):
        why = "overlaps x (all_reduce: use inplace=True)"
    else:
        return
    raise ValueError(f"{op}: out= {why}")


def output(out, front, dtype, x, axis, op):
    """(buffer MPI writes, finish(buffer) -> result) for a result of ``front`` shape in the
    layout with ``axis`` in front (see _front). The buffer is ``out`` itself when MPI can
    write it directly; else a fresh one, moved back to x's layout (and copied into out)."""
    if axis == 0 and type(x) is np.ndarray:           # the usual cases first (latency)
        if out is None:
            return np.empty(front, dtype), _same
        if type(out) is np.ndarray and out.shape == front and out.dtype == dtype:
            flags = out.flags
            if flags.c_contiguous and flags.writeable and not overlaps(out, x):
                return out, _same
    return output_moved(out, front, dtype, x, axis, op)


def output_moved(out, front, dtype, x, axis, op):
    """``output`` of the other cases: ``axis`` not 0 (the result is moved back into x's
    layout), an ``out=`` MPI cannot write (checked, then copied into), or a GPU array."""
    axis = axis % max(len(front), 1)
    shape = front if axis == 0 else front[1:axis + 1] + front[:1] + front[axis + 1:]
    if out is not None:
        check_out(out, shape, dtype, x, op)
        if axis == 0 and out.flags.c_contiguous and (
                CUDA_AWARE or not is_device_array(out)):
            return out, _same
    buf = empty(front, dtype, x)

    def finish(buf):
        result = back(buf, axis, x)
        if out is None:
            return result
        out[...] = result
        return out
    return buf, finish


def _same(buf):
    """``output``'s finish when MPI wrote the result where it belongs."""
    return buf


def copy_back(host, x):
    """x filled with the staged result ``host`` (moved back next to x); returns x."""
    x[...] = like(host, x)
    return x
