"""Zero-bubble schedules (B and W split) as data: the paper's table, exactly, in Fractions."""
from fractions import Fraction

import pytest

from minimegatron.data.demo import VERIFY_CONFIG
from minimegatron.nn import GPT
from minimegatron.parallel.pipeline_parallel.device_time import DeviceTime
from minimegatron.parallel.pipeline_parallel.actions import Action
from minimegatron.parallel.pipeline_parallel.schedules import (get_schedule, one_f_one_b,
                                                               peak_in_flight)
from minimegatron.parallel.pipeline_parallel.simulator import simulate
from minimegatron.parallel.pipeline_parallel.zero_bubble import zb_h1, zb_h2

ZB = {"zb-h1": zb_h1, "zb-h2": zb_h2}
LEAST = {"zb-h1": lambda K: K, "zb-h2": lambda K: 2 * K - 1}       # fewest micro-batches
# (T_F, T_B, T_W) with T_W <= T_F and 2 T_W <= T_F + T_B: where the table holds
TIMES = [(1, 1, 1), (1, 2, 1), (2, 1, 1), (3, 2, 1), (2, 3, 2), (1, 1, Fraction(1, 2)),
         (Fraction(3, 2), Fraction(1, 2), 1)]
GRID = [(K, M) for K in range(1, 7) for M in range(1, 3 * K + 3)]


def bubble_table(name, K, t_forward, t_backward, t_weight):
    """The paper's Table 2: bubble of 1F1B, ZB-H1, ZB-H2 for p = K stages."""
    sign = {"1f1b": 1, "zb-h1": -1, "zb-h2": -2}[name]
    return (K - 1) * (t_forward + t_backward + sign * t_weight)


def programs(schedule, K, M):
    return [schedule(K, M, stage) for stage in range(K)]


def check_split_schedule(progs, num_micro_batches):
    """AssertionError unless every stage runs F, B, W of each micro-batch once, in a legal order.

    F in micro-batch order, B after its F, W after its B; a receive right before
    its compute and a send right after it; neighbours send and receive the same
    micro-batches in the same order; and the lists run to the end (no deadlock).
    """
    K = len(progs)
    for stage, actions in enumerate(progs):
        where = {}
        for position, action in enumerate(actions):
            if action.op in ("forward", "backward", "weight"):
                assert (action.op, action.micro_batch) not in where, f"{action} twice"
                where[action.op, action.micro_batch] = position
        expected = list(range(num_micro_batches))
        assert [a.micro_batch for a in actions if a.op == "forward"] == expected
        for i in expected:
            assert {("forward", i), ("backward", i), ("weight", i)} <= set(where), (
                f"stage {stage}: micro-batch {i} misses its F, B or W")
            assert where["forward", i] < where["backward", i] < where["weight", i], (
                f"stage {stage}: F{i}, B{i}, W{i} out of order")
        for position, action in enumerate(actions):
            i, before = action.micro_batch, actions[position - 1] if position else None
            after = actions[position + 1] if position + 1 < len(actions) else None
            assert action.op != "send_act" or before == Action("forward", i)
            assert action.op != "send_grad" or before == Action("backward", i)
            assert action.op != "recv_act" or after == Action("forward", i)
            assert action.op != "recv_grad" or after == Action("backward", i)
        ops = {a.op for a in actions}
        assert (stage > 0) == ("recv_act" in ops) == ("send_grad" in ops)
        assert (stage < K - 1) == ("send_act" in ops) == ("recv_grad" in ops)
    for stage in range(K - 1):
        down, up = progs[stage], progs[stage + 1]
        for send, recv in [("send_act", "recv_act"), ("recv_grad", "send_grad")]:
            assert ([a.micro_batch for a in down if a.op == send]
                    == [a.micro_batch for a in up if a.op == recv])
    simulate(lambda K_, M_, stage: progs[stage], K, num_micro_batches,
             t_weight=1.0)                                  # RuntimeError on a deadlock


@pytest.mark.parametrize("name", list(ZB))
def test_invariants(name):
    for K, M in GRID:
        if M >= LEAST[name](K):
            check_split_schedule(programs(ZB[name], K, M), M)


