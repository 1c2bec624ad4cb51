"""A calibrated step-time model for THIS engine on THIS machine (issue 15).

tools/scaling.py models a GPU cluster: compute is FLOPs / GEMM rate. A NumPy engine
also pays Python per op and memory traffic outside the GEMMs, which for the small
GPTs we train is most of the step. Per rank, with no overlap:

    compute = share * (F / R + n_ops * c + E / W + X / Q)
    t_step  = compute * (M + K - 1) / M                     pipeline bubble
            + steps * alpha + bytes_sent / B                every collective, alpha-beta

F    GEMM FLOPs of the rank's step (MatMul: 2mkn forward, twice that backward)
R    GEMM rate of one rank: r * min(T, cores / ranks), r the rate of one BLAS thread on
     (64, 64) GEMMs, the size of our models' products (calibrate: gemm_flops_small /
     blas_threads), T the rank's BLAS threads (linear thread scaling assumed)
n_ops  Function calls of the step (each with its backward), plus one per parameter
     for the optimizer update
c    per-op overhead, s (calibrate: a chain of tiny ops, forward + backward, / ops)
E    elementwise bytes: every non-GEMM op reads its inputs and writes its output
     (forward), its backward moves about twice that; AdamW reads p, g, m, v and
     writes p, m, v: 7 x parameter bytes. Views (reshape, transpose) move nothing.
W    elementwise bandwidth, B/s (calibrate: c = a * b on 8 MB arrays, 3 arrays moved)
X    transcendental values: the outputs of GeLU, softmax, cross entropy, tanh, exp,
     log (one tanh or exp each, forward)
Q    tanh rate, values/s (calibrate: tanh of 1M values): a tanh costs 20-50 multiplies
share  max(1, ranks / cores): ranks beyond the cores wait for one (time-sliced)
M, K micro-batches, pipeline stages: a stage is idle (K - 1) of M + K - 1 slots
steps  ring steps of each collective (ring_steps: 2(N-1) for an all-reduce, N-1 for
     an all-gather or reduce-scatter, 1 for a send), alpha the latency per step
B    collective bandwidth, bytes_sent the trace's ring bytes (trace.py's byte model)

The counts come from one real step (``count_step``): the engine's Function calls and
comm.py's trace spans, so every split of tp, pp and dp is counted as it runs, not
re-derived. The rates come from ``minimegatron calibrate``. The model predicts the
slowest rank: the maximum over ranks of t_step.
"""
import contextlib
import math

from minimegatron import trace
from minimegatron.function import Function, is_grad_enabled

VIEWS = ("Reshape", "Transpose")
TRANSCENDENTAL = ("GeLU", "Softmax", "CrossEntropy", "Tanh", "Exp", "Log")


def ring_steps(op, n):
    """Latency-bound steps of a collective over n ranks (ring algorithms, trace's model)."""
    if n <= 1:
        return 0
    if "send" in op or "recv" in op:
        return 1
    return 2 * (n - 1) if "all_reduce" in op else n - 1


def _nbytes(values):
    return sum(int(getattr(v, "nbytes", 0)) for v in values)


@contextlib.contextmanager
def counting():
    """Count every Function.apply inside: ops, GEMM FLOPs, elementwise bytes, tanh values."""
    counts = {"ops": 0, "gemm_flops": 0.0, "elementwise_bytes": 0.0, "transcendentals": 0}
    apply = Function.__dict__["apply"]

    def counted(cls, *args, **kwargs):
        out = apply.__func__(cls, *args, **kwargs)
        passes = 3 if is_grad_enabled() else 1      # forward, + backward about twice
        arrays = [getattr(a, "data", a) for a in args]
        outs = out if isinstance(out, tuple) else (out,)
        counts["ops"] += 1
        if cls.__name__ == "MatMul":                 # (..., m, k) @ (k, n): 2mkn per product
            size = math.prod(outs[0].data.shape)
            counts["gemm_flops"] += passes * 2.0 * size * arrays[0].shape[-1]
        elif cls.__name__ not in VIEWS:
            moved = _nbytes(arrays) + _nbytes(o.data for o in outs)
            counts["elementwise_bytes"] += passes * moved
        if cls.__name__ in TRANSCENDENTAL:
            counts["transcendentals"] += sum(int(o.data.size) for o in outs)
        return out

    Function.apply = classmethod(counted)
    try:
        yield counts
    finally:
        Function.apply = apply


def count_step(step, params, group_sizes):
    """Run ``step()`` once and count it: the counting dict plus the collectives.

    group_sizes maps a group name's prefix ("tp", "dp", "pp") to its size; the
    optimizer adds one op and 7 x bytes per parameter array (AdamW).
    """
    trace.reset()
    with counting() as counts:
        step()
    counts["ops"] += len(params)
    counts["elementwise_bytes"] += 7 * _nbytes(p.data for p in params)
    comm = [s for s in trace.spans() if s["kind"] == "comm"]
    counts["ring_steps"] = sum(ring_steps(s["op"], group_sizes.get((s["group"] or "")[:2], 1))
                               for s in comm)
    counts["bytes_sent"] = sum(s["bytes_sent"] for s in comm)
    counts["messages"] = len(comm)
    return counts


def step_time(counts, calib, ranks=1, pp=1, micro_batches=1, threads=1):
    """Seconds of one rank's step and its parts (module docstring), from counts and calib.

    calib keys (``minimegatron calibrate``'s JSON): gemm_flops_small, blas_threads, cores,
    op_overhead_s, elementwise_bytes_per_s, tanh_per_s, latency_s, bandwidth_bytes_per_s.
    """
    cores = calib["cores"]
    share = max(1.0, ranks / cores)
    rate = calib["gemm_flops_small"] / calib["blas_threads"] * min(threads, cores / ranks)
    gemm = counts["gemm_flops"] / rate
    ops = share * counts["ops"] * calib["op_overhead_s"]
    elementwise = share * counts["elementwise_bytes"] / calib["elementwise_bytes_per_s"]
    tanh = share * counts["transcendentals"] / calib["tanh_per_s"]
    compute = gemm + ops + elementwise + tanh
    bubble = compute * (pp - 1) / micro_batches
    comm = (counts["ring_steps"] * calib["latency_s"]
            + counts["bytes_sent"] / calib["bandwidth_bytes_per_s"])
    return {"gemm": gemm, "ops": ops, "elementwise": elementwise, "tanh": tanh,
            "bubble": bubble,
            "comm": comm, "total": compute + bubble + comm}
