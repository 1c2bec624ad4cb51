"""The explorer's "measured" file (docs/assets/explorer/measured.js) against the code as it is.

benchmarks/explorer_measured.py writes the file from real runs: every row ``minimegatron
verify`` trains on 8 ranks that the page can set, one traced step of it (checks/measured.py).
Regenerating it here would take ~90 s of 8 ranks on 2 cores, so this test does two cheaper
things that still fail when the file drifts from what the code measures:

- the whole file against the code (no MPI): the rows are verify's rows on 8 ranks, each
  configuration and prediction what the calculator gives now (a change in tools/memory.py or
  the simulator shows), every measured byte equal to its prediction on every rank of its stage,
  the loss bookkeeping 2(N-1)/N x 8 + 8(K-1) bytes, the idle fraction within IDLE_TOLERANCE;
- four rows measured again on 4 ranks in one launch (ZeRO-1 over dp 4, tp 4 with sequence
  parallelism, interleaved on 4 stages, ZBV on 2): a row of d ranks runs on sub-communicators
  of d in verify's 8-rank run, so each rank sends what it sent there; the bytes must equal the
  file's exactly and the idle fraction the simulator's within the tolerance.

Planted differences (a byte of the file, a row left out, a calculator that forgets the
interleaved schedule's extra crossings, an idle fraction off) must each be found.
"""
import copy
import os

import pytest

from minimegatron.checks import measured
from minimegatron.tools import memory
from mpi_harness import run_mpi

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
AGAIN = [("zero1", [4, 1, 1, 1]), ("tp-sp", [1, 1, 4, 1]), ("pp-interleaved", [1, 4, 1, 4]),
         ("pp-zbv", [1, 2, 1, 8])]


@pytest.fixture(scope="module")
def data():
    return measured.read()


def row(data, scheme, dims):
    return next(r for r in data["rows"] if r["scheme"] == scheme and r["dims"] == dims)


def test_the_file_is_what_the_code_measures_and_predicts(data):
    assert data["ranks"] == 8
    assert measured.problems(data) == []
    schemes = {r["scheme"] for r in data["rows"]}
    assert {"ddp", "zero1", "zero2", "tp", "tp-sp", "pp-gpipe", "pp-1f1b", "pp-interleaved",
            "3d", "cp-ring", "cp-allgather", "cp-ulysses", "4d-ring", "4d-sp"} <= schemes
    assert len(data["rows"]) + len(data["not_on_the_page"]) == 125     # verify's 8-rank rows
    assert all(r["predicted"]["stages"][0]["dp"] > 0 for r in data["rows"] if r["dims"][0] > 1)
    assert sum(r["measured"]["idle"] is not None for r in data["rows"]) >= 20
    for page, words in (("explorer.md", "({} of them"), ("explorer.ko.md", "({}개")):
        with open(os.path.join(ROOT, "docs", page), encoding="utf-8") as file:
            assert words.format(len(data["rows"])) in file.read(), page   # the page's count


def planted(data, change):
    wrong = copy.deepcopy(data)
    change(wrong)
    return measured.problems(wrong)


def test_planted_differences_are_found(data, monkeypatch):
    def byte(d):
        d["rows"][5]["measured"]["stages"][0]["dp"] += 8
    assert planted(data, byte)

    def dropped(d):
        del d["rows"][3]
    assert planted(data, dropped)

    def idle(d):
        r = row(d, "pp-1f1b", [1, 4, 1, 4])
        r["measured"]["idle"] = r["predicted"]["idle"] + 2 * measured.IDLE_TOLERANCE
    assert planted(data, idle)

    def not_the_same(d):
        d["rows"][20]["measured"]["stages"][0]["same_on_every_rank"] = False
    assert planted(data, not_the_same)
    # a calculator that counts every schedule's sends as 1F1B's (comm_bytes without it)
    monkeypatch.setattr(measured, "rank_report", lambda *a: dict(
        memory.rank_report(*a), comm=memory.comm_bytes(*a[:8], *a[9:14])))
    found = measured.problems(data)
    assert found and all(any(s in f for s in ("interleaved", "zbv", "dualpipe")) for f in found)
    assert {s for s in ("interleaved", "zbv", "dualpipev", "dualpipe [2") if
            any(s in f for f in found)} == {"interleaved", "zbv", "dualpipev", "dualpipe [2"}


def test_four_rows_measured_again_on_4_ranks(data):
    again = run_mpi(4, "workers/measured_checks.py:measure", [AGAIN], timeout=240)[0]
    for (scheme, dims), got in zip(AGAIN, again):
        want = row(data, scheme, dims)
        assert got["config"] == want["config"] and got["predicted"] == want["predicted"]
        stages = [{a: s[a] for a in measured.AXES} for s in got["measured"]["stages"]]
        assert stages == [{a: s[a] for a in measured.AXES} for s in want["measured"]["stages"]]
        assert all(s["same_on_every_rank"] for s in got["measured"]["stages"])
        if want["predicted"]["idle"] is not None:
            assert abs(got["measured"]["idle"] - want["predicted"]["idle"]) <= \
                measured.IDLE_TOLERANCE, (scheme, got["measured"]["idle"])
    # interleaved, v = 2: a micro-batch crosses every rank twice, so a middle stage sends
    # 2v = 4 messages per micro-batch and the first 2v - 1 = 3
    inter = row(data, "pp-interleaved", [1, 4, 1, 4])["measured"]["stages"]
    assert 3 * inter[1]["pp"] == 4 * inter[0]["pp"] > 0
    # ZBV, a V on 2 ranks: each rank sends an activation and a gradient of each chunk (the
    # V's turn stays on rank 1), twice what ZB-H1's stages send (one chunk, the same M and b)
    zbv, h1 = (row(data, s, [1, 2, 1, 8])["measured"]["stages"] for s in ("pp-zbv", "pp-zb-h1"))
    assert [s["pp"] for s in zbv] == [2 * s["pp"] for s in h1] and h1[0]["pp"] > 0
