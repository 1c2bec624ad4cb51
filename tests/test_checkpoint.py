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
load exactly what was saved. A third, 4-rank launch (tests/workers/ckpt_axes.py) saves on
grids with ep, cp, tp, pp, ZeRO-1/2, interleaving and float16 and resumes on others (ep 2
-> ep 4 -> one process -> tp 2 x ep 2 -> one process; dp 2 x cp 2 -> tp 2 x cp 2 -> one
process; ...), every leg next to one process that never stopped; refuses what cannot be
resharded; and writes an MoE checkpoint that ``minimegatron sample`` reads.
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
    ("zero", "Zero3 is not supported"), ("failed_save", "No space left on device")])
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
    assert meta["version"] == 1 and meta["step"] == 2
    assert meta["grid"] == {"dp": 2, "pp": 2, "tp": 2, "cp": 1, "ep": 1, "zero": 0}
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


# --- every axis: tp, cp, ep, dp, pp and ZeRO (tests/workers/ckpt_axes.py, one 4-rank launch) ---

AXES_LEGS = {"moe_ep2": 2, "moe_same": 4, "moe_pp2": 4, "moe_ep4": 4, "moe_one": 6,
             "moe_tp2_ep2": 8, "moe_tp2_ep2_one": 10, "cp": 2, "cp_same": 4, "cp_one": 4,
             "cp_tp2": 4, "cp_tp2_one": 6, "cp_pp2_zero2": 4, "cp_zero1": 2,
             "cp_zero1_same": 4, "cp_zero1_one": 4, "moe_cp": 2, "moe_cp_one": 4,
             "interleaved": 2, "zbv": 4, "sp_tp2_pp2": 4}       # leg: the step count after it


@pytest.fixture(scope="module")
def axes(tmp_path_factory):
    directory = tmp_path_factory.mktemp("axes")
    return directory, run_mpi(4, "workers/ckpt_axes.py:check_axes", args=(str(directory),),
                              timeout=300)


@pytest.mark.parametrize("leg", sorted(AXES_LEGS))
def test_every_axis_resumes_like_the_run_that_never_stopped(axes, leg):
    """ep 2 -> (ep 2, pp 2 x ep 2, ep 4 -> one process -> tp 2 x ep 2); dp 2 x cp 2 -> (the
    same, tp 2 x cp 2, dp 2 x pp 2 with ZeRO-2); dp 2 x cp 2 with ZeRO-1 -> (the same, one
    process); cp 2 x ep 2 -> one process: 2 steps after each load (so AdamW's m and v count
    too), losses and weights next to one process that never stopped."""
    assert_resumed(axes[1], leg, AXES_LEGS[leg])


def assert_resumed(results, leg, steps):
    """Every rank's ``leg`` (tests/workers/ckpt_axes.py: resume): loaded, then losses and
    weights next to one process that never stopped, ``steps`` optimizer steps in all."""
    for rank, res in enumerate(results):
        assert res.get(f"error_{leg}", "") == "", (rank, res[f"error_{leg}"])
        assert res[f"loss_{leg}"] < TOL_LOSS, (rank, res[f"loss_{leg}"])
        assert res[f"weight_{leg}"] < TOL_WEIGHT, (rank, res[f"weight_{leg}"])
        assert res.get(f"loaded_{leg}", 0.0) < TOL_WEIGHT, (rank, res[f"loaded_{leg}"])
        assert res[f"step_{leg}"] == steps


def test_ep_and_cp_checkpoints_give_each_rank_exactly_its_piece_back(axes):
    """Saved on dp 4 x ep 2 (dp 2 x cp 2, ZeRO-1), loaded on the same grid: every weight and
    optimizer state array equal to the bit (the old code wrote ep rank 0's experts only, and
    every cp rank wrote the whole stage: a file no load could read)."""
    for res in axes[1]:
        assert res["exact_moe_same"] == 0.0
        assert res["exact_cp_same"] == 0.0
        assert res["exact_cp_zero1_same"] == 0.0


