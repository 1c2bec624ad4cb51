"""``minimegatron verify``: every parallel scheme, on every grid that fits, against one process.

The idea. Each scheme has a check in ``minimegatron/checks/`` that trains a
small GPT for a few AdamW steps from the same seed as ``serial_reference`` and
returns this rank's max |difference| of the loss, the gradients (after
backward) and the weights (after each step). This command calls those checks
for every scheme and grid and prints one table on rank 0:

    scheme      checks function                        grids on N ranks
    dp          data.check_data_parallel (master)      dp = every divisor d > 1 of N
    ddp         data.check_ddp                         dp = d
    zero1/2/3   data.check_zero(stage)                 dp = d
    tp          tensor.check_gpt                       tp = d
    pp-naive    pipeline.check_pipeline("naive", M=1)  pp = d
    pp-gpipe    pipeline.check_pipeline("gpipe", M=4)  pp = d
    pp-1f1b     pipeline.check_pipeline("1f1b", M=4)   pp = d
    3d          threed.check_3d (dp, pp, tp, M=2)      every dp*pp*tp = N with 2+ axes > 1

The data-parallel schemes train checks.common.SMALL_CONFIG (2 layers, batch 8);
the others VERIFY_CONFIG (8 layers, 8 heads, d_model 32: every tp and pp up
to 8 divides it; batch 4 for tp, 8 for pp, 16 for 3D).

A grid of d < N ranks runs on sub-communicators (``world.split(rank // d)``):
N/d copies of it run at once, so every rank takes part. Each row's diffs are
reduced with one all-reduce (max) over the world. A row whose check raises on
some ranks: the raising ranks wait (bounded) for the others to report, so a
failure seen by every rank becomes an ERROR row; if the others never arrive
(stuck in a collective), the job is aborted instead of hanging.

Tolerances (absolute, on loss, gradients and weights). float64: 1e-9. The
schemes only reorder sums (micro-batch losses, shard dot products, ring
reductions), so float64 agrees to ~1e-16 (loss) .. 1e-13 (weights); 1e-9
leaves room for longer runs and still catches a missing all-reduce, which
moves gradients by ~1e-1 and weights by ~1e-2. float32: 1e-4. Reordering
sums costs ~1e-7 relative (losses ~1e-7, gradients <= 1e-6 observed) and
AdamW's m / sqrt(v) turns a relative change of a small gradient into a
change of the step itself (lr = 1e-2 times it), so weights drift most:
observed <= 2.4e-5 after 5 steps on every grid of 8 ranks; 1e-4 keeps a 4x
margin and stays two orders below a broken scheme.

    mpirun -n 8 python -m minimegatron verify        (or: minimegatron run -n 8 verify)
    minimegatron run -n 4 verify --schemes ddp,tp --dtype float32 --steps 2
"""
import argparse
import dataclasses
import importlib
import sys
import time
import traceback

import numpy as np

from minimegatron import comm
from minimegatron.backend import use_backend
from minimegatron.parallel.grid import factorisations

TOLERANCE = {"float64": 1e-9, "float32": 1e-4}
ABORT_AFTER_S = 60.0      # a rank that raised waits this long for the others to report
SCHEME_ORDER = ["dp", "ddp", "zero1", "zero2", "zero3", "tp", "pp-naive", "pp-gpipe",
                "pp-1f1b", "3d"]
LABELS = {"dp": "DataParallel", "ddp": "DDP", "zero1": "ZeRO-1", "zero2": "ZeRO-2",
          "zero3": "ZeRO-3", "tp": "tensor", "pp-naive": "pipe naive", "pp-gpipe": "pipe GPipe",
          "pp-1f1b": "pipe 1F1B", "3d": "3D"}
PIPE_M = {"pp-naive": 1, "pp-gpipe": 4, "pp-1f1b": 4}


def _checks(name):
    """minimegatron.checks.<name>, or None if it (or a scheme module it needs) is missing."""
    try:
        return importlib.import_module(f"minimegatron.checks.{name}")
    except ModuleNotFoundError as err:
        if (err.name or "").startswith("minimegatron"):
            return None
        raise


def divisors(n):
    return [d for d in range(2, n + 1) if n % d == 0]


def grids(scheme, world_size):
    """[(dp, pp, tp, M)] this scheme is checked on, for a world of ``world_size`` ranks."""
    if scheme in ("dp", "ddp", "zero1", "zero2", "zero3"):
        return [(d, 1, 1, 1) for d in divisors(world_size)]
    if scheme == "tp":
        return [(1, 1, d, 1) for d in divisors(world_size)]
    if scheme in PIPE_M:
        return [(1, d, 1, PIPE_M[scheme]) for d in divisors(world_size)]
    return [(dp, pp, tp, 2) for dp, pp, tp in factorisations(world_size)
            if sum(x > 1 for x in (dp, pp, tp)) >= 2]


