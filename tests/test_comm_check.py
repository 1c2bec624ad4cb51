"""Checking mode (comm/comm_check.py, comm/mismatch.py): mismatched collectives fail as one, named.

One launch per rank count (2 and 4) runs every case of tests/workers/mismatch_checks.py.
Each mismatch must raise the SAME CollectiveMismatch on every rank, naming both
sides; matching calls must pass with the right values; the trace must count
only the user's collectives. Without the check the same mismatch passes
silently ("unchecked_M3"), which is what the check exists to stop.
"""
import json
import os
import subprocess
import sys

import numpy as np
import pytest

from mpi_harness import REPO_ROOT, run_mpi

# case -> text the message must hold: the reason, then what each side called
EXPECTED = {
    "M1_shape": ["shape differs", "shape=(4,)", "shape=(8,)"],
    "M2_dtype": ["dtype differs", "dtype=float64", "dtype=float32"],
    "M3_reduce_op": ["reduce op differs", "op='sum'", "op='max'"],
    "M4_root": ["root differs", "root=0", "root=1"],
    "M5_all_gather_vs_reduce_scatter": ["the collective differs", "all_gather(",
                                        "reduce_scatter("],
    "M6_rows_without_sizes": ["row counts differ and no sizes", "shape=(2, 2)", "shape=(3, 2)"],
    "M7_lying_sizes": ["does not match the rows", "shape=(3, 2)", "shape=(5, 2)"],
    "M8_all_reduce_vs_broadcast": ["the collective differs", "all_reduce(", "broadcast("],
    "M9_ddp_buckets": ["bucket layout differs", "bucket_bytes=1048576", "bucket_bytes=1,",
                       "minimegatron/parallel/data_parallel/ddp.py:"],
    "M10_zero_stage": ["ZeRO shard layout differs", "stage 1", "stage 2"],
    "M11_nonblocking": ["the collective differs", "all_reduce(", "broadcast("],
    "M12_reduce_root": ["root differs", "root=0, op='sum'", "root=1, op='sum'"],
    "gather_vs_scatter": ["the collective differs", "gather(", "scatter(root=0, axis=0)"],
    "scatter_axis": ["axis differs", "axis=0", "axis=1"],
    "reduce_scatter_shape": ["shape differs", "shape=(8, 2)", "shape=(8, 3)"],
    "barrier_vs_all_reduce": ["the collective differs", "barrier()", "all_reduce("],
    "all_to_all_shape": ["shape differs", "all_to_all(shape=(", ", 2), dtype", ", 3), dtype"],
    "all_to_all_axis": ["axis differs", "axis=0", "axis=1"],
    "all_to_allv_width": ["shape differs", "all_to_allv(shape=(", ", 3), dtype"],
    "all_to_allv_expects_more": ["all_to_allv counts differ: rank 0 sends 1 rows to rank ",
                                 " expects 2 from rank 0", "recv_sizes=[2, 1",
                                 "recv_sizes=[1, 1"],
    "all_to_allv_expects_fewer": ["all_to_allv counts differ: rank 0 sends 1 rows to rank ",
                                  " expects 0 from rank 0", "recv_sizes=[0, 1"],
    "all_to_allv_nonblocking": ["all_to_allv counts differ: rank 0 sends 1 rows to rank ",
                                " expects 2 from rank 0"],
}
COUNT_CASES = 3             # check_counts, like agree(), names its own: no diagnose()
SAME_ON_EVERY_RANK = {  # every rank made the same bad call: one line naming all ranks
    "sizes_length": "entries for",
    "root_out_of_range": "is not a rank of this",
}


def ranks_named(message):
    """The group ranks the lines of a mismatch message name, in order."""
    named = []
    for line in message.splitlines()[1:]:
        who = line.strip().split(" (world")[0]
        named += json.loads(who[len("ranks "):]) if who.startswith("ranks ") else [
            int(who[len("rank "):])]
    return sorted(named)


@pytest.fixture(scope="module", params=[2, 4])
def results(request):
    return request.param, run_mpi(request.param, "workers/mismatch_checks.py:check_all",
                                  timeout=90)


def test_every_mismatch_raises_the_same_error_on_every_rank(results):
    N, res = results
    assert all(r["mode_on_by_default"] for r in res)
    for case, needles in EXPECTED.items():
        message = res[0][case]
        assert all(r[case] == message for r in res), (case, [r[case] for r in res])
        assert message.startswith("collective mismatch in group 'world' ("), (case, message)
        assert "no data was moved" in message
        for needle in needles:
            assert needle in message, (case, needle, message)
        assert ranks_named(message) == list(range(N)), message         # one line per side
        assert f"  rank {N - 1} (world {N - 1}): " in message, message  # the odd one alone
        assert "mismatch_checks.py:" in message                        # the call site
    for case, needle in SAME_ON_EVERY_RANK.items():
        assert all(r[case] == res[0][case] for r in res)
        assert needle in res[0][case] and f"  ranks {list(range(N))} (world" in res[0][case]


