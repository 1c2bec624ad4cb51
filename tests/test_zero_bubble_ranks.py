"""Zero-bubble schedules on 1, 2 and 4 real ranks against one process.

One launch per world size (tests/workers/zb_checks.py). Loss, gradients and
weights equal one process for zb-h1, zb-h2 and zbv (float64 tight, float32 within
verify's tolerance; with recomputation too); a step traces one F, B and W per
micro-batch and chunk, sends 2M(V-1) messages for V virtual stages (the V's turn
on the last rank is no message), and holds the schedule's peak. A schedule that
skips a W, runs a W before its B, or an engine whose W adds nothing, fails.
On 4 ranks, DDP over two pipelines of 2 (Trainer3D) equals one process too.
"""
import pytest

from mpi_harness import run_mpi

from minimegatron.checks.pipeline import TOLERANCE
from minimegatron.parallel.pipeline_parallel.schedules import get_schedule, peak_in_flight

_launches = {}


@pytest.fixture(scope="module", params=[1, 2, 4])
def launch(request):
    if request.param not in _launches:
        _launches[request.param] = run_mpi(request.param, "workers/zb_checks.py:run",
                                           timeout=400)
    return request.param, _launches[request.param]


def test_every_zero_bubble_schedule_matches_one_process(launch):
    K, results = launch
    for rank, res in enumerate(results):
        assert len(res["equivalence"]) == 18
        for case, diffs in res["equivalence"].items():
            bounds = diffs.pop("tolerance", None) or {key: TOLERANCE for key in diffs}
            assert bounds["loss"] <= 1e-4 and bounds["grad"] <= 1e-4   # float32: verify's
            for key, value in diffs.items():
                assert value < bounds[key], f"K={K}, rank {rank}, {case}: {key} {value}"
        if K == 4:
            for name, diffs in res["dp2"].items():
                for key in ("loss", "grad", "weight"):
                    assert diffs[key] < TOLERANCE, (rank, name, key, diffs[key])
                assert diffs["compared"] > 0


def test_a_step_runs_f_b_w_of_each_micro_batch_and_chunk_once(launch):
    K, results = launch
    for name in ("zb-h1", "zb-h2", "zbv"):
        v = 2 if name == "zbv" else 1
        m = results[0]["steps"][name]["M"]
        sends = 0
        for s, res in enumerate(results):
            steps = res["steps"][name]
            assert steps["forward"] == steps["backward"] == steps["weight"] == m * v
            assert steps["peak"] == peak_in_flight(get_schedule(name)(K, m, s))
            sends += steps.get("send", 0)
        boundaries = K - 1 if v == 1 else 2 * K - 2    # the V's turn is no message
        assert sends == 2 * m * boundaries
    if K == 2:
        assert [r["steps"]["zbv"]["layers"] for r in results] == [[0, 1, 6, 7], [2, 3, 4, 5]]


def test_a_skipped_or_misplaced_w_fails(launch):
    K, results = launch
    for res in results:
        mutants = res["mutants"]
        for name in ("zb-h1", "zb-h2", "zbv"):
            assert "left work behind" in mutants[f"{name}/drop_last_weight"]["error"]
            assert "before its B" in mutants[f"{name}/weight_first"]["error"]
        nothing = mutants["zb-h1/w_does_nothing"]            # weights never get a gradient
        assert "NoneType" in nothing.get("error", "") or nothing["grad"] > 1e-3