def _with_dtype(config, dtype):
    return dataclasses.replace(config, dtype=dtype)


def run_check(scheme, group, dims, dtype, steps):
    """This rank's {"loss", "grad", "weight"} for one row (None: this rank compares nothing)."""
    dp, pp, tp, m = dims
    if scheme in ("dp", "ddp", "zero1", "zero2", "zero3"):
        data = _checks("data")
        config = _with_dtype(data.SMALL_CONFIG, dtype)
        if scheme == "dp":
            out = data.check_data_parallel(group, config=config, steps=steps, batch_size=8)
            out["weight"] = max(out["weight"] or 0.0, out["final_weight"])
            return out
        if scheme == "ddp":
            return data.check_ddp(group, config=config, steps=steps, batch_size=8)
        return data.check_zero(group, int(scheme[-1]), config=config, steps=steps,
                               batch_size=8)
    common = _checks("common")
    config = _with_dtype(common.VERIFY_CONFIG, dtype)
    if scheme == "tp":
        return _checks("tensor").check_gpt(group, config, steps=steps, batch_size=4)
    if scheme in PIPE_M:
        return _checks("pipeline").check_pipeline(group, scheme[3:], m, config=config,
                                                  steps=steps, batch_size=8)
    return _checks("threed").check_3d((dp, pp, tp), steps=steps, micro_batches=m,
                                      batch_size=16, config=config)


def available(scheme):
    name = {"tp": "tensor", "3d": "threed"}.get(scheme, "pipeline" if scheme in PIPE_M
                                                 else "data")
    return _checks(name) is not None


def _agree_on_failure(error, world):
    """True if any rank failed. A failed rank waits at most ABORT_AFTER_S, then aborts all."""
    handle = comm.iall_reduce(np.array([0.0 if error is None else 1.0]), world, op="max")
    if error is not None:
        start = time.time()
        while not handle.test():
            if time.time() - start > ABORT_AFTER_S:
                sys.stderr.write(f"[rank {world.rank}] verify: {error}[rank {world.rank}] "
                                 f"the other ranks did not report within {ABORT_AFTER_S:.0f}"
                                 " s (stuck in a collective?); aborting the job\n")
                sys.stderr.flush()
                comm.world().comm.Abort(1)
            time.sleep(0.01)
    return bool(handle.wait()[0] > 0)


