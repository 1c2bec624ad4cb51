"""DualPipe and DualPipeV as data, simulated: DeepSeek's bubble table, PyTorch's order.

For every even P <= 8 (DualPipe) and P <= 5 (DualPipeV) and several M: each rank runs F,
B, W of each of its (micro-batch, chunk) once, in that order, its receives before and
sends after; the messages pair across every boundary (DualPipe: none between the two
directions); the simulator finds DeepSeek's table (8 stages, F = 1, B = 1 + W = 1: 21,
7, 6, 6) and the formula at other sizes and times where its assumption holds; DualPipe
is two DualPipeVs back to back; DualPipeV's order is PyTorch's ScheduleDualPipeV's; the
activations held are PP + 1 stages; one swap in DualPipe's order fails the checks.
"""
import json
from fractions import Fraction

import pytest

from minimegatron.data.demo import VERIFY_CONFIG
from minimegatron.nn import GPT
from minimegatron.parallel.pipeline_parallel import schedules
from minimegatron.parallel.pipeline_parallel.dualpipe import (bubble_table, dualpipe,
                                                              dualpipev, program)
from minimegatron.parallel.pipeline_parallel.schedules import get_schedule, peak_in_flight
from minimegatron.parallel.pipeline_parallel.simulator import simulate
from minimegatron.parallel.pipeline_parallel.stage import ChunkedStage
from minimegatron.parallel.pipeline_parallel.schedules import check_chunks
from minimegatron.parallel.pipeline_parallel.zero_bubble import v_placement

COMPUTE = ("forward", "backward", "weight")
DUAL_GRID = [(P, M) for P in (2, 4, 6, 8) for M in range(2 * P, 2 * P + 7, 2)]
V_GRID = [(P, M) for P in range(1, 6) for M in range(2 * P, 2 * P + 5)]
# (T_F, T_B input part, T_W): the first eight meet the table's assumption (F, W <= B input)
TIMES = [(1, 1, 1), (1, 2, 1), (2, 3, 2), (1, 1, Fraction(1, 2)), (1, 2, 2), (2, 2, 1),
         (1, 3, 1), (1, 1, Fraction(1, 4)),
         (2, 1, 1), (3, 2, 1), (Fraction(3, 2), Fraction(1, 2), 1), (1, 1, 2), (3, 1, 1)]


def holds(t_f, t_b, t_w):
    return t_f <= t_b and t_w <= t_b


def compute_order(actions):
    return " ".join(str(a) for a in actions if a.op in COMPUTE)


def check_dual_schedule(progs, M, name):
    """AssertionError unless every rank's list is a legal DualPipe (or DualPipeV) step."""
    P = len(progs)
    half = M // 2 if name == "dualpipe" else M
    runs = {0: list(range(half)), 1: list(range(M - half, M))}   # each chunk's micro-batches
    streams = {}
    for rank, actions in enumerate(progs):
        where = {}
        for position, a in enumerate(actions):
            key = (a.op, a.micro_batch, a.chunk)
            assert key not in where, f"rank {rank}: {a} twice"
            where[key] = position
            streams.setdefault((a.op, v_placement(P, rank, a.chunk)), []).append(a.micro_batch)
        for c in (0, 1):
            assert [a.micro_batch for a in actions if a.op == "forward" and a.chunk == c] \
                == runs[c], f"rank {rank} chunk {c}: forwards out of order"
            for i in runs[c]:
                f, b, w = (where.get((op, i, c)) for op in COMPUTE)
                assert None not in (f, b, w) and f < b < w, f"rank {rank}: {i}c{c} F, B, W"
                for op, before in (("recv_act", f), ("recv_grad", b)):
                    assert where.get((op, i, c), -1) < before, f"rank {rank}: {op} {i}c{c}"
                for op, after in (("send_act", f), ("send_grad", b)):
                    assert where.get((op, i, c), after + 1) > after, f"rank {rank}: {op}"
    boundaries = [v for v in range(2 * P - 1) if name == "dualpipev" or v != P - 1]
    for v in boundaries:                              # virtual stage v -> v + 1 and back
        sent = streams.get(("send_act", v), [])
        assert sorted(sent) == sorted(streams.get(("recv_act", v + 1), [])) != []
        assert sorted(streams.get(("send_grad", v + 1))) == sorted(streams[("recv_grad", v)])
    if name == "dualpipe":                            # the two directions never meet
        assert ("send_act", P - 1) not in streams and ("recv_act", P) not in streams
    sim = simulate(lambda K, M_, s: progs[s], P, M, 1, 1, t_weight=1,
                   virtual=v_placement)               # RuntimeError on a deadlock
    return sim


