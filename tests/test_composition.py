"""The features compose: every pair of {tp, cp, ep, dp, pp, ZeRO-1, ZeRO-2, SP, interleaved,
ZB, float16, bf16, fp8, recompute, FSDP2, HSDP, DualPipe, DualPipeV, balanced} that fits 8
ranks, and the five widest grids, trained against one
process in ONE 8-rank launch (rows packed into blocks of disjoint ranks,
checks/composition.py); the refused pairs refused with their reason; five wrong
implementations caught; and the axes x features table of ``verify --matrix`` equal to the
one in docs/verification.md (in Korean under MINIMEGATRON_LANG=ko: docs/verification.ko.md).
(Checkpointing each combination: the checkpoint tests, tools/checkpoint*.py.)
"""
import os
import subprocess
import sys

import pytest

from minimegatron import i18n
from minimegatron.checks import composition

from korean_lines import english_lines
from mpi_harness import REPO_ROOT, run_mpi

ROWS = [pair for pair in composition.pairs() if composition.refusal(pair) is None]
PIPE = "once per micro-batch"                    # FSDP2 with any pipeline: threed.check_fsdp
SHARDING = "ZeRO-3's place\none sharding"        # FSDP2 with ZeRO: threed.check_fsdp
SCHEDULES, EP = "two pipeline schedules", "sync over edp"
REFUSED = {("ep", "fsdp2"): EP, ("ep", "hsdp"): EP,
           ("pp", "fsdp2"): PIPE, ("pp", "hsdp"): PIPE,
           ("zero1", "zero2"): "one\nzero_stage", ("zero1", "fsdp2"): SHARDING,
           ("zero1", "hsdp"): SHARDING, ("zero2", "fsdp2"): SHARDING,
           ("zero2", "hsdp"): SHARDING, ("interleaved", "zb"): SCHEDULES,
           ("interleaved", "fsdp2"): PIPE,
           ("interleaved", "hsdp"): PIPE, ("interleaved", "dualpipe"): SCHEDULES,
           ("interleaved", "dualpipev"): SCHEDULES, ("zb", "fsdp2"): PIPE, ("zb", "hsdp"): PIPE,
           ("zb", "dualpipe"): SCHEDULES, ("zb", "dualpipev"): SCHEDULES,
           ("float16", "bf16"): "one dtype", ("float16", "fp8"): "one dtype",
           ("bf16", "fp8"): "one dtype", ("fp8", "balanced"): "whole gamma",
           ("fsdp2", "hsdp"): "name one of the two", ("fsdp2", "dualpipe"): PIPE,
           ("fsdp2", "dualpipev"): PIPE, ("fsdp2", "balanced"): "balanced MoE router",
           ("hsdp", "dualpipe"): PIPE, ("hsdp", "dualpipev"): PIPE,
           ("hsdp", "balanced"): "balanced MoE router", ("dualpipe", "dualpipev"): SCHEDULES}
TOL = {"float16": 1e-2, "bf16": 1e-2, "fp8": 5e-2}     # checks/verify.py's contract (max)


def test_every_pair_fits_eight_ranks_and_only_the_thirty_are_refused():
    assert len(composition.pairs()) == 171
    assert [p for p in composition.pairs() if composition.refusal(p)] == list(REFUSED)
    for pair in ROWS + list(composition.WIDEST):
        p = composition.plan(pair)
        assert p.size <= 8, (pair, p)
        for element in pair:                                 # the element is really on
            if element in composition.AXES:                  # HSDP: dp 4 = 2 x 2
                assert getattr(p, element) == (4 if pair == ("dp", "hsdp") else 2), (pair, p)
        assert p.fsdp == (1 if "fsdp2" in pair else 2 if "hsdp" in pair else 0), (pair, p)
        assert p.balanced == ("balanced" in pair) and (p.ep == 2) >= ("balanced" in pair)
        if {"dualpipe", "dualpipev"} & set(pair):            # M = 2 pp, the least it takes
            assert (p.pp, p.micro_batches) == (2, 4) and p.schedule in pair, (pair, p)
        if "hsdp" in pair:                                   # 2 replicas x 2 shards
            assert p.dp * p.cp == 4, (pair, p)
    wide = [composition.plan(w) for w in composition.WIDEST]
    assert all((w.tp, w.cp, w.pp, w.ep, w.size) == (2, 2, 2, 2, 8) for w in wide[:4])
    assert all(w.sequence_parallel and w.recompute for w in wide)
    assert [(w.zero_stage, w.schedule, w.dtype, w.balanced) for w in wide[:4]] == [
        (2, "interleaved", "float64", False), (1, "zb-h1", "float16", False),
        (2, "dualpipev", "float64", True), (1, "dualpipe", "bfloat16", False)]
    assert (wide[4].tp, wide[4].dp, wide[4].cp, wide[4].fsdp, wide[4].size) == (2, 2, 2, 2, 8)


