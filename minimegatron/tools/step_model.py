"""A calibrated step-time model for THIS engine on THIS machine.

tools/scaling.py models a GPU cluster: compute is FLOPs / GEMM rate. A NumPy engine
also pays Python per op and memory traffic outside the GEMMs, which for the small
GPTs we train is most of the step. Per rank, with no overlap:

    compute = share * (F / R + Fb / Rb + n_ops * c + E / W + V / Rv + Xt / Qt + Xe / Qe)
    t_step  = compute * (M + K - 1) / M                     pipeline bubble
            + steps * alpha + bytes_sent / B                every collective, alpha-beta

F, Fb  GEMM FLOPs of the rank's step (MatMul: 2mkn forward, twice that backward): F of
     products with a 2-D weight (Linear), Fb of batched products (attention's
     (B, heads, T, hd) operands, strided views)
R, Rb  their rates on one rank: r * min(T, cores / ranks), r the rate of one BLAS thread
     on that shape class (calibrate: the engine's MatMul forward + backward at the
     teaching GPT's shapes / blas_threads), T the rank's BLAS threads
n_ops  Function calls of the step (each with its backward), plus one per parameter
     for the optimizer update
c    per-op overhead, s (calibrate: a chain of tiny ops, forward + backward, / ops)
E    elementwise bytes. A fused op (fused.py) declares its passes per value of its
     input (``COST``, checked by tracing its ufunc calls); any other op reads its
     inputs (a broadcast one once per output value) and writes its outputs forward,
     about twice that backward; a reshape of a strided array copies it, other views
     move nothing. Backward adds a tensor's gradients once per extra use (3 x its
     bytes each: fan-out, micro-batches summed into .grad); the optimizer makes
     OPTIMIZER_PASSES over every parameter.
V    values reduced along an axis: the fused ops' declared ``reduced``, and backward's
     sum over the broadcast rows of an input smaller than its op's output (a bias)
W, Rv  elementwise bandwidth (c = a * b on 8 MB arrays, 3 arrays), values/s of a row sum
Xt, Xe  tanh and exp/log values (declared by fused ops; Tanh, Exp, Log ops' outputs)
Qt, Qe  their rates, values/s (calibrate: tanh, exp of 1M values)
     With ranks > 1, every rate as measured with calibrate's ranks all busy at once
     (``busy``): ranks share the caches, the memory bandwidth, and here other jobs' cores
share  max(1, ranks / cores): ranks beyond the cores wait for one (time-sliced)
M, K micro-batches, pipeline stages: a stage is idle (K - 1) of M + K - 1 slots
steps  ring steps of each collective (ring_steps: 2(N-1) for an all-reduce, N-1 for
     an all-gather or reduce-scatter, 1 for a send), alpha the latency per step
B    collective bandwidth, bytes_sent the trace's ring bytes (trace.py's byte model)

The counts come from one real step (``count_step``): the engine's Function calls and
comm/trace.py's spans, so every split of tp, pp and dp is counted as it runs, not
re-derived. The rates come from ``minimegatron calibrate`` (measured by tools/rates.py).
The model predicts the slowest rank: the maximum over ranks of t_step.
"""
import contextlib
import math

import numpy

from minimegatron.comm import trace
from minimegatron.autodiff.function import Context, Function, is_grad_enabled

VIEWS = ("Reshape", "Transpose")
TANH, EXP = ("Tanh",), ("Exp", "Log")
# optim.adamw_fused: 33 values read or written per parameter value (traced in
# tests/test_calibrate.py), + guards.all_finite reading each gradient and weight once
OPTIMIZER_PASSES = 33 + 2
COUNTS = ("ops", "gemm_flops", "batched_gemm_flops", "elementwise_bytes", "reduced_values",
          "tanh_values", "exp_values")


def ring_steps(op, n):
    """Latency-bound steps of a collective over n ranks (ring algorithms, trace's model)."""
    if n <= 1:
        return 0
    if "send" in op or "recv" in op:
        return 1
    return 2 * (n - 1) if "all_reduce" in op else n - 1