def run_row(scheme, dims, dtype, steps, world, split_cache):
    """One row on every rank: the check on this rank's sub-grid, diffs reduced over the world."""
    dp, pp, tp, m = dims
    size, start, error = dp * pp * tp, time.time(), None
    if scheme != "3d" and size not in split_cache:
        split_cache[size] = world.split(color=world.rank // size, name=f"verify{size}")
    diffs = {}
    try:
        diffs = run_check(scheme, split_cache.get(size), dims, dtype, steps)
    except Exception:  # noqa: BLE001 - every rank learns of it below
        error = traceback.format_exc()
    if _agree_on_failure(error, world):
        errors = comm.allgather_object(error, world)
        first = next(e for e in errors if e)
        last_line = first.strip().splitlines()[-1]
        return _row(scheme, dims, None, "ERROR", time.time() - start, note=last_line,
                    traceback=first)
    values = np.array([-1.0 if diffs.get(k) is None else float(diffs[k])
                       for k in ("loss", "grad", "weight")])
    worst = comm.all_reduce(values, world, op="max")
    worst = [None if v < 0 else float(v) for v in worst]
    ok = all(v is not None and v <= TOLERANCE[dtype] for v in worst)
    return _row(scheme, dims, worst, "PASS" if ok else "FAIL", time.time() - start)


def _row(scheme, dims, worst, status, seconds, note="", traceback=None):
    dp, pp, tp, m = dims
    loss, grad, weight = worst or (None, None, None)
    return {"scheme": scheme, "label": LABELS[scheme], "dp": dp, "pp": pp, "tp": tp, "M": m,
            "grid": "-" if status == "SKIP" else f"{dp}x{pp}x{tp}, M={m}",
            "loss": loss, "grad": grad, "weight": weight,
            "status": status, "seconds": round(seconds, 2), "note": note,
            "traceback": traceback}


def _fmt(v):
    return "-" if v is None else f"{v:.1e}"


def progress_line(i, total, row):
    return (f"[{i:>2}/{total}] {row['label']:<12} {row['grid']:<14} loss {_fmt(row['loss']):>8}"
            f"  grad {_fmt(row['grad']):>8}  weight {_fmt(row['weight']):>8}  "
            f"{row['status']:<5} {row['seconds']:5.1f} s {row['note']}").rstrip()


def table(rows, dtype):
    head = (f"{'scheme':<12} {'grid (dp x pp x tp, M)':<24}{'max|loss diff|':>15}"
            f"{'max|grad diff|':>15}{'max|weight diff|':>17}  status")
    lines = [head, "-" * len(head)]
    for r in rows:
        status = r["status"] if r["status"] != "SKIP" else "SKIP (not available)"
        lines.append(f"{r['label']:<12} {r['grid']:<24}{_fmt(r['loss']):>15}{_fmt(r['grad']):>15}"
                     f"{_fmt(r['weight']):>17}  {status}")
    bad = [r for r in rows if r["status"] in ("FAIL", "ERROR")]
    lines.append(f"{len(rows) - len(bad)} of {len(rows)} rows ok, tolerance {TOLERANCE[dtype]:g}"
                 f" ({dtype}); " + ("FAILED: " + ", ".join(f"{r['label']} {r['grid']}"
                                                          for r in bad) if bad else "all PASS"))
    return "\n".join(lines)


def run_rows(schemes=None, dtype="float64", steps=3, progress=False):
    """Every (scheme, grid) row on this world, in order; the same list on every rank."""
    if dtype not in TOLERANCE:
        raise ValueError(f"dtype must be one of {sorted(TOLERANCE)}, got {dtype!r}")
    schemes = SCHEME_ORDER if schemes is None else list(schemes)
    unknown = [s for s in schemes if s not in SCHEME_ORDER]
    if unknown:
        raise ValueError(f"unknown scheme(s) {unknown}; choose from {','.join(SCHEME_ORDER)}")
    world = comm.world()
    plan = []
    for scheme in schemes:
        if not available(scheme):
            plan.append((scheme, None))
        else:
            plan += [(scheme, dims) for dims in grids(scheme, world.size)]
    rows, split_cache = [], {}
    for i, (scheme, dims) in enumerate(plan, 1):
        if dims is None:
            row = _row(scheme, (0, 0, 0, 0), None, "SKIP", 0.0, note="(not available)")
        else:
            row = run_row(scheme, dims, dtype, steps, world, split_cache)
        rows.append(row)
        if progress:
            comm.print0(progress_line(i, len(plan), row))
    return rows


def main(argv=None):
    parser = argparse.ArgumentParser(prog="minimegatron verify",
                                     description="check every parallel scheme against one "
                                                 "process (run under mpirun -n N)")
    parser.add_argument("--schemes", default=",".join(SCHEME_ORDER),
                        help=f"comma list from {','.join(SCHEME_ORDER)} (default: all)")
    parser.add_argument("--dtype", choices=sorted(TOLERANCE), default="float64")
    parser.add_argument("--backend", choices=["numpy", "cupy"], default=None)
    parser.add_argument("--steps", type=int, default=2, help="AdamW steps per row (default 2)")
    opts = parser.parse_args(argv)
    schemes = [s.strip() for s in opts.schemes.split(",") if s.strip()]
    unknown = [s for s in schemes if s not in SCHEME_ORDER]
    if unknown or not schemes:
        parser.error(f"unknown scheme(s) {unknown}; choose from {','.join(SCHEME_ORDER)}")
    if opts.steps < 1:
        parser.error(f"--steps must be >= 1, got {opts.steps}")
    if opts.backend:
        use_backend(opts.backend)
    comm.install_abort_hook()
    world = comm.world()
    comm.print0(f"minimegatron verify: {world.size} ranks, {opts.dtype}, {opts.steps} AdamW "
                f"steps per row, schemes {','.join(schemes)}")
    start = time.time()
    rows = run_rows(schemes, opts.dtype, opts.steps, progress=True)
    if not rows:
        comm.print0("no grid of these schemes fits 1 rank: run it under mpirun -n N, N >= 2")
        return 2
    for r in rows:
        if r["status"] == "ERROR":
            comm.print0(f"--- {r['label']} {r['grid']}: ERROR ---\n{r['traceback']}")
    comm.print0("\n" + table(rows, opts.dtype) + f"\n({time.time() - start:.1f} s)")
    return 1 if any(r["status"] in ("FAIL", "ERROR") for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
