"""Context parallelism: the splits and the load balance without MPI, then one 8-rank launch
that checks the all-to-all adjoint and the three causal attention variants (all-gather, ring
with zigzag, Ulysses) against one process for cp = 2, 4 and 8 (forward, dQ, dK, dV), with
the bytes each moved read from the trace and compared with the formulas, and the GPT trained
with cp and dp x cp, and with cp next to tp (sequence parallel too) and pp, whose gradients
must average over dp x cp (over dp alone they do not match); tutorial 12 on 4 ranks.
"""
import dataclasses
import re

import numpy as np
import pytest

from mpi_harness import run_mpi, run_script

from minimegatron import comm
from minimegatron.checks.context import BATCH as GPT_BATCH, CP_CONFIG
from minimegatron.autodiff.gradcheck import gradcheck
from minimegatron.nn import causal_attention
from minimegatron.parallel import context_parallel as cp_
from minimegatron.parallel.context_parallel.blockwise import from_heads, to_heads
from minimegatron.parallel.context_parallel import check_config
from minimegatron.autodiff.tensor import Tensor

F64, F32 = 1e-12, 1e-5      # float64 must be tight; float32 measured at about 1e-6
BATCH, STEPS, WIDTH = 2, 16, 32                                  # as in workers/cp_checks.py


def test_zigzag_split_gives_rank_i_chunks_i_and_mirror_and_unsplit_inverts():
    x = np.arange(16)[None, :, None]                              # (B, S, 1)
    shards = [cp_.split_sequence(x, r, 4)[0, :, 0].tolist() for r in range(4)]
    assert shards == [[0, 1, 14, 15], [2, 3, 12, 13], [4, 5, 10, 11], [6, 7, 8, 9]]
    for split in ("zigzag", "contiguous"):
        parts = [cp_.split_sequence(x, r, 4, split) for r in range(4)]
        assert (cp_.unsplit_sequence(parts, split) == x).all()
    contiguous = [cp_.split_sequence(x, r, 4, "contiguous")[0, :, 0].tolist() for r in range(4)]
    assert contiguous == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9, 10, 11], [12, 13, 14, 15]]
    assert cp_.split_sequence(np.arange(8)[None], 1, 2, axis=1).tolist() == [[2, 3, 4, 5]]


@pytest.mark.parametrize("cp", [2, 4, 8])
def test_zigzag_balances_the_causal_work_and_contiguous_does_not(cp):
    assert cp_.ring_blocks(cp, "contiguous") == list(range(1, cp + 1))
    assert cp_.ring_blocks(cp, "zigzag") == [cp] * cp
    c, steps = 3, 6 * cp                                          # chunks of c tokens
    zigzag = cp_.causal_pairs(cp, "zigzag", steps)
    assert zigzag == [2 * cp * c * c + c] * cp                    # equal on every rank
    contiguous = cp_.causal_pairs(cp, "contiguous", steps)
    assert sum(contiguous) == sum(zigzag) == steps * (steps + 1) // 2
    assert len(set(contiguous)) == cp                             # the balance check fails


def test_bad_splits_raise_one_clear_error():
    with pytest.raises(ValueError, match="does not split into 8 equal chunks"):
        cp_.check_split(12, 4, "zigzag")
    cp_.check_split(12, 4, "contiguous")
    with pytest.raises(ValueError, match="split must be one of"):
        cp_.check_split(16, 4, "diagonal")
    with pytest.raises(ValueError, match="5 heads do not split over cp=2"):
        cp_.check_heads(5, 2)


def _qkv(seed=0, dtype="float64"):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal((BATCH, STEPS, WIDTH)).astype(dtype) for _ in range(3)]


def test_online_softmax_merge_of_two_key_sets_equals_attention_over_all():
    q, k, v = (to_heads(a, 4) for a in _qkv())
    every = np.arange(STEPS)
    mask = cp_.causal_mask(every, every)
    whole = cp_.block_forward(q, k, v, mask)
    first, second = slice(0, 5), slice(5, STEPS)        # every row sees key 0: piece 1 is
    one = cp_.block_forward(q, k[:, :, first], v[:, :, first], mask[:, first])   # never empty
    rows = slice(5, STEPS)                              # rows 0..4 see none of piece 2
    two = cp_.block_forward(q[:, :, rows], k[:, :, second], v[:, :, second],
                            mask[rows, second])
    out, lse = one[0].copy(), one[1].copy()
    out[:, :, rows], lse[:, :, rows] = cp_.merge(out[:, :, rows], lse[:, :, rows], *two)
    assert abs(out - whole[0]).max() < F64 and abs(lse - whole[1]).max() < F64
    assert abs(from_heads(whole[0]) - causal_attention(*map(Tensor, _qkv()), 4).data).max() < F64