def test_files_hold_every_expert_once_in_global_order(axes):
    from minimegatron.checks.common import serial_reference
    from minimegatron.checks.moe import MOE, MOE_CONFIG, moe_reference
    from minimegatron.data.demo import CONTEXT_CONFIG
    arrays, meta = read_checkpoint(str(axes[0] / "moe_ep2.npz"))
    assert meta["grid"] == {"dp": 4, "pp": 1, "tp": 1, "cp": 1, "ep": 2, "zero": 0}
    assert meta["moe"]["num_experts"] == 8 and meta["optimizer"]["keys"] == ["m", "v"]
    ref = moe_reference(MOE_CONFIG, MOE, 8, 8)["weights"][1]
    assert set(arrays) == {key for name in ref
                           for key in (f"param/{name}", f"optim/{name}/m", f"optim/{name}/v")}
    for name, full in ref.items():
        assert arrays[f"param/{name}"].shape == full.shape, name      # (8, ...) for experts
        assert np.abs(arrays[f"param/{name}"] - full).max() < TOL_WEIGHT, name
    ref = serial_reference(CONTEXT_CONFIG, steps=4, batch_size=8)["weights"][1]
    for file, zero in (("cp.npz", 0), ("cp_zero1.npz", 1)):
        arrays, meta = read_checkpoint(str(axes[0] / file))
        assert meta["grid"] == {"dp": 2, "pp": 1, "tp": 1, "cp": 2, "ep": 1, "zero": zero}
        for name, full in ref.items():
            assert np.abs(arrays[f"param/{name}"] - full).max() < TOL_WEIGHT, name
        plain_m = read_checkpoint(str(axes[0] / "cp.npz"))[0]["optim/wte.weight/m"]
        assert np.abs(arrays["optim/wte.weight/m"] - plain_m).max() < 1e-12  # ZeRO's, gathered


@pytest.mark.parametrize("case, words", [
    ("refuse_moe_config", "different MoE config: top_k: file 2 vs model 1"),
    ("refuse_dense", "different MoE config: file {'num_experts': 8"),
    ("refuse_missing", "blocks.0.mlp.experts.fc1.weight is (4, 16, 64) in the file, this "
                       "model's is (8, 16, 64)"),
    ("refuse_corrupt", "is truncated or corrupt"),
    ("refuse_ep_group", "blocks.0.mlp splits its experts over 2 ranks (it is rank ")])
def test_what_cannot_be_resharded_is_refused_on_every_rank(axes, case, words):
    messages = [res[case] for res in axes[1]]
    assert words in messages[0], messages[0]
    assert messages == [messages[0]] * 4
    assert all(res["untouched"] == 0.0 for res in axes[1])
    assert axes[1][0]["stage_moe"]["num_experts"] == 8          # an MoE stage, saved bare


def test_sample_writes_text_from_an_moe_checkpoint(axes):
    """An MoE GPT saved from dp 4 x ep 2: ``minimegatron sample`` runs all 8 experts of the
    file in one process, and writes what MoEGPT with those weights writes; a damaged MoE
    record is one line, ``error: ...``."""
    import json
    import os
    import subprocess
    import sys

    from mpi_harness import REPO_ROOT

    from minimegatron.commands.sample import load_gpt
    from minimegatron.data.datasets import CharTokenizer, tiny_corpus
    from minimegatron.nn.moe import MoEGPT
    path = str(axes[0] / "moe_text.npz")
    model, (arrays, meta) = load_gpt(path), read_checkpoint(path)
    listed = meta.pop("arrays")
    assert isinstance(model, MoEGPT) and model.blocks[0].mlp.experts.fc1.weight.shape[0] == 8
    for name, p in model.named_parameters():
        assert np.array_equal(p.data, arrays[f"param/{name}"]), name
    tokenizer = CharTokenizer(tiny_corpus())
    want = tokenizer.decode(model.generate([tokenizer.encode("In ")], 20, 0.8, None, 0)[0])
    done = subprocess.run([sys.executable, "-m", "minimegatron", "sample", "--checkpoint", path,
                           "--tokens", "20"], env={**os.environ, "PYTHONPATH": REPO_ROOT},
                          capture_output=True, text=True, timeout=120, cwd=REPO_ROOT)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n", 1)[1][:-1] == want
    for moe, words in (({"num_experts": 8}, "is corrupt: its MoE config is {'num_experts': 8}"),
                       ({**meta["moe"], "top_k": 0}, "MoEConfig.top_k must be an int >= 1")):
        bad = str(axes[0] / "bad_moe.npz")
        np.savez(bad, meta=np.array(json.dumps({**meta, "moe": moe, "arrays": listed})), **arrays)
        done = subprocess.run([sys.executable, "-m", "minimegatron", "sample", "--checkpoint",
                               bad], env={**os.environ, "PYTHONPATH": REPO_ROOT},
                              capture_output=True, text=True, timeout=120, cwd=REPO_ROOT)
        lines = done.stderr.strip().splitlines()
        assert done.returncode == 2 and len(lines) == 1 and words in lines[0], done.stderr


