"""``minimegatron verify``: the whole matrix passes on 8 ranks, a broken scheme FAILS by name.

- The full matrix (every scheme, every grid of 8 ranks, 125 rows) runs ONCE
  here, through the real command line (``python -m minimegatron run -n 8
  verify``): exit status 0, every row PASS, ~45 s on 2 cores.
- A 2-rank worker (tests/workers/verify_checks.py) breaks DDP's gradient
  all-reduce, then Megatron's g, and calls ``verify.run_rows``: the broken
  scheme's row FAILs with differences of ~1e-2, the other scheme's row PASSes
  (2 ranks keep it ~10 s; the 8-rank run above covers the sub-communicators).
- The exit status of the command for a failing or badly asked run.
"""
import re
import subprocess
import sys

import pytest

from mpi_harness import REPO_ROOT, run_mpi, run_script

from minimegatron.checks import verify

TIMEOUT = 240


def run_cli(nprocs, *args, timeout=TIMEOUT):
    cmd = [sys.executable, "-m", "minimegatron", "run", "-n", str(nprocs), "--timeout",
           str(timeout), "verify", *args]
    proc = subprocess.run(cmd, cwd=REPO_ROOT, capture_output=True, text=True,
                          timeout=timeout + 30)
    return proc.returncode, proc.stdout, proc.stderr


def grid_text(dims):
    """A row's grid as the table writes it ("dp x pp x tp, M" and ", cp" for a cp row,
    ", ep" for an MoE row, whose cp shows when > 1)."""
    dp, pp, tp, m = dims[:4]
    cp = len(dims) == 5 or (len(dims) > 5 and dims[4] > 1)
    return (f"{dp}x{pp}x{tp}, M={m}" + (f", cp={dims[4]}" if cp else "")
            + (f", ep={dims[5]}" if len(dims) > 5 else ""))


def expected_rows(world_size):
    return [(scheme, grid_text(dims)) for scheme in verify.SCHEMES
            for dims in verify.grids(scheme, world_size)]


