"""3D parallelism (dp x pp x tp) against one process, and the calculator against a real run.

Launches: ONE 8-rank job runs every check (tests/workers/threed_checks.py): all ten
factorisations of 8 and 1 x 1 x 1, six variants (ZeRO-1/2, GPipe, naive, activation
checkpointing), 3 AdamW steps each (float64; observed differences <= 2e-13,
tolerance 1e-10), the ValueErrors, and traced steps of the demo GPT measured next
to tools/memory.rank_report. Then the tutorial as students run it: 8 ranks, 1 rank,
and a wrong grid. About 25 s on a quiet 2-core machine.
"""
import os
import re

import pytest

from mpi_harness import run_mpi, run_script

from minimegatron.checks.threed import factorisations
from minimegatron.tools.memory_measure import padding_margin

TOL = 1e-10
GRIDS_OF_8 = ["1x1x8", "1x2x4", "1x4x2", "1x8x1", "2x1x4", "2x2x2", "2x4x1", "4x1x2",
              "4x2x1", "8x1x1"]
TUTORIAL = "tutorials/08_3d_parallel.py"


@pytest.fixture(scope="module")
def results():
    return run_mpi(8, "workers/threed_checks.py:check_everything", timeout=300)


def test_factorisations_of_8():
    assert [f"{d}x{p}x{t}" for d, p, t in factorisations(8)] == GRIDS_OF_8
    assert factorisations(1) == [(1, 1, 1)]


def test_every_grid_equals_serial(results):
    assert sorted(results[0]["grids"]) == sorted(GRIDS_OF_8 + ["1x1x1"])
    for rank, res in enumerate(results):
        assert sorted(res["grids"]) == sorted(GRIDS_OF_8 + (["1x1x1"] if rank == 0 else []))
        for grid, diffs in res["grids"].items():
            assert diffs["compared"] > 0, (rank, grid)
            for key in ("loss", "grad", "weight"):
                assert diffs[key] < TOL, (rank, grid, key, diffs[key])


def test_every_rank_holds_its_part(results):
    """Stage k of K holds 96/K block tensors (8 blocks x 12), + wte, wpe on the first
    stage, + ln_f (2) and head on the last: parameter tensors per rank, every grid."""
    for grid in GRIDS_OF_8:
        pp = int(grid.split("x")[1])
        blocks = 12 * 8 // pp
        expected = {blocks + 5} if pp == 1 else {blocks + 2, blocks + 3} | (
            {blocks} if pp > 2 else set())
        assert {res["grids"][grid]["compared"] for res in results} == expected, grid


def test_zero_schedules_and_checkpointing_compose_with_the_grid(results):
    """ShardedOptimizer (stage 1, 2) over dp in place of DDP, GPipe with 4 micro-batches,
    the naive schedule, activation checkpointing: still one process's training."""
    for res in results:
        assert len(res["variants"]) == 6
        for grid, diffs in res["variants"].items():
            for key in ("loss", "grad", "weight"):
                assert diffs[key] < TOL, (grid, key, diffs[key])


def test_zero_memory_and_traffic_prediction(results):
    """4 x 1 x 2 with ZeRO-1/2: model state per rank = rank_report(zero=z) (padding aside).

    Traffic over dp equals the calculator's: ZeRO-2 2(N-1)/N * G (reduce-scatter +
    all-gather); ZeRO-1 3(N-1)/N * G (all-reduce of the gradients, then all-gather of the
    weights). Each + 2(N-1)/N * 8 = 12 B of loss all-reduce.
    """
    for res in results:
        for zero in ("1", "2"):
            got, want = res["zero_bytes"][zero]["measured"], res["zero_bytes"][zero]["predicted"]
            for key in ("weights", "grads", "optimizer"):
                assert abs(got[key] - want[key]) <= padding_margin(4, 1), (zero, key)
            assert got["grads"] < got["weights"] if zero == "2" else got["grads"] == want["grads"]
            assert got["dp"] == want["dp"] + 12, zero
            assert got["tp"] == want["tp"] and got["pp"] == want["pp"] == 0


def test_loss_is_the_same_global_mean_on_every_rank(results):
    for grid in GRIDS_OF_8:
        losses = [res["grids"][grid]["losses"] for res in results]
        assert len(losses[0]) == 3
        for other in losses[1:]:
            assert max(abs(a - b) for a, b in zip(losses[0], other)) < 1e-12, grid


def test_bad_configurations_raise_on_every_rank(results):
    words = {"batch": "multiple of 4", "heads": "n_head=5 is not divisible by tp=2",
             "layers": "only 1 layers", "zero": "zero_stage=3", "schedule": "zigzag",
             "micro_batches": "micro_batches", "world": "job has 8 ranks"}
    for res in results:
        for key, text in words.items():
            assert res["errors"][key] is not None and text in res["errors"][key], key
        assert res["errors"]["still_works"] == pytest.approx(results[0]["errors"]["still_works"])