def programs(name, P, M):
    return [get_schedule(name)(P, M, rank) for rank in range(P)]


def test_every_rank_runs_each_micro_batch_once_and_the_messages_pair():
    for P, M in DUAL_GRID:
        check_dual_schedule(programs("dualpipe", P, M), M, "dualpipe")
    for P, M in V_GRID:
        check_dual_schedule(programs("dualpipev", P, M), M, "dualpipev")


def test_deepseeks_table_at_8_stages():
    """F = 1, B = 2 = 1 + W = 1, F&B = F + B: 1F1B 21, ZB1P 7, DualPipe 6, DualPipeV 6.

    DualPipeV's 8 stages are the V on 4 ranks; a chunk is half a rank's layers, so its
    times are given per rank (2, 2, 2) for per-chunk times (1, 1, 1)."""
    one = Fraction(1)
    sims = {"1f1b": simulate("1f1b", 8, 20, one, 2 * one),
            "zb1p": simulate("zb-h1", 8, 20, one, one, t_weight=one),
            "dualpipe": simulate("dualpipe", 8, 20, one, one, t_weight=one),
            "dualpipev": simulate("dualpipev", 4, 20, 2 * one, 2 * one, t_weight=2 * one)}
    assert {name: sim.bubble for name, sim in sims.items()} == {
        "1f1b": 21, "zb1p": 7, "dualpipe": 6, "dualpipev": 6}
    for name, sim in sims.items():
        assert sim.bubble == bubble_table(name, 8, 1, 2, 1)[0]
        assert {sim.idle(rank) for rank in range(sim.num_stages)} == {sim.bubble}
    assert bubble_table("dualpipe", 8, 1, 2, 1)[1] == "(PP/2-1)(F&B+B-3W)"


