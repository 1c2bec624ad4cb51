"""The interleaved 1F1B schedule (Megatron-LM 2021): as data, simulated, and on real ranks.

Without MPI: for K stages, v chunks and M micro-batches (M a multiple of K)
every rank runs each (micro-batch, chunk) forward then backward, the sends
and receives of every virtual-stage boundary match and run to the end, the
simulated bubble is exactly the paper's (1/v)(K-1)/M (Fractions), the
activations held at peak follow the warm-up count, and there are v times as
many messages per interior rank as in plain 1F1B (2M(Kv-1) in all).
On 2 and 4 real ranks: loss, gradients and weights equal one process, the
engine holds and sends what the schedule says, and M not a multiple of K is
one ValueError on every rank; Trainer3D runs it on 4-rank grids. Stages built with
other chunks or micro-batches are named at construction (a mismatch), not left to hang.
"""
from fractions import Fraction

import pytest

from mpi_harness import TESTS_DIR, minimegatron_run, run_mpi, time_bound

from minimegatron.checks.pipeline import TOLERANCE
from minimegatron.parallel.pipeline_parallel.actions import Action
from minimegatron.parallel.pipeline_parallel.schedules import (bubble_formula, get_schedule,
                                                               interleaved, one_f_one_b,
                                                               peak_in_flight)
from minimegatron.parallel.pipeline_parallel.simulator import simulate
from minimegatron.parallel.pipeline_parallel import ChunkedStage

GRID = [(k, v, m) for k in range(1, 7) for v in range(1, 5) for m in range(k, 4 * k + 1, k)]


def programs(k, v, m):
    return [interleaved(k, m, s, v) for s in range(k)]


def warmup_formula(k, v, m, stage):
    return min(2 * (k - stage - 1) + (v - 1) * k, m * v)


