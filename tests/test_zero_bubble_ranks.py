"""Zero-bubble schedules on 1, 2 and 4 real ranks against one process.

One launch per world size (tests/workers/zb_checks.py). Loss, gradients and
weights equal one process for zb-h1, zb-h2 and zbv (float64 tight, float32 within
verify's tolerance; with recomputation too); a step traces one F, B and W per
micro-batch and chunk, sends 2M(V-1) messages for V virtual stages (the V's turn
on the last rank is no message), and holds the schedule's peak. A schedule that
skips a W, runs a W before its B, or an engine whose W adds nothing, fails.
On 4 ranks Trainer3D equals one process too: DDP over two pipelines of 2, and
pipelines of 2 tensor-parallel ranks per stage (with sequence parallelism).
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
            assert len(res["grids"]) == 9
            for name, diffs in res["grids"].items():
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


@pytest.fixture(scope="module")
def emulated():
    """4 stages, M = 8, T_F = T_B = T_W = 20 ms of emulated device time."""
    return run_mpi(4, "workers/zb_checks.py:emulated", args=([0.02, 0.02, 0.02], 8),
                   timeout=240)[0]


def test_emulated_device_time_measures_the_simulated_bubbles(emulated):
    """Simulated: 1F1B 9 T, ZB-H1 3 T, ZBV 0 (T = 20 ms); measured within a few wake-ups."""
    simulated = {name: run["simulated"]["bubble"] for name, run in emulated.items()}
    assert simulated == pytest.approx({"1f1b": 0.18, "zb-h1": 0.06, "zbv": 0.0})
    measured = {name: run["measured"]["bubble"] for name, run in emulated.items()}
    assert measured["1f1b"] > measured["zb-h1"] + 0.04 and measured["1f1b"] > measured["zbv"]
    for name, run in emulated.items():
        assert run["measured"]["makespan"] == pytest.approx(run["simulated"]["makespan"],
                                                            rel=0.3), name
        assert measured[name] >= simulated[name] - 0.01     # a real run only adds delays
    assert emulated["zbv"]["measured"]["makespan"] < emulated["1f1b"]["measured"]["makespan"]


def test_chrome_trace_of_a_real_zbv_run_matches_its_trace(emulated, tmp_path):
    from test_chrome_trace import check_chrome_trace
    from minimegatron.tools import chrome_trace
    spans = emulated["zbv"]["spans"]
    path = chrome_trace.write(chrome_trace.from_trace(spans, "zbv on 4 ranks"),
                              str(tmp_path / "zbv.json"))
    with open(path) as file:
        events = check_chrome_trace(file.read())
    assert len(events) == len(spans)
    compute = [e for e in events if e["cat"] in ("forward", "backward", "weight")]
    assert len(compute) == 4 * 8 * 2 * 3                     # F, B, W of 8 x 2 chunks x 4
    assert {(e["tid"], e["name"]) for e in compute} == {     # named by micro-batch and chunk
        (rank, f"{op}{i}c{c}") for rank in range(4) for op in "FBW" for i in range(8)
        for c in (0, 1)}
    origin = min(span["start"] for span in spans)
    expected = sorted((s["rank"], s["op"], round((s["start"] - origin) * 1e6, 3),
                       round((s["end"] - s["start"]) * 1e6, 3)) for s in spans)
    got = sorted((e["tid"], e["cat"], round(e["ts"], 3), round(e["dur"], 3)) for e in events)
    assert got == expected