def test_masked_attention_gradients_equal_the_serial_attention():
    inputs = _qkv(1)
    weight = np.random.default_rng(2).standard_normal((BATCH, STEPS, WIDTH))
    grads = []
    for fn in (lambda q, k, v: causal_attention(q, k, v, 4),
               lambda q, k, v: cp_.masked_attention(
                   q, k, v, cp_.causal_mask(np.arange(STEPS), np.arange(STEPS)), 4)):
        qkv = [Tensor(a, requires_grad=True) for a in inputs]
        (fn(*qkv) * Tensor(weight)).sum().backward()
        grads.append([t.grad for t in qkv])
    assert max(abs(a - b).max() for a, b in zip(*grads)) < F64


def test_masked_attention_and_ring_pass_a_float64_gradcheck():
    """Central differences of the primitives' own backward (a zigzag mask, and the ring on a
    one-rank group, where it is one block)."""
    rng = np.random.default_rng(3)
    qkv = [Tensor(rng.standard_normal((1, 4, 4)), requires_grad=True) for _ in range(3)]
    weight = Tensor(rng.standard_normal((1, 4, 4)))
    mine, every = cp_.positions(8, 0, 2, "zigzag"), np.arange(8)[:4] * 2   # queries 0,1,6,7
    mask = cp_.causal_mask(mine, every)                                   # keys 0,2,4,6
    assert gradcheck(lambda q, k, v: (cp_.masked_attention(q, k, v, mask, 2) * weight).sum(),
                     qkv) < 1e-7
    alone = comm.world().split(color=comm.world().rank, name="cp_alone")
    assert gradcheck(lambda q, k, v: (cp_.ring_attention(q, k, v, alone, 2) * weight).sum(),
                     qkv) < 1e-7


@pytest.fixture(scope="module")
def eight():
    """One 8-rank launch: {cp: measurements} per rank, for cp = 2, 4 and 8."""
    return run_mpi(8, "workers/cp_checks.py:check_all", timeout=180)


VARIANTS = ("allgather", "allgather_contiguous", "ring", "ring_contiguous", "ulysses")


@pytest.mark.parametrize("cp", [2, 4, 8])
def test_all_to_all_pair_is_adjoint_and_inverse(eight, cp):
    for res in eight:
        res = res[str(cp)]
        assert res["size"] == cp
        assert res["seq_to_heads_adjoint"] < F64 and res["heads_to_seq_adjoint"] < F64
        assert res["seq_to_heads_forward"] == 0.0 and res["round_trip"] == 0.0


@pytest.mark.parametrize("cp", [2, 4, 8])
def test_every_variant_equals_one_process_forward_and_backward(eight, cp):
    for rank, res in enumerate(eight):
        res = res[str(cp)]
        for name in VARIANTS:
            for dtype, tol in (("float64", F64), ("float32", F32)):
                for what in ("out", "dq", "dk", "dv", "unsplit"):
                    got = res[f"{name}_{what}[{dtype}]"]
                    assert got < tol, (rank, cp, name, what, dtype, got)


