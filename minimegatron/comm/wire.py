"""bf16 and fp8 on the wire: moved as their unsigned-integer view, reduced in float32.

Why. MPI has no bfloat16 and no float8. mpi4py reads a NumPy buffer through its
format character, and ml_dtypes' bfloat16 ('E'), float8_e4m3fn and float8_e5m2
are none it knows, so handing one to the buffer API fails before anything moves::

    MPI.COMM_WORLD.Allreduce(x_bf16, out)   # BufferError: DLPack only supports
                                            # signed/unsigned integers, float and complex
                                            # dtypes  (tests/test_wire.py shows it)

So each collective in collectives.py and nonblocking.py is marked with
``@wire.carries("move")`` or ``@wire.carries("reduce")``, and an array of a
low-precision dtype takes one of two roads (any other dtype passes straight through):

    move    all_gather, broadcast, send / recv, gather, all_to_all(v) and their i* forms:
            the SAME BITS as the unsigned integer of the same width (bf16 -> uint16,
            fp8 -> uint8), viewed back on arrival. Nothing is converted, so the bits
            arrive exact, and the bytes on the wire are 2 per element (half of float32)
            or 1 (a quarter).
    reduce  all_reduce, reduce, reduce_scatter (and i*): convert to float32, reduce in
            float32, round once to bf16. A bf16 sum rounds at every hop: 1 + 7 x 2^-9
            summed over 8 ranks in bf16 is 1 (each 2^-9 is below half an ulp of 1,
            2^-8), in float32 then rounded it is 1 + 2^-6 (tests/test_wire.py). The
            price: the reduction moves float32's 4 bytes per element, which the trace
            records as they are. Megatron makes the same trade for gradients
            (``grad_reduce_in_fp32``: the bf16 model's gradients reduce in a float32
            buffer); NCCL reduces bf16 on the wire, accumulating per hop.

A reduction in float32 is still a sum in some order: a result is bitwise equal to a
one-process run that adds the same float32 terms in the same order, and within a
bound of the float32 run otherwise (checks/verify.py states the contract per row).

scatter is not marked: its other ranks learn the dtype from a header that carries a
NumPy type character ('E' for bf16, which np.dtype does not read: ``dtype_of`` does), so
it calls ``dtype_of`` and hands MPI ``plain`` buffers itself.
"""
import functools
import inspect

import ml_dtypes
import numpy as np

from minimegatron.comm.waits import waits

# The low-precision dtypes and the unsigned integer of their width that carries them.
CARRIER = {np.dtype(ml_dtypes.bfloat16): np.dtype(np.uint16),
           np.dtype(ml_dtypes.float8_e4m3fn): np.dtype(np.uint8),
           np.dtype(ml_dtypes.float8_e5m2): np.dtype(np.uint8)}
REDUCE_DTYPE = np.dtype(np.float32)      # every low-precision reduction runs in this


BY_CHAR = {dtype.char: dtype for dtype in CARRIER}         # scatter's header: 'E', '4', '5'


def dtype_of(char):
    """The dtype of a NumPy type character, ml_dtypes' included (np.dtype('E') fails)."""
    return BY_CHAR.get(char) or np.dtype(char)


def plain(x):
    """x as MPI can take it: its carrier view if low precision, else x itself (or None)."""
    return carried(x) if is_low(x) else x


def is_low(x):
    """True for an array MPI cannot take as it is (bf16, fp8)."""
    return getattr(x, "dtype", None) in CARRIER


def carried(x):
    """x as the unsigned integers of its bits (a view: no copy, the same memory)."""
    return x.view(CARRIER[x.dtype])


def carries(kind):
    """Mark a collective "move" (bits as unsigned integers) or "reduce" (in float32)."""
    if kind not in ("move", "reduce"):
        raise ValueError(f"carries: kind is 'move' or 'reduce', got {kind!r}")

    def mark(fn):
        signature = inspect.signature(fn)
        first = next(iter(signature.parameters))                # x (or recv's buf)

        @functools.wraps(fn)
        def call(*args, **kwargs):
            x = args[0] if args else kwargs.get(first)
            if getattr(x, "dtype", None) not in CARRIER:         # float32, int...: as is
                return fn(*args, **kwargs)                       # (is_low, inlined: hot)
            road = _moved if kind == "move" else _reduced
            return road(fn, x, signature.bind(*args, **kwargs))
        return waits()(call)              # part of the collective: the hang report's caller
    return mark                           # is the line that called this wrapper


def _finish(result, back):
    """``back`` applied to a blocking result, or to a Handle's result when it completes."""
    if not hasattr(result, "wait"):                                     # blocking
        return back(result)
    handle = result
    while "finish" not in vars(handle):          # a wrapper (comm_check.CheckedRecv)
        handle = handle.handle
    done = handle.finish
    handle.finish = lambda: back(done())
    return result


def _moved(fn, x, bound):
    """Send the bits as unsigned integers; view what arrives as x's dtype again."""
    args = bound.arguments
    first = next(iter(args))
    args[first], out = carried(x), args.get("out")
    if out is not None:
        args["out"] = carried(out)

    def back(result):
        if result is None:                       # send, a gather's non-root
            return None
        if result is args[first]:                # filled in place: broadcast, recv
            return x
        if out is not None and result is args["out"]:
            return out                           # written into out= itself
        return result.view(x.dtype)
    return _finish(fn(*bound.args, **bound.kwargs), back)


def _reduced(fn, x, bound):
    """Reduce float32(x); the result rounded once to x's dtype (into x, or ``out``)."""
    args = bound.arguments
    first = next(iter(args))
    inplace, out = args.pop("inplace", False), args.pop("out", None)
    args[first] = x.astype(REDUCE_DTYPE)                                 # (same shape)

    def back(result):
        if result is None:                       # reduce's non-root
            return None
        if inplace:
            x[...] = result.astype(x.dtype)
            return x
        if out is not None:
            out[...] = result.astype(x.dtype)
            return out
        return result.astype(x.dtype)
    return _finish(fn(*bound.args, **bound.kwargs), back)
