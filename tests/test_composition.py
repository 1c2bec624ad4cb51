"""The features compose: every pair of {tp, cp, ep, dp, pp, ZeRO-1, ZeRO-2, SP, interleaved,
ZB, float16, bf16, fp8, recompute} that fits 8 ranks, and the two widest grids, trained against one
process in ONE 8-rank launch (rows packed into blocks of disjoint ranks,
checks/composition.py); the refused pairs refused with their reason; three wrong
implementations caught; and the axes x features table of ``verify --matrix`` equal to the
one in docs/verification.md.
(Checkpointing each combination: the checkpoint tests, tools/checkpoint*.py.)
"""
import os
import subprocess
import sys

import pytest

from minimegatron.checks import composition

from mpi_harness import REPO_ROOT, run_mpi

ROWS = [pair for pair in composition.pairs() if composition.refusal(pair) is None]
REFUSED = {("zero1", "zero2"): "one\nzero_stage", ("interleaved", "zb"): "two pipeline schedules",
           ("float16", "bf16"): "one dtype", ("float16", "fp8"): "one dtype",
           ("bf16", "fp8"): "one dtype"}
TOL = {"float16": 1e-2, "bf16": 1e-2, "fp8": 5e-2}     # checks/verify.py's contract (max)


def test_every_pair_fits_eight_ranks_and_only_the_five_are_refused():
    assert len(composition.pairs()) == 91
    assert [p for p in composition.pairs() if composition.refusal(p)] == list(REFUSED)
    for pair in ROWS + list(composition.WIDEST):
        p = composition.plan(pair)
        assert p.size <= 8, (pair, p)
        for element in pair:                                 # the element is really on
            if element in composition.AXES:
                assert getattr(p, element) == 2, (pair, p)
    wide = [composition.plan(w) for w in composition.WIDEST]
    assert all((w.tp, w.cp, w.pp, w.ep, w.size) == (2, 2, 2, 2, 8) for w in wide)
    assert all(w.sequence_parallel and w.recompute for w in wide)
    assert [(w.zero_stage, w.schedule, w.dtype) for w in wide] == [
        (2, "interleaved", "float64"), (1, "zb-h1", "float16")]


@pytest.mark.parametrize("pair", list(REFUSED))
def test_refused_pairs_raise_their_reason(pair):
    with pytest.raises(ValueError) as err:
        composition.plan(pair)
    for word in REFUSED[pair].split("\n"):
        assert word in str(err.value)


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
    assert "45 PASS, 0 refused" in table


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
        ("ep", "zero2"), ("ep", "sp"), ("ep", "recompute")]
    for row in trained[0]["wrong"]:
        assert row["error"] is None, row
        assert max(row["loss"], row["grad"], row["weight"]) > 100 * row["tol"], row


REFUSALS = {"clip_zero": "clip_grad with ZeRO", "sp_length": "6 tokens does not split over tp=4",
            "zero3_pipeline": "zero_stage=3", "dense_zero3": "zero_stage=3",
            "two_stages": "one\nzero_stage", "two_schedules": "two pipeline schedules"}


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
    table = [line for line in trained.stdout.splitlines() if line.startswith("| ")]
    assert table == [line for line in composition.matrix_table().splitlines()
                     if line.startswith("| ")]
    assert "45 PASS, 0 refused of 45 cells" in trained.stdout
    assert "trained here against one process" in trained.stdout
