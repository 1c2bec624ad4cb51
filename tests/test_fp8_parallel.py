"""fp8 under sequence and expert parallelism, each against one process (one 4-rank launch).

tests/workers/fp8_parallel_checks.py, groups of 2. Sequence parallelism's fused gather
casts each rank's tokens with the scale agreed over tp and gathers the e4m3 bytes: bit for
bit one process's e4m3(s_X X), a quarter of float32's bytes on the wire. The experts' grouped
fp8 matmul (a scale per expert) needs no agreement under expert parallelism: the layer
is bit for bit one process's. Every claim fails on its planted mistake.
"""
import pytest

from mpi_harness import run_mpi


@pytest.fixture(scope="module")
def results():
    return run_mpi(4, "workers/fp8_parallel_checks.py:check_all", timeout=240)


def test_the_sp_gather_moves_one_process_e4m3_bytes_with_agreed_scales(results):
    for res in results:
        sp = res["sp"]
        assert sp["q_bitwise"] is True and sp["y"] == 0.0 and sp["dw"] == 0.0, sp
        assert 0 < sp["dx"] <= 2.0 ** -7 * sp["dx_scale"], sp   # 2 partial dX summed: a
                                                                # bf16 ulp of the largest
        assert sp["kept"] == [2 * 8 // 2 * 16, 16 * 8 // 2]    # e4m3 X_r (B, T/t, in) and
                                                               # A_i (in, out/t): 1 byte each
        wrong = res["sp_no_agree"]                          # each rank its own scale
        assert wrong["q_bitwise"] is False and wrong["y"] > 0.1 * wrong["scale"], wrong


def test_the_sp_gathers_in_fp8_move_a_quarter_of_float32s_bytes(results):
    for res in results:
        f32, f8 = res["bytes"]["float32"], res["bytes"]["fp8"]
        assert set(f32) == set(f8) == {"all_gather fc", "all_gather fc.backward.regather",
                                       "reduce_scatter fc.backward"}, (f32, f8)
        for gather in ("all_gather fc", "all_gather fc.backward.regather"):    # X, X again
            assert f32[gather] > 0 and f8[gather] * 4 == f32[gather], (gather, f32, f8)
        dx = "reduce_scatter fc.backward"                           # dX: summed in float32
        assert f8[dx] == f32[dx] > 0, (f32, f8)


def test_a_whole_sp_step_in_fp8_gathers_a_quarter_of_float32_in_the_blocks(results):
    """The blocks' fused gathers (forward, and backward's regather of X) move e4m3: a quarter;
    the gradients' gathers (g-bar's backward) and the head's (not fp8) move bf16: a half."""
    for res in results:
        f32, f8 = res["step_bytes"]["float32"], res["step_bytes"]["fp8"]
        assert set(f32) == set(f8) and all(v > 0 for v in f32.values()), (f32, f8)
        for label, sent in f32.items():
            quarter = label.startswith("blocks.") and not label.endswith(".backward")
            assert f8[label] * (4 if quarter else 2) == sent, (label, f8[label], sent)
        assert {"blocks.0", "blocks.1.backward.regather"} <= set(f32)


def test_an_expert_parallel_fp8_layer_is_bitwise_one_process(results):
    for res in results:
        ep = res["ep"]
        assert ep["marked"] == ["experts.fc1.weight", "experts.fc2.weight"]
        assert ep["out"] is True and ep["dx"] is True and ep["expert_grads"] is True, ep
        bf16 = res["ep_unmarked"]                           # the ep ranks' experts in bf16
        assert bf16["marked"] == [] and bf16["out"] is False and bf16["dx"] is False


def test_verify_fp8_rows_of_sp_and_moe_fail_their_planted_mistakes(results):
    for res in results:
        assert res["rows"] == {"experts_not_unscaled": ["PASS", "FAIL"],   # tp-sp, moe-ep
                               "sp_not_unscaled": ["FAIL", "PASS"]}
