"""The calculator against published numbers and against counts done by hand."""
import json
import math
from types import SimpleNamespace

import pytest

from minimegatron.tools import memory as mm
from minimegatron.commands import memory as memory_command
from minimegatron.tools import scaling

TABLE1 = [(1536, 16, 40, 1.2, 1.21), (1920, 20, 54, 2.5, 2.49),
          (2304, 24, 64, 4.2, 4.20), (3072, 32, 72, 8.3, 8.32)]
SMALL = mm.GPTShape(vocab=65, seq_len=32, n_layer=4, d_model=64, n_head=4)


def shapes(g, tp=1, layers=None, first=True, last=True):
    """Every parameter's shape on one tp rank, listed by hand (V padded to a multiple)."""
    h, t, v = g.d_model, tp, -(-g.vocab // tp) * tp
    block = [(h,), (h,), (h, 3 * h // t), (3 * h // t,), (h // t, h), (h,), (h,), (h,),
             (h, 4 * h // t), (4 * h // t,), (4 * h // t, h), (h,)]
    out = block * (g.n_layer if layers is None else layers)
    out += [(v // t, h), (g.seq_len, h)] if first else []
    return out + ([(h,), (h,), (h, v // t)] if last else [])


def count(shape_list):
    return sum(math.prod(s) for s in shape_list)


@pytest.mark.parametrize("h, heads, L, billions, unrounded", TABLE1)
def test_megatron_table1(h, heads, L, billions, unrounded):
    p = mm.megatron_param_count(L, h)
    assert heads * 96 == h
    assert round(p / 1e9, 1) == billions and round(p / 1e9, 2) == unrounded


def test_rule_of_thumb_and_fp16_weights():
    assert round(8.3e9 * mm.RULE_OF_THUMB_BYTES_PER_PARAM / 1e9) == 166
    L, h = 72, 3072
    assert mm.model_state_bytes(12 * L * h * h)["weights"] == 2 * 12 * L * h * h
    assert round(2 * 12 * L * h * h / 1e9, 1) == 16.3


def test_zero_paper_7_5b_on_64():
    totals = [mm.model_state_bytes(7.5e9, 64, z)["total"] / 1e9 for z in range(4)]
    assert [round(x, 1) for x in totals] == [120.0, 31.4, 16.6, 1.9]


@pytest.mark.parametrize("precision", ["mixed", "float32", "float64"])
def test_zero_stage_formulas(precision):
    P, N = 6400, 64
    b = mm.PRECISIONS[precision]
    if precision == "mixed":
        expected = [16 * P, 4 * P + 12 * P / N, 2 * P + 14 * P / N, 16 * P / N]
    else:
        expected = [4 * b * P, 2 * b * P + 2 * b * P / N, b * P + 3 * b * P / N, 4 * b * P / N]
    got = [mm.model_state_bytes(P, N, z, precision)["total"] for z in range(4)]
    assert got == pytest.approx(expected, rel=1e-15)
    with pytest.raises(ValueError):
        mm.model_state_bytes(P, N, 4)


def test_param_count_by_hand():
    g, h = SMALL, SMALL.d_model
    assert count(shapes(g)) == mm.param_count(g)
    assert mm.param_count(g, tied_head=True) == mm.param_count(g) - h * g.vocab
    megatron = mm.megatron_param_count(g.n_layer, h, g.vocab, g.seq_len)
    assert megatron == mm.param_count(g, tied_head=True) - 2 * h   # no final LN
    cfg = SimpleNamespace(vocab_size=65, block_size=32, n_layer=4, n_embd=64, n_head=4)
    assert mm.GPTShape.of(cfg) == g


@pytest.mark.parametrize("pp, tp", [(1, 1), (2, 1), (1, 2), (2, 2), (4, 2), (1, 4)])
def test_rank_split_sums_back(pp, tp):
    g, h = SMALL, SMALL.d_model
    per_stage = [mm.rank_param_count(g, pp, tp, k) for k in range(pp)]
    for k, n in enumerate(per_stage):
        assert n == count(shapes(g, tp, g.n_layer // pp, k == 0, k == pp - 1))
    v_pad = mm.padded(g.vocab, tp)
    extras = g.n_layer * 6 * h * (tp - 1) + (tp - 1) * (g.seq_len * h + 2 * h)
    extras += 2 * h * (v_pad - g.vocab)
    assert tp * sum(per_stage) == mm.param_count(g) + extras
    with pytest.raises(ValueError):
        mm.rank_param_count(g, pp=3)


def test_activations():
    g = mm.GPTShape(51200, 1024, 72, 3072, 32)
    s, b, h, a = 1024, 8, 3072, 32
    assert mm.activation_bytes_per_layer(g, b) == pytest.approx(s * b * h * (34 + 5 * a * s / h))
    f64 = mm.activation_bytes_per_layer(g, b, tp=2, precision="float64")
    split = 16 * s * b * h + a * s * s * b                     # this code's exact count,
    assert f64 == 8 * (5 * s * b * h + 2 * s * b + split / 2)  # see test_sequence_parallel
    assert [mm.in_flight(4, 8, k) for k in range(4)] == [4, 3, 2, 1]
    assert mm.in_flight(4, 2, 0) == 2 and mm.in_flight(4, 8, 3, "gpipe") == 8
    per_layer = mm.activation_bytes_per_layer(g, b, 2)
    full = mm.activation_bytes(g, b, 8, pp=4, tp=2, stage=1)
    assert full == 3 * 18 * per_layer
    ckpt = mm.activation_bytes(g, b, 8, pp=4, tp=2, stage=1, checkpoint=True)
    assert ckpt == 3 * 18 * s * b * h * 2 + per_layer


def test_context_parallel_activations_and_traffic():
    """cp = c: every per-token array holds s/c tokens; what attention keeps depends on the
    variant (exact, float64, measured in tests/test_context_parallel.py and tutorial 12);
    the ring's K/V in flight; the cp bytes per layer; ZeRO and dp traffic over dp x cp."""
    g = mm.GPTShape(16, 16, 2, 16, 4)                     # demo.CONTEXT_CONFIG
    s, b, h, a, c = 16, 4, 16, 4, 4
    q = s // c                                            # s' = s/c tokens on a rank
    assert mm.activation_bytes_per_layer(g, b, precision="float64", cp=1) == \
        mm.activation_bytes_per_layer(g, b, precision="float64")
    ring = mm.activation_bytes_per_layer(g, b, precision="float64", cp=c)
    assert ring == 8 * (22 * q * b * h + 2 * q * b + a * q * b) + 8 * s == 45952
    gather = mm.activation_bytes_per_layer(g, b, precision="float64", cp=c,
                                           attention="allgather")
    assert gather == 8 * (20 * q * b * h + 2 * s * b * h + 2 * q * b + a * q * b) + q * s
    ulysses = mm.activation_bytes_per_layer(g, b, precision="float64", cp=c, attention="ulysses")
    assert ulysses == 8 * (21 * q * b * h + 2 * q * b + a * s * s * b / c)
    serial = mm.activation_bytes_per_layer(g, b, precision="float64")
    assert serial > 4 * ring                              # no s x s matrix on the ring
    big = mm.GPTShape(51200, 8192, 32, 4096, 32)          # mixed: 34 sbh / c, no 5as/h
    assert mm.activation_bytes_per_layer(big, 1, 8, cp=4) == pytest.approx(
        8192 / 4 * 4096 * (10 + 24 / 8))
    with pytest.raises(ValueError, match="attention must be one of"):
        mm.activation_bytes_per_layer(g, b, cp=2, attention="tree")
    flight = mm.ring_in_flight_bytes(g, b, cp=c, precision="float64")
    block = 2 * q * b * h * 8                             # one K/V block
    assert flight == {"forward": 2 * block, "backward": 4 * block}
    for attention, per_layer in (("allgather", 2 * 2 * (c - 1) * s * h * 8 * b // c),
                                 ("ring", (3 * c - 2) * 2 * (s // c) * h * 8 * b),
                                 ("ulysses", 2 * 4 * (c - 1) * (s // c) * h * 8 * b // c)):
        got = mm.comm_bytes(g, b, dp=2, cp=c, precision="float64", attention=attention)
        assert got["cp"] == pytest.approx(g.n_layer * per_layer), attention
        assert got["dp"] == pytest.approx(2 * 7 / 8 * mm.param_count(g) * 8)   # dp x cp = 8
    r = mm.rank_report(g, b, dp=2, zero=1, cp=c, precision="float64")
    assert r["optimizer"] == mm.model_state_bytes(r["params"], 8, 1, "float64")["optimizer"]
    assert r["total"] == (r["weights"] + r["grads"] + r["optimizer"] + r["activations"]
                          + r["ring_in_flight"])


def test_flops_seeds_vs_megatron():
    B, T, D, H, V = 3, 16, 8, 2, 50
    matmuls = [(T, D, 3 * D), (T, D, T), (T, T, D), (T, D, D), (T, D, 4 * D), (T, 4 * D, D)]
    per_seq_layer = sum(2 * m * k * n for m, k, n in matmuls)
    assert mm.forward_flops(B, T, D, H) == B * H * per_seq_layer
    g = mm.GPTShape(V, T, H, D, 2)
    assert mm.training_flops(g, B) == 3 * B * H * per_seq_layer + 3 * 2 * B * T * D * V
    for h, heads, L, *_ in TABLE1:
        g = mm.GPTShape(51200, 1024, L, h, heads)
        ours = mm.training_flops(g, 512, recompute=True)
        assert ours == pytest.approx(mm.megatron_flops(512, 1024, L, h), rel=1e-12)


def test_ring_volumes():
    for n in (2, 4, 8):
        assert mm.all_reduce_bytes(800, n) == pytest.approx(2 * (n - 1) / n * 800)
        assert mm.reduce_scatter_bytes(800, n) == mm.all_gather_bytes(800, n)
        assert mm.all_gather_bytes(800, n) == pytest.approx((n - 1) / n * 800)


def test_comm_bytes():
    g, b, M = SMALL, 2, 4
    sbh = g.seq_len * b * g.d_model * 8
    ddp = mm.comm_bytes(g, b, M, dp=4, precision="float64")["dp"]
    grads = mm.param_count(g) * 8
    assert ddp == pytest.approx(2 * 3 / 4 * grads)
    assert mm.comm_bytes(g, b, M, dp=4, zero=2, precision="float64")["dp"] == ddp
    assert mm.comm_bytes(g, b, M, dp=4, zero=1, precision="float64")["dp"] == 1.5 * ddp
    assert mm.comm_bytes(g, b, M, dp=4, zero=3, precision="float64")["dp"] == 1.5 * ddp
    tp = mm.comm_bytes(g, b, M, tp=2, precision="float64")["tp"]
    values = g.n_layer * 4 * sbh + 2 * sbh + 3 * sbh / g.d_model
    assert tp == pytest.approx(M * mm.all_reduce_bytes(values, 2))
    pp = [mm.comm_bytes(g, b, M, pp=4, stage=k, precision="float64")["pp"] for k in range(4)]
    assert pp == [M * sbh, 2 * M * sbh, 2 * M * sbh, M * sbh]
    r = mm.rank_report(g, b, M, dp=2, pp=2, tp=2, stage=1, precision="float64")
    assert r["total"] == r["weights"] + r["grads"] + r["optimizer"] + r["activations"]


def test_scaling_model_is_sensible():
    rows = scaling.table1_scaling()
    assert rows[0][4]["efficiency"] == pytest.approx(1.0)
    assert rows[0][4]["flops_per_s"] == pytest.approx(39e12)
    effs = [t["efficiency"] for *_, t, _ in rows]
    assert all(0 < e <= 1 + 1e-12 for e in effs)
    assert effs[:4] == sorted(effs[:4], reverse=True)          # more tp, more comm
    assert all(effs[i + 4] < effs[i] for i in range(4))         # dp adds gradient traffic
    assert 12e15 < rows[-1][4]["flops_per_s"] < 18e15            # paper: 15.1 PFLOP/s
    cross = {(n, tp): t["efficiency"] for n, tp, _, t in scaling.tp_across_nodes()}
    assert cross[(8, 16)] < cross[(16, 16)] - 0.15               # IB instead of NVSwitch
    assert cross[(16, 32)] < cross[(16, 16)] - 0.15


def test_hardware_from_json(tmp_path):
    path = tmp_path / "calib.json"
    path.write_text(json.dumps({"gemm_flops": 2e10, "bandwidth_bytes_per_s": 5e9,
                                "latency_s": 1e-6}))
    hw = scaling.Hardware.from_json(str(path))
    assert hw.flops == 2e10 and scaling.link(hw, 8, 1) == (5e9, 1e-6)
    t = scaling.step_time(SMALL, hw, dp=2, tp=2, pp=2, micro_batch=2, micro_batches=4,
                          recompute=False, bytes_per_value=8)
    assert t["total"] > t["compute"] > 0 and 0 < t["efficiency"] < 1


def test_cli(capsys):
    assert memory_command.main(["table1"]) == 0
    out = capsys.readouterr().out
    assert all(f" {x:.2f} " in out for *_, x in TABLE1) and "166 GB" in out
    assert memory_command.main(["zero"]) == 0 and "31.4" in capsys.readouterr().out
    assert memory_command.main(["--dp", "64", "--tp", "8", "--zero", "1"]) == 0
    assert "8,474,327,040" in capsys.readouterr().out
    assert memory_command.main(["scaling"]) == 0 and "15.1 PFLOP/s" in capsys.readouterr().out


def test_cli_context_parallel(capsys):
    args = ["--layers", "32", "--hidden", "4096", "--heads", "32", "--seq", "8192", "--tp", "8",
            "--dp", "2", "--micro-batch", "1"]
    assert memory_command.main(args) == 0
    plain = capsys.readouterr().out
    assert memory_command.main(args + ["--cp", "4"]) == 0
    out = capsys.readouterr().out
    assert "cp=4 (ring attention) (64 ranks)" in out and "cp comm" in out
    activ = [float(line.split()[6]) for text in (plain, out) for line in text.splitlines()
             if line.strip().startswith("0 ")]
    assert activ[1] < activ[0] / 4                      # s/4 tokens and no s x s softmax
    with pytest.raises(SystemExit):
        memory_command.main(args + ["--cp", "8", "--attention", "ulysses"])   # 4 heads per tp rank
    assert "the 4 heads of a tp rank must divide by --cp 8" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        memory_command.main(args + ["--cp", "3"])
    assert "--seq 8192 must divide into 6 equal chunks" in capsys.readouterr().err


def test_in_flight_reads_every_schedule_of_the_registry():
    """Stage-equivalents held at peak, read off each schedule's own actions (K=4, M=8)."""
    from minimegatron.parallel.pipeline_parallel.schedules import SCHEDULES
    held = {name: [mm.in_flight(4, 8, k, name) for k in range(4)] for name in SCHEDULES}
    assert held["gpipe"] == [8] * 4 and held["1f1b"] == [4, 3, 2, 1]
    assert held["interleaved"][0] == 4 * (1 + 3 / (4 * 2))    # Megatron: K(1 + (K-1)/(Kv))
    assert held["interleaved"] == [5.5, 4.5, 3.5, 2.5]
    assert held["zbv"] == [4] * 4 and held["zb-h1"] == [4] * 4 and held["zb-h2"] == [7] * 4
    with pytest.raises(ValueError, match="at least 7 micro-batches"):
        mm.in_flight(4, 2, 0, "zb-h2")
