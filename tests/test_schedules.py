"""Pipeline schedules checked as data, without MPI: every stage count 1-8, micro-batches 1-32."""
from fractions import Fraction

import pytest

from minimegatron.parallel.pipeline_parallel.actions import Action
from minimegatron.parallel.pipeline_parallel.schedules import (SCHEDULES, bubble_formula,
                                                               get_schedule, gpipe, naive,
                                                               one_f_one_b, peak_in_flight)
from minimegatron.parallel.pipeline_parallel.simulator import bubble_fraction, simulate

GRID = [(k, m) for k in range(1, 9) for m in range(1, 33)]


def programs(name, num_stages, num_micro_batches):
    return [SCHEDULES[name](num_stages, num_micro_batches, s) for s in range(num_stages)]


def micro_batches_of(actions, op):
    return [a.micro_batch for a in actions if a.op == op]


def run_blocking(progs, rendezvous):
    """Execute matched send/recv lists; True if every stage reaches its end.

    rendezvous=False: a send is posted and the stage moves on (Isend), a
    receive waits for its send. rendezvous=True: a send also waits until the
    receiver stands at the matching receive (a blocking MPI_Send of a big array).
    """
    pc, posted = [0] * len(progs), set()

    def head(s):
        return progs[s][pc[s]] if pc[s] < len(progs[s]) else None

    def peer(s, action):
        return s + (-1 if action.op in ("recv_act", "send_grad") else 1)

    moved = True
    while moved:
        moved = False
        for s in range(len(progs)):
            action = head(s)
            if action is None:
                continue
            if action.op.startswith("send"):
                dst = peer(s, action)
                wanted = Action("recv_" + action.op[5:], action.micro_batch)
                if rendezvous and head(dst) != wanted:
                    continue
                posted.add((s, dst, action.micro_batch))
            elif action.op.startswith("recv"):
                key = (peer(s, action), s, action.micro_batch)
                if key not in posted:
                    continue
                posted.remove(key)
            pc[s] += 1
            moved = True
    return all(head(s) is None for s in range(len(progs))) and not posted


PLAIN = ["naive", "gpipe", "1f1b"]      # one model chunk per stage (interleaved: its own file)


@pytest.mark.parametrize("name", PLAIN)
def test_invariants(name):
    for num_stages, num_micro_batches in GRID:
        progs = programs(name, num_stages, num_micro_batches)
        expected = list(range(1 if name == "naive" else num_micro_batches))
        for s, actions in enumerate(progs):
            assert micro_batches_of(actions, "forward") == expected
            assert sorted(micro_batches_of(actions, "backward")) == expected
            for i in expected:  # backward after forward; comms right around compute
                assert actions.index(Action("backward", i)) > actions.index(Action("forward", i))
            for position, action in enumerate(actions):
                before = actions[position - 1] if position else None
                after = actions[position + 1] if position + 1 < len(actions) else None
                i = action.micro_batch
                if action.op == "send_act":
                    assert before == Action("forward", i)
                if action.op == "send_grad":
                    assert before == Action("backward", i)
                if action.op == "recv_act":
                    assert after == Action("forward", i)
                if action.op == "recv_grad":
                    assert after == Action("backward", i)
            ops = {a.op for a in actions}
            assert (s == 0) == ("recv_act" not in ops) == ("send_grad" not in ops)
            last = s == num_stages - 1
            assert last == ("send_act" not in ops) == ("recv_grad" not in ops)
        for s in range(num_stages - 1):  # same sends and receives, in the same order
            down, up = progs[s], progs[s + 1]
            assert micro_batches_of(down, "send_act") == micro_batches_of(up, "recv_act")
            assert micro_batches_of(up, "send_grad") == micro_batches_of(down, "recv_grad")


@pytest.mark.parametrize("name", PLAIN)
def test_deadlock_free_with_nonblocking_sends(name):
    for num_stages, num_micro_batches in GRID:
        assert run_blocking(programs(name, num_stages, num_micro_batches), rendezvous=False)


def test_blocking_sends_deadlock_1f1b_but_not_gpipe():
    """Why the executor must Isend: two neighbours in 1F1B's steady state both send."""
    for num_stages, num_micro_batches in GRID:
        assert run_blocking(programs("gpipe", num_stages, num_micro_batches), rendezvous=True)
    assert not run_blocking(programs("1f1b", 2, 2), rendezvous=True)
    assert not run_blocking(programs("1f1b", 4, 8), rendezvous=True)


