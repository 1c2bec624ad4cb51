"""bf16 and fp8 through the collectives (comm/wire.py) on 4 real ranks and on groups of 2.

One launch (tests/workers/wire_checks.py) returns every check; the mutants are the three
mistakes the wire exists to prevent: a bf16 reduction done in bf16, a bf16 array handed to
MPI without its uint16 view, and a move that widens to float32 (the bits arrive, the bytes
double).
"""
import ml_dtypes
import numpy as np
import pytest

from mpi_harness import run_mpi

from minimegatron.comm import wire


@pytest.fixture(scope="module")
def results():
    return run_mpi(4, "workers/wire_checks.py:check_all", timeout=120)


def test_mpi4py_refuses_a_bf16_array_handed_to_it(results):
    for res in results:
        assert res["buffer_error"].startswith("BufferError:"), res["buffer_error"]
        assert "float and complex dtypes" in res["buffer_error"]


def test_every_collective_carries_bf16_and_fp8_exactly(results):
    for rank, res in enumerate(results):
        for group in ("world", "half"):
            checks = res[group]
            assert len(checks) == 9 + 3 * 13, sorted(checks)      # every check ran
            bad = [k for k, ok in checks.items() if not ok]
            assert not bad, f"rank {rank}, group {group}: {bad}"


def test_the_trace_counts_half_of_float32_for_bf16_and_a_quarter_for_fp8(results):
    for res in results:
        per = res["bytes"]
        for op in ("all_gather", "broadcast"):
            f32 = per[f"{op}[float32]"]
            assert f32[0] == 4.0
            assert per[f"{op}[bfloat16]"] == [f32[0] / 2, f32[1] / 2]
            for fp8 in ("float8_e4m3fn", "float8_e5m2"):
                assert per[f"{op}[{fp8}]"] == [f32[0] / 4, f32[1] / 4]
        # a bf16 reduction runs in float32: the trace records the float32 bytes it moves
        assert per["all_reduce[bfloat16]"] == per["all_reduce[float32]"]


def test_the_checks_pass_the_wire_and_fail_each_mutant(results):
    for res in results:
        verdict = res["mutants"]
        assert verdict["reduce_in_float32"] and verdict["move_bits"]
        assert not verdict["reduce_in_bf16_mutant"]        # rounds at every hop
        assert not verdict["reduce_no_view_mutant"]        # BufferError
        assert not verdict["move_no_view_mutant"]          # BufferError
        assert not verdict["move_float32_mutant"]          # twice the bytes


def test_other_dtypes_pass_through_untouched():
    assert not wire.is_low(np.ones(2, np.float16)) and not wire.is_low(np.ones(2, np.uint16))
    x = np.array([1.5, -np.inf], ml_dtypes.bfloat16)
    assert wire.carried(x).dtype == np.uint16 and wire.carried(x).base is not None
    assert wire.carried(np.ones(2, ml_dtypes.float8_e5m2)).dtype == np.uint8
    with pytest.raises(ValueError, match="'move' or 'reduce'"):
        wire.carries("gather")
