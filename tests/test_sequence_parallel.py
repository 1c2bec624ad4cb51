"""Sequence parallelism (Korthikanti et al. 2022) on 1, 2 and 4 real MPI ranks.

One launch per rank count runs every check (tests/workers/sp_checks.py: check_all);
the tests below assert each value: the operators' adjoints, the GPT against one
process, tp = 1 bitwise equal to the plain model, the trace's collectives and
bytes per block, the activation bytes one block keeps against tools/memory.py,
one clear error for a sequence tp does not divide, and 3D grids whose tp group
is a strict subset of the world (dp2 x tp2 and pp2 x tp2 on 4 ranks).
"""
import collections
import re

import pytest

from mpi_harness import run_mpi

from minimegatron.tools import memory
from minimegatron.commands.memory import main as memory_main

SIZES = [1, 2, 4]
B, T, D, L = 2, 8, 32, 2           # the batch, sequence, width and layers of sp_checks.CONFIG
_RUNS = {}


def launch(tp):
    if tp not in _RUNS:
        _RUNS[tp] = run_mpi(tp, "workers/sp_checks.py:check_all", timeout=240)
    return tp, _RUNS[tp]


@pytest.fixture(params=SIZES)
def sp_run(request):
    return launch(request.param)


def test_operators_are_adjoint_and_correct(sp_run):
    tp, results = sp_run
    for rank, res in enumerate(results):
        assert len(res["operators"]) == 8
        assert res["gradcheck"] < 1e-7                     # the fused op's own backward
        bad = {k: v for k, v in res["operators"].items() if not v < 1e-12}
        assert not bad, f"tp={tp} rank {rank}: {bad}"


def test_gpt_matches_one_process_and_tp1_is_the_plain_model(sp_run):
    tp, results = sp_run
    for rank, res in enumerate(results):
        assert res["tp1"] == 0.0
        gpt = res["gpt"]
        assert gpt["loss"] < 1e-12 and gpt["grad"] < 1e-12 and gpt["weight"] < 1e-10, gpt
        drop = res["dropout"]
        assert drop["effect"] > 1e-3                       # the dropout really drops
        assert drop["loss"] < 1e-12 and drop["grad"] < 1e-12, drop


def _per_block(spans, block="blocks.0"):
    """{(phase, op, kind): [bytes_sent]} of one block; kind: act, regather or params."""
    out = collections.defaultdict(list)
    for phase, op, label, nbytes, sent in spans:
        if not label or not label.startswith(block + ".") and not label.startswith(block + "/") \
                and label != block:
            continue
        kind = "params" if "sp-params" in label else "regather" if "regather" in label else "act"
        out[(phase, op, kind)].append((nbytes, sent))
    return out


def test_trace_two_all_gathers_two_reduce_scatters_same_bytes(sp_run):
    tp, results = sp_run
    if tp == 1:
        pytest.skip("one rank sends nothing")
    full = B * T * D * 8                                   # one (B, T, D) float64 activation
    ring = (tp - 1) * full // tp                           # AG or RS of it, per rank
    for res in results:
        plain, sp = (_per_block(res["spans"][flag]) for flag in ("False", "True"))
        assert {k: len(v) for k, v in plain.items()} == {
            ("forward", "all_reduce", "act"): 2, ("backward", "all_reduce", "act"): 2}
        assert {k: len(v) for k, v in sp.items()} == {
            ("forward", "all_gather", "act"): 2, ("forward", "reduce_scatter", "act"): 2,
            ("backward", "all_gather", "act"): 2, ("backward", "reduce_scatter", "act"): 2,
            ("backward", "all_gather", "regather"): 2, ("backward", "all_reduce", "params"): 6}
        for key in [k for k in sp if k[2] != "params"]:
            assert [sent for _, sent in sp[key]] == [ring, ring], key
        for phase in ("forward", "backward"):
            ar = sum(sent for _, sent in plain[(phase, "all_reduce", "act")])
            assert ar == 2 * 2 * ring                       # 2 all-reduces of 2(t-1)/t * F
            assert sum(sent for (p, _, kind), v in sp.items() if p == phase and kind == "act"
                       for _, sent in v) == ar              # the paper's claim: same bytes
        # LayerNorm weight and bias (2 LayerNorms) + proj and fc2 biases: D values each
        assert [n for n, _ in sp[("backward", "all_reduce", "params")]] == [D * 8] * 6


