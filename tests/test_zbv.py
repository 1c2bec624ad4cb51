"""ZBV (two chunks per stage in a V, backward split into B and W) as data, simulated.

For every K <= 6 and M from 2K-1: each stage runs F, B, W of every (micro-batch,
chunk) once, F before B before W; sends match receives across every boundary of
the V (the last rank hands chunk 0's output to its chunk 1); the simulated bubble
is 0 when T_F = T_B = T_W and below 1F1B's (and ZB-H1's) whenever T_W > 0; every
stage holds at most 2K chunk activations, K micro-batches' worth of its layers:
1F1B's peak.
"""
from fractions import Fraction

import pytest

from minimegatron.nn import GPT
from minimegatron.data.demo import VERIFY_CONFIG
from minimegatron.parallel.pipeline_parallel.actions import Action
from minimegatron.parallel.pipeline_parallel.schedules import (get_schedule, peak_in_flight,
                                                               placement)
from minimegatron.parallel.pipeline_parallel.simulator import simulate
from minimegatron.parallel.pipeline_parallel.stage import ChunkedStage, PipelineStage
from minimegatron.parallel.pipeline_parallel.schedules import check_chunks
from minimegatron.parallel.pipeline_parallel.zero_bubble import v_placement, zbv

GRID = [(K, M) for K in range(1, 7) for M in range(2 * K - 1, 3 * K + 3)]
TIMES = [(1, 1, 1), (1, 2, 1), (2, 1, 1), (3, 2, 1), (2, 3, 2), (1, 1, Fraction(1, 2)),
         (Fraction(3, 2), Fraction(1, 2), 1), (1, 1, 2), (1, 1, Fraction(1, 4))]


def check_v_schedule(progs, M):
    """AssertionError unless every stage runs F, B, W of each (micro-batch, chunk) in a legal
    order, receives and sends sit beside their compute, and each boundary of the V pairs."""
    K = len(progs)
    for stage, actions in enumerate(progs):
        where = {}
        for position, a in enumerate(actions):
            if a.op in ("forward", "backward", "weight"):
                assert (a.op, a.micro_batch, a.chunk) not in where, f"{a} twice"
                where[a.op, a.micro_batch, a.chunk] = position
        for c in (0, 1):
            assert [a.micro_batch for a in actions if a.op == "forward" and a.chunk == c] \
                == list(range(M))
            for i in range(M):
                steps = [where.get((op, i, c)) for op in ("forward", "backward", "weight")]
                assert None not in steps, f"stage {stage}: {i}c{c} misses F, B or W"
                assert steps == sorted(steps), f"stage {stage}: F, B, W of {i}c{c} out of order"
        for position, a in enumerate(actions):
            before = actions[position - 1] if position else None
            after = actions[position + 1] if position + 1 < len(actions) else None
            compute = {"send_act": (before, "forward"), "send_grad": (before, "backward"),
                       "recv_act": (after, "forward"), "recv_grad": (after, "backward")}
            if a.op in compute:
                next_to, op = compute[a.op]
                assert next_to == Action(op, a.micro_batch, a.chunk), f"{a} beside {next_to}"
    streams = {}
    for stage, actions in enumerate(progs):
        for a in actions:
            streams.setdefault((a.op, v_placement(K, stage, a.chunk)), []).append(a.micro_batch)
    for here in range(2 * K - 1):                    # virtual stage here -> here + 1
        assert streams[("send_act", here)] == streams[("recv_act", here + 1)] == list(range(M))
        assert streams[("send_grad", here + 1)] == streams[("recv_grad", here)]
    simulate(lambda K_, M_, s, num_chunks: progs[s], K, M, t_weight=1.0, num_chunks=2,
             virtual=v_placement)                    # RuntimeError on a deadlock


def programs(K, M):
    return [zbv(K, M, stage) for stage in range(K)]


def test_every_stage_runs_f_b_w_of_both_chunks_and_the_v_pairs_up():
    for K, M in GRID:
        check_v_schedule(programs(K, M), M)


def test_the_check_catches_broken_v_schedules():
    progs = programs(3, 5)

    def broken(stage, change):
        return [change(list(a)) if s == stage else a for s, a in enumerate(progs)]

    def weight_first(actions):                   # W0c1 before its B
        w = actions.index(Action("weight", 0, 1))
        return [actions[w]] + actions[:w] + actions[w + 1:]

    def drop_weight(actions):
        return [a for a in actions if a != Action("weight", 4, 0)]

    def wrong_chunk(actions):                    # W3 of chunk 0 run as chunk 1's twice
        return [Action("weight", 3, 1) if a == Action("weight", 3, 0) else a for a in actions]
    for stage, change in [(0, weight_first), (1, drop_weight), (2, wrong_chunk)]:
        with pytest.raises(AssertionError):
            check_v_schedule(broken(stage, change), 5)


