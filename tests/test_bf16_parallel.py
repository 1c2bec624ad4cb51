"""bf16 and fp8 training on real ranks: the contract with one process, and the trace's bytes.

One 4-rank launch (tests/workers/bf16_checks.py), groups of 2. "Equal to one process",
restated for low precision: bit for bit equal to one process that uses the same
reduction order (here: the same two half-batches, summed in float32 in rank order), and
only within a bound of the usual one-process run (checks/verify.py's bf16 and fp8 rows).
"""
import pytest

from mpi_harness import run_mpi


@pytest.fixture(scope="module")
def results():
    return run_mpi(4, "workers/bf16_checks.py:check_all", timeout=240)


def test_ddp_is_bitwise_one_process_in_the_same_order_and_not_otherwise(results):
    for res in results:
        got = res["bitwise"]
        assert got["bfloat16"] is True and got["fp8"] is True
        assert got["bfloat16_whole_batch"] is False and got["fp8_whole_batch"] is False


def test_bf16_moves_half_of_float32s_bytes_and_reduces_in_float32(results):
    for res in results:
        f32, bf16 = res["bytes"]["float32"], res["bytes"]["bfloat16"]
        sends = f32["pipeline"]["send"]
        assert sends > 0 and bf16["pipeline"]["send"] * 2 == sends       # activations
        gathers = f32["zero3"]["all_gather"]
        assert gathers > 0 and bf16["zero3"]["all_gather"] * 2 == gathers   # weights
        # gradients are reduced in float32 (comm/wire.py; DDP's float32 reduce buffer)
        assert bf16["zero3"]["reduce_scatter"] == f32["zero3"]["reduce_scatter"] > 0
        assert bf16["ddp"]["all_reduce"] == f32["ddp"]["all_reduce"] > 0
        # no loss scale in bf16: no found-inf all-reduce at all
        assert "all_reduce" not in bf16["zero3"]
