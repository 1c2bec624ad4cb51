"""Calibrate the step-time models on THIS machine: GEMM, engine op, all-reduce alpha/beta.

The scaling model (tools/scaling.py) predicts a step as compute / FLOP rate plus
ring collectives, each ring step costing alpha + bytes / bandwidth. Its default
figures are a DGX-2H; here we measure our own:

    GEMM rate    C = A B with A, B of shape (n, n): 2 n^3 FLOPs, timed with the
                 backend (xp.matmul, after a warm-up), float64 and float32.
    step model   tools/rates.py: the engine's MatMul on the GPT's products, per-op
                 cost, elementwise, row sums, tanh, exp (tools/step_model.py's rates);
                 again with every rank of the MPI run busy at once (``busy``)
    all-reduce   t(n_bytes) on N ranks, ring model (as scaling.all_reduce_time):
                 t = 2(N-1) * (alpha + n_bytes / N / bw), so y = t / (2(N-1)) is a
                 line in x = n_bytes / N: alpha from the small messages, bw from the
                 largest (fit_alpha_beta). Each time is the best of REPEATS.

Communication measured: comm.all_reduce of 8 B .. 4 MB float64 buffers over the
world, REPEATS times each (the minimum time of each size is kept). Run alone,
``minimegatron calibrate`` measures the GEMM rate itself and starts itself under
mpiexec on 2 ranks (mpiexec.find_mpiexec) for the collectives; ``--no-mpi``
skips them (GEMM only, and says so). Output: the JSON that
``scaling.Hardware.from_json`` reads (gemm_flops, bandwidth_bytes_per_s,
latency_s, ranks_per_node, name) plus the raw figures:

    minimegatron calibrate --out hardware.json
    minimegatron run -n 4 calibrate --out hardware.json
    minimegatron memory config --hardware hardware.json ...
    python benchmarks/bench_scaling.py      # predicted vs measured step times

The command's arguments and printing are ``minimegatron/commands/calibrate.py``.

``gemm_flops`` is the float64 rate of this process with its BLAS threads (our
models are float64; alone: one thread per core). ``machine_flops`` scales it to
every core (gemm_flops * cores / blas_threads, assuming linear thread scaling);
n ranks on this host each get machine_flops / n (``per_rank_flops``), the rule
the comparison in benchmarks/bench_scaling.py uses.
"""
import json
import os
import platform
import subprocess
import sys
import tempfile
import time

from minimegatron.tools import rates

SIZES = [2 ** k for k in range(3, 23, 2)]        # bytes: 8 B .. 4 MiB (x 4 each)
REPEATS = 5
GEMM_N = 384
GEMM_REPEATS = 10
ONE_HOST = 64    # ranks_per_node: every rank runs on this one host, so no group crosses a node


def gemm_rate(dtype="float64", n=GEMM_N, repeats=GEMM_REPEATS):
    """Achieved FLOP/s of an (n, n) @ (n, n) matmul: 2 n^3 / best time of ``repeats``."""
    from minimegatron.backend import sync, xp
    from minimegatron.tools.rates import normal
    a, b = normal(n, n).astype(dtype), normal(n, n).astype(dtype)
    xp.matmul(a, b)                                  # warm-up (BLAS threads, GPU kernels)
    sync()
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        xp.matmul(a, b)
        sync()
        best = min(best, time.perf_counter() - start)
    return 2.0 * n ** 3 / best


def fit_alpha_beta(sizes, seconds, ranks):
    """(alpha s, bandwidth B/s) of the ring model t = 2(N-1)(alpha + n / N / bw).

    y = t / (2(N-1)) against x = n / N: alpha is the smallest y of the small
    messages (<= 1 KiB: pure latency), the bandwidth comes from the largest
    message, bw = x / (y - alpha). Two points, not a least-squares line: on a
    shared machine one slow mid-size sample would bend a fitted line.
    """
    steps = 2 * (ranks - 1)
    small = [t / steps for n, t in zip(sizes, seconds) if n <= 1024] or [0.0]
    alpha = min(small)
    largest = max(sizes)
    y = seconds[list(sizes).index(largest)] / steps
    return alpha, (largest / ranks) / max(y - alpha, 1e-12)