@pytest.mark.parametrize("cp", [2, 4, 8])
def test_bytes_per_layer_from_the_trace_equal_the_formulas(eight, cp):
    for res in eight:
        res = res[str(cp)]
        for dtype, b in (("float64", 8), ("float32", 4)):
            S, h = STEPS, WIDTH * BATCH                           # per batch row: h * B

            def got(key):
                return res.get(f"{key}[{dtype}]", 0)
            gather = 2 * (cp - 1) * S * h * b // cp               # 2(cp-1)/cp * S*h*b
            ring_hop = 2 * (S // cp) * h * b                      # 2(S/cp)*h*b
            a2a = (cp - 1) * (S // cp) * h * b // cp              # (cp-1)/cp * (S/cp)*h*b
            for name in ("allgather", "allgather_contiguous"):
                assert got(f"{name}_fwd_all_gather") == gather
                assert got(f"{name}_fwd_all_gather_count") == 2
                assert got(f"{name}_bwd_reduce_scatter") == gather
            for name in ("ring", "ring_contiguous"):
                assert got(f"{name}_fwd_send") == (cp - 1) * ring_hop
                assert got(f"{name}_fwd_send_count") == cp - 1
                assert got(f"{name}_bwd_send") == (2 * cp - 1) * ring_hop   # K/V, then dK/dV
            assert got("ulysses_fwd_all_to_all") == 4 * a2a
            assert got("ulysses_fwd_all_to_all_count") == 4
            assert got("ulysses_bwd_all_to_all") == 4 * a2a


@pytest.mark.parametrize("cp", [2, 4, 8])
def test_bad_input_raises_the_same_value_error_on_every_rank(eight, cp):
    texts = [res[str(cp)] for res in eight]
    for name in ("allgather", "ring", "ulysses"):
        assert len({t[f"{name}_bad"] for t in texts}) == 1
    assert f"does not split into {2 * cp} equal chunks" in texts[0]["ring_bad"]
    assert f"5 heads do not split over cp={cp}" in texts[0]["ulysses_bad"]


def test_gpt_trained_with_cp_and_dp_x_cp_equals_one_process(eight):
    """Loss, gradients and weights after 3 AdamW steps, for dp x cp = 1x8, 2x4, 4x2; and the
    bytes sent inside attention per step = n_layer x (forward + backward) formula."""
    S, h, b, layers = CP_CONFIG.seq_len, CP_CONFIG.d_model, 8, CP_CONFIG.n_layer
    rows = {(1, 8): ("ring", "allgather"), (2, 4): ("ring", "allgather", "ulysses"),
            (4, 2): ("ring", "allgather", "ulysses")}
    for res in eight:
        assert len(res["gpt"]) == 8
        for (dp, cp), variants in rows.items():
            B = GPT_BATCH // dp
            per_layer = {"allgather": 2 * 2 * (cp - 1) * S * h * b * B // cp,
                         "ring": (3 * cp - 2) * 2 * (S // cp) * h * b * B,
                         "ulysses": 2 * 4 * (cp - 1) * (S // cp) * h * b * B // cp}
            for attention in variants:
                got = res["gpt"][f"dp{dp}_cp{cp}_{attention}"]
                assert max(got["loss"], got["grad"], got["weight"]) < 1e-10, (dp, cp, got)
                assert got["attention_sent"] == layers * per_layer[attention], (dp, cp, got)


def test_gpt_with_cp_tp_and_pp_equals_one_process(eight):
    """tp2 x cp2 x dp2 and cp2 x pp2 x tp2 (with and without sequence parallelism) and
    cp2 x pp2 x dp2, every variant, 3 AdamW steps with 2 micro-batches: float64 to 1e-12
    (observed ~1e-14 on the weights), float32 to 1e-4 (AdamW moves a weight by ~lr
    whatever its gradient, so float32 weights differ by ~1e-5 after 3 steps)."""
    from workers.cp_checks import MIXED
    for res in eight:
        assert len(res["mixed"]) == len(MIXED) + 3
        for dims, attention, sp, dtype in MIXED:
            key = "dp{}_pp{}_tp{}_cp{}".format(*dims) + f"_{attention}{'_sp' * sp}[{dtype}]"
            got = res["mixed"][key]
            tol = 1e-12 if dtype == "float64" else 1e-4
            assert got["compared"] > 0 and max(got["loss"], got["grad"], got["weight"]) < tol, \
                (key, got)


def test_activation_bytes_with_cp_and_tp_equal_the_calculator(eight):
    """One block's arrays kept for backward on a rank of tp2 x cp2 (and with sequence
    parallelism), measured from the autograd graph == tools/memory.py, exactly."""
    from minimegatron.tools import memory
    for res in eight:
        for key, got in res["mixed_memory"].items():
            attention, sp = key.split("_")
            want = memory.activation_bytes_per_layer(
                memory.GPTShape.of(CP_CONFIG), 2, 2, "float64", sp == "sp", cp=2,
                attention=attention)
            assert got == want, (key, got, want)
        assert len(res["mixed_memory"]) == 6


def test_zero_and_recomputation_over_dp_x_cp_equal_one_process(eight):
    """ZeRO-2 (reduce-scatter over dp x cp) with activation recomputation on tp2 x cp2 x dp2,
    ZeRO-1 on cp2 x pp2 x dp2 (all-gather attention)."""
    for res in eight:
        for key in ("zero2_dp2_pp1_tp2_cp2", "zero1_dp2_pp2_tp1_cp2"):
            got = res["mixed"][key]
            assert max(got.values()) < 1e-12, (key, got)


def test_gradients_averaged_over_dp_only_do_not_match(eight):
    """tp2 x cp2 x dp2 with DDP over dp instead of dp x cp: each cp half of the sequence
    trains its own weights, and the check sees it."""
    for res in eight:
        got = res["mixed"]["dp_only"]
        assert got["grad"] > 1e-3 and got["weight"] > 1e-3 and got["loss"] > 1e-4, got


def test_gpt_refuses_what_cp_cannot_split():
    with pytest.raises(ValueError, match="dropout"):
        check_config(dataclasses.replace(CP_CONFIG, dropout=0.1), 2, "ring", "zigzag")
    with pytest.raises(ValueError, match="4 heads do not split over cp=8"):
        check_config(CP_CONFIG, 8, "ulysses", "contiguous")
    with pytest.raises(ValueError, match="32 equal chunks"):
        check_config(CP_CONFIG, 16, "ring", "zigzag")
    with pytest.raises(ValueError, match="attention must be one of"):
        check_config(CP_CONFIG, 2, "tree", "zigzag")
    with pytest.raises(ValueError, match=r"the 1 heads of a tp rank \(4 heads / tp=4\)"):
        check_config(CP_CONFIG, 2, "ulysses", "contiguous", tp=4)


def test_tutorial_12_runs_on_4_ranks(tmp_path):
    code, out, err = run_script(4, "tutorials/12_context_parallel.py",
                                ["--steps", "2", "--out", str(tmp_path)], timeout=120)
    assert code == 0, err
    picture = tmp_path / "12_context_parallel.png"
    assert f"picture of the splits, the causal work and the ring: {picture}" in out, out
    assert picture.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and picture.stat().st_size > 20000
    rows = re.findall(r"^ +(\d) +[\d,]+ +[\d,]+ +(\d) +(\d+) +(\d+)$", out, re.M)
    assert rows == [("0", "1", "10", "34"), ("1", "2", "26", "34"), ("2", "3", "42", "34"),
                    ("3", "4", "58", "34")], out
    for name in ("allgather", "ring", "ulysses"):
        line = re.search(rf"^{name} +(.*)$", out, re.M).group(1).split()
        assert all(float(d) < 1e-12 for d in line[:4]), line
        assert line[4] == line[5], line                             # trace = formula
    diffs = re.search(r"\|loss diff\| (\S+), \|grad diff\| (\S+), \|weight diff\| (\S+)$",
                      out, re.M)
    assert diffs and all(float(d) < 1e-10 for d in diffs.groups()), out
    steps = re.findall(r"^ +(\d) +([\d.]+) +([\d.]+) +(\S+) +(\S+) +(\S+)$", out, re.M)
    assert [s[0] for s in steps] == ["0", "1"], out               # the tutorial's own loop
    assert all(abs(float(a) - float(b)) < 1e-10 and float(d) < 1e-10
               for _, a, b, *ds in steps for d in ds), steps
    dims = dict((name, (int(got.replace(",", "")), int(want.replace(",", "")))) for name, got,
                want in re.findall(r"^(cp|dp x cp|dp, tp, pp) +([\d,]+) +([\d,]+)  ", out, re.M))
    hop = 2 * (16 // 4) * 16 * 8 * 4                        # K and V of S/cp tokens, b = 4
    assert dims == {"cp": (2 * 2 * (3 * 4 - 2) * hop,) * 2,         # per step and layer:
                    "dp x cp": (2 * 12 * (7360 + 1),) * 2,          # 2(4-1)/4 x 8 B x (P + 1)
                    "dp, tp, pp": (0, 0)}, out
    assert "every rank: max |trace - formula| 0" in out
    part4 = out[out.index("\n4. "):]                        # measured == tools/memory.py
    rows = re.findall(r"^(allgather|ring|ulysses) +([\d,]+) +([\d,]+)$", part4, re.M)
    assert [name for name, _, _ in rows] == ["allgather", "ring", "ulysses"], out
    assert all(got == want for _, got, want in rows), rows
    assert "(one process: 205,824 B)" in part4                # 4x what the ring keeps
    assert dict((n, int(g.replace(",", ""))) for n, g, _ in rows)["ring"] == 45952
    assert "forward 8,192 B, backward 16,384 B" in part4