def test_mixed_precision_keeps_masters_moments_and_scale(axes):
    """float16 weights, float32 master / m / v: the file keeps them in float32 with the
    loss scaler's state, so the resumed run is the run that went on, to the bit; ZeRO-1 on
    dp 4 loads the file and writes it back unchanged."""
    for res in axes[1]:
        assert (res["error_half"], res["error_half_same"], res["error_half_zero"]) == ("",) * 3
        assert res["loss_half_same"] == 0.0
        assert res["scale_half_same"] == [2.0 ** 10, 2.0 ** 12, 2.0 ** 12]   # loaded, then 2 more
    arrays, meta = read_checkpoint(str(axes[0] / "half.npz"))
    again, meta_again = read_checkpoint(str(axes[0] / "half_zero.npz"))
    assert meta["optimizer"]["dtypes"] == {"m": "float32", "master": "float32", "v": "float32"}
    assert meta["optimizer"]["mixed"] == {"scale": 1024.0, "clean_steps": 0,
                                          "skipped_steps": 0, "steps_taken": 2}
    assert arrays["param/wte.weight"].dtype == np.float16
    assert arrays["optim/wte.weight/master"].dtype == np.float32
    assert meta_again["optimizer"] == meta["optimizer"]
    assert set(again) == set(arrays)
    assert all(np.array_equal(again[k], arrays[k]) for k in arrays)


def test_checkpoint_messages_in_both_languages_with_the_same_fields():
    import string

    from minimegatron import i18n

    def fields(template):
        return sorted(name for _, name, _, _ in string.Formatter().parse(template) if name)
    en, ko = i18n.en_checkpoint.MESSAGES, i18n.ko_checkpoint.MESSAGES
    assert sorted(en) == sorted(ko)
    assert all(fields(en[key]) == fields(ko[key]) for key in en)
    with i18n.speaking("ko"):
        assert "MoE 설정" in i18n.text("ckpt.moe_config", path="a.npz", differ="x")


# --- the layout rule alone, no MPI: every grid's writers cover each piece exactly once ---

