"""Pipeline parallelism on 2, 4 and 8 real ranks against one process.

One launch per stage count (tests/workers/pp_checks.py) runs every case:
naive, GPipe and 1F1B with M micro-batches, with and without activation
checkpointing; each stage's loss, gradients (after backward) and weights
(after each of 3 AdamW steps) must match the serial GPT within 1e-10 (float64,
VERIFY_CONFIG: 8 layers, batch 8). Then the measured peak activation memory,
the errors of bad configurations, and a timeline PNG from a real 1F1B run.
Every M in {1, 2, 4, 8} runs on 2 stages; 4 and 8 stages run two M values each
to stay fast on 2 cores. With emulated device time (parallel/pipeline_parallel/device_time.py)
4 stages on 2 cores measure the formula's bubble; DeviceTime itself is
checked on one process.
"""
import time

import numpy as np
import pytest

from mpi_harness import load_factor, run_mpi, time_bound

from minimegatron.checks.pipeline import TOLERANCE
from minimegatron.parallel.pipeline_parallel.device_time import DeviceTime, as_device_time
from minimegatron.parallel.pipeline_parallel import PipelineStage, recompute, stage_layers

CASES = {2: ([1, 2, 4, 8], [0, 1]), 4: ([1, 4], [0, 1]), 8: ([2, 8], [0, 1])}
_launches = {}


def launch_once(nprocs, tmp_path_factory):
    """One mpiexec launch per stage count, shared by every test of this module."""
    if nprocs not in _launches:
        micro_batches, checkpoints = CASES[nprocs]
        png_dir = str(tmp_path_factory.mktemp(f"pp{nprocs}")) if nprocs == 4 else None
        _launches[nprocs] = run_mpi(nprocs, "workers/pp_checks.py:run",
                                    args=(micro_batches, checkpoints, png_dir), timeout=240)
    return nprocs, _launches[nprocs]


@pytest.fixture(scope="module", params=sorted(CASES))
def launch(request, tmp_path_factory):
    return launch_once(request.param, tmp_path_factory)


def test_every_schedule_matches_serial(launch):
    nprocs, results = launch
    micro_batches, checkpoints = CASES[nprocs]
    expected = len(checkpoints) * (1 + 2 * len(micro_batches))    # naive once, gpipe, 1f1b
    for rank, res in enumerate(results):
        cases = res["equivalence"]
        assert len(cases) == expected
        for case, diffs in cases.items():
            assert set(diffs) == {"loss", "grad", "weight"}
            for key, value in diffs.items():
                assert value < TOLERANCE, f"{nprocs} stages, rank {rank}, {case}: {key} {value}"


def test_activation_memory(launch):
    nprocs, results = launch
    for k, res in enumerate(results):
        mem = {case: (s["peak_in_flight"], s["peak_activation_bytes"])
               for case, s in res["memory"].items()}
        for ckpt in (0, 1):
            one = mem[f"gpipe/M=1/ckpt={ckpt}"][1]
            for m in (1, 2, 4, 8):
                held, nbytes = mem[f"gpipe/M={m}/ckpt={ckpt}"]
                assert held == m and nbytes == pytest.approx(m * one, rel=0.01)   # grows with M
                held, nbytes = mem[f"1f1b/M={m}/ckpt={ckpt}"]
                bound = min(m, nprocs - k)
                assert held == bound
                assert nbytes == pytest.approx(bound * one, rel=0.01)            # bounded by K-k
        for case, (_, nbytes) in mem.items():
            if case.endswith("ckpt=0"):
                with_ckpt = mem[case.replace("ckpt=0", "ckpt=1")][1]
                assert with_ckpt < 0.5 * nbytes, (k, case, with_ckpt, nbytes)


def test_bad_configurations_fail_on_every_rank(launch):
    nprocs, results = launch
    for res in results:
        errors = res["errors"]
        assert f"pipeline of {nprocs} stages" in errors["too_many_stages"]
        assert "unknown schedule 'zigzag'" in errors["unknown_schedule"]
        assert "does not split into 3 equal micro-batches" in errors["batch_not_divisible"]


def test_timeline_png_from_a_real_run(tmp_path_factory):
    _, results = launch_once(4, tmp_path_factory)
    timeline = results[0]["timeline"]
    assert timeline["formula_bubble"] == pytest.approx(3 / 7)
    assert 0.0 < timeline["measured_bubble"] < 1.0
    for k, counts in enumerate(timeline["span_counts"]):
        for i in range(4):
            assert counts[f"forward mb{i}"] == 1 and counts[f"backward mb{i}"] == 1
            assert counts.get(f"recv mb{i}", 0) == (k > 0) + (k < 3)   # activation, gradient
    with open(timeline["png"], "rb") as file:
        assert file.read(8) == b"\x89PNG\r\n\x1a\n"
    image = pytest.importorskip("matplotlib.image").imread(timeline["png"])
    assert image.shape[:2] == (160 + 50 * 4, 1200)


DEVICE_TIME = (0.02, 0.04)     # emulated seconds per forward / backward of one micro-batch
SCALES = (1, 1, 2, 4)          # times DEVICE_TIME, one traced step each, until one is close
LOADED_SCALES = (8, 8)         # then, on a loaded machine (late wake-ups weigh less)


@pytest.fixture(scope="module")
def emulated():
    """4 stages, GPipe and 1F1B at M = 4 and 8, emulated (about 2 s on an idle machine)."""
    scales = SCALES + (LOADED_SCALES if load_factor() > 1.5 else ())
    return run_mpi(4, "workers/pp_checks.py:emulated_bubbles",
                   args=([4, 8], DEVICE_TIME, scales, 0.1), timeout=300)