def test_the_shape_of_a_small_v():
    compute = [str(a) for a in zbv(2, 3, 0) if a.op in ("forward", "backward", "weight")]
    assert " ".join(compute) == ("F0c0 F1c0 F2c0 F0c1 B0c1 W0c1 F1c1 B1c1 W1c1 B0c0 W0c0 "
                                 "F2c1 B2c1 W2c1 B1c0 W1c0 B2c0 W2c0")
    last = " ".join(map(str, zbv(2, 3, 1)[:6]))
    assert last == "RA0c0 F0c0 SA0c0 RA0c1 F0c1 SA0c1"   # rank K-1 hands chunk 0 to chunk 1
    assert [v_placement(4, k, c) for k in range(4) for c in (0, 1)] == [0, 7, 1, 6, 2, 5, 3, 4]
    assert placement("zbv") is v_placement and placement("interleaved")(4, 1, 1) == 5


def test_no_bubble_when_the_three_times_are_equal():
    for K, M in GRID:
        sim = simulate("zbv", K, M, Fraction(1), Fraction(1), t_weight=Fraction(1))
        assert sim.bubble == 0, (K, M)
        assert [sim.stage_bubble(s) for s in range(K)] == [0] * K
        assert sim.makespan == 3 * M + Fraction(K - 1, 2)     # stage k starts k T_F/2 late
        for s in range(K):
            assert sim.busy(s) == 3 * M


@pytest.mark.parametrize("times", TIMES)
def test_bubble_below_1f1b_and_zb_h1_whenever_t_weight_is_positive(times):
    t_forward, t_backward, t_weight = map(Fraction, times)
    for K, M in GRID:
        sims = {name: simulate(name, K, M, t_forward, t_backward, t_weight=t_weight)
                for name in ("zbv", "zb-h1", "1f1b")}
        assert sims["zbv"].bubble < sims["1f1b"].bubble or K == 1
        assert sims["zbv"].bubble <= sims["zb-h1"].bubble
        for s in range(K):
            assert sims["zbv"].busy(s) == M * (t_forward + t_backward + t_weight)
            order = {(slot.op, slot.micro_batch, slot.chunk): slot for slot in
                     sims["zbv"].slots[s]}
            for (op, i, c), slot in order.items():     # in time: F before B before W
                if op != "F":
                    assert order["FB"["FBW".index(op) - 1], i, c].end <= slot.start


def test_peak_activations_are_1f1b_s():
    """2K chunk activations on every stage, each chunk half its layers: K micro-batches."""
    for K, M in GRID:
        one_f_one_b = max(peak_in_flight(get_schedule("1f1b")(K, M, s)) for s in range(K))
        for stage in range(K):
            assert peak_in_flight(zbv(K, M, stage)) == 2 * K == 2 * one_f_one_b


def test_a_v_placed_stage_owns_layers_k_and_2k_minus_1_minus_k():
    model = GPT(VERIFY_CONFIG)                                  # 8 layers, K = 4: one each
    stages = [ChunkedStage(model, k, 4, 2, placement="v") for k in range(4)]
    assert [s.layers for s in stages] == [[0, 7], [1, 6], [2, 5], [3, 4]]
    assert stages[0].chunks[0].is_first and stages[0].chunks[1].is_last
    names = {n.split(".")[0] for n, _ in stages[0].named_parameters()}
    assert {"wte", "wpe", "head"} <= names and "wte" not in {
        n.split(".")[0] for n, _ in stages[3].named_parameters()}
    check_chunks("zbv", stages[0])
    with pytest.raises(ValueError, match="placement='v'"):
        check_chunks("zbv", PipelineStage(model, 0, 4))
    with pytest.raises(ValueError, match="runs the schedule 'zbv' or 'dualpipev', not '1f1b'"):
        check_chunks("1f1b", stages[0])
    with pytest.raises(ValueError, match="'v' \\(2 chunks\\)"):
        ChunkedStage(model, 0, 2, 3, placement="v")


def test_errors():
    with pytest.raises(ValueError, match="'zbv' needs at least 7 micro-batches for 4 stages"):
        zbv(4, 6, 0)
    with pytest.raises(ValueError, match="'zbv' needs at least 7"):
        simulate("zbv", 4, 6, t_weight=1.0)
    with pytest.raises(ValueError, match="runs 2 model chunk"):
        get_schedule("zbv", 3)
    assert get_schedule("zbv", 2) is get_schedule("zbv") is zbv
    with pytest.raises(ValueError, match="need t_weight > 0"):
        simulate("zbv", 2, 3)
    with pytest.raises(ValueError, match="need positive step times"):
        simulate("zbv", 2, 3, 0, 1, t_weight=1)