def _nbytes(values):
    return sum(int(getattr(v, "nbytes", 0)) for v in values)


def _count_op(counts, cls, args, outs, backward):
    """Add one call of ``cls`` (raw arrays in and out) to counts: rules of the docstring."""
    arrays = [getattr(a, "data", a) for a in args]
    x, passes = arrays[0], 3 if backward else 1          # forward, + backward about twice
    if cls.__name__ == "MatMul":                         # (..., m, k) @ (k, n): 2mkn each
        key = "gemm_flops" if arrays[1].ndim == 2 else "batched_gemm_flops"
        counts[key] += passes * 2.0 * math.prod(outs[0].shape) * x.shape[-1]
    elif hasattr(cls, "COST"):                           # a fused op: what it declares
        for phase in ("forward", "backward") if backward else ("forward",):
            cost = cls.COST[phase]
            counts["elementwise_bytes"] += cost.get("passes", 0) * x.nbytes
            for name in ("reduced", "tanh", "exp"):
                counts[name + "_values"] += cost.get(name, 0) * x.size
    elif cls.__name__ in VIEWS:
        if cls.__name__ == "Reshape" and not x.flags.c_contiguous:
            counts["elementwise_bytes"] += 2 * x.nbytes  # a strided array is copied
    else:                                                # a broadcast input: read per output
        size, widest = max(int(o.size) for o in outs), max(int(o.nbytes) for o in outs)
        read = sum(max(a.nbytes, widest) if a.ndim else 0
                   for a in arrays if hasattr(a, "nbytes"))
        counts["elementwise_bytes"] += passes * (read + _nbytes(outs))
        if backward:                                     # unbroadcast / scatter-add: a sum
            counts["reduced_values"] += size * sum(
                getattr(a, "requires_grad", False) and a.data.size < size for a in args)
        if cls.__name__ in TANH + EXP:
            counts["tanh_values" if cls.__name__ in TANH else "exp_values"] += size


@contextlib.contextmanager
def counting():
    """Count every Function.apply inside (``COUNTS``, the module docstring's rules)."""
    counts = dict.fromkeys(COUNTS, 0)
    uses = {}                          # id -> [tensor (kept: no id reuse), uses so far]
    apply = Function.__dict__["apply"]

    def counted(cls, *args, **kwargs):
        out = apply.__func__(cls, *args, **kwargs)
        outs = out if isinstance(out, tuple) else (out,)
        backward = is_grad_enabled() and any(getattr(a, "requires_grad", False) for a in args)
        counts["ops"] += 1
        _count_op(counts, cls, args, [o.data for o in outs], backward)
        for a in args:
            if backward and getattr(a, "requires_grad", False):
                use = uses.setdefault(id(a), [a, 0])
                use[1] += 1
                if use[1] > 1:                           # backward adds this gradient
                    counts["elementwise_bytes"] += 3 * a.data.nbytes
        return out

    Function.apply = classmethod(counted)
    try:
        yield counts
    finally:
        Function.apply = apply


def count_step(step, params, group_sizes):
    """Run ``step()`` once and count it: the counting dict plus the collectives.

    group_sizes maps a group name's prefix ("tp", "dp", "pp") to its size; the
    optimizer adds one op and OPTIMIZER_PASSES x bytes per parameter array (AdamW).
    """
    trace.reset()
    with counting() as counts:
        step()
    counts["ops"] += len(params)
    counts["elementwise_bytes"] += OPTIMIZER_PASSES * _nbytes(p.data for p in params)
    comm = [s for s in trace.spans() if s["kind"] == "comm"]
    counts["ring_steps"] = sum(ring_steps(s["op"], group_sizes.get((s["group"] or "")[:2], 1))
                               for s in comm)
    counts["bytes_sent"] = sum(s["bytes_sent"] for s in comm)
    counts["messages"] = len(comm)
    return counts