def test_emulated_device_time_measures_the_formula_bubble(emulated):
    """Within 10% (relative) of (K-1)/(M+K-1). Other programs on the machine only add time
    (late wake-ups, see device_time.py): a step that missed is tried again, with a longer
    device time after two misses, so a busy machine costs time, not a failure."""
    for m in (4, 8):
        formula = 3 / (m + 3)
        for schedule in ("gpipe", "1f1b"):
            case = emulated[0][f"{schedule}/M={m}"]
            info = [{k: res[f"{schedule}/M={m}"][k] for k in ("slowest", "late")}
                    for res in emulated]
            assert abs(case["bubbles"][-1] - formula) <= 0.1 * formula, (
                schedule, m, formula, case["bubbles"], "per rank:", info)


def test_emulated_steps_trace_the_device_time_and_keep_the_numbers(emulated):
    for k, res in enumerate(emulated):
        for m in (4, 8):
            assert res[f"gpipe/M={m}"]["in_flight"] == m
            assert res[f"1f1b/M={m}"]["in_flight"] == min(m, 4 - k)
            for schedule in ("gpipe", "1f1b"):
                case = res[f"{schedule}/M={m}"]
                t_forward, t_backward = case["device_time"]
                assert case["shortest"]["forward"] >= t_forward      # the spans hold
                assert case["shortest"]["backward"] >= t_backward    # the sleep
                assert case["loss"] == case["plain_loss"]            # bit for bit


def busy(seconds):
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


def test_device_time_sleeps_the_remainder_without_a_core():
    device = DeviceTime(0.05, 0.1)
    wall, cpu = time.perf_counter(), time.process_time()
    with device.lasts("forward"):
        busy(0.02)                                      # the real compute: 20 ms of CPU
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    assert 0.05 <= wall < 0.05 + time_bound(0.04, 0.05) and cpu < 0.04   # 30 ms slept, not spun
    assert 0.02 <= device.slowest["forward"] < 0.04 and device.slowest["backward"] == 0
    start = time.perf_counter()
    with device.lasts("forward"):
        busy(0.07)                                      # longer than 50 ms: not shortened
    assert 0.07 <= time.perf_counter() - start < 0.07 + time_bound(0.03, 0.045)  # not + 0.05
    assert device.slowest["forward"] >= 0.07
    start = time.perf_counter()
    with as_device_time(None).lasts("backward"):        # the default: a plain run
        pass
    assert time.perf_counter() - start < time_bound(0.01, 0.05)


def test_device_time_rejects_bad_values():
    assert as_device_time((0.01, 0.02)).seconds == {"forward": 0.01, "backward": 0.02,
                                                     "weight": 0.0}
    assert as_device_time((0.01, 0.02, 0.03)).seconds["weight"] == 0.03     # zero bubble: W
    device = DeviceTime(0.01, 0.02)
    assert as_device_time(device) is device and device.emulated
    assert not as_device_time(None).emulated
    for bad in [(-0.01, 0.02), (0.01, float("nan")), (0.01, float("inf")), ("1", 2), (True, 1)]:
        with pytest.raises(ValueError, match="must be seconds >= 0"):
            as_device_time(bad)
    for bad in [0.02, (0.01, 0.02, 0.03, 0.04), "fast"]:
        with pytest.raises(ValueError, match="device_time must be None"):
            as_device_time(bad)


def test_stage_split_and_names():
    from minimegatron.data.demo import VERIFY_CONFIG
    from minimegatron.nn import GPT
    assert [len(stage_layers(8, 3, k)) for k in range(3)] == [3, 3, 2]
    with pytest.raises(ValueError, match="only 8 layers"):
        stage_layers(8, 9, 0)
    model = GPT(VERIFY_CONFIG)
    full = dict(model.named_parameters())
    stages = [PipelineStage(model, k, 3) for k in range(3)]
    names = [name for stage in stages for name, _ in stage.named_parameters()]
    assert names == list(full)                           # same names, same order, no overlap
    assert all(p is full[n] for s in stages for n, p in s.named_parameters())
    assert "wte.weight" in dict(stages[0].named_parameters())
    assert "head.weight" in dict(stages[2].named_parameters())
    assert "blocks.6.mlp.fc1.weight" in dict(stages[2].named_parameters())


def test_checkpointing_on_a_serial_gpt_with_dropout():
    """Same loss and gradients (bit for bit) with dropout 0.2: the masks are replayed."""
    from minimegatron.data.demo import batch
    from minimegatron.nn import GPT, GPTConfig
    config = GPTConfig(vocab_size=24, seq_len=8, n_layer=3, n_head=4, d_model=16, dropout=0.2)
    runs = []
    for use_checkpoint in (False, True):
        model = GPT(config)
        for step in range(2):                    # the second step sees the advanced streams
            model.zero_grad()
            inputs, targets = batch(config, 4, step)
            x = model.embed(inputs)
            for block in model.blocks:
                x = recompute(block, x) if use_checkpoint else block(x)
            loss = model.head_loss(x, targets)
            loss.backward()
        runs.append((loss.item(), {n: p.grad for n, p in model.named_parameters()}))
    assert runs[0][0] == runs[1][0]
    for name, grad in runs[0][1].items():
        assert np.array_equal(grad, runs[1][1][name]), name