def test_the_invariant_check_catches_broken_schedules():
    progs = programs(zb_h1, 3, 4)
    check_split_schedule(progs, 4)

    def broken(stage, change):
        return [change(list(a)) if s == stage else a for s, a in enumerate(progs)]

    def move_first_weight_first(actions):       # W0 before B0 (and before F0)
        w0 = actions.index(Action("weight", 0))
        return [actions[w0]] + actions[:w0] + actions[w0 + 1:]

    def drop_last_weight(actions):
        return actions[:-1]

    def swap_forwards(actions):                 # F1 before F0: sends out of order
        a, b = actions.index(Action("forward", 0)), actions.index(Action("forward", 1))
        actions[a], actions[b] = actions[b], actions[a]
        return actions

    def grad_before_act(actions):               # waits for a gradient it never gets
        first = [a for a in actions if a.op == "recv_grad"][:1]
        return first + [a for a in actions if a not in first]
    for stage, change, error in [(0, move_first_weight_first, AssertionError),
                                 (2, drop_last_weight, AssertionError),
                                 (1, swap_forwards, AssertionError),
                                 (0, grad_before_act, AssertionError)]:
        with pytest.raises(error):
            check_split_schedule(broken(stage, change), 4)

    def parse(text):
        ops = {"RA": "recv_act", "F": "forward", "SA": "send_act", "RG": "recv_grad",
               "B": "backward", "SG": "send_grad", "W": "weight"}
        return [Action(ops[word[:-1]], int(word[-1])) for word in text.split()]
    # each list legal on its own, sends matched: stage 0 waits for gradient 0 before it
    # sends activation 1, which stage 1 needs before it sends gradient 0
    deadlocked = [parse("F0 SA0 RG0 B0 W0 F1 SA1 RG1 B1 W1"),
                  parse("RA0 F0 RA1 F1 B0 SG0 B1 SG1 W0 W1")]
    with pytest.raises(RuntimeError, match="deadlocks"):
        check_split_schedule(deadlocked, 2)
    check_split_schedule([parse("F0 SA0 F1 SA1 RG0 B0 W0 RG1 B1 W1"), deadlocked[1]], 2)


@pytest.mark.parametrize("times", TIMES)
def test_bubble_is_the_papers_table(times):
    """Largest idle time inside a stage's span == Table 2, exactly; 1F1B for any times."""
    t_forward, t_backward, t_weight = map(Fraction, times)
    for K in range(1, 7):
        for name in ["1f1b", "zb-h1", "zb-h2"]:
            least = LEAST[name](K) if name in LEAST else 1
            for M in range(least, least + K + 3):
                sim = simulate(name, K, M, t_forward, t_backward, t_weight=t_weight)
                assert sim.bubble == bubble_table(name, K, *map(Fraction, times)), (name, K, M)
                assert sim.stage_bubble(0) == sim.bubble         # the first stage waits most
                for stage in range(K):
                    assert sim.busy(stage) == M * (t_forward + t_backward + t_weight)
                    # every stage idles the bubble over the makespan (ZB-H1: if T_W <= T_B)
                    if name == "1f1b" or name == "zb-h1" and t_weight <= t_backward:
                        assert sim.idle(stage) == sim.bubble


def test_the_table_needs_its_assumptions_on_the_times():
    """T_W > T_F: a W does not fit in the gap one F leaves, and the table is too optimistic."""
    zb = simulate("zb-h1", 4, 8, Fraction(1), Fraction(1), t_weight=Fraction(2))
    assert zb.bubble > bubble_table("zb-h1", 4, 1, 1, 2) == 0
    plain = simulate("1f1b", 4, 8, Fraction(1), Fraction(1), t_weight=Fraction(2))
    assert plain.bubble == bubble_table("1f1b", 4, 1, 1, 2) == 12          # 1F1B: any times
    zb = simulate("zb-h2", 4, 8, Fraction(1), Fraction(3), t_weight=Fraction(3, 2))
    assert zb.bubble > bubble_table("zb-h2", 4, 1, 3, Fraction(3, 2)) == Fraction(3)
    zb = simulate("zb-h2", 4, 8, Fraction(2), Fraction(1), t_weight=Fraction(2))
    assert zb.bubble == 0 > bubble_table("zb-h2", 4, 2, 1, 2)       # 2T_W > T_F + T_B