def test_grids_of_eight_ranks():
    rows = expected_rows(8)
    assert len(rows) == 125
    assert [g for s, g in rows if s in ("fsdp2", "hsdp")] == [
        f"{d}x1x1, M=1" for d in (2, 4, 8)] * 2
    assert [g for s, g in rows if s.startswith("moe-") and verify.SCHEMES[s].kind == "moex"] \
        == ["8x1x1, M=1, ep=4"] * 2 + ["4x1x2, M=1, ep=4"] + ["4x2x1, M=2, ep=4"] * 3 + [
            "4x1x1, M=1, cp=2, ep=4"]
    assert sorted(g for s, g in rows if s == "4d-sp") == sorted(
        ["1x1x4, M=2, cp=2", "1x2x2, M=2, cp=2", "2x1x2, M=2, cp=2", "1x1x2, M=2, cp=4"])
    assert [g for s, g in rows if s == "pp-zbv"] == ["1x2x1, M=8", "1x4x1, M=8", "1x8x1, M=8",
                                                     "2x2x1, M=8", "2x4x1, M=8"]
    assert "'zb-h2' needs at least 15 micro-batches" in verify.fit("pp-zb-h2", (1, 8, 1, 8))[1]
    assert "pipeline of 16 stages" in verify.fit("pp-zbv", (1, 8, 1, 8))[1]
    for name in ("pp-dualpipe", "pp-dualpipev"):                       # M = 2 pp
        assert [g for s, g in rows if s == name] == ["1x2x1, M=4", "1x4x1, M=8", "1x8x1, M=16",
                                                     "2x2x1, M=4", "2x4x1, M=8"]
    assert "pipeline of 16 stages" in verify.fit("pp-dualpipev", (1, 8, 1, 16))[1]
    assert verify.fit("pp-dualpipe", (1, 8, 1, 16)) == (16, None)     # 8 layers, one a stage
    assert "an even number of stages" in verify.fit("pp-dualpipe", (1, 3, 1, 6))[1]
    assert verify.fit("pp-zb-h1", (2, 4, 1, 8)) == (16, None)
    assert [g for s, g in rows if s == "moe-ep"] == [f"8x1x1, M=1, ep={ep}" for ep in (2, 4, 8)]
    assert sorted(g for s, g in rows if s == "moe-3d") == sorted(
        ["2x1x4, M=1, ep=2", "2x2x2, M=2, ep=2", "2x4x1, M=2, ep=2", "4x1x2, M=1, ep=4",
         "4x2x1, M=2, ep=4", "2x1x2, M=1, cp=2, ep=4", "1x2x2, M=2, cp=2, ep=2"])
    assert [g for s, g in rows if s == "tp-sp"] == ["1x1x2, M=1", "1x1x4, M=1", "1x1x8, M=1"]
    assert [g for s, g in rows if s == "ddp"] == ["2x1x1, M=1", "4x1x1, M=1", "8x1x1, M=1"]
    assert [g for s, g in rows if s == "pp-1f1b"] == ["1x2x1, M=4", "1x4x1, M=4",
                                                      "1x8x1, M=4"]
    assert sorted(g for s, g in rows if s == "3d") == sorted(
        f"{g}, M=2" for g in ("1x2x4", "1x4x2", "2x1x4", "2x2x2", "2x4x1", "4x1x2", "4x2x1"))
    assert [g for s, g in rows if s == "pp-interleaved"] == ["1x2x1, M=4", "1x4x1, M=4",
                                                             "1x8x1, M=4"]
    assert verify.fit("pp-interleaved", (1, 8, 1, 4))[1] == (
        "2 chunks x 8 stages: pipeline of 16 stages, but the model has only 8 layers: "
        "every stage needs at least one layer")
    assert "M=4, K=3" in verify.fit("pp-interleaved", (1, 3, 1, 4))[1]
    assert [g for s, g in rows if s == "cp-ring"] == ["4x1x1, M=1, cp=2", "2x1x1, M=1, cp=4",
                                                      "1x1x1, M=1, cp=8"]
    assert "4 heads do not split over cp=8" in verify.fit("cp-ulysses", (1, 1, 1, 1, 8))[1]
    assert sorted(g for s, g in rows if s == "4d-ring") == sorted(
        f"{g}, M=2, cp={cp}" for g, cp in (("1x1x4", 2), ("1x2x2", 2), ("1x4x1", 2),
                                           ("2x1x2", 2), ("2x2x1", 2), ("1x1x2", 4),
                                           ("1x2x1", 4)))
    assert "the 1 heads of a tp rank (4 heads / tp=4) do not split over cp=2" in verify.fit(
        "4d-ulysses", (1, 1, 4, 2, 2))[1]
    # 3d: 2x2x1, 2x1x2, 1x2x2; each cp scheme: 2x1x1 with cp=2, 1x1x1 with cp=4;
    # each 4d scheme: 1x2x1 and 1x1x2 with cp=2
    # each zero-bubble and DualPipe scheme: 1x2x1, 1x4x1 and 2x2x1 (two dp pipelines);
    # moe-ep and moe-dropless: ep = 2, 4; moe-3d: 2x1x2 and 2x2x1 with ep = 2
    assert len(expected_rows(4)) == (5 * 2 + 2 + 3 * 2 + 3 + 2 + 2 + 3 * 2 + 3 * 2 + 3 * 3
                                     + 2 * 2 + 2 + 6 + 1 + 2 * 2 + 1    # fsdp2, hsdp: dp 2, 4;
                                     + 2 * 3)                            # moe-balanced; dualpipe
    assert len([1 for s, _ in expected_rows(4) if s == "3d"]) == 3


@pytest.fixture(scope="module")
def full_matrix():
    return run_cli(8)