@pytest.mark.parametrize("name", ["gpipe", "1f1b"])
def test_bubble_is_exactly_the_gpipe_formula(name):
    for num_stages, num_micro_batches in GRID:
        sim = simulate(name, num_stages, num_micro_batches, Fraction(1), Fraction(1))
        formula = Fraction(num_stages - 1, num_micro_batches + num_stages - 1)
        assert sim.bubble_fraction == formula == bubble_formula(num_stages, num_micro_batches)
        assert sim.makespan == 2 * (num_micro_batches + num_stages - 1)
        assert bubble_fraction(name, num_stages, num_micro_batches) == pytest.approx(
            float(formula), abs=1e-12)


def test_naive_is_gpipe_with_one_micro_batch():
    for num_stages, num_micro_batches in GRID:
        for s in range(num_stages):
            assert naive(num_stages, num_micro_batches, s) == gpipe(num_stages, 1, s)
    assert bubble_fraction("naive", 4, 8) == 0.75


@pytest.mark.parametrize("t_backward", [1.0, 2.0, 3.0])
@pytest.mark.parametrize("name", PLAIN)
def test_simulation_honours_dependencies(name, t_backward):
    for num_stages, num_micro_batches in [(1, 1), (2, 5), (4, 8), (8, 3), (8, 32)]:
        sim = simulate(name, num_stages, num_micro_batches, 1.0, t_backward)
        end = {(s, slot.op, slot.micro_batch): slot.end
               for s, row in enumerate(sim.slots) for slot in row}
        for s, row in enumerate(sim.slots):
            for previous, slot in zip(row, row[1:]):
                assert previous.end <= slot.start  # one step at a time
            for slot in row:
                assert slot.end - slot.start == (1.0 if slot.op == "F" else t_backward)
                if slot.op == "F" and s > 0:
                    assert slot.start >= end[(s - 1, "F", slot.micro_batch)]
                if slot.op == "B":
                    assert slot.start >= end[(s, "F", slot.micro_batch)]
                    if s < num_stages - 1:
                        assert slot.start >= end[(s + 1, "B", slot.micro_batch)]
            gaps = sim.idle_slots(s)
            assert sum(b - a for a, b in gaps) == pytest.approx(sim.idle(s))
            assert sim.busy(s) + sim.idle(s) == pytest.approx(sim.makespan)


def test_peak_in_flight():
    for num_stages, num_micro_batches in GRID:
        for s in range(num_stages):
            assert peak_in_flight(gpipe(num_stages, num_micro_batches, s)) == num_micro_batches
            held = peak_in_flight(one_f_one_b(num_stages, num_micro_batches, s))
            assert held == min(num_micro_batches, num_stages - s)


def test_one_f_one_b_shape():
    assert " ".join(map(str, one_f_one_b(4, 3, 2))) == (
        "RA0 F0 SA0 RA1 F1 SA1 RG0 B0 SG0 RA2 F2 SA2 RG1 B1 SG1 RG2 B2 SG2")
    assert " ".join(map(str, one_f_one_b(2, 2, 0))) == "F0 SA0 F1 SA1 RG0 B0 RG1 B1"


def test_action_format_and_errors():
    assert [str(Action(op, 3)) for op in ("recv_act", "forward", "send_act", "recv_grad",
                                          "backward", "send_grad")] == [
        "RA3", "F3", "SA3", "RG3", "B3", "SG3"]
    with pytest.raises(ValueError, match="valid ops"):
        Action("fwd", 0)
    assert get_schedule("1f1b") is one_f_one_b
    with pytest.raises(ValueError, match="naive, gpipe, 1f1b, interleaved"):
        get_schedule("zigzag")
    for args in [(0, 4, 0), (4, 0, 0), (4, 8, 4), (4, 8, -1)]:
        with pytest.raises(ValueError, match=f"num_stages={args[0]}, num_micro_batches="
                                             f"{args[1]}, stage={args[2]}"):
            gpipe(*args)


def test_simulate_rejects_non_positive_times():
    with pytest.raises(ValueError, match="t_forward=0"):
        simulate("gpipe", 2, 2, t_forward=0)


def test_simulate_reports_a_deadlock():
    def gradient_first(num_stages, num_micro_batches, stage):
        """Waits for a gradient before sending the activation it depends on."""
        actions = gpipe(num_stages, num_micro_batches, stage)
        return ([a for a in actions if a.op == "recv_grad"]
                + [a for a in actions if a.op != "recv_grad"])

    with pytest.raises(RuntimeError, match="waiting stage 0 at RG0, stage 1 at RA0"):
        simulate(gradient_first, 2, 2)
