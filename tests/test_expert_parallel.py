"""Expert parallelism: the ep / edp layout and the formulas without MPI; then 8-rank launches.

Launch 1 (first_launch: layer_checks, bad_inputs, mutants): the all-to-all pair is adjoint;
one MoE layer with ep = 2, 4, 8 (capacity and dropless, float64 and float32) gives one
process's output and input gradient, and the bytes of dispatch and combine (forward and backward) read
from the trace equal the formulas; every bad configuration raises the same ValueError on
every rank before any message; a dispatch without the regroup, a dropless regroup in the
wrong order and a gradient norm that forgets the ep group are caught.
Launch 2 (trainer rows): MoETrainer against one process (loss with the aux losses,
gradients, weights after AdamW steps) with ep 2, 4, 8, dropless, with dp, tp, pp and cp
(and all four at once), clipping by the global norm, float32; and expert gradients
reduced over dp x cp (the wrong group) fail. Launch 3: the memory calculator's expert and
dense parameters per rank and dispatch buffer equal the measured.
"""
import numpy as np
import pytest

from mpi_harness import run_mpi

from minimegatron.checks.moe import MOE
from minimegatron.parallel.expert_parallel import (check_expert_parallel, dropless_bytes,
                                                   expert_layout, padded_bytes,
                                                   source_to_expert)
from minimegatron.parallel.grid import grid_layout

TIGHT = 1e-12


def test_ep_folds_over_dp_x_cp_in_blocks_of_consecutive_ranks():
    layout = expert_layout(list(range(8)), 4)
    assert layout == {"ep": [[0, 1, 2, 3], [4, 5, 6, 7]],
                      "edp": [[0, 4], [1, 5], [2, 6], [3, 7]]}
    dp_cp = grid_layout(8, dp=2, pp=1, tp=2, cp=2)["dp_cp"]         # [[0,2,4,6], [1,3,5,7]]
    assert expert_layout(dp_cp[0], 2) == {"ep": [[0, 2], [4, 6]], "edp": [[0, 4], [2, 6]]}
    assert expert_layout(dp_cp[1], 4) == {"ep": [[1, 3, 5, 7]], "edp": [[1], [3], [5], [7]]}


def test_source_major_rows_regroup_expert_major():
    recv = np.array([[1, 2], [3, 0]])              # from rank 0: 1 row for e0, 2 for e1; ...
    # rows arrive [r0e0 | r0e1 r0e1 | r1e0 r1e0 r1e0]: expert 0 = rows 0, 3, 4, 5
    assert source_to_expert(recv).tolist() == [0, 3, 4, 5, 1, 2]


def test_byte_formulas():
    # (ep-1) x E/ep x C x h x b x itemsize: 3 x 2 x 2 x 16 x 2 x 8
    assert padded_bytes(4, 8, 2, 16, 2, 8) == 3 * 2 * 2 * 16 * 2 * 8
    counts = np.array([3, 1, 0, 2, 5, 0, 1, 4])                     # ep = 4: rank 1 owns 2, 3
    assert dropless_bytes(counts, 1, 4, 16, 8) == (16 - 2) * 16 * 8


def test_bad_expert_grids_raise_before_any_message():
    with pytest.raises(ValueError, match="ep=3 does not fit the grid"):
        check_expert_parallel(3, 8, 1)
    with pytest.raises(ValueError, match="num_experts=6 is not divisible by ep=4"):
        check_expert_parallel(4, 8, 1, 6)


@pytest.fixture(scope="module")
def launch():
    return run_mpi(8, "workers/moe_checks.py:first_launch", timeout=300)