def test_full_verify_on_eight_ranks_passes(full_matrix):
    code, out, err = full_matrix
    assert code == 0, out + err
    table = out[out.index("scheme "):]
    for scheme, grid in expected_rows(8):
        label = verify.SCHEMES[scheme].label
        line = re.search(rf"^{re.escape(label)}\s+{re.escape(grid)} .*$", table, re.M)
        if (scheme, grid) == ("pp-interleaved", "1x8x1, M=4"):     # 16 layer groups > 8
            assert line and "SKIP (2 chunks x 8 stages" in line.group(0), line
            continue
        if (scheme, grid) in (("pp-zbv", "1x8x1, M=8"),             # 16 layer groups > 8
                              ("pp-dualpipev", "1x8x1, M=16")):
            assert line and "SKIP (2 chunks x 8 stages" in line.group(0), line
            continue
        if (scheme, grid) == ("pp-zb-h2", "1x8x1, M=8"):            # M = 8 < 2K-1 = 15
            assert line and "SKIP (schedule 'zb-h2' needs at least 15" in line.group(0), line
            continue
        if (scheme, grid) == ("cp-ulysses", "1x1x1, M=1, cp=8"):   # 4 heads over 8 ranks
            assert line and "SKIP (Ulysses: 4 heads" in line.group(0), line
            continue
        if (scheme.startswith("4d-") and grid.startswith("1x4x1")) or (
                scheme == "moe-3d" and grid.startswith("2x4x1")):       # 4 stages > 2 layers
            assert line and "SKIP (pipeline of 4 stages" in line.group(0), line
            continue
        if (scheme, grid) in (("4d-ulysses", "1x1x4, M=2, cp=2"),   # H/tp heads over cp
                              ("4d-ulysses", "1x1x2, M=2, cp=4")):
            assert line and "SKIP (Ulysses: the " in line.group(0), line
            continue
        assert line and line.group(0).endswith("PASS"), (scheme, grid, line)
        numbers = [float(x) for x in re.findall(r"\d\.\de[+-]\d\d", line.group(0))]
        assert len(numbers) == 4 and numbers[3] == 1e-9 and max(numbers[:3]) <= 1e-9
    assert "114 of 125 rows pass, 11 skipped (float64; tolerance = max(1e-09, 100 x" in out
    assert "none failed" in out and "warning" not in out
    assert len(re.findall(r"^\[\s*\d+/125\] ", out, re.M)) == 125   # one progress line a row


@pytest.fixture(scope="module")
def broken():
    return run_mpi(2, "workers/verify_checks.py:check_broken", timeout=TIMEOUT)


@pytest.mark.parametrize("case, bad", [("ddp_no_grad_all_reduce", "ddp"), ("tp_no_g", "tp")])
def test_a_broken_scheme_fails_by_name_and_only_it(broken, case, bad):
    for rank_result in broken:
        rows = rank_result[case]
        assert [(r["scheme"], r["grid"]) for r in rows] == [("ddp", "2x1x1, M=1"),
                                                            ("tp", "1x1x2, M=1")]
        for r in rows:
            if r["scheme"] == bad:
                assert r["status"] == "FAIL" and r["grad"] > 1e-3 and r["weight"] > 1e-3, r
            else:
                assert r["status"] == "PASS" and max(r["loss"], r["grad"], r["weight"]) < 1e-9
    assert all(res == broken[0] for res in broken)          # every rank got the same rows


def test_a_check_that_raises_everywhere_is_an_error_row_not_a_hang(broken):
    for res in broken:
        assert [r["status"] for r in res["raises"]] == ["ERROR"]
        assert res["raises"][0]["note"] == "ValueError: deliberate failure in ddp"
        assert "int8" in res["bad_dtype"] and "nope" in res["bad_scheme"]
        nan_row = res["nan_on_rank_1"][0]
        assert nan_row["status"] == "FAIL" and nan_row["grad"] != nan_row["grad"], nan_row


def test_cli_rejects_an_unknown_scheme_with_usage_error():
    """One line, once (not once per rank, under a usage: block), and no launcher line after."""
    code, out, err = run_cli(2, "--schemes", "ddp,bogus", timeout=60)
    assert code == 2 and "unknown scheme(s) ['bogus']" in err
    assert err.count("unknown scheme") == 1 and "usage:" not in err, err
    assert "the job failed" not in err and "no rank said why" not in err, err


def test_verify_fails_when_no_row_ran():
    """tp = 3 does not divide the model: the only row is a SKIP, and nothing was checked."""
    code, out, err = run_cli(3, "--schemes", "tp", timeout=60)
    assert code == 2, (out, err)
    assert "0 of 1 rows pass, 1 skipped" in out
    assert err.count("error: no row ran on 3 rank(s): every grid of tp was skipped") == 1, err