def all_reduce_times(group, sizes=SIZES, repeats=REPEATS):
    """{bytes: best seconds} of comm.all_reduce over ``group`` (collective: every rank)."""
    from minimegatron import comm
    from minimegatron.backend import xp
    times = {}
    for nbytes in sizes:
        buf = xp.ones(max(1, nbytes // 8), dtype="float64")
        comm.all_reduce(buf, group)                  # warm-up
        best = float("inf")
        for _ in range(repeats):
            comm.barrier(group)
            start = time.perf_counter()
            comm.all_reduce(buf, group)              # all-reduce of nbytes
            best = min(best, time.perf_counter() - start)
        # the slowest rank's time is the collective's time
        worst = comm.all_reduce(xp.asarray([best]), group, op="max")
        times[nbytes] = float(worst[0])
    return times


def collectives(group):
    """The part of the calibration that needs every rank of ``group``: the all-reduce
    fit, and the step model's rates with every rank busy (``busy``)."""
    times = all_reduce_times(group)
    alpha, bandwidth = fit_alpha_beta(list(times), list(times.values()), group.size)
    return {"ranks_measured": group.size, "latency_s": alpha,
            "bandwidth_bytes_per_s": bandwidth, "busy": rates.busy(group),
            "all_reduce_seconds": {str(k): v for k, v in times.items()}}


def collectives_by_launch(ranks, timeout=120):
    """Start ``minimegatron calibrate --collectives-only`` under mpiexec; its dict or None."""
    from minimegatron.runtime.launcher import build_command, child_env
    from minimegatron.runtime.processes import run_job
    with tempfile.TemporaryDirectory(prefix="mm_calib_") as tmp:
        path = os.path.join(tmp, "comm.json")
        cmd = build_command(ranks, "calibrate", ["--collectives-only", "--out", path])
        code, out, err, timed_out = run_job(cmd, timeout=timeout, env=child_env(ranks),
                                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                            text=True)
        if code != 0 or timed_out or not os.path.exists(path):
            print(f"calibrate: the {ranks}-rank collective run failed (code {code}):\n{err}",
                  file=sys.stderr)
            return None
        with open(path) as f:
            return json.load(f)


def blas_threads():
    """BLAS threads of this process: OPENBLAS_NUM_THREADS if set, else one per core."""
    from minimegatron.runtime.threads import cores
    value = os.environ.get("OPENBLAS_NUM_THREADS", "")
    return int(value) if value.isdigit() and int(value) > 0 else cores()


def per_rank_flops(hardware_json, ranks):
    """FLOP/s each of ``ranks`` ranks on this host gets: the machine's rate shared."""
    return hardware_json["machine_flops"] / ranks


def measure(group=None, launch_ranks=2, use_mpi=True):
    """Every figure as a dict (keys of scaling.Hardware.from_json first)."""
    from minimegatron.runtime.threads import cores
    result = {"name": f"{platform.node()} (calibrated)", "cores": cores(),
              "ranks_per_node": ONE_HOST}
    on_rank0 = group is None or group.rank == 0
    if on_rank0:
        result["gemm_flops_float64"] = gemm_rate("float64")
        result["gemm_flops_float32"] = gemm_rate("float32")
        result.update(rates.measure())
    if group is not None and group.size > 1:
        from minimegatron import comm
        comm.barrier(group)
        result.update(collectives(group))
    elif use_mpi and launch_ranks > 1:
        measured = collectives_by_launch(launch_ranks)
        if measured is not None:
            result.update(measured)
    if "latency_s" not in result:
        result.update(latency_s=0.0, bandwidth_bytes_per_s=float("inf"), ranks_measured=1,
                      note="GEMM only: collectives not measured (no MPI launch)")
    if on_rank0:
        result["gemm_flops"] = result["gemm_flops_float64"]
        result["blas_threads"] = blas_threads()
        result["machine_flops"] = result["gemm_flops"] * result["cores"] / result["blas_threads"]
    return result


def summary(m):
    """A few human lines about the measured figures."""
    lines = [f"GEMM ({GEMM_N}x{GEMM_N}): float64 {m['gemm_flops_float64'] / 1e9:.2f} GFLOP/s, "
             f"float32 {m['gemm_flops_float32'] / 1e9:.2f} GFLOP/s (one rank, "
             f"{m['blas_threads']} BLAS threads, {m['cores']} cores here)",
             "step model, alone: " + rates.line(m)]
    if m.get("busy"):
        lines.append(f"step model, {m['ranks_measured']} ranks busy: " + rates.line(m["busy"]))
    if "note" in m:
        lines.append(m["note"])
    else:
        lines.append(f"all-reduce over {m['ranks_measured']} ranks (ring fit): latency "
                     f"{m['latency_s'] * 1e6:.1f} us per step, bandwidth "
                     f"{m['bandwidth_bytes_per_s'] / 1e9:.2f} GB/s")
        lines.append(f"{'bytes':>10} {'seconds':>10}")
        lines += [f"{int(k):>10} {v:>10.2e}" for k, v in m["all_reduce_seconds"].items()]
    return "\n".join(lines)
