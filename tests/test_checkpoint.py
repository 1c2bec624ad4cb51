"""Checkpoints: one full file saved from a 2x2x2 grid resumes on any grid, bad files refused.

One 8-rank launch (tests/workers/ckpt_checks.py:check_all) trains a 2x2x2
Trainer3D for 2 AdamW steps, saves, then resumes on 1x1x1, 1x2x4 and 8x1x1
for 2 more steps; the losses and the final weights must match an
uninterrupted serial run of 4 steps (float64; observed ~1e-16 for losses,
~1e-13 for weights: resharding moves values, it does not round them). The
same launch feeds corrupt, truncated, edited and mismatched files to every
rank (bad meta, a NaN, a lying shape: refused before any weight moves), makes a
save fail half-way, and leaves a stale temp file for the next save to remove. A second,
2-rank launch (tests/workers/ckpt_fuzz.py) loads a zip bomb and 300 damaged copies of a
small checkpoint: every rank must raise the same CheckpointError with nothing touched, or
load exactly what was saved.
"""
import numpy as np
import pytest

from mpi_harness import run_mpi

from minimegatron.tools.checkpoint import CheckpointError, read_checkpoint

TOL_LOSS, TOL_WEIGHT = 1e-12, 1e-10
GRIDS = ["1x1x1", "1x2x4", "8x1x1"]
FUZZ_CASES, FUZZ_SEED = 300, 18


@pytest.fixture(scope="module")
def ranks(tmp_path_factory):
    directory = tmp_path_factory.mktemp("ckpt")
    return directory, run_mpi(8, "workers/ckpt_checks.py:check_all", args=(str(directory),),
                              timeout=240)


@pytest.mark.parametrize("grid", GRIDS)
def test_resume_on_another_grid_matches_uninterrupted_serial(ranks, grid):
    for rank, res in enumerate(ranks[1]):
        assert res["saved_step_loss"] < TOL_LOSS
        assert res[f"loss_{grid}"] < TOL_LOSS, (rank, grid, res[f"loss_{grid}"])
        assert res[f"weight_{grid}"] < TOL_WEIGHT, (rank, grid, res[f"weight_{grid}"])
        assert res[f"step_{grid}"] == [2, 4]


@pytest.mark.parametrize("case, words", [
    ("corrupt", "truncated or corrupt"), ("truncated", "truncated or corrupt"),
    ("edited", "crc32"), ("missing", "no such file"),
    ("mismatch", "different config: seed: file 0 vs model 1"),
    ("wrong_optimizer", "holds AdamW state, this run uses SGD"),
    ("bad_meta", "bad optimizer or rng record"), ("bad_dropout", "unusable state"),
    ("nan", "'param/blocks.3.mlp.fc1.bias' holds NaN or inf"),
    ("shape_lie", "head.weight is (1000000, 1000000) in the file, this model's is (32, 24)"),
    ("empty_load", "path is empty"), ("empty_save", "path is empty"),
    ("nan_save", "param/wte.weight holds NaN or inf; not saved"),
    ("zero", "ZeRO"), ("failed_save", "No space left on device")])
def test_bad_checkpoints_give_the_same_clear_error_on_every_rank(ranks, case, words):
    messages = [res[case] for res in ranks[1]]
    assert words in messages[0], messages[0]
    assert messages == [messages[0]] * 8


def test_failures_leave_the_old_file_and_the_model_untouched(ranks):
    directory, results = ranks
    for res in results:
        assert res["old_file_kept"] is True
        assert res["temp_files_left"] == []
        assert res["still_loads"] == ""
        assert res["model_untouched"] == 0.0
        assert res["stale_removed"] is True and res["other_kept"] is True


def test_file_format_is_plain_numpy(ranks):
    arrays, meta = read_checkpoint(str(ranks[0] / "ckpt.npz"))
    assert meta["version"] == 1 and meta["step"] == 2 and meta["grid"] == {"dp": 2, "pp": 2,
                                                                           "tp": 2}
    assert meta["config"]["n_layer"] == 8 and meta["optimizer"]["keys"] == ["m", "v"]
    assert arrays["param/wte.weight"].shape == (24, 32)                  # unsharded, unpadded
    assert arrays["param/blocks.7.attn.qkv.weight"].shape == (32, 96)
    assert arrays["optim/head.weight/v"].shape == (32, 24)
    assert np.all(arrays["optim/head.weight/v"] >= 0)
    assert len([k for k in arrays if k.startswith("param/")]) == 2 + 12 * 8 + 3
    with pytest.raises(CheckpointError, match="no such file"):
        read_checkpoint(str(ranks[0] / "absent.npz"))


def test_plain_gpt_save_load_in_one_process(tmp_path):
    res = run_mpi(1, "workers/ckpt_checks.py:check_serial", args=(str(tmp_path),), timeout=60)
    assert res[0]["loss"] < TOL_LOSS


@pytest.fixture(scope="module")
def fuzzed(tmp_path_factory):
    """workers/ckpt_fuzz.py: a zip bomb, then FUZZ_CASES damaged files, on 2 ranks (tp=2)."""
    directory = tmp_path_factory.mktemp("fuzz")
    return run_mpi(2, "workers/ckpt_fuzz.py:fuzz", args=(str(directory), FUZZ_CASES, FUZZ_SEED),
                   timeout=120)


def test_damaged_files_fail_on_every_rank_together_or_load_exactly(fuzzed):
    for res in fuzzed:
        assert len(res["outcomes"]) == FUZZ_CASES
        assert res["wrong"] == []            # failed: nothing touched; loaded: exactly as saved
        assert all(o == "ok" or o.startswith("error: checkpoint ") for o in res["outcomes"])
        assert res["outcomes"] == fuzzed[0]["outcomes"]          # the same verdict and message
        assert res["slowest_s"] < 5                              # typically ~10 ms
    errors = sum(o != "ok" for o in fuzzed[0]["outcomes"])
    assert errors >= 0.9 * FUZZ_CASES, fuzzed[0]["loaded"]       # the damage is real


def test_a_zip_bomb_is_refused_before_decompression(fuzzed):
    for res in fuzzed:
        assert "is compressed or encrypted" in res["bomb_error"], res["bomb_error"]
    assert fuzzed[0]["bomb_file_mb"] < 1                         # 48 MB once inflated
    assert fuzzed[0]["bomb_rss_growth_mb"] < 16                  # the old reader: +49 MB