def test_a_check_that_raises_on_one_rank_aborts_the_job_with_its_traceback():
    code, out, err = run_script(2, "tests/workers/verify_checks.py", timeout=60)
    assert code not in (0, 124), (code, out, err)
    assert "RuntimeError: only rank 1 fails" in err
    assert "did not report within 2 s" in err and "not reached" not in out


def test_a_missing_scheme_module_is_a_skip_row(monkeypatch):
    real = verify._checks
    monkeypatch.setattr(verify, "_checks", lambda name: None if name == "data" else real(name))
    rows = verify.run_rows(["zero2"], steps=1)          # this process alone: no collective
    assert [(r["label"], r["grid"], r["status"], r["note"]) for r in rows] == [
        ("ZeRO-2", "-", "SKIP", "not available")]
    assert "ZeRO-2       -" in verify.table(rows, "float64")
    assert "SKIP (not available)" in verify.table(rows, "float64")


SUBSET = "ddp,zero3,tp,pp-1f1b,3d"


@pytest.mark.parametrize("nprocs", [3, 5, 6, 7])
def test_verify_runs_on_any_world_size_and_skips_what_does_not_fit(nprocs):
    code, out, err = run_cli(nprocs, "--schemes", SUBSET, "--steps", "1")
    assert code == 0, out + err
    assert out.startswith("minimegatron run: package ") and "minimegatron verify: package " in out
    table = out[out.index("scheme "):]
    plan = [(s, d) for s, d in verify.plan_rows(SUBSET.split(","), nprocs)]
    for scheme, dims in plan:
        if dims == ():                                 # 3d on a prime world: one SKIP row
            assert nprocs in (3, 5, 7) and scheme == "3d", (scheme, nprocs)
            assert re.search(rf"^3D\s+-\s.*SKIP \({re.escape(verify.no_grid(scheme, nprocs))}\)$",
                             table, re.M), table
            continue
        grid = "{}x{}x{}, M={}".format(*dims)
        line = re.search(rf"^{re.escape(verify.SCHEMES[scheme].label)}\s+{re.escape(grid)} .*$",
                         table, re.M)
        assert line, (scheme, grid, table)
        batch, reason = verify.fit(scheme, dims)
        if reason:                                     # tp = 3, 5, 6, 7 cannot split 8 heads
            assert line.group(0).endswith(f"SKIP ({reason})"), line.group(0)
            assert "is not divisible by tp=" in reason
        else:
            assert line.group(0).endswith("PASS"), line.group(0)
            assert batch % (dims[0] * dims[3]) == 0
    passed = sum(d != () and verify.fit(s, d)[1] is None for s, d in plan)
    assert f"{passed} of {len(plan)} rows pass, {len(plan) - passed} skipped" in out
    assert passed >= 3 and not re.search(r"(FAIL|ERROR)$", table, re.M)


def test_a_requested_scheme_with_no_grid_is_a_skip_row_never_dropped():
    """3 ranks: 3d, 4d-ring and moe-3d have no grid; each is a SKIP row saying why."""
    code, out, err = run_cli(3, "--schemes", "ddp,3d,4d-ring,moe-3d", "--steps", "1",
                             timeout=120)
    assert code == 0, out + err
    table = out[out.index("scheme "):]
    for label, rule in (("3D", "two axes > 1"), ("4D ring", "cp > 1 and tp or pp > 1"),
                        ("MoE ep+3D", "dp > 1 and tp or pp > 1")):
        line = re.search(rf"^{re.escape(label)}\s+-\s.*$", table, re.M)
        assert line and line.group(0).endswith(f"SKIP (no grid of 3 rank(s) fits: needs "
                                               f"dp x pp x tp{' x cp' * (label[0] == '4')} "
                                               f"with {rule})"), table
    assert "1 of 4 rows pass, 3 skipped" in out, out
    assert [s for s, d in verify.plan_rows(["ddp", "moe-3d"], 3)] == ["ddp", "moe-3d"]


