"""`minimegatron calibrate`: the alpha-beta fit, the JSON scaling.Hardware reads, a real run;
tools/step_model: its sum by hand, its counting rules, every fused op's declared COST
against its traced ufunc calls, and its counts of real steps (serial and dp=2 x tp=2)."""
import json
import math

import pytest

from minimegatron.commands import calibrate as calibrate_command
from minimegatron.tools import calibrate, step_model
from minimegatron.tools.memory import comm_bytes, training_flops
from minimegatron.tools.scaling import Hardware, all_reduce_time
from minimegatron.data.demo import make_optimizer
from mpi_harness import run_mpi


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
    assert calibrate_command.main(["--no-mpi", "--out", str(path)]) == 0
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
    assert calibrate_command.main(["--ranks", "2", "--out", str(path)]) == 0
    assert "all-reduce over 2 ranks" in capsys.readouterr().out
    data = json.loads(path.read_text())
    assert data["ranks_measured"] == 2
    assert len(data["all_reduce_seconds"]) == len(calibrate.SIZES)
    hw = Hardware.from_json(str(path))
    assert 0 < hw.intra_bw < 1e12 and 0 <= hw.intra_latency < 0.1
    assert hw.gpus_per_node >= 8            # one host: no group crosses a "node"
    busy = data["busy"]                     # the step model's rates, both ranks at once
    assert set(busy) == set(CALIB) - {"blas_threads", "cores", "latency_s",
                                      "bandwidth_bytes_per_s"}
    assert all(busy[k] > 0 and data[k] > 0 for k in busy)


CALIB = {"gemm_flops_linear": 4e9, "gemm_flops_batched": 1e9, "blas_threads": 2, "cores": 4,
         "op_overhead_s": 50e-6, "elementwise_bytes_per_s": 1e9, "reduced_per_s": 5e8,
         "tanh_per_s": 1e8, "exp_per_s": 4e8, "latency_s": 20e-6,
         "bandwidth_bytes_per_s": 2e9}
COUNTS = {"ops": 1000, "gemm_flops": 2e9, "batched_gemm_flops": 1e8, "elementwise_bytes": 3e7,
          "reduced_values": 1e7, "tanh_values": 2e6, "exp_values": 4e6, "ring_steps": 40,
          "bytes_sent": 4e6}


def test_step_model_adds_its_parts_by_hand():
    """2 ranks on 4 cores, 1 thread each: rates / 2 threads * min(1, 2) = half of each."""
    t = step_model.step_time(COUNTS, CALIB, ranks=2, pp=2, micro_batches=4)
    assert t["gemm"] == pytest.approx(1.0)                  # 2e9 / 2e9
    assert t["batched"] == pytest.approx(0.2)               # 1e8 / 5e8
    assert t["ops"] == pytest.approx(0.05)                  # 1000 x 50 us
    assert t["elementwise"] == pytest.approx(0.03)          # 3e7 / 1e9
    assert t["reduce"] == pytest.approx(0.02)               # 1e7 / 5e8
    assert t["transcendental"] == pytest.approx(0.03)       # 2e6 / 1e8 + 4e6 / 4e8
    assert t["bubble"] == pytest.approx(1.33 * 1 / 4)       # compute x (K - 1) / M
    assert t["comm"] == pytest.approx(40 * 20e-6 + 4e6 / 2e9)
    assert t["total"] == pytest.approx(1.33 * 5 / 4 + 0.0028)


def test_step_model_shares_cores_when_oversubscribed():
    """8 ranks on 4 cores: half a thread's rate each, ops and bytes take twice as long."""
    t = step_model.step_time(COUNTS, CALIB, ranks=8, threads=1)
    assert t["gemm"] == pytest.approx(2e9 / (2e9 * 0.5))
    assert t["batched"] == pytest.approx(1e8 / (5e8 * 0.5))
    assert t["ops"] == pytest.approx(2 * 0.05)
    assert t["elementwise"] == pytest.approx(2 * 0.03)
    assert t["reduce"] == pytest.approx(2 * 0.02)
    assert t["transcendental"] == pytest.approx(2 * 0.03)
    assert t["bubble"] == 0.0


