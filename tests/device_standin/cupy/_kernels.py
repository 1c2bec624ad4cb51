"""``ElementwiseKernel`` and ``ReductionKernel`` run on NumPy: the C body read as Python.

CuPy compiles a kernel's C body for the GPU. The bodies minimegatron writes
(autodiff/fused.py, optim/optimizers.py) are plain arithmetic statements,
``t = tanh(c * (x + a * x * x * x)); y = 0.5 * x * (1 + t);``, which are also
Python expressions. The stand-in evaluates them statement by statement on
whole NumPy arrays, so the kernel's formula (not a copy of it) is what the
tests compare with the readable NumPy path. A declaration ``T d = ...;`` is
read as an assignment; anything that is not ``name = expression;`` raises.
"""
import re

import numpy

from cupy._array import ndarray, unwrap, wrap

FUNCTIONS = {"tanh": numpy.tanh, "sqrt": numpy.sqrt, "exp": numpy.exp, "log": numpy.log,
             "rsqrt": lambda v: 1.0 / numpy.sqrt(v), "abs": numpy.abs, "fabs": numpy.abs,
             "max": numpy.maximum, "min": numpy.minimum}
STATEMENT = re.compile(r"^\s*(?:(?:T|float|double|float32|float64)\s+)?(\w+)\s*=\s*(.+?)\s*$",
                       re.S)


def params(spec):
    """"T x, float64 eps" -> [("T", "x"), ("float64", "eps")]."""
    return [tuple(p.split()) for p in spec.split(",") if p.strip()]


def run(body, names):
    """Evaluate the ;-separated statements of ``body`` over ``names`` (updated in place)."""
    for statement in body.split(";"):
        if not statement.strip():
            continue
        match = STATEMENT.match(statement)
        if match is None:
            raise NotImplementedError(f"the device stand-in reads only 'name = expression;' "
                                      f"statements, not {statement.strip()!r}")
        target, expression = match.groups()
        names[target] = eval(expression, {"__builtins__": {}, **FUNCTIONS}, names)


def inputs(spec, args, kernel):
    """{name: NumPy array or scalar} and the dtype T, refusing host arrays (CuPy does)."""
    if len(args) != len(spec):
        raise TypeError(f"{kernel}: {len(spec)} inputs expected, got {len(args)}")
    names, t = {}, None
    for (kind, name), value in zip(spec, args):
        if isinstance(value, numpy.ndarray):
            raise TypeError(f"{kernel}: input {name!r} is a host (NumPy) array")
        if kind == "T":
            if not isinstance(value, ndarray):
                raise TypeError(f"{kernel}: input {name!r} of type T must be a device array")
            t = value.dtype if t is None else t
        names[name] = unwrap(value) if kind == "T" else numpy.dtype(kind).type(value)
    return names, t


class ElementwiseKernel:
    """kernel(inputs..., [outputs...]): the body over broadcast inputs, written to outputs."""

    def __init__(self, in_params, out_params, operation, name="kernel", **_options):
        self.ins, self.outs = params(in_params), params(out_params)
        self.operation, self.name = operation, name

    def __call__(self, *args):
        names, t = inputs(self.ins, args[:len(self.ins)], self.name)
        given = args[len(self.ins):]
        if given and len(given) != len(self.outs):
            raise TypeError(f"{self.name}: give all {len(self.outs)} outputs or none")
        shape = numpy.broadcast_shapes(*(numpy.shape(v) for v in names.values()))
        outs = list(given) or [ndarray(numpy.empty(shape, t)) for _ in self.outs]
        for (_, name), out in zip(self.outs, outs):
            if not isinstance(out, ndarray):
                raise TypeError(f"{self.name}: output {name!r} must be a device array")
            names.setdefault(name, out._host.copy())
        run(self.operation, names)
        for (_, name), out in zip(self.outs, outs):
            out._host[...] = names[name]
        return outs[0] if len(outs) == 1 else tuple(outs)


class ReductionKernel:
    """kernel(inputs..., axis=, keepdims=): sum over ``axis`` of ``map_expr`` (only "a + b")."""

    def __init__(self, in_params, out_params, map_expr, reduce_expr, post_map_expr,
                 identity, name="reduce_kernel", **_options):
        if reduce_expr.replace(" ", "") != "a+b" or post_map_expr.replace(" ", "") != "s=a":
            raise NotImplementedError("the device stand-in reduces only with 'a + b' into 's'")
        self.ins, self.map_expr, self.name = params(in_params), map_expr, name

    def __call__(self, *args, axis=None, keepdims=False):
        names, t = inputs(self.ins, args, self.name)
        names["_mapped"] = None
        run(f"_mapped = {self.map_expr}", names)
        return wrap(numpy.asarray(names["_mapped"].sum(axis=axis, keepdims=keepdims), t))
