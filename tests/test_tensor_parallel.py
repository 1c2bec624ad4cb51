"""Tensor parallelism on 1, 2, 4 and 8 real MPI ranks against one process.

One launch per rank count runs every check (tests/workers/tp_checks.py: check_all);
the tests below assert each measured value. Tolerances: float64 relative 1e-12 for
the mappings and linear layers, absolute 1e-10 for the GPT after AdamW steps.
"""
import re
import subprocess
import sys

import numpy as np
import pytest

from mpi_harness import REPO_ROOT, run_mpi, run_script

from minimegatron import nn
from minimegatron.parallel import split
from minimegatron.parallel.tensor_parallel import shards
from minimegatron.parallel.tensor_parallel.gpt import qkv_rank_major

SIZES = [1, 2, 4, 8]
B, T, D = 2, 8, 32                 # the batch, sequence and width of the comm-count model


_RUNS = {}


def launch(tp):
    """(tp, per-rank results) of the one batched launch on tp ranks (cached per session)."""
    if tp not in _RUNS:
        _RUNS[tp] = run_mpi(tp, "workers/tp_checks.py:check_all", timeout=150)
    return tp, _RUNS[tp]


@pytest.fixture(params=SIZES)
def tp_run(request):
    return launch(request.param)


def test_mappings_are_adjoint_and_correct(tp_run):
    tp, results = tp_run
    for rank, res in enumerate(results):
        assert res["tp"] == tp
        for key in ("mappings", "mappings_3d"):
            m = res[key]
            assert set(m) == {f"{name}_{kind}" for name in ("copy", "reduce", "gather", "scatter")
                              for kind in ("adjoint", "forward")}
            bad = {k: v for k, v in m.items() if not v < 1e-12}
            assert not bad, f"tp={tp} rank {rank}: {bad}"


def test_parallel_linears_match_serial_linear(tp_run):
    tp, results = tp_run
    for rank, res in enumerate(results):
        assert len(res["linears"]) == 16
        bad = {k: v for k, v in res["linears"].items() if not v < 1e-12}
        assert not bad, f"tp={tp} rank {rank}: {bad}"


def test_gpt_matches_serial_for_three_adamw_steps(tp_run):
    tp, results = tp_run
    for rank, res in enumerate(results):
        for key in ("gpt", "gpt_padded"):          # vocab 24 (divisible) and 19 (padded)
            assert set(res[key]) == {"loss", "grad", "weight"}
            bad = {k: v for k, v in res[key].items() if not v < 1e-10}
            assert not bad, f"tp={tp} rank {rank} {key}: {bad}"


def test_every_parameter_knows_its_split(tp_run):
    tp, results = tp_run
    for res in results:
        for name, (shape, shard_shape, axis) in res["tp_axes"].items():
            assert shape == shard_shape, name
            if tp > 1:
                assert (axis is None) == (name in ("wpe.weight", "ln_f.weight", "ln_f.bias")
                                          or ".ln" in name or name.endswith(("proj.bias",
                                                                             "fc2.bias"))), name