def test_matching_calls_pass_and_the_trace_counts_only_them(results):
    N, res = results
    for rank, r in enumerate(res):
        for name in ("uneven_all_gather", "uneven_gather", "scatter_negative_axis",
                     "uneven_all_to_allv"):
            assert r[name] == 0.0, name
        assert r["all_reduce"] == sum(range(N))
        assert r["reduce_scatter"] == N * len(np.array_split(np.ones(2 * N + 1), N)[rank])
        assert r["broadcast"] == N - 1
        assert r["reduce"] == (N if rank == 0 else None)
        assert r["ring"] == (rank - 1) % N
        assert r["trace"] == {op: 1 for op in (
            "all_gather", "gather", "scatter_header", "scatter", "all_reduce",
            "reduce_scatter", "broadcast", "reduce", "all_to_allv", "barrier", "recv",
            "send")}
        assert r["after_all"] == sum(range(N))                  # the group is still usable
        assert r["slow_paths"] == 0                  # legal calls pass the one small check
        assert r["mismatch_slow_paths"] >= len(EXPECTED) - 2 - COUNT_CASES   # agree(): two


def test_mode_off_allows_uneven_sizes_and_misses_mismatches(results):
    _, res = results
    assert all(r["uneven_all_gather_unchecked"] == 0.0 for r in res)
    assert all(r["unchecked_M3"] == "no error" for r in res)   # why checking exists


def test_send_recv_mismatch_is_raised_by_the_receiver(results):
    _, res = results
    for case, sent in (("p2p_dtype", "shape=(4,), dtype=float32"),
                       ("p2p_count", "shape=(8,), dtype=float64")):
        assert res[0][case] == "no error"
        message = res[1][case]
        assert message.startswith("send/recv mismatch in group 'world', tag 9")
        assert f"rank 0 sent send({sent})" in message
        assert "rank 1 receives into recv(shape=(4,), dtype=float64)" in message
        assert all(case not in r for r in res[2:])


def test_an_uncaught_mismatch_ends_the_job_with_the_message():
    with pytest.raises(pytest.fail.Exception) as info:
        run_mpi(2, "workers/mismatch_checks.py:uncaught", timeout=30)
    text = str(info.value)
    assert "timed out" not in text
    assert "collective mismatch in group 'world' (the collective differs)" in text


def _mode(value):
    env = {**os.environ, "PYTHONPATH": REPO_ROOT, "MINIMEGATRON_CHECK": value}
    return subprocess.run([sys.executable, "-c", "from minimegatron.comm import comm_check; "
                           "print(comm_check.enabled(), comm_check._state['steps'])"],
                          env=env, capture_output=True, text=True, timeout=60)


def test_switch_by_environment_and_context_manager():
    assert _mode("0").stdout.split()[0] == "False"
    assert _mode("1").stdout.split() == ["True", "True"]          # agreed steps
    assert _mode("all").stdout.split() == ["True", "False"]       # every call checked
    bad = _mode("yes")
    assert bad.returncode != 0 and "MINIMEGATRON_CHECK must be 0, 1 or all, got 'yes'" in \
        bad.stderr
    from minimegatron.comm import comm_check
    before = comm_check.enabled()
    with comm_check.checking(False):
        assert not comm_check.enabled()
        with comm_check.checking(True):
            assert comm_check.enabled()
        assert not comm_check.enabled()
    assert comm_check.enabled() == before


def test_disagreement_rules_without_mpi():
    from minimegatron.comm.mismatch import disagreement, signature
    uneven = [np.ones((s, 3)) for s in (1, 2, 3)]

    def table(rows):
        return np.stack(rows)
    legal = table([signature("all_gather", x, sizes=[1, 2, 3]) for x in uneven])
    assert disagreement(legal, "all_gather", -1, [1, 2, 3]) == ""
    lying = table([signature("all_gather", x, sizes=[1, 2, 2]) for x in uneven])
    assert "does not match" in disagreement(lying, "all_gather", -1, [1, 2, 2])
    trailing = table([signature("all_gather", np.ones((1, c)), sizes=[1, 1]) for c in (3, 4)])
    assert disagreement(trailing, "all_gather", -1, [1, 1]) == "shape differs"
    axis = table([signature("gather", np.ones((2, 3)), root=0, axis=a) for a in (-1, 1)])
    assert disagreement(axis, "gather", 0, None) == ""                # -1 and 1 agree in 2D
