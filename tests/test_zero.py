"""ZeRO stages 1, 2, 3 on 1, 2, 4 and 8 real MPI ranks: equivalence, memory, bytes.

One launch per rank count (tests/workers/dp_checks.py:check_zero_all) trains DDP
(stage 0) and every stage for 5 AdamW steps next to one process and returns the
differences (tolerance 1e-10, float64), the measured model-state bytes
(tools/memory_measure.py) and the trace's bytes per step.
"""
import math
from collections import defaultdict

import pytest

from mpi_harness import run_mpi

from minimegatron.data.demo import SMALL_CONFIG
from minimegatron.nn import GPT
from minimegatron.tools.memory_measure import formula, padding_margin

TOL = 1e-10
MODEL = GPT(SMALL_CONFIG)
PARAMS = MODEL.num_parameters()


def unit_sizes():
    """Values per ZeRO-3 unit (a module that owns parameters), in model order."""
    units = defaultdict(int)
    for name, p in MODEL.named_parameters():
        units[name.rsplit(".", 1)[0]] += p.size
    return list(units.values())


def padded(n, parts):
    return math.ceil(n / parts) * parts


@pytest.fixture(scope="module", params=[1, 2, 4, 8])
def launch(request):
    return request.param, run_mpi(request.param, "workers/dp_checks.py:check_zero_all",
                                  timeout=150)


def test_every_stage_equals_one_process(launch):
    _, results = launch
    for rank, res in enumerate(results):
        for stage in (1, 2, 3):
            for run in (f"stage{stage}", f"odd_stage{stage}"):     # odd: sizes need padding
                r = res[run]
                assert max(r["loss"], r["grad"], r["weight"], r["final_weight"]) < TOL, \
                    (rank, run, r)


def test_padding_when_sizes_do_not_divide(launch):
    """ODD_CONFIG (d_model 12): P and layer sizes not multiples of N are padded, and the
    measured bytes stay within the padding margin of the formula."""
    N, results = launch
    for res in results:
        P = res["odd_params"]
        for stage in (1, 2, 3):
            r = res[f"odd_stage{stage}"]
            got, want = r["memory"], formula(P, N, stage, "float64")
            assert abs(got["total"] - want["total"]) <= padding_margin(N, r["groups"])
    if N == 8:
        assert results[0]["odd_params"] % N                          # really padded


def test_measured_memory_matches_the_formulas(launch):
    """Per-rank bytes from the real arrays vs model_state_bytes(P, N, stage, "float64"),
    within the padding margin 4 * 8 * N * groups bytes."""
    N, results = launch
    for res in results:
        assert res["params"] == PARAMS
        for stage in range(4):
            got, want = res[f"stage{stage}"]["memory"], formula(PARAMS, N, stage, "float64")
            groups = res[f"stage{stage}"].get("groups", 1)
            margin = padding_margin(N, groups) if stage else 0
            for kind in ("weights", "grads", "optimizer", "total"):
                assert abs(got[kind] - want[kind]) <= margin, (stage, kind, got, want)
        totals = [res[f"stage{s}"]["memory"]["total"] for s in range(4)]
        if N > 1:
            assert totals == sorted(totals, reverse=True) and len(set(totals)) == 4
        assert totals[0] == 4 * 8 * PARAMS                       # 4bP, b = 8


def test_stage3_gathers_one_unit_at_a_time(launch):
    N, results = launch
    largest = max(8 * padded(n, N) for n in unit_sizes())
    for res in results:
        assert res["stage3"]["memory"]["peak_gathered"] == largest
        assert res["stage3"]["groups"] == len(unit_sizes())


def test_communication_per_step(launch):
    """ring model: DDP 2(N-1)/N G; stage 1 all-reduce + all-gather 3(N-1)/N G; stage 2
    reduce-scatter + all-gather 2(N-1)/N G; stage 3 2 all-gathers + reduce-scatter per unit
    3(N-1)/N G, i.e. 1.5x DDP (G = 8P bytes, padded to a multiple of N)."""
    N, results = launch
    g_flat = 8 * padded(PARAMS, N)
    g_units = 8 * sum(padded(n, N) for n in unit_sizes())
    for res in results:
        ddp = res["stage0"]["sent"]
        assert ddp == 2 * (N - 1) * 8 * PARAMS // N
        assert res["stage1"]["sent"] == 2 * (N - 1) * g_flat // N + (N - 1) * g_flat // N
        assert res["stage2"]["sent"] == 2 * (N - 1) * g_flat // N
        assert res["stage3"]["sent"] == 3 * (N - 1) * g_units // N
        for stage in range(4):
            assert res[f"stage{stage}"]["sent"] == res[f"stage{stage}"]["recv"]
        if N > 1:
            assert abs(res["stage3"]["sent"] / ddp - 1.5) < 0.02


def test_bad_stage_is_a_clear_error_on_every_rank(launch):
    _, results = launch
    for key in ("bad_stage_0", "bad_stage_4", "bad_stage_2"):
        messages = {res["errors"][key] for res in results}
        assert len(messages) == 1, messages
        assert "ZeRO stage must be 1, 2 or 3" in messages.pop()