def test_activation_bytes_equal_the_formula(sp_run):
    tp, results = sp_run
    for res in results:
        mem = res["memory"]
        formula = {key: memory.activation_bytes_per_layer(
            memory.GPTShape(24, T, 1, D, 8), B, t, "float64", sequence_parallel=sp)
            for key, t, sp in (("serial", 1, False), ("tp", tp, False), ("sp", tp, True))}
        assert mem == formula
        assert mem["sp"] * tp == mem["serial"]              # everything split by t


def test_bad_sequence_length_one_error_on_every_rank(sp_run):
    tp, results = sp_run
    if tp == 1:
        pytest.skip("tp = 1 splits nothing")
    want = (f"sequence parallel: a sequence of 7 tokens does not split over tp={tp} ranks; "
            f"use a length divisible by {tp}")
    for res in results:
        assert res["bad"] == {"gpt": want, "3d": want, "spans": 0}


def test_3d_with_sequence_parallel_matches_one_process():
    _, results = launch(4)
    for res in results:
        for dims, compared in (("(2, 1, 2)", 29), ("(1, 2, 2)", (14, 15))):
            d = res[f"3d_{dims}"]
            assert d["loss"] < 1e-12 and d["grad"] < 1e-12 and d["weight"] < 1e-10, (dims, d)
            assert d["compared"] in (compared if isinstance(compared, tuple) else (compared,))


def test_3d_traffic_equals_the_calculator():
    """Bytes sent over tp (from the trace) == tools/memory.comm_bytes(sequence_parallel),
    exactly, also with recomputation; pp up to the 8 B loss broadcast, dp up to the 8 B
    loss all-reduce."""
    _, results = launch(4)
    for res in results:
        for dims in ("(2, 1, 2)", "(1, 2, 2)", "recompute"):       # recompute: pp2 x tp2
            got, want = res[f"bytes_{dims}"]["measured"], res[f"bytes_{dims}"]["predicted"]
            assert got["tp"] == want["tp"] > 0, (dims, got, want)
            assert 0 <= got["pp"] - want["pp"] <= 8 and 0 <= got["dp"] - want["dp"] <= 8


def test_table2_and_formulas():
    g = memory.GPTShape(51200, 2048, 1, 12288, 96)
    s, b, h, a, t = 2048, 1, 12288, 96, 8
    per = memory.activation_bytes_per_layer
    assert per(g, b) == pytest.approx(s * b * h * (34 + 5 * a * s / h))
    assert per(g, b, t) == pytest.approx(s * b * h * (10 + 24 / t + 5 * a * s / (h * t)))
    assert per(g, b, t, sequence_parallel=True) == pytest.approx(
        s * b * h / t * (34 + 5 * a * s / h))
    assert per(g, b, t, recompute="selective") == pytest.approx(s * b * h * (10 + 24 / t))
    assert per(g, b, t, sequence_parallel=True, recompute="selective") == pytest.approx(
        s * b * h * 34 / t)
    assert per(g, b, t, recompute="full") == 2 * s * b * h
    with pytest.raises(ValueError):
        per(g, b, t, precision="float64", recompute="selective")
    text = memory.table2_text()
    for formula in ("sbh(34 + 5as/h)", "sbh(10 + 24/t + 5as/(ht))", "sbh(34/t + 5as/(ht))",
                    "sbh(10 + 24/t)", "sbh(34/t)", "sbh(2)"):
        assert formula in text


def test_memory_cli_sequence_parallel(capsys):
    assert memory_main(["--tp", "8", "--seq", "1024"]) == 0
    plain = capsys.readouterr().out
    assert memory_main(["--tp", "8", "--seq", "1024", "--sequence-parallel"]) == 0
    sp = capsys.readouterr().out
    assert "sequence parallel" in sp and "sequence parallel" not in plain

    def activations_gb(out):              # stage 0's "activ" column (GB)
        return float(re.search(r"^ +0 +[\d,]+ +\S+ +\S+ +\S+ +(\S+)", out, re.M).group(1))
    g = memory.GPTShape(51200, 1024, 72, 3072, 32)
    for out, flag in ((plain, False), (sp, True)):
        want = memory.activation_bytes(g, 8, tp=8, sequence_parallel=flag) / memory.GB
        assert activations_gb(out) == pytest.approx(want, abs=0.01)
    assert activations_gb(sp) < 0.6 * activations_gb(plain)
    assert memory_main(["table2"]) == 0
    assert "Table 2" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        memory_main(["--tp", "8", "--seq", "1020", "--sequence-parallel"])
