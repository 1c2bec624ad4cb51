"""`minimegatron calibrate`: the alpha-beta fit, the JSON scaling.Hardware reads, a real run."""
import json
import math

import pytest

from minimegatron.tools import calibrate
from minimegatron.tools.scaling import Hardware, all_reduce_time


def test_fit_recovers_the_ring_model():
    alpha, bw, ranks = 30e-6, 2e9, 4
    hw = Hardware(gpus_per_node=64, intra_bw=bw, intra_latency=alpha)
    sizes = calibrate.SIZES
    seconds = [all_reduce_time(hw, n, ranks, 1) for n in sizes]
    got_alpha, got_bw = calibrate.fit_alpha_beta(sizes, seconds, ranks)
    assert got_alpha == pytest.approx(alpha, rel=1e-3)     # small messages: alpha + n/N/bw
    assert got_bw == pytest.approx(bw, rel=1e-4)            # alpha carries 8 B / N / bw


def test_gemm_rate_is_positive_and_per_rank_share():
    assert calibrate.gemm_rate("float64", n=64, repeats=2) > 0
    assert calibrate.per_rank_flops({"machine_flops": 8e9}, 1) == 8e9
    assert calibrate.per_rank_flops({"machine_flops": 8e9}, 8) == 1e9


def test_gemm_only_json_is_read_by_hardware(tmp_path, capsys):
    path = tmp_path / "hw.json"
    assert calibrate.main(["--no-mpi", "--out", str(path)]) == 0
    out = capsys.readouterr().out
    assert "GEMM only" in out and "GFLOP/s" in out
    data = json.loads(path.read_text())
    hw = Hardware.from_json(str(path))
    assert hw.flops == data["gemm_flops"] == data["gemm_flops_float64"] > 0
    assert data["machine_flops"] == data["gemm_flops"] * data["cores"] / data["blas_threads"]
    assert math.isinf(hw.intra_bw) and hw.intra_latency == 0.0


def test_collectives_measured_on_two_ranks(tmp_path, capsys):
    """Run alone, calibrate launches itself under mpiexec on 2 ranks for the all-reduces."""
    path = tmp_path / "hw.json"
    assert calibrate.main(["--ranks", "2", "--out", str(path)]) == 0
    assert "all-reduce over 2 ranks" in capsys.readouterr().out
    data = json.loads(path.read_text())
    assert data["ranks_measured"] == 2
    assert len(data["all_reduce_seconds"]) == len(calibrate.SIZES)
    hw = Hardware.from_json(str(path))
    assert 0 < hw.intra_bw < 1e12 and 0 <= hw.intra_latency < 0.1
    assert hw.gpus_per_node >= 8            # one host: no group crosses a "node"