def test_memory_prediction_is_exact(results):
    """Weights, grads and Adam state per rank: tools/memory.rank_report == the arrays."""
    for res in results:
        got, want = res["bytes"]["measured"], res["bytes"]["predicted"]
        for key in ("params", "weights", "grads", "optimizer"):
            assert got[key] == want[key], (key, got[key], want[key])
    assert {res["bytes"]["measured"]["params"] for res in results} == {13536, 13344}


def test_communication_prediction(results):
    """Bytes sent per step by dp / pp / tp (trace) vs rank_report: within 1%.

    The only difference is the loss bookkeeping the calculator leaves out: one 8-byte
    all-reduce of the loss over dp (2 ranks: 8 B sent) and the 8-byte broadcast of
    the loss from the last stage over pp ((K-1) * 8 B on the last stage).
    """
    for res in results:
        got, want, last = res["bytes"]["measured"], res["bytes"]["predicted"], \
            res["bytes"]["stage"] == 1
        assert got["tp"] == want["tp"]
        assert got["dp"] == want["dp"] + 8
        assert got["pp"] == want["pp"] + (8 if last else 0)
        for key in ("dp", "pp", "tp"):
            assert abs(got[key] - want[key]) <= 0.01 * want[key], key


def test_tutorial_on_8_ranks(tmp_path):
    code, out, err = run_script(8, TUTORIAL, ["--steps", "3", "--out", str(tmp_path)],
                                timeout=180)
    assert code == 0, out + err
    assert "ProcessGrid dp=2 x pp=2 x tp=2 = 8 ranks" in out
    assert len(re.findall(r"^step +\d+ +loss", out, re.M)) == 3
    rows = re.findall(r"^rank (\d) \((\d),(\d),(\d)\) +(?:8,048|7,088) ", out, re.M)
    assert [int(r[0]) for r in rows] == list(range(8))          # one row per rank, in order
    assert "predicted by tools/memory.rank_report" in out
    assert ("(trace.comm_by_dimension: cp, ep, dp x cp, edp): at most 0 B on a rank, formula 0 "
            "(no cp or ep axis here); every byte each rank sent is in a dimension: yes") in out
    worst = float(re.search(r"max \|3D - serial\| over 3 steps: (\S+);", out).group(1))
    assert worst < TOL
    png = os.path.join(tmp_path, "3d_timeline.png")
    assert os.path.getsize(png) > 10_000
    with open(os.path.join(tmp_path, "3d_timeline.json")) as file:   # Chrome trace, all ranks
        check_trace_against_the_run(file.read(), out)
    assert re.search(r"^after 3 steps: \d+ of \d+ words are corpus words", out, re.M)
    assert "the serial model writes the same text: yes" in out     # sampled on 2 x 2 x 2
    assert os.path.getsize(os.path.join(tmp_path, "3d_gpt.npz")) > 100_000


def check_trace_against_the_run(document, out):
    """The 3D tutorial's Chrome trace follows the format and holds the run's last step: on
    every rank F and B of each micro-batch, its tp and dp all-reduces with the bytes the
    printed table (read from the same trace) gives, and times in microseconds that span
    the step's printed milliseconds."""
    from test_chrome_trace import check_chrome_trace
    events = check_chrome_trace(document)
    assert {e["tid"] for e in events} == set(range(8))
    table = {int(m.group(1)): [int(v.replace(",", "")) for v in m.groups()[1:]]
             for m in re.finditer(r"^rank (\d) \(\d,\d,\d\) +[\d,]+ +[\d,]+ +[\d,]+ +[\d,]+ +"
                                  r"([\d,]+) +[\d,]+ +([\d,]+)$", out, re.M)}
    assert sorted(table) == list(range(8)), out
    for rank, (dp_sent, tp_sent) in table.items():
        mine = [e for e in events if e["tid"] == rank]
        steps = sorted(e["name"] for e in mine if e["cat"] in ("forward", "backward"))
        assert steps == ["B0", "B1", "F0", "F1"], (rank, steps)        # M = 2
        for kind, sent in (("dp", dp_sent), ("tp", tp_sent)):
            traced = sum(e["args"]["bytes_sent"] for e in mine
                         if str(e["args"].get("group", "")).startswith(kind))
            assert traced == sent > 0, (rank, kind, traced, sent)
    last_ms = float(re.findall(r"^step +\d+ +loss .* ([\d.]+) ms$", out, re.M)[-1])
    extent_ms = (max(e["ts"] + e["dur"] for e in events) - min(e["ts"] for e in events)) / 1e3
    assert 0.5 * last_ms < extent_ms < 1.5 * last_ms + 20, (extent_ms, last_ms)


def test_tutorial_on_one_rank_and_a_wrong_grid(tmp_path):
    code, out, err = run_script(1, TUTORIAL, ["--dp", "1", "--pp", "1", "--tp", "1",
                                              "--steps", "2", "--out", str(tmp_path)])
    assert code == 0, out + err
    assert float(re.search(r"max \|3D - serial\| over 2 steps: (\S+);", out).group(1)) < TOL
    code, out, err = run_script(1, TUTORIAL, ["--dp", "2", "--out", str(tmp_path)])
    assert code == 2
    assert "this job has 1 ranks" in err and "Traceback" not in err