@pytest.mark.parametrize("pair", list(REFUSED))
def test_refused_pairs_raise_their_reason(pair):
    why = composition.refusal(pair)                # plan's, or the trainers' own ValueError
    for word in REFUSED[pair].split("\n"):
        assert word in why, (pair, why)


def test_ep_with_zero_shards_experts_over_an_edp_group_of_two():
    p = composition.plan(("ep", "zero2"))
    assert (p.dp * p.cp) // p.ep == 2 and p.zero_stage == 2


def test_the_doc_table_is_the_one_the_code_prints():
    with open(os.path.join(REPO_ROOT, "docs", "verification.md"), encoding="utf-8") as f:
        doc = f.read()
    begin, end = "<!-- composition matrix: begin -->", "<!-- composition matrix: end -->"
    assert begin in doc and end in doc
    table = doc.split(begin)[1].split(end)[0].strip()
    assert table == composition.matrix_table()
    assert "66 PASS, 4 refused of 70 cells" in table


def test_the_matrix_speaks_korean_under_ko(monkeypatch):
    """Under MINIMEGATRON_LANG=ko every line ``verify --matrix`` prints is Korean (the book's
    refusals read back by book_errors), and docs/verification.ko.md holds that table; a
    reason left in English, or any planted English line, is caught."""
    monkeypatch.setenv("MINIMEGATRON_LANG", "ko")
    with open(os.path.join(REPO_ROOT, "docs", "verification.ko.md"), encoding="utf-8") as f:
        doc = f.read()
    begin, end = "<!-- composition matrix: begin -->", "<!-- composition matrix: end -->"
    static = composition.matrix_table()
    assert doc.split(begin)[1].split(end)[0].strip() == static
    cells = [cell for cell, why in composition.matrix().items() if why is None]
    measured = {cell: "PASS" for cell in cells}
    measured[("tp", "hsdp")] = i18n.text("compose.needs", n=8)
    measured[("dp", "sp")] = "FAIL"
    trained = composition.matrix_table(measured)
    assert "칸 70개 중 PASS 66개, 거절 4개" in static
    assert "칸 70개 중 PASS 64개, FAIL 1개, 학습하지 않음 1개" in trained
    assert "| rank 8개 필요 | PASS" in trained and "| FAIL |" in trained
    assert english_lines(static + "\n" + trained) == []
    for pair in composition.pairs():                  # every refusal, plan's or the book's
        why = composition.refusal(pair)
        assert why is None or english_lines(composition.book_errors.translate(why, "ko")) == [], \
            (pair, why)
    assert english_lines(static + "\nWidest grid that fits 8 ranks: dp2 with SP.") != []
    monkeypatch.setattr(composition.book_errors, "translate", lambda message, lang: message)
    assert english_lines(composition.matrix_table()) != []       # the book's reason in English


def test_pack_uses_disjoint_blocks():
    rounds = composition.pack([4, 2, 2, 4, 1, 8], 8)
    for used in rounds:
        ranks = [r for i, start in used for r in range(start, start + [4, 2, 2, 4, 1, 8][i])]
        assert len(ranks) == len(set(ranks)) and max(ranks) < 8
    assert sorted(i for used in rounds for i, _ in used) == list(range(6))


@pytest.fixture(scope="module")
def trained():
    return run_mpi(8, "workers/composition_checks.py:train_with_mutants",
                   args=(ROWS + list(composition.WIDEST),), timeout=400)


@pytest.mark.parametrize("pair", ROWS + list(composition.WIDEST), ids="+".join)
def test_each_combination_equals_one_process(trained, pair):
    row = next(r for r in trained[0]["right"] if tuple(r["elements"]) == tuple(pair))
    assert row["error"] is None, row
    assert max(row["loss"], row["grad"], row["weight"]) <= row["tol"], row
    precision = [TOL[e] for e in pair if e in TOL]
    assert row["tol"] <= (precision[0] if precision else 1e-10), row