def test_step_model_uses_the_busy_rates_from_two_ranks():
    """calib["busy"]: rates measured with every rank busy, for runs of 2+ ranks only."""
    calib = dict(CALIB, busy=dict(elementwise_bytes_per_s=0.5e9, gemm_flops_linear=2e9))
    alone, two = (step_model.step_time(COUNTS, calib, ranks=n) for n in (1, 2))
    assert alone["elementwise"] == pytest.approx(0.03) and alone["gemm"] == pytest.approx(1.0)
    assert two["elementwise"] == pytest.approx(0.06)        # 3e7 / 0.5e9
    assert two["gemm"] == pytest.approx(2.0)                # 2e9 / (2e9 / 2 threads)
    assert two["ops"] == alone["ops"]                       # not in busy: the alone figure


def test_ring_steps():
    assert step_model.ring_steps("all_reduce", 4) == 6
    assert step_model.ring_steps("iall_reduce", 4) == 6
    assert step_model.ring_steps("all_gather", 4) == 3
    assert step_model.ring_steps("send", 2) == 1
    assert step_model.ring_steps("all_reduce", 1) == 0


def test_counting_a_linear_step():
    """x (8, 16) @ w (16, 4) then sum: GEMM 3 x 2*8*16*4 FLOPs, one elementwise op."""
    import minimegatron as mm
    x = mm.Tensor(mm.xp.ones((8, 16)))
    w = mm.Tensor(mm.xp.ones((16, 4)), requires_grad=True)
    counts = step_model.count_step(lambda: (x @ w).sum().backward(), [w], {})
    assert counts["ops"] == 2 + 1                            # matmul, sum; + AdamW on w
    assert counts["gemm_flops"] == 3 * 2 * 8 * 16 * 4 and counts["batched_gemm_flops"] == 0
    assert counts["elementwise_bytes"] == (3 * (8 * 4 * 8 + 8)                   # the sum
                                           + step_model.OPTIMIZER_PASSES * 16 * 4 * 8)
    assert counts["messages"] == counts["ring_steps"] == counts["bytes_sent"] == 0
    assert counts["tanh_values"] == counts["exp_values"] == counts["reduced_values"] == 0


def test_counting_fused_ops_bias_and_fan_out():
    """GeLU: its declared passes; a bias add: a row sum backward; a reuse: a gradient sum."""
    import minimegatron as mm
    x = mm.Tensor(mm.xp.ones((8, 16)))
    with step_model.counting() as counts:                    # nothing needs a gradient
        mm.functional.gelu(x)
    assert counts["tanh_values"] == 8 * 16 and counts["ops"] == 1
    assert counts["elementwise_bytes"] == 19 * 8 * 16 * 8    # GeLU.COST, forward only
    h = mm.Tensor(mm.xp.ones((8, 16)), requires_grad=True)
    b = mm.Tensor(mm.xp.ones(16), requires_grad=True)
    with step_model.counting() as counts:
        y = mm.functional.gelu(h + b)                        # Add: b broadcast over 8 rows
        z = y * y                                            # y used twice
    assert counts["tanh_values"] == 8 * 16 and counts["ops"] == 3
    assert counts["reduced_values"] == 8 * 16                # b's gradient: sum over rows
    assert counts["elementwise_bytes"] == (3 * 8 * 3 * 128               # Add, b per row
                                           + (19 + 28) * 128 * 8         # GeLU.COST
                                           + 3 * 8 * 3 * 128             # Mul, x 3
                                           + 3 * 128 * 8)                # y's 2nd use
    assert z.shape == (8, 16)


FUSED_INPUTS = {                       # a call of every fused op, as the GPT makes it
    "ReLU": lambda r: ((r.standard_normal((2, 8, 64)),), {}),
    "GeLU": lambda r: ((r.standard_normal((2, 8, 64)),), {}),
    "LayerNorm": lambda r: ((r.standard_normal((2, 8, 64)), r.standard_normal(64),
                             r.standard_normal(64)), {}),
    "Softmax": lambda r: ((r.standard_normal((2, 4, 16, 16)),),
                          {"axis": -1, "scale": 0.25, "causal": True}),
    "CrossEntropy": lambda r: ((r.standard_normal((2, 8, 64)), r.integers(0, 64, (2, 8))), {}),
}


def declared_cost_errors(cls):
    """How cls.COST differs from its traced ufunc calls ([] when it matches)."""
    import numpy
    declared = getattr(cls, "COST", None)
    if declared is None:
        return [f"{cls.__name__} declares no COST"]
    args, kwargs = FUSED_INPUTS[cls.__name__](numpy.random.default_rng(0))
    traced = step_model.traced_cost(cls, *args, **kwargs)
    return [f"{cls.__name__}.COST[{phase!r}] = {declared[phase]}, traced {traced[phase]}"
            for phase in ("forward", "backward") if declared[phase] != traced[phase]]