def test_zb_h1_beats_1f1b_with_no_more_peak_memory():
    for K, M in GRID:
        if M < K:
            continue
        for t_weight in [Fraction(1, 4), Fraction(1), Fraction(3)]:
            zb = simulate("zb-h1", K, M, 1, 1, t_weight=t_weight)
            plain = simulate("1f1b", K, M, 1, 1, t_weight=t_weight)
            assert zb.bubble < plain.bubble or K == 1
            assert zb.makespan <= plain.makespan
        one_f_one_b_peak = max(peak_in_flight(one_f_one_b(K, M, s)) for s in range(K))
        for stage in range(K):
            assert peak_in_flight(zb_h1(K, M, stage)) <= one_f_one_b_peak == K


def test_peak_activations():
    """F done, W not: p on every stage for ZB-H1, 2p-1 for ZB-H2 (1F1B: min(M, p-k))."""
    for K, M in GRID:
        for stage in range(K):
            if M >= K:
                assert peak_in_flight(zb_h1(K, M, stage)) == K
            if M >= 2 * K - 1:
                assert peak_in_flight(zb_h2(K, M, stage)) == 2 * K - 1
            assert peak_in_flight(one_f_one_b(K, M, stage)) == min(M, K - stage)
    # held until W, not until B: the same list without its W's would count 1F1B's way
    actions = zb_h1(4, 8, 3)
    assert peak_in_flight(actions) == 4
    assert peak_in_flight([a for a in actions if a.op != "weight"]) == 1


def test_zb_h2_has_no_bubble_when_the_three_times_are_equal():
    sim = simulate("zb-h2", 4, 8, Fraction(1), Fraction(1), t_weight=Fraction(1))
    assert [sim.stage_bubble(stage) for stage in range(4)] == [0, 0, 0, 0]
    assert [(row[0].start, row[-1].end) for row in sim.slots] == [(0, 24), (1, 25), (2, 26),
                                                                  (3, 27)]


def test_schedule_shapes():
    assert " ".join(map(str, zb_h1(2, 2, 0))) == "F0 SA0 F1 SA1 RG0 B0 W0 RG1 B1 W1"
    assert " ".join(map(str, zb_h1(2, 2, 1))) == "RA0 F0 B0 SG0 RA1 F1 B1 SG1 W0 W1"
    compute = [str(a) for a in zb_h1(4, 8, 3) if a.op in ("forward", "backward", "weight")]
    assert " ".join(compute) == ("F0 B0 F1 B1 F2 B2 F3 B3 W0 F4 B4 W1 F5 B5 W2 F6 B6 W3 F7 B7 "
                                 "W4 W5 W6 W7")
    compute = [str(a) for a in zb_h2(4, 8, 0) if a.op in ("forward", "backward", "weight")]
    assert " ".join(compute) == ("F0 F1 F2 F3 F4 F5 F6 B0 W0 F7 B1 W1 B2 W2 B3 W3 B4 W4 B5 "
                                 "W5 B6 W6 B7 W7")
    assert [str(a) for a in zb_h1(1, 2, 0)] == ["F0", "B0", "W0", "F1", "B1", "W1"]   # one stage


def test_registry_and_errors():
    assert get_schedule("zb-h1") is zb_h1 and get_schedule("zb-h2") is zb_h2
    assert str(Action("weight", 3)) == "W3"
    with pytest.raises(ValueError, match="1f1b, interleaved, zb-h1, zb-h2"):
        get_schedule("zb-h3")
    with pytest.raises(ValueError, match="only 'interleaved' takes num_chunks=2"):
        get_schedule("zb-h1", 2)
    with pytest.raises(ValueError, match="'zb-h1' needs at least 4 micro-batches for 4 stages"):
        zb_h1(4, 3, 0)
    with pytest.raises(ValueError, match="'zb-h2' needs at least 7 micro-batches for 4 stages"):
        simulate("zb-h2", 4, 6, t_weight=1.0)
    with pytest.raises(ValueError, match="num_stages=4, num_micro_batches=8, stage=4"):
        zb_h2(4, 8, 4)
    for times in [(0, 1, 1), (1, -1, 1), (1, 1, -1)]:
        with pytest.raises(ValueError, match="need positive step times"):
            simulate("zb-h1", 4, 8, times[0], times[1], t_weight=times[2])
    with pytest.raises(ValueError, match="need t_weight > 0, got t_weight=0"):
        simulate("zb-h1", 4, 8)