def step_time(counts, calib, ranks=1, pp=1, micro_batches=1, threads=1):
    """Seconds of one rank's step and its parts (module docstring), from counts and calib.

    calib keys (``minimegatron calibrate``'s JSON): gemm_flops_linear, gemm_flops_batched,
    blas_threads, cores, op_overhead_s, elementwise_bytes_per_s, reduced_per_s,
    tanh_per_s, exp_per_s, latency_s, bandwidth_bytes_per_s; with ranks > 1 the compute
    rates of ``busy`` (measured with every rank of calibrate's MPI run busy) if present.
    """
    cores, rates = calib["cores"], calib.get("busy") if ranks > 1 else None
    share, calib = max(1.0, ranks / cores), dict(calib, **(rates or {}))
    per_thread = min(threads, cores / ranks) / calib["blas_threads"]
    t = {"gemm": counts["gemm_flops"] / (calib["gemm_flops_linear"] * per_thread),
         "batched": counts["batched_gemm_flops"] / (calib["gemm_flops_batched"] * per_thread),
         "ops": share * counts["ops"] * calib["op_overhead_s"],
         "elementwise": share * counts["elementwise_bytes"] / calib["elementwise_bytes_per_s"],
         "reduce": share * counts["reduced_values"] / calib["reduced_per_s"],
         "transcendental": share * (counts["tanh_values"] / calib["tanh_per_s"]
                                    + counts["exp_values"] / calib["exp_per_s"])}
    compute = sum(t.values())
    t["bubble"] = compute * (pp - 1) / micro_batches
    t["comm"] = (counts["ring_steps"] * calib["latency_s"]
                 + counts["bytes_sent"] / calib["bandwidth_bytes_per_s"])
    t["total"] = compute + t["bubble"] + t["comm"]
    return t


class _Traced(numpy.ndarray):
    """An ndarray that tallies the NumPy ufunc calls made on it (``traced_cost``)."""
    tally, unit = None, 1

    def __array_ufunc__(self, ufunc, method, *inputs, out=None, **kwargs):
        plain = [a.view(numpy.ndarray) if isinstance(a, _Traced) else a for a in inputs]
        if out is not None:
            kwargs["out"] = tuple(o.view(numpy.ndarray) if isinstance(o, _Traced) else o
                                  for o in out)
        result = getattr(ufunc, method)(*plain, **kwargs)
        outs = [o for o in kwargs.get("out", (result,)) if isinstance(o, numpy.ndarray)]
        name, unit = ufunc.__name__, _Traced.unit
        if method == "reduce" and plain[0].size >= unit:
            _Traced.tally["reduced"] += plain[0].size / unit
        elif method != "reduce" and outs and outs[0].size >= unit:
            key = "tanh" if name == "tanh" else "exp" if name in ("exp", "log") else "passes"
            arrays = len(outs) + sum(getattr(a, "ndim", 0) > 0 for a in plain)
            _Traced.tally[key] += (arrays if key == "passes" else 1) * outs[0].size / unit
        if out is not None:
            return out[0] if len(out) == 1 else out
        return result.view(_Traced) if isinstance(result, numpy.ndarray) else result


def traced(call, unit, *args, **kwargs):
    """(result, tally) of call(*args, **kwargs) with every array argument traced: each
    ufunc call's values as in fused.py's ``COST``, per ``unit`` values."""
    _Traced.unit = unit
    _Traced.tally = dict.fromkeys(("passes", "reduced", "tanh", "exp"), 0.0)
    result = call(*[a.view(_Traced) if isinstance(a, numpy.ndarray) else a for a in args],
                  **kwargs)
    return result, {k: v for k, v in _Traced.tally.items() if v}


def traced_cost(fn, *args, **kwargs):
    """A fused op's ``COST`` as its NumPy code runs: fn.forward on ``args``, then its
    backward on a gradient of ones, per value of args[0]."""
    ctx = Context()
    ctx.needs_input_grad = tuple(getattr(a, "dtype", None) is not None and a.dtype.kind == "f"
                                 for a in args)
    unit = args[0].size
    out, forward = traced(fn.forward, unit, ctx, *args, **kwargs)
    _, backward = traced(fn.backward, unit, ctx, numpy.ones_like(numpy.asarray(out)))
    return {"forward": forward, "backward": backward}