def layout_reports(dp, pp, tp, cp, ep, names, placement=None):
    """Every rank's report (pp and names with placements) of a grid, from grid_layout."""
    from types import SimpleNamespace as NS

    from minimegatron.parallel.grid import cp_coordinate, grid_coordinates, grid_layout
    from minimegatron.tools.checkpoint_layout import placement as default
    placement, world = placement or default, dp * pp * tp * cp
    layout = grid_layout(world, dp, pp, tp, cp)
    reports = []
    for rank in range(world):
        d, p, t = grid_coordinates(rank, dp, tp, cp)
        group = next(g for g in layout["dp_cp" if cp > 1 else "dp"] if rank in g)
        j = group.index(rank)                                   # position in dp x cp
        grid = NS(tp_rank=t, tp_size=tp, dp=NS(rank=d), dp_cp=NS(rank=j), cp_rank=cp_coordinate(
            rank, tp, cp), ep=NS(rank=j % ep, size=ep), edp=NS(rank=j // ep))
        stage = [n.replace("blocks.0", f"blocks.{p}") for n in names      # a stage's own
                 if p == 0 or n.startswith("blocks.")]                   # blocks; wte on 0
        reports.append({"pp": p, "names": [(n, None, placement(n, grid)) for n in stage]})
    return reports


LAYOUT_NAMES = ["wte.weight", "blocks.0.attn.qkv.weight", "blocks.0.ln_1.weight",
                "blocks.0.mlp.router.weight", "blocks.0.mlp.experts.fc1.weight"]


@pytest.mark.parametrize("dims", [(1, 1, 1, 1, 1), (4, 1, 1, 1, 2), (2, 1, 2, 2, 4),
                                  (2, 2, 2, 1, 2), (1, 1, 2, 4, 2), (2, 1, 1, 2, 1)])
def test_every_piece_has_exactly_one_writer_on_any_grid(dims):
    """dims = (dp, pp, tp, cp, ep): each piece (ep rank, tp rank) of each name is written
    once; writing on dp rank 0 only (forgetting cp) or on ep rank 0 only is caught."""
    from minimegatron.tools.checkpoint_layout import check_writers, placement, writers
    dp, pp, tp, cp, ep = dims
    assert check_writers(writers(layout_reports(*dims, LAYOUT_NAMES))) is None

    def dp_only(name, grid):                                    # the cp bug: cp ranks write
        place = placement(name, grid)
        return {**place, "writes": grid.dp.rank == 0 and (place["tp"] is not None
                                                          or grid.tp_rank == 0)}

    def ep_rank_0(name, grid):                                  # the ep bug: one ep rank writes
        return {**placement(name, grid), "writes": grid.dp_cp.rank == 0 and grid.tp_rank == 0}
    if cp > 1:
        assert "exactly once" in check_writers(writers(layout_reports(*dims, LAYOUT_NAMES,
                                                                      dp_only)))
    if ep > 1:
        assert "exactly once" in check_writers(writers(layout_reports(*dims, LAYOUT_NAMES,
                                                                      ep_rank_0)))


@pytest.mark.parametrize("name, shape", [("wte.weight", (7, 4)), ("head.weight", (4, 7)),
                                         ("blocks.0.attn.qkv.weight", (4, 12)),
                                         ("blocks.0.mlp.experts.fc1.weight", (8, 4, 16)),
                                         ("blocks.0.mlp.router.weight", (4, 8))])
@pytest.mark.parametrize("tp, ep", [(1, 1), (2, 1), (2, 4), (1, 8)])
def test_pieces_assemble_to_the_full_array(name, shape, tp, ep):
    """piece_of for every (ep rank, tp rank), then assemble: the full array again (vocab 7
    padded to 8 over tp 2 and cut back; qkv per head; experts by global index)."""
    from types import SimpleNamespace as NS

    from minimegatron.nn.gpt import GPTConfig
    from minimegatron.tools.checkpoint_layout import (assemble, full_shape, piece_of,
                                                      pieces_needed, placement)
    config = GPTConfig(vocab_size=7, seq_len=4, n_layer=1, n_head=2, d_model=4)
    full = np.random.default_rng(0).standard_normal(shape)
    grid = NS(tp_rank=0, tp_size=tp, dp=NS(rank=0), dp_cp=NS(rank=0), ep=NS(rank=0, size=ep),
              edp=NS(rank=0))
    place = placement(name, grid)
    pieces = []
    for e, t in pieces_needed(place):
        here = {**place, "tp": place["tp"] and [t, tp], "ep": place["ep"] and [e, ep]}
        pieces.append(piece_of(name, full, here))
        assert full_shape(name, pieces[-1].shape, here, config) == shape
    assert len(pieces) == (ep if ".experts." in name else tp if place["tp"] else 1)
    assert np.array_equal(assemble(name, pieces, place, config), full)
    if ep > 1 and ".experts." in name:                          # expert e is row e, in order
        assert np.array_equal(pieces[1], full[8 // ep:2 * 8 // ep])