def test_chunks_visit_every_micro_batch_in_groups_of_k():
    assert " ".join(map(str, interleaved(2, 4, 0, 2)[:8])) == (
        "F0c0 SA0c0 F1c0 SA1c0 RA0c1 F0c1 SA0c1 RA1c1")    # 2 micro-batches, then chunk 1
    for k, v, m in GRID:
        for s, actions in enumerate(programs(k, v, m)):
            forwards = [(a.micro_batch, a.chunk) for a in actions if a.op == "forward"]
            backwards = [(a.micro_batch, a.chunk) for a in actions if a.op == "backward"]
            assert sorted(forwards) == sorted(backwards) == [(i, c) for i in range(m)
                                                              for c in range(v)]
            for c in range(v):       # each chunk runs micro-batches 0..M-1 in order
                assert [i for i, chunk in forwards if chunk == c] == list(range(m))
            groups = [i // k for i, _ in forwards]
            assert groups == sorted(groups)                     # K at a time through chunks
            first_backward = next(n for n, a in enumerate(actions) if a.op == "backward")
            before = sum(a.op == "forward" for a in actions[:first_backward])
            assert before == min(warmup_formula(k, v, m, s) + 1, m * v)  # warm-up, then 1F


def test_sends_match_receives_across_every_virtual_boundary_and_wrap_around():
    for k, v, m in GRID:
        progs = programs(k, v, m)

        def stream(op, stage, chunk):
            return [a.micro_batch for a in progs[stage] if a.op == op and a.chunk == chunk]
        for vs in range(k * v - 1):                    # virtual stage vs -> vs + 1
            (c, s), (c2, s2) = divmod(vs, k), divmod(vs + 1, k)
            assert stream("send_act", s, c) == stream("recv_act", s2, c2) == list(range(m))
            assert sorted(stream("send_grad", s2, c2)) == stream("recv_grad", s, c)
        simulate("interleaved", k, m, Fraction(1), Fraction(1), v)   # RuntimeError if stuck


@pytest.mark.parametrize("t_backward", [1, 2, 3])
def test_bubble_is_exactly_the_papers_formula(t_backward):
    for k, v, m in GRID:
        sim = simulate("interleaved", k, m, Fraction(1), Fraction(t_backward), v)
        assert sim.bubble_ratio == Fraction(k - 1, v * m)           # (1/v)(K-1)/M
        assert sim.bubble_fraction == bubble_formula(k, m, v) == Fraction(k - 1, v * m + k - 1)
        assert sim.makespan == (1 + t_backward) * (m + Fraction(k - 1, v))
        if v == 1:     # one chunk: Megatron's order (warm-up 2(K-k-1)) has 1F1B's bubble
            assert sim.bubble_fraction == simulate("1f1b", k, m, Fraction(1),
                                                   Fraction(t_backward)).bubble_fraction


def test_activations_held_follow_the_warm_up():
    """Peak chunk activations: warm-up + 1 (one more forward before the first backward).

    Rank 0 at large M: 2(K-1) + (v-1)K + 1 chunks of 1/v stage each = K (1 + (K-1)/(Kv))
    micro-batches of a whole stage; plain 1F1B holds K (Korthikanti et al. 2022).
    """
    for k, v, m in GRID:
        for s in range(k):
            warmup = warmup_formula(k, v, m, s)
            assert peak_in_flight(interleaved(k, m, s, v)) == min(warmup + 1, m * v)
        if m * v > warmup_formula(k, v, m, 0):
            held = Fraction(peak_in_flight(interleaved(k, m, 0, v)), v)
            assert held == k * (1 + Fraction(k - 1, k * v))
            assert held >= peak_in_flight(one_f_one_b(k, m, 0)) == min(k, m)


def test_v_times_the_messages_of_plain_1f1b():
    for k, v, m in GRID:
        sends = [sum(a.op.startswith("send") for a in p) for p in programs(k, v, m)]
        plain = [sum(a.op.startswith("send") for a in one_f_one_b(k, m, s)) for s in range(k)]
        assert sum(sends) == 2 * m * (k * v - 1)       # act + grad per virtual boundary
        assert sum(plain) == 2 * m * (k - 1)
        assert sends[1:-1] == [v * n for n in plain[1:-1]]   # interior ranks: exactly v times
        if k > 1:
            last = [a for a in programs(k, v, m)[-1] if a.op == "send_act"]
            assert len(last) == m * (v - 1)            # K-1 chunk c wraps to rank 0 chunk c+1


def test_errors_and_format():
    with pytest.raises(ValueError, match="multiple of the pipeline stages: M=6, K=4"):
        interleaved(4, 6, 0, 2)
    with pytest.raises(ValueError, match="M=6, K=4"):
        simulate("interleaved", 4, 6, num_chunks=2)
    with pytest.raises(ValueError, match="num_chunks must be an int >= 1"):
        interleaved(2, 2, 0, 0)
    with pytest.raises(ValueError, match="only 'interleaved' takes num_chunks=2"):
        get_schedule("1f1b", 2)
    assert get_schedule("interleaved", 3)(2, 2, 1) == interleaved(2, 2, 1, 3)
    assert str(Action("forward", 3, 1)) == "F3c1" and str(Action("forward", 3)) == "F3"


def test_chunked_stage_owns_layer_groups_k_k_plus_K():
    from minimegatron.data.demo import VERIFY_CONFIG
    from minimegatron.nn import GPT
    model = GPT(VERIFY_CONFIG)                                  # 8 layers
    stages = [ChunkedStage(model, k, 2, 2) for k in range(2)]
    assert [[c.layers for c in s.chunks] for s in stages] == [[[0, 1], [4, 5]], [[2, 3], [6, 7]]]
    names = [n for s in stages for n, _ in s.named_parameters()]
    assert sorted(names) == sorted(n for n, _ in model.named_parameters())
    assert stages[0].chunks[0].is_first and stages[1].chunks[1].is_last
    assert not stages[1].chunks[0].is_last and "head.weight" in dict(
        stages[1].named_parameters())
    with pytest.raises(ValueError, match="pipeline of 16 stages"):
        ChunkedStage(model, 0, 4, 4)


def test_timeline_command_draws_it(capsys, tmp_path):
    from minimegatron.commands.timeline import main
    png = tmp_path / "il.png"
    assert main(["--schedule", "interleaved", "--stages", "4", "--chunks", "2",
                 "--micro-batches", "8", "--out", str(png)]) in (0, 1)
    out = capsys.readouterr().out
    assert "stage 0 |F0c0 F1c0 F2c0 F3c0 F0c1" in out
    assert "= 3/19 (plain 1F1B 3/11" in out and "(1/v)(K-1)/M" in out
    assert "per stage: [11, 9, 7, 5]" in out
    with pytest.raises(SystemExit):
        main(["--schedule", "interleaved", "--stages", "3", "--micro-batches", "8", "--out", ""])
    assert "multiple of the pipeline stages" in capsys.readouterr().err


# --- real ranks ---------------------------------------------------------------------------

CASES = {2: [(2, 2, 0), (2, 4, 1), (4, 4, 0)], 4: [(2, 4, 0), (2, 8, 1)]}   # (v, M, ckpt)


@pytest.fixture(scope="module", params=sorted(CASES))
def launch(request):
    cases = CASES[request.param]
    return request.param, run_mpi(request.param, "workers/interleaved_checks.py:run",
                                  args=(cases,), timeout=240)


def test_matches_one_process(launch):
    k, results = launch
    for rank, res in enumerate(results):
        assert len(res["equivalence"]) == len(CASES[k])
        for case, diffs in res["equivalence"].items():
            for key, value in diffs.items():
                assert value < TOLERANCE, f"K={k}, rank {rank}, {case}: {key} {value}"


def test_engine_holds_and_sends_what_the_schedule_says(launch):
    k, results = launch
    for v, m, ckpt in CASES[k]:
        case = f"v={v}/M={m}/ckpt={ckpt}"
        total = sum(res["sends"][case]["count"] for res in results)
        assert total == 2 * m * (k * v - 1)
        nbytes = 2 * 32 * 8 * 8          # micro-batch 2 x seq 8 x d_model 32 x 8 bytes
        assert all(res["sends"][case]["bytes"] == res["sends"][case]["count"] * nbytes
                   for res in results)
        for s, res in enumerate(results):
            stats = res["stats"][case]
            assert stats["peak_in_flight"] == min(warmup_formula(k, v, m, s) + 1, m * v)
            layers = 8 // (k * v)
            assert stats["chunk_layers"] == [list(range((c * k + s) * layers,
                                                         (c * k + s + 1) * layers))
                                             for c in range(v)]


def test_m_not_a_multiple_of_k_fails_on_every_rank(launch):
    k, results = launch
    for res in results:
        assert res["errors"]["interleaved_m_not_multiple"] == (
            "the interleaved schedule needs the number of micro-batches to be a multiple of "
            f"the pipeline stages: M={k + 1}, K={k}")


def test_3d_trainer_runs_it_against_one_process():
    """dp2 x pp2 and pp2 x tp2 on 4 ranks: every group a strict subset of the world."""
    grids = [((2, 2, 1), 2, 2), ((1, 2, 2), 2, 2), ((1, 4, 1), 2, 4)]
    results = run_mpi(4, "workers/interleaved_checks.py:grids_3d", args=(grids,), timeout=240)
    for rank, res in enumerate(results):
        assert len(res) == 3
        for name, diffs in res.items():
            assert diffs["compared"] > 0
            for key in ("loss", "grad", "weight"):
                assert diffs[key] < TOLERANCE, (rank, name, key, diffs[key])


@pytest.mark.parametrize("case", ["chunks", "micro_batches"])
def test_stages_built_with_another_configuration_name_the_rank(case):
    """Before: interleaved stages of 2 and 4 chunks hung in a receive (checks on or off).
    Trainer3D's plan agreement (comm/agreement.py) names the field before the engine's."""
    code, out, err, seconds = minimegatron_run(
        "-n", "2", "--timeout", "40", f"{TESTS_DIR}/workers/pp_config_mismatch.py", case)
    assert code not in (0, 124), err
    assert f"collective mismatch in group 'world' (the training plan differs in: {case};" in err
    assert f"  rank 0 (world 0): {case}=2 at " in err, err
    assert f"  rank 1 (world 1): {case}=4 at " in err, err
    assert "trained" not in out and seconds < time_bound(20, 39)   # a hang: --timeout 40