def test_wrong_implementations_fail(trained):
    assert [tuple(r["elements"]) for r in trained[0]["wrong"]] == [
        ("ep", "zero2"), ("ep", "sp"), ("ep", "recompute"), ("dualpipe", "balanced"),
        ("tp", "hsdp")]
    for row in trained[0]["wrong"]:
        assert row["error"] is None, row
        assert max(row["loss"], row["grad"], row["weight"]) > 100 * row["tol"], row


def test_fsdp2_under_tp_gathers_and_reduce_scatters_each_tp_shard_over_dp_alone(trained):
    """dp 2 x tp 2 (the tp + FSDP2 row trains it equal to one process): each tp rank's shard
    of a weight is cut again on dim 0 over its dp group, whose collectives send the
    calculator's bytes; nothing of FSDP2 runs over tp."""
    for rank, res in enumerate(trained):
        r = res["fsdp_tp"]
        assert r["groups"] == [r["dp"]] and r["dp"] != r["tp"], (rank, r)
        assert r["ops"] == ["all_gather", "reduce_scatter"], (rank, r)
        assert r["sent"] == r["formula"] > 0, (rank, r)
        assert r["shards"]["wte.weight"] == [4, 16], (rank, r)   # 16 rows / tp 2 / dp 2


REFUSALS = {"clip_zero": "clip_grad with ZeRO", "sp_length": "6 tokens does not split over tp=4",
            "zero3_pipeline": "zero_stage=3", "dense_zero3": "zero_stage=3",
            "two_stages": "one\nzero_stage", "two_schedules": "two pipeline schedules",
            "fsdp_zero": SHARDING, "fsdp_pipeline": PIPE, "hsdp_replicas": "3 replicas"}


def test_what_cannot_compose_is_refused_alike_on_every_rank_before_any_message(trained):
    refused = [res["refused"] for res in trained]
    assert all(r == refused[0] for r in refused)                 # the same on every rank
    assert refused[0]["spans"] == 0                              # before any message
    for key, words in REFUSALS.items():
        for word in words.split("\n"):
            assert refused[0][key] and word in refused[0][key], (key, refused[0][key])


def test_verify_matrix_prints_the_table_and_trains_it_on_four_ranks():
    static = subprocess.run([sys.executable, "-m", "minimegatron", "verify", "--matrix"],
                            cwd=REPO_ROOT, capture_output=True, text=True, timeout=120)
    assert static.returncode == 0, static.stderr
    assert static.stdout.strip() == composition.matrix_table()
    cmd = [sys.executable, "-m", "minimegatron", "run", "-n", "4", "--timeout", "200",
           "verify", "--matrix"]
    trained = subprocess.run(cmd, cwd=REPO_ROOT, capture_output=True, text=True, timeout=230)
    assert trained.returncode == 0, trained.stdout + trained.stderr
    measured = {cell: "needs 8 ranks" if cell == ("tp", "hsdp") else "PASS"   # 2 x 2 x tp2
                for cell, why in composition.matrix().items() if why is None}
    table = [line for line in trained.stdout.splitlines() if line.startswith("| ")]
    assert table == [line for line in composition.matrix_table(measured).splitlines()
                     if line.startswith("| ")]
    assert "needs 8 ranks | PASS" in table[1]                # the tp row's HSDP cell
    assert "65 PASS, 1 not trained (more ranks than here), 4 refused of 70 cells" in \
        trained.stdout
    assert "trained here against one process" in trained.stdout


def test_fsdp_takes_a_replica_count_and_refuses_what_it_cannot_run():
    from types import SimpleNamespace
    from minimegatron.parallel.data_parallel.fsdp2_grid import check_fsdp
    grid = SimpleNamespace(dp_size=4, cp_size=1, pp_size=1)
    for bad in (True, -1, 1.5, "hsdp"):
        with pytest.raises(ValueError, match="fsdp must be an int >= 0"):
            check_fsdp(grid, 0, bad)
    with pytest.raises(ValueError, match="3 replicas do not divide dp x cp = 4"):
        check_fsdp(grid, 0, 3)
    check_fsdp(grid, 0, 0), check_fsdp(grid, 0, 1), check_fsdp(grid, 0, 4)    # off, FSDP2, HSDP
    check_fsdp(SimpleNamespace(dp_size=1, cp_size=1, pp_size=2), 1, 0)        # off: anything