def test_tolerance_grows_with_the_steps_and_stays_tight_for_few():
    config = verify._with_dtype(verify.VERIFY_CONFIG, "float64")
    short = verify.tolerance(config, 2, 8)
    assert short == {"loss": 1e-9, "grad": 1e-9, "weight": 1e-9}      # the floor
    long = verify.tolerance(config, 25, 8)
    assert long["weight"] > 1e-9 and long["grad"] > 1e-9                 # drift took over
    assert long["weight"] < 1e-2                                         # still tells bugs


# per dtype, a correct row's bounds (grad, weight, loss) and a broken row's least grad diff:
# float16 ~5e-4, bf16 ~4e-3, fp8 ~1e-2 (flipped e4m3 roundings); a missing all-reduce ~1e-1
LOW_BOUNDS = {"float16": (2e-3, 2.0 ** -10, 1e-4, 1e-2),
              "bfloat16": (5e-3, 2.0 ** -8, 1e-3, 0.1), "fp8": (2e-2, 2.0 ** -8, 1e-3, 0.1)}


@pytest.fixture(scope="module", params=list(LOW_BOUNDS))
def broken_low(request):
    return request.param, run_mpi(2, "workers/verify_checks.py:check_broken",
                                  args=(["ddp", "tp"], request.param), timeout=TIMEOUT)


@pytest.mark.parametrize("case, bad", [("ddp_no_grad_all_reduce", "ddp"), ("tp_no_g", "tp")])
def test_low_precision_rows_fail_a_broken_scheme_and_pass_the_other(broken_low, case, bad):
    """--precision mixed (float16), --dtype bfloat16, --dtype fp8: each against one process
    and against the wider float run (vs64: <= 1 passes)."""
    dtype, results = broken_low
    grad, weight, loss, broken = LOW_BOUNDS[dtype]
    for res in results:
        for r in res[case]:
            if r["scheme"] == bad:
                assert r["status"] == "FAIL" and r["grad"] > broken and r["vs64"] > 1, r
            else:
                assert r["status"] == "PASS" and r["grad"] < grad and r["vs64"] < 0.5, r
                assert r["weight"] <= weight and r["loss"] < loss, r


def test_cli_precision_mixed_runs_every_kind_of_scheme_on_two_ranks():
    code, out, err = run_cli(2, "--precision", "mixed", "--schemes", "zero2,pp-1f1b",
                             "--steps", "2")
    assert code == 0, out + err
    assert "float16, 2 mixed-precision SGD steps" in out and "vs f64" in out
    assert "2 of 2 rows pass" in out and "4 x one process's drift" in out


def test_tolerances_of_bf16_and_fp8_rows():
    config = verify._with_dtype(verify.VERIFY_CONFIG, "bfloat16")
    assert config.dtype == "bfloat16" and not config.fp8
    bf16 = verify.tolerance(config, 2, 4)
    assert bf16 == {"loss": 2.0 ** -7, "grad": 2.0 ** -7, "weight": 2.0 ** -7}   # the floor
    fp8 = verify.tolerance(verify._with_dtype(verify.VERIFY_CONFIG, "fp8"), 2, 4)
    assert fp8["weight"] == bf16["weight"] and 2.0 ** -7 < fp8["grad"] < 0.1


def test_cli_bf16_and_fp8_run_on_two_ranks():
    code, out, err = run_cli(2, "--dtype", "bfloat16", "--schemes", "zero2,tp-sp,pp-1f1b",
                             "--steps", "2")
    assert code == 0, out + err
    assert "bfloat16, 2 mixed-precision SGD steps" in out and "vs f32" in out
    assert "3 of 3 rows pass" in out and "float32 run's max |value|" in out
    code, out, err = run_cli(2, "--dtype", "fp8", "--schemes", "tp,tp-sp,moe-ep",
                             "--steps", "2")
    assert code == 0, out + err
    # sequence parallelism (the e4m3 bytes gathered) and MoE (grouped experts) run fp8 too
    assert "3 of 3 rows pass, 0 skipped (fp8" in out and "SKIP" not in out
    assert "one flipped e4m3 rounding" in out