def test_1f1b_is_unchanged_by_a_zero_weight_time():
    for K, M in [(1, 1), (4, 8), (5, 3)]:
        for t_backward in [1.0, 2.0]:
            old = simulate("1f1b", K, M, 1.0, t_backward)
            assert simulate("1f1b", K, M, 1.0, t_backward, t_weight=0.0) == old
            folded = simulate("1f1b", K, M, 1.0, t_backward + 1.0)
            assert simulate("1f1b", K, M, 1.0, t_backward, t_weight=1.0) == folded


class NoMessages:
    """A pp group of 4 that fails any collective: errors must come before the first message."""
    size, rank = 4, 0

    def __getattr__(self, name):
        raise AssertionError(f"a collective was reached (group.{name})")


def test_the_engine_names_bad_input_before_any_message():
    from minimegatron.parallel.pipeline_parallel import ChunkedStage, PipelineEngine, PipelineStage
    model = GPT(VERIFY_CONFIG)
    stage, v_stage = PipelineStage(model, 0, 4), ChunkedStage(model, 0, 4, 2, placement="v")
    for module, schedule, m, error in [
            (stage, "zb-h3", 8, "unknown schedule 'zb-h3'"),
            (stage, "zb-h1", 3, "'zb-h1' needs at least 4 micro-batches for 4 stages"),
            (stage, "zb-h2", 6, "'zb-h2' needs at least 7 micro-batches"),
            (v_stage, "zbv", 6, "'zbv' needs at least 7 micro-batches"),
            (stage, "zbv", 8, "placement='v'"),
            (v_stage, "zb-h1", 8, "runs the schedule 'zbv' or 'dualpipev', not 'zb-h1'")]:
        with pytest.raises(ValueError, match=error):
            PipelineEngine(module, NoMessages(), schedule=schedule, num_micro_batches=m)
    for times in [(-1, 1), (1, 1, -0.5), (1, float("inf"), 1)]:
        with pytest.raises(ValueError, match="must be seconds >= 0"):
            DeviceTime(*times)


def test_trainer_3d_names_too_few_micro_batches_before_any_message():
    from minimegatron.parallel.threed import check_3d_config

    class Grid:
        tp_size, cp_size, pp_size = 1, 1, 4
    for name, m, least in [("zb-h1", 3, 4), ("zb-h2", 6, 7), ("zbv", 6, 7)]:
        with pytest.raises(ValueError, match=f"'{name}' needs at least {least} micro-batches"):
            check_3d_config(VERIFY_CONFIG, Grid(), name, m, 0)
    with pytest.raises(ValueError, match="pipeline of 16 stages"):       # zbv: 2 chunks
        check_3d_config(VERIFY_CONFIG, type("G", (Grid,), {"pp_size": 8})(), "zbv", 15, 0)


@pytest.mark.parametrize("name", ["zb-h1", "zb-h2", "zbv"])
def test_every_zero_bubble_schedule_beats_1f1b_and_keeps_f_b_w_in_order_in_time(name):
    """T_W > 0: bubble strictly below 1F1B's at equal work; each W after its B after its F."""
    least = {"zb-h1": lambda K: K}.get(name, lambda K: 2 * K - 1)
    for K in range(2, 6):
        for M in (least(K), least(K) + 3):
            for times in [(1, 1, Fraction(1, 4)), (1, 1, 1), (2, 1, 1), (1, 2, 3)]:
                t_forward, t_backward, t_weight = map(Fraction, times)
                zb = simulate(name, K, M, t_forward, t_backward, t_weight=t_weight)
                plain = simulate("1f1b", K, M, t_forward, t_backward, t_weight=t_weight)
                assert zb.bubble < plain.bubble, (name, K, M, times)
                for row in zb.slots:
                    end = {(slot.op, slot.micro_batch, slot.chunk): slot.end for slot in row}
                    for slot in row:
                        if slot.op != "F":
                            before = {"B": "F", "W": "B"}[slot.op]
                            assert end[before, slot.micro_batch, slot.chunk] <= slot.start