def test_four_all_reduces_per_layer(tp_run):
    tp, results = tp_run
    for res in results:
        one, two = res["comm_1_layers"], res["comm_2_layers"]
        if tp == 1:
            assert one["forward"] == one["backward"] == two["forward"] == 0
            continue
        act = B * T * D * 8                          # one activation, float64
        for layers, counts in ((1, one), (2, two)):
            labels = counts["labels"]
            for i in range(layers):
                assert labels[f"blocks.{i}"] == [act, act]             # 2 g's forward
                assert labels[f"blocks.{i}.backward"] == [act, act]    # 2 f's backward
            assert labels["embed"] == [act] and labels["head.backward"] == [act]
            assert labels["head"] == [B * T * 8] * 3                  # the CE: 3 of b*s values
            assert counts["forward"] == 2 * layers + 4
            assert counts["backward"] == 2 * layers + 1
        assert two["forward"] - one["forward"] == 2
        assert two["backward"] - one["backward"] == 2
        assert one["logits_shape"] == [B, T, 24 // tp]                 # never (B, T, V)


def test_vocab_parallel_cross_entropy(tp_run):
    tp, results = tp_run
    for res in results:
        ce = res["cross_entropy"]
        assert ce["loss"] < 1e-12 and ce["grad"] < 1e-12
        assert ce["local_width"] == -(-21 // tp)
        if tp > 1:
            assert ce["ops"] == ["all_reduce"] * 3
            assert ce["nbytes"] == [3 * 5 * 8] * 3                    # (3, 5) values each
            assert max(ce["nbytes"]) < 3 * 5 * 21 * 8 // tp            # less than the slice
        else:
            assert ce["ops"] == [] and res["ce_gradcheck"] < 1e-7


def test_dropout_masks(tp_run):
    tp, results = tp_run
    for res in results:
        d = res["dropout"]
        assert d["replicated_equal"] and d["mlp_output_equal"]
        assert d["sharded_distinct_pairs"] == tp * (tp - 1) // 2
        assert 0.2 < d["mlp_zero_fraction"] < 0.4
        assert d["embed_vs_serial_with_dropout"] == 0.0


@pytest.mark.parametrize("tp", [2, 4, 8])
def test_errors_on_every_rank_before_any_collective(tp):
    tp, results = launch(tp)
    expected = {"d_model": f"d_model={tp + 1} is not divisible by tp={tp}",
                "heads": f"n_head=1 is not divisible by tp={tp}",
                "vocab": f"vocab_size={tp + 1} is not divisible by tp={tp}",
                "ffn_columns": f"out_features={4 * tp + 1} is not divisible by tp={tp}",
                "row_in": f"in_features={4 * tp + 1} is not divisible by tp={tp}",
                "master_weight": f"shape (3, {2 * tp}), expected",
                "master_bias": "shape (5,), expected (4,)"}
    for rank, res in enumerate(results):
        errors = res["errors"]
        assert errors["spans_after_errors"] == 0, rank
        for key, text in expected.items():
            assert errors[key] is not None and text in errors[key], (rank, key, errors[key])


def test_worked_example_integers():
    _, results = launch(2)
    X = np.array([[0, 1, 2, 3], [4, 5, 6, 7]])
    A = np.array([[10, 14], [11, 15], [12, 16], [13, 17]])
    Y = [[74, 98], [258, 346]]
    dX = [[24, 26, 28, 30]] * 2
    want = {"column": [{"A_i": [[10], [11], [12], [13]], "X_i": X.tolist(),
                        "Y_i": [[74], [258]], "dA_i": [[4], [6], [8], [10]]},
                       {"A_i": [[14], [15], [16], [17]], "X_i": X.tolist(),
                        "Y_i": [[98], [346]], "dA_i": [[4], [6], [8], [10]]}],
            "row": [{"A_i": [[10, 14], [11, 15]], "X_i": [[0, 1], [4, 5]],
                     "Y_i": [[11, 15], [95, 131]], "dA_i": [[4, 4], [6, 6]]},
                    {"A_i": [[12, 16], [13, 17]], "X_i": [[2, 3], [6, 7]],
                     "Y_i": [[63, 83], [163, 215]], "dA_i": [[8, 8], [10, 10]]}]}
    assert (X @ A).tolist() == Y and (np.ones((2, 2)) @ A.T).tolist() == dX
    for split in ("column", "row"):
        for rank, res in enumerate(results):
            got = res["worked_example"][split]
            assert got["Y"] == Y and got["dX"] == dX, (split, rank)
            for key, value in want[split][rank].items():
                assert got[key] == value, (split, rank, key, got[key])


def test_worked_example_script_runs():
    code, out, err = run_script(2, "tutorials/02_worked_example.py", timeout=60)
    assert code == 0, err
    for number in ("74", "258", "98", "346", "[[ 11,  15], [ 95, 131]]"):
        assert number in out
    # its own SGD loop (lr 1, 2 steps) next to one process: A - 2 X^T ones, integer for integer
    assert "[rank 1] after 2 SGD steps (lr 1): L = 776, 344   A_2 = [[-4,  0], [-7, -3]]" in out
    assert "serial, after 2 SGD steps: L = 776, 344   A = [[ 2,  6], [-1,  3], [-4,  0], " \
           "[-7, -3]]" in out
    assert "and A after each step equal: column True, row True" in out, out
    cli = subprocess.run([sys.executable, "-m", "minimegatron", "run", "-n", "2", "--timeout",
                          "60", "tutorials/02_worked_example.py"], cwd=REPO_ROOT,
                         capture_output=True, text=True, timeout=90)
    assert cli.returncode == 0, cli.stderr
    assert "[[ 63,  83], [163, 215]]" in cli.stdout


def test_tutorials_03_and_04_run():
    code, out, err = run_script(4, "tutorials/03_tensor_parallel_mlp.py", timeout=60)
    assert code == 0, err
    assert "all-reduces: forward 1, backward 1" in out
    step = re.search(r"one SGD step \(lr 0.1\) on both: \|dL/dW_i - its slice of dL/dW\| = "
                     r"(\S+), \|W_i - its slice of W\| = (\S+)", out)
    assert step and max(float(step[1]), float(step[2])) < 1e-12, out
    code, out, err = run_script(8, "tutorials/04_megatron_gpt.py", ("--steps", "3"), timeout=90)
    assert code == 0, err
    assert "max |loss tp=8 - loss serial|" in out


@pytest.mark.parametrize("tp", SIZES)
def test_the_attention_qkv_layout_is_the_shard_rule(tp):
    """gpt.qkv_rank_major (the attention builds its weight with it) and shards.shard_of (the
    checks and checkpoints) state one rule: rank r's column slice is its shard."""
    full_w, full_b = np.random.default_rng(tp).normal(size=(2, 16, 48))
    for name, full in (("blocks.0.attn.qkv.weight", full_w), ("blocks.0.attn.qkv.bias",
                                                              full_b[0])):
        reordered = qkv_rank_major(full, tp)
        width = 48 // tp
        for r in range(tp):
            mine = reordered[..., r * width:(r + 1) * width]
            assert np.array_equal(mine, shards.shard_of(name, full, r, tp)), (name, r)


@pytest.mark.parametrize("tp", SIZES)
def test_shards_round_trip(tp):
    config = nn.GPTConfig(vocab_size=19, seq_len=8, n_layer=1, n_head=8, d_model=16)
    for name, p in nn.GPT(config).named_parameters():
        full = p.data
        parts = [shards.shard_of(name, full, r, tp, config) for r in range(tp)]
        assert np.array_equal(shards.unshard(name, parts, config), full), name
        if name.endswith("qkv.weight"):   # the last rank holds its heads of Q, K and V
            w, last = 16 // tp, (tp - 1) * (16 // tp)
            want = [full[:, part * 16 + last:part * 16 + last + w] for part in range(3)]
            assert np.array_equal(parts[-1], np.concatenate(want, axis=1)), tp
        if name == "head.weight":          # padded vocabulary columns are zero
            padded = np.concatenate(parts, axis=1)
            assert padded.shape[1] == split.padded(19, tp)
            assert np.all(padded[:, 19:] == 0)
