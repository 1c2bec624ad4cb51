"""Evidence: what a check's student side leaves for the judge, as plain JSON.

The student side of a check (``collect``) runs the student's code and
records what happened: values, the collectives from the trace, which buffers
are still alive, state over many steps. The judge reads it back in the
grader's own process, which runs no student code. So evidence is DATA only:
JSON numbers, strings, lists and dicts, with NumPy (or CuPy) arrays written
as ``{"__array__": dtype, "shape": [...], "data": [...]}``. Nothing is
unpickled, so evidence cannot carry code into the judge.

    line = json.dumps(encode({"grad": np.ones((2, 2)), "calls": 1}))
    decode(json.loads(line))["grad"]          # array([[1., 1.], [1., 1.]])

float64 round-trips exactly (JSON keeps Python's shortest repr); inf and nan
are written as Infinity / NaN, which ``json`` reads back.
"""
import numpy as np

ARRAY = "__array__"
DTYPES = ("float16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8",
          "bool")


def encode(value):
    """A JSON-able copy of value: arrays become {"__array__": dtype, "shape", "data"}."""
    if isinstance(value, dict):
        return {str(k): encode(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [encode(v) for v in value]
    if hasattr(value, "__array__") or isinstance(value, np.generic):
        from minimegatron.backend import to_numpy
        a = np.asarray(to_numpy(value))
        if a.ndim == 0:
            return a.item()
        return {ARRAY: str(a.dtype), "shape": list(a.shape), "data": a.ravel().tolist()}
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    raise TypeError(f"evidence holds data only (numbers, strings, lists, dicts, arrays), "
                    f"not {type(value).__name__}")


def decode(value):
    """encode's inverse: arrays come back as NumPy arrays of their dtype and shape.

    Anything malformed raises ValueError (the judge reports the point as missed)."""
    if isinstance(value, dict):
        if ARRAY in value:
            dtype = value[ARRAY]
            if dtype not in DTYPES:
                raise ValueError(f"evidence array of unknown dtype {dtype!r}")
            a = np.asarray(value["data"], dtype=dtype)
            return a.reshape([int(n) for n in value["shape"]])
        return {k: decode(v) for k, v in value.items()}
    if isinstance(value, list):
        return [decode(v) for v in value]
    return value