@pytest.mark.parametrize("times", TIMES)
def test_the_formula_at_other_sizes_and_times(times):
    """(PP/2-1)(F&B+B-3W) exactly where F and W are at most B's input part, above it
    elsewhere; DualPipe on P ranks and DualPipeV on P/2 ranks idle alike."""
    t_f, t_b, t_w = map(Fraction, times)
    for P, M in DUAL_GRID:
        if P == 2:
            continue
        sim = simulate("dualpipe", P, M, t_f, t_b, t_weight=t_w)
        want = bubble_table("dualpipe", P, t_f, t_b + t_w, t_w)[0]
        assert sim.bubble == want if holds(t_f, t_b, t_w) else sim.bubble > want, (P, M)
        assert {sim.idle(rank) for rank in range(P)} == {sim.bubble}
        assert sim.busy(0) == M * (t_f + t_b + t_w)          # M/2 per chunk, whole stages
        v = simulate("dualpipev", P // 2, M, 2 * t_f, 2 * t_b, t_weight=2 * t_w)
        assert v.bubble == sim.bubble, (P, M)
        one = simulate("1f1b", P, M, t_f, t_b + t_w)
        assert sim.bubble < one.bubble and sim.makespan < one.makespan


def folded(actions, P, M, rank):
    """A DualPipe rank's compute order in DualPipeV's names: near chunk 0, far chunk 1,
    micro-batches counted per direction."""
    near, renamed = int(rank >= P // 2), []
    for a in actions:
        if a.op in COMPUTE:
            renamed.append(f"{str(a)[0]}{a.micro_batch % (M // 2)}c{a.chunk ^ near}")
    return " ".join(renamed)


def test_dualpipe_is_two_dualpipevs_back_to_back():
    """Rank r (and its mirror P-1-r) of DualPipe runs DualPipeV's rank min(r, P-1-r) of
    P/2 on M/2 micro-batches: near chunk for chunk 0, far for chunk 1."""
    for P, M in DUAL_GRID:
        for rank in range(P):
            h = min(rank, P - 1 - rank)
            assert folded(dualpipe(P, M, rank), P, M, rank) == \
                compute_order(dualpipev(P // 2, M // 2, h))


def test_dualpipev_is_pytorchs_order():
    """ScheduleDualPipeV (torch.distributed.pipelining, from DeepSeek's code) on 2 ranks,
    4 micro-batches, read from its eight steps by hand: rank 0 holds stages 0 and 3, rank 1
    stages 1 and 2 (chunks 0 and 1 here); its FULL_BACKWARD is "B W" here, its
    BACKWARD_INPUT "B" and its BACKWARD_WEIGHT the "W" that pops its queue."""
    torch_order = [
        "F0c0 F1c0 F2c0 F0c1 B0c1 W0c1 F1c1 F3c0 B1c1 W1c1 F2c1 B0c0 W0c0 B2c1 W2c1 F3c1 "
        "B1c0 W1c0 B3c1 W3c1 B2c0 W2c0 B3c0 W3c0",
        "F0c0 F0c1 F1c0 F1c1 F2c0 B0c1 W0c1 F2c1 B0c0 W0c0 F3c0 B1c1 W1c1 F3c1 B1c0 W1c0 "
        "B2c1 W2c1 B2c0 W2c0 B3c1 B3c0 W3c1 W3c0"]
    assert [compute_order(dualpipev(2, 4, rank)) for rank in (0, 1)] == torch_order
    assert [v_placement(2, rank, c) for rank in (0, 1) for c in (0, 1)] == [0, 3, 1, 2]


def test_the_eight_steps_count_every_micro_batch():
    for n, N in [(1, 2), (2, 4), (4, 9), (3, 6)]:
        for h in range(n):
            steps = program(n, h, N)
            for op in "FB":
                for side in ("near", "far"):
                    runs = sum(1 for s in steps if s[0] == op and s[1] == side) + sum(
                        1 for s in steps if s[0] == "F&B" and s["FB".index(op) + 1] == side)
                    assert runs == N, (n, h, N, op, side)
            held = sum(1 for s in steps if s[0] == "B" and not s[2])
            assert held == sum(1 for s in steps if s == ("W",))


def test_activations_held_are_pp_plus_one_stages():
    """DeepSeek's table: PP + 1. DualPipe's chunk is a stage: P + 1 chunks; DualPipeV's
    chunk is one of its 2P stages: 2P + 1 chunks."""
    for P, M in DUAL_GRID:
        assert {peak_in_flight(a) for a in programs("dualpipe", P, M)} == {P + 1}
    for P, M in V_GRID:
        assert {peak_in_flight(a) for a in programs("dualpipev", P, M)} == {2 * P + 1}


def swapped(actions, first):
    """The list with the compute step at ``first`` and the next compute step swapped."""
    at = [n for n, a in enumerate(actions) if a.op in COMPUTE]
    i, j = at[first], at[first + 1]
    out = list(actions)
    out[i], out[j] = out[j], out[i]
    return out


def check_dualpipe(progs, M):
    """Every check of this file on DualPipe lists: legal, the table's bubble, DualPipeV's
    order on each half."""
    P = len(progs)
    sim = check_dual_schedule(progs, M, "dualpipe")
    assert sim.bubble == bubble_table("dualpipe", P, 1, 2, 1)[0]
    for rank, actions in enumerate(progs):                # DualPipeV (PyTorch's order), twice
        h = min(rank, P - 1 - rank)
        assert folded(actions, P, M, rank) == compute_order(dualpipev(P // 2, M // 2, h))


def test_one_swap_in_dualpipes_order_fails():
    """Every swap of two neighbouring compute steps on one rank fails check_dualpipe;
    most (70 of 92 at P = 4, M = 8) already fail the legality or the bubble, without
    the reference order; the rest (F and B of an F&B pair, two forwards in a row) only it."""
    P, M = 4, 8
    progs = programs("dualpipe", P, M)
    check_dualpipe(progs, M)
    caught_without_order = total = 0
    for rank in range(P):
        steps = sum(1 for a in progs[rank] if a.op in COMPUTE)
        for first in range(steps - 1):
            mutant = [swapped(a, first) if r == rank else a for r, a in enumerate(progs)]
            if compute_order(mutant[rank]) == compute_order(progs[rank]):
                continue
            total += 1
            with pytest.raises((AssertionError, RuntimeError)):
                check_dualpipe(mutant, M)
            try:
                sim = check_dual_schedule(mutant, M, "dualpipe")
                caught_without_order += sim.bubble != bubble_table("dualpipe", P, 1, 2, 1)[0]
            except (AssertionError, RuntimeError):
                caught_without_order += 1
    assert total > 80 and caught_without_order > total // 2, (caught_without_order, total)


def test_a_mutant_schedule_in_the_registry_fails(monkeypatch):
    """The registry's DualPipe with F and B of one micro-batch swapped: not legal."""
    original = schedules.SCHEDULES["dualpipe"]

    def mutant(K, M, stage):
        actions = original(K, M, stage)
        return swapped(actions, 0) if stage == 0 else actions
    monkeypatch.setitem(schedules.SCHEDULES, "dualpipe", mutant)
    with pytest.raises((AssertionError, RuntimeError)):
        check_dual_schedule(programs("dualpipe", 4, 8), 8, "dualpipe")


def test_mirrored_stages_hold_the_same_layers_twice():
    model = GPT(VERIFY_CONFIG)                                  # 8 layers, K = 4
    stages = [ChunkedStage(model, k, 4, 2, placement="mirror") for k in range(4)]
    assert [s.layers for s in stages] == [[0, 1, 6, 7], [2, 3, 4, 5], [2, 3, 4, 5],
                                          [0, 1, 6, 7]]
    assert stages[0].chunks[0].is_first and stages[0].chunks[1].is_last
    assert stages[3].chunks[1].is_first and stages[3].chunks[0].is_last
    names = [[n for n, _ in s.named_parameters()] for s in stages]
    assert names[0] == names[3] and names[1] == names[2]       # the same order: one all-reduce
    check_chunks("dualpipe", stages[0])
    with pytest.raises(ValueError, match="placement='mirror'"):
        check_chunks("dualpipe", ChunkedStage(model, 0, 4, 2, placement="v"))
    with pytest.raises(ValueError, match="placement='v'"):
        check_chunks("dualpipev", stages[0])
    with pytest.raises(ValueError, match="runs the schedule 'dualpipe', not '1f1b'"):
        check_chunks("1f1b", stages[0])


def test_constraints_are_refused():
    """The reference's rules: DualPipe P even, M even and >= 2P; DualPipeV M >= 2P."""
    refused = [(lambda: dualpipe(3, 12, 0), "'dualpipe' needs an even number of stages"),
               (lambda: dualpipe(4, 7, 0), "got 4 stages, 7 micro-batches"),
               (lambda: dualpipe(4, 6, 0), "got 4 stages, 6 micro-batches"),
               (lambda: dualpipev(4, 7, 0), "'dualpipev' needs at least 8 micro-batches for 4"),
               (lambda: simulate("dualpipev", 4, 7, t_weight=1.0), "'dualpipev' needs at least"),
               (lambda: get_schedule("dualpipe", 3), "runs 2 model chunk"),
               (lambda: simulate("dualpipe", 2, 4), "need t_weight > 0")]
    for call, message in refused:
        with pytest.raises(ValueError, match=message):
            call()
    assert get_schedule("dualpipev", 2) is dualpipev
    assert len(dualpipe(2, 4, 0)) and len(dualpipev(4, 8, 3))      # the least that fit


def test_the_timeline_command_prints_the_table_and_writes_a_chrome_trace(
        capsys, tmp_path, monkeypatch):
    from minimegatron.commands import timeline
    path = tmp_path / "dualpipe.json"
    timeline.main(["--schedule", "dualpipe", "--stages", "8", "--micro-batches", "20",
                   "--out", "", "--chrome-trace", str(path)])
    out = capsys.readouterr().out
    assert "bubble dualpipe 6 (table (PP/2-1)(F&B+B-3W) = 6) vs 1f1b 21" in out
    assert "per rank: [9, 9, 9, 9, 9, 9, 9, 9]" in out and "(DeepSeek's table: PP + 1)" in out
    events = [e for e in json.loads(path.read_text())["traceEvents"] if e["ph"] == "X"]
    assert len(events) == 8 * 3 * 20                     # F, B, W of M/2 per chunk, 8 ranks
    assert {e["name"] for e in events if e["tid"] == 7} >= {"F10c1", "F0c0", "W19c1"}
    timeline.main(["--schedule", "dualpipev", "--stages", "4", "--micro-batches", "20",
                   "--t-forward", "2", "--t-backward", "2", "--t-weight", "2", "--out", ""])
    assert "bubble dualpipev 6 (table (PP/2-1)(F&B+B-3W) = 6)" in capsys.readouterr().out
    timeline.main(["--schedule", "dualpipe", "--stages", "4", "--micro-batches", "8",
                   "--t-forward", "2", "--out", ""])     # F > B: the table assumes less
    assert "dualpipe 4 (table (PP/2-1)(F&B+B-3W) = 3, which assumes T_F <= T_B and T_W <= " \
        "T_B) vs 1f1b 12" in capsys.readouterr().out
    monkeypatch.setenv("MINIMEGATRON_LANG", "ko")
    timeline.main(["--schedule", "dualpipe", "--stages", "4", "--micro-batches", "8",
                   "--out", ""])
    assert "(DeepSeek의 표: PP + 1)" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        timeline.main(["--schedule", "dualpipe", "--stages", "4", "--micro-batches", "6",
                       "--out", ""])
    assert "micro-batch가 필요합니다" in capsys.readouterr().err


def test_the_memory_calculators_rows():
    """tools/memory.py: DualPipe's rank holds stages k and K-1-k (2x), its activations PP + 1
    stages; DualPipeV's rank virtual stages k and 2K-1-k (1x), K + 1/2 stages of K."""
    from minimegatron.tools import memory
    cfg, K = VERIFY_CONFIG, 4
    stage = [memory.rank_param_count(cfg, K, 1, k) for k in range(K)]
    half = [memory.rank_param_count(cfg, 2 * K, 1, v) for v in range(2 * K)]
    for k in range(K):
        dual = memory.rank_report(cfg, 2, 8, pp=K, stage=k, schedule="dualpipe")
        assert dual["params"] == stage[k] + stage[K - 1 - k]
        assert dual["weights"] == 2 * dual["params"]                      # mixed: 2 B each
        v = memory.rank_report(cfg, 2, 8, pp=K, stage=k, schedule="dualpipev")
        assert v["params"] == half[k] + half[2 * K - 1 - k]
        assert memory.in_flight(K, 8, k, "dualpipe") == K + 1
        assert memory.in_flight(K, 8, k, "dualpipev") == K + 0.5
        assert dual["activations"] == (K + 1) / (K + 0.5) * v["activations"]
    assert sum(memory.pipeline_param_count(cfg, K, 1, k, "dualpipe") for k in range(K)) == \
        2 * memory.param_count(cfg)
    with pytest.raises(ValueError, match="'dualpipe' needs an even number of stages"):
        memory.in_flight(3, 6, 0, "dualpipe")
