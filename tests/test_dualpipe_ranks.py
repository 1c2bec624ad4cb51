"""DualPipe and DualPipeV on 4 real ranks against one process (tests/workers/dualpipe_checks.py).

One launch. Loss, gradients and the weights after 3 AdamW steps equal one process (float64
tight, with recomputation too; float32 within verify's tolerance). A step traces F, B and W
of each micro-batch and chunk once, 2M(K-1) sends (DualPipe: both directions, none between
them; DualPipeV: the V's turn on the last rank is no message), and, for DualPipe only, one
all-reduce of the rank's whole gradient (its two stages, 8 bytes a value) over the mirror
pair {k, K-1-k}, besides the 8-byte loss. The model state held after an AdamW step equals
tools/memory.py's (DualPipe: twice a stage's parameters), the activations held the
calculator's peak, and mirrored ranks hold the same weights, byte for byte. Without the
mirror sum, or with a mean in its place, the gradients are wrong. The traced step draws
(tools/timeline.py rows, tools/chrome_trace.py events, the mirror all-reduce among them).
Too few or an odd number of micro-batches fail on every rank with the schedule's own
ValueError, before any message. Trainer3D composes both with dp (DDP over two pipelines)
and tp (with sequence parallelism), each equal to one process.
"""
import pytest

from mpi_harness import run_mpi

from minimegatron.checks.pipeline import TOLERANCE
from minimegatron.data.demo import VERIFY_CONFIG
from minimegatron.tools import chrome_trace, memory
from minimegatron.tools.timeline import COMPUTE, rows_from_trace

K = 4


@pytest.fixture(scope="module")
def results():
    return run_mpi(K, "workers/dualpipe_checks.py:run", timeout=400)


def test_both_train_equal_to_one_process(results):
    for rank, res in enumerate(results):
        assert len(res["equivalence"]) == 12
        for case, diffs in res["equivalence"].items():
            bounds = diffs.pop("tolerance", None) or {key: TOLERANCE for key in diffs}
            assert bounds["loss"] <= 1e-4 and bounds["grad"] <= 1e-4
            for key, value in diffs.items():
                assert value < bounds[key], f"rank {rank}, {case}: {key} {value}"


def test_a_step_runs_each_micro_batch_once_and_sends_2m_k_minus_1(results):
    M = 2 * K
    for name in ("dualpipe", "dualpipev"):
        sends = 0
        for res in results:
            counts = res["steps"][name]["counts"]
            runs = M if name == "dualpipe" else 2 * M      # M/2 per chunk, or M per chunk
            assert counts["forward"] == counts["backward"] == counts["weight"] == runs
            sends += counts.get("send", 0)
        boundaries = 2 * (K - 1) if name == "dualpipe" else 2 * K - 2
        assert sends == 2 * (M // (2 if name == "dualpipe" else 1)) * boundaries
    assert [r["steps"]["dualpipe"]["layers"] for r in results] == [
        [0, 1, 6, 7], [2, 3, 4, 5], [2, 3, 4, 5], [0, 1, 6, 7]]


def test_dualpipes_mirrored_gradients_are_summed_over_the_pair(results):
    for rank, res in enumerate(results):
        dual, v = res["steps"]["dualpipe"], res["steps"]["dualpipev"]
        reduces = dual["all_reduces"]
        grads = [r for r in reduces if r[0] == "world.mirror"]
        assert len(grads) == 1, reduces                 # one collective, every gradient
        assert grads[0][1] == 8 * dual["params"]        # 8 bytes a value, both stages
        assert grads[0][2] == 8 * dual["params"]        # ring of 2: 2(N-1)/N x n = n
        assert [r for r in reduces if r[0] == "world"] == [["world", 8, 12]]   # the loss
        assert v["all_reduces"] == []                    # DualPipeV: one copy, nothing to sum
    digests = [res["steps"]["dualpipe"]["digest"] for res in results]
    assert digests[0] == digests[3] and digests[1] == digests[2] and digests[0] != digests[1]


def test_memory_per_rank_is_the_calculators(results):
    one_stage = [memory.rank_param_count(VERIFY_CONFIG, K, 1, k) for k in range(K)]
    for rank, res in enumerate(results):
        for name in ("dualpipe", "dualpipev"):
            step = res["steps"][name]
            assert step["params"] == step["param_formula"]
            for kind in ("weights", "grads", "optimizer", "total"):
                assert step["state"][kind] == step["state_formula"][kind], (rank, name, kind)
        dual = res["steps"]["dualpipe"]
        assert dual["params"] == one_stage[rank] + one_stage[K - 1 - rank]   # two copies
        assert dual["peak"] == dual["in_flight"] == K + 1             # DeepSeek's PP + 1
        v = res["steps"]["dualpipev"]
        assert v["peak"] == 2 * K + 1 and v["in_flight"] == K + 0.5   # 2K+1 half stages
    total = sum(res["steps"]["dualpipe"]["params"] for res in results)
    assert total == 2 * sum(res["steps"]["dualpipev"]["params"] for res in results)


def test_without_the_mirror_sum_the_gradients_are_wrong(results):
    for res in results:
        for mutant in ("no_mirror_sum", "mirror_mean"):
            diffs = res["mutants"][mutant]
            assert "error" not in diffs and diffs["grad"] > 1e-3, (mutant, diffs)


def test_bad_micro_batch_counts_fail_on_every_rank_before_a_message(results):
    for res in results:
        errors = res["errors"]
        assert errors["dualpipe/M=6"]["error"] == errors["dualpipe/M=9"]["error"].replace(
            "9 micro", "6 micro")
        assert "ValueError: schedule 'dualpipe' needs an even number of stages" in \
            errors["dualpipe/M=9"]["error"]
        assert errors["dualpipev/M=7"]["error"] == (
            "ValueError: schedule 'dualpipev' needs at least 8 micro-batches for 4 stages "
            "(twice the stages: the V's 2P chunks); got 7")


def test_the_traced_step_draws_as_a_timeline_and_a_chrome_trace(results):
    """Rank 0's gathered spans: one row per rank, F/B/W boxes per chunk, the mirror sum."""
    M = 2 * K
    for name, per_rank in (("dualpipe", 3 * M), ("dualpipev", 6 * M)):
        spans = results[0]["steps"][name]["spans"]
        assert all(r["steps"][name]["spans"] is None for r in results[1:])
        rows = rows_from_trace(spans)
        assert len(rows) == K
        for row in rows:
            assert sum(1 for box in row if box[2] in COMPUTE) == per_rank
        events = chrome_trace.from_trace(spans, name)["traceEvents"]
        names = {e["name"] for e in events if e["ph"] == "X"}
        assert {"F0c0", f"F{M - 1}c1", f"W{M - 1}c1"} <= names
        if name == "dualpipe":                    # chunk 1 runs the micro-batches going up
            assert f"F{M - 1}c0" not in names and "F0c1" not in names
        reduces = sum(e["name"] == "all_reduce" for e in events)   # the mirror sum, the loss
        assert reduces == (2 * K if name == "dualpipe" else 0)


def test_composes_with_data_and_tensor_parallelism(results):
    """Trainer3D: DDP averages over dp after the engine summed the mirrors; tp shards mirror
    their own tp rank's (every group a strict subset of the 4 ranks)."""
    for rank, res in enumerate(results):
        assert len(res["grids"]) == 4
        for case, diffs in res["grids"].items():
            for key in ("loss", "grad", "weight"):
                assert diffs[key] < TOLERANCE, (rank, case, key, diffs[key])
            assert diffs["compared"] > 0