@pytest.mark.parametrize("ep", [2, 4, 8])
def test_one_layer_equals_one_process_and_its_bytes_equal_the_formula(launch, ep):
    for rank, res in enumerate(launch):
        assert res[f"adjoint{ep}"] < TIGHT
        for name, tol in (("padded", TIGHT), ("dropless", TIGHT), ("padded%sf32", 1e-5)):
            r = res[name % ep if "%" in name else f"{name}{ep}"]
            assert r["out"] < tol and r["dx"] < tol, (rank, name, r)
            assert r["sent"] == r["formula"], (rank, name, r)
        padded = res[f"padded{ep}"]
        itemsize, capacity = 8, MOE.capacity(8)
        each = (ep - 1) * (8 // ep) * capacity * 16 * 2 * itemsize
        assert padded["sent"]["ep.dispatch"] == padded["sent"]["ep.combine"] == each
        assert padded["dropped"] > 0 and res[f"dropless{ep}"]["dropped"] == 0
        dropless = res[f"dropless{ep}"]
        assert dropless["sent"]["ep.counts"] == (ep - 1) * (8 // ep) * 8
        assert sum(dropless["counts"]) == 2 * 8 * 2                 # b x T x k rows


def test_bad_configurations_fail_alike_on_every_rank_before_any_message(launch):
    bad = [res["bad"] for res in launch]
    assert all(b == bad[0] for b in bad)
    b = bad[0]
    assert "ep=8 does not fit the grid" in b["ep_grid"] and "must divide 4" in b["ep_grid"]
    assert "ep must be an int >= 1" in b["ep_zero"]
    assert "num_experts=6 is not divisible by ep=4" in b["experts"]
    assert "top_k=5 > num_experts=4" in b["top_k"]
    assert "capacity_factor must be a finite number > 0" in b["capacity"]
    assert "cp > 1 needs dropless" in b["cp_capacity"]
    assert b["spans"] == 0


def test_wrong_implementations_are_caught(launch):
    for res in launch:
        m = res["mutants"]
        assert m["dispatch_layout"] > 1e-3 and m["dropless_order"] > 1e-3, m
        assert m["norm_without_ep"] > 1e-6, m


ROWS = [("ep2", (8, 1, 1, 1, 2), {}), ("ep4", (8, 1, 1, 1, 4), {}),
        ("ep8", (8, 1, 1, 1, 8), {}),
        ("dropless4", (8, 1, 1, 1, 4), {"moe": {"capacity_factor": None}}),
        ("every_other", (8, 1, 1, 1, 2), {"moe": {"every": 2}}),
        ("dp2pp2tp2", (2, 2, 2, 1, 2), {"micro_batches": 2}),
        ("dp4tp2", (4, 1, 2, 1, 4), {}), ("dp4pp2", (4, 2, 1, 1, 4), {"micro_batches": 2}),
        ("cp2tp2", (2, 1, 2, 2, 4), {"moe": {"capacity_factor": None}, "batch_size": 4}),
        ("clip", (4, 2, 1, 1, 2), {"clip": 0.05, "micro_batches": 2}),
        ("clip_tp", (2, 2, 2, 1, 2), {"clip": 0.05, "micro_batches": 2}),
        ("all_four", (1, 2, 2, 2, 2), {"moe": {"capacity_factor": None}, "micro_batches": 2,
                                       "batch_size": 4, "clip": 0.05}),
        ("float32", (8, 1, 1, 1, 4), {"dtype": "float32"}),
        ("wrong_group", (8, 1, 1, 1, 4), {"expert_group": "dp_cp"})]


@pytest.fixture(scope="module")
def trained():
    return run_mpi(8, "workers/moe_checks.py:trainer_checks", args=(ROWS,), timeout=600)


@pytest.mark.parametrize("label", [r[0] for r in ROWS if r[0] != "wrong_group"])
def test_moe_trainer_equals_one_process(trained, label):
    tol = 1e-4 if label == "float32" else 1e-12
    for res in trained:
        r = res[label]
        assert max(r["loss"], r["grad"], r["weight"], r["norm"]) < tol, (label, r)
    if label in ("ep2", "ep4", "dp2pp2tp2"):
        assert trained[0][label]["dropped"] > 0                  # capacity 1.0 drops tokens


def test_clipping_rows_clip():
    from minimegatron.checks.moe import DROPLESS, MOE_CONFIG, moe_reference
    assert min(moe_reference(MOE_CONFIG, MOE, 2, 8, 0.05)["norm"]) > 0.5
    assert min(moe_reference(MOE_CONFIG, DROPLESS, 2, 4, 0.05)["norm"]) > 0.5


def test_expert_gradients_over_the_wrong_group_fail(trained):
    worst = max(res["wrong_group"]["grad"] for res in trained)
    assert worst > 1e-3


def test_verify_fails_the_moe_rows_when_expert_gradients_use_the_wrong_group():
    results = run_mpi(8, "workers/moe_checks.py:verify_wrong_group", timeout=300)
    for res in results:
        assert [row[0] for row in res["wrong"]] == [f"8x1x1, M=1, ep={ep}" for ep in (2, 4, 8)]
        assert all(status == "FAIL" and grad > 1e-3 for _, status, grad in res["wrong"]), res
        assert all(status == "PASS" and grad < 1e-12 for _, status, grad in res["right"]), res


MEMORY_ROWS = [("ep4", (8, 1, 1, 1, 4), 1), ("ep8", (8, 1, 1, 1, 8), 1),
               ("dp2pp2tp2", (2, 2, 2, 1, 2), 2), ("dp4tp2", (4, 1, 2, 1, 4), 1)]


def test_memory_calculator_equals_the_measured_expert_parameters_and_buffers():
    results = run_mpi(8, "workers/moe_checks.py:memory_checks", args=(MEMORY_ROWS,),
                      timeout=300)
    for res in results:
        for label, _, _ in MEMORY_ROWS:
            got, want = res[label]["measured"], res[label]["predicted"]
            assert got["experts"] == want["experts"] > 0, (label, got, want)
            assert got["dense"] == want["dense"], (label, got, want)
            assert got["dispatch_buffer"] == [want["dispatch_buffer"]], (label, got, want)