def test_every_fused_op_declares_the_cost_its_code_makes():
    """Each fused Function's COST equals the ufunc calls traced on its NumPy path."""
    from minimegatron.autodiff import fused
    from minimegatron.autodiff.function import Function
    ops = [c for c in vars(fused).values() if isinstance(c, type)
           and issubclass(c, Function) and c.__module__ == fused.__name__]
    assert {c.__name__ for c in ops} == set(FUSED_INPUTS)   # a new op: add its call above
    for cls in ops:
        assert declared_cost_errors(cls) == []


def test_a_wrong_or_missing_cost_is_caught(monkeypatch):
    from minimegatron.autodiff import fused
    monkeypatch.setattr(fused.GeLU, "COST", {"forward": {"passes": 3, "tanh": 1},
                                             "backward": {"passes": 28}})
    assert "GeLU.COST['forward']" in declared_cost_errors(fused.GeLU)[0]
    monkeypatch.delattr(fused.GeLU, "COST")
    assert declared_cost_errors(fused.GeLU) == ["GeLU declares no COST"]


def test_optimizer_passes_are_adamw_fused_traced():
    import numpy
    from minimegatron import optim
    p, g, m = (numpy.random.default_rng(i).standard_normal(100) for i in range(3))
    v = numpy.ones(100)                                            # v >= 0: a second moment
    _, tally = step_model.traced(optim.adamw_fused, p.size, p, g, m, v, lr=1e-3,
                                 weight_decay=0.01, betas=(0.9, 0.999), eps=1e-8, step=1)
    assert tally == {"passes": step_model.OPTIMIZER_PASSES - 2}   # + all_finite's 2 reads


def test_calibration_json_has_the_step_model_keys(tmp_path):
    path = tmp_path / "hw.json"
    assert calibrate_command.main(["--no-mpi", "--out", str(path)]) == 0
    data = json.loads(path.read_text())
    assert data["op_overhead_s"] > 0 and data["elementwise_bytes_per_s"] > 0
    assert data["gemm_flops_linear"] > 0 and data["gemm_flops_batched"] > 0
    assert data["tanh_per_s"] > 0 and data["exp_per_s"] > 0 and data["reduced_per_s"] > 0
    t = step_model.step_time(COUNTS, data)                   # what the JSON feeds
    assert t["total"] > t["gemm"] > 0 and t["comm"] == 0.0   # no MPI: latency 0, bw inf


def test_counts_of_a_serial_step_are_training_flops():
    """The counted GEMM FLOPs of one serial step are memory.training_flops exactly."""
    from workers.step_model_checks import BATCH, CONFIG, MICRO_BATCHES
    from minimegatron.data.demo import batch
    from minimegatron.parallel.grid import ProcessGrid
    from minimegatron.parallel.threed import Trainer3D
    trainer = Trainer3D(CONFIG, ProcessGrid(1, 1, 1), micro_batches=MICRO_BATCHES,
                        optimizer_fn=make_optimizer)
    x, y = batch(CONFIG, BATCH, 0)
    counts = step_model.count_step(lambda: trainer.train_step(x, y),
                                   trainer.stage.parameters(), {})
    assert counts["gemm_flops"] + counts["batched_gemm_flops"] == training_flops(CONFIG, BATCH)
    assert counts["batched_gemm_flops"] > 0 and counts["exp_values"] > 0
    assert counts["ring_steps"] == counts["bytes_sent"] == 0      # groups of one rank


def test_counts_on_a_dp2_tp2_grid():
    """4 ranks: each does a quarter of the GEMMs; every collective is a 2-rank ring."""
    from workers.step_model_checks import BATCH, CONFIG, MICRO_BATCHES
    results = run_mpi(4, "workers/step_model_checks.py:count_dp2_tp2", timeout=300)
    for counts in results:
        gemm = counts["gemm_flops"] + counts["batched_gemm_flops"]
        assert gemm == training_flops(CONFIG, BATCH) / 4
        assert counts["messages"] > 0 and counts["bytes_sent"] > 0
        assert counts["ring_steps"] == 2 * counts["two_rank_messages"] > 0   # all-reduces
    model = comm_bytes(CONFIG, BATCH // 2 // MICRO_BATCHES, MICRO_BATCHES, dp=2, tp=2,
                       precision="float64")["total"]
    # memory.comm_bytes' model traffic, plus one float64 scalar all-reduced (2(N-1)/N * 8 B)
    assert {c["bytes_sent"] for c in results} == {model + 8}
