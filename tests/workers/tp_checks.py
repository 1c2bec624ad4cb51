"""Runs on every rank (via tests/mpi_harness.run_mpi): every tensor-parallel check, batched.

``check_all()`` returns one dict of measurements per rank; tests/test_tensor_parallel.py
asserts each value. The tp group is the whole world (tp = the number of ranks).
"""

import numpy as np

from minimegatron import comm, nn
from minimegatron.comm import trace
from minimegatron.backend import asarray, to_numpy
from minimegatron.checks import tensor as checks
from minimegatron.checks.worked_example import worked_example as checks_worked_example
from minimegatron.data.demo import batch
from minimegatron.autodiff.functional import cross_entropy
from minimegatron.autodiff.gradcheck import gradcheck
from minimegatron.parallel.tensor_parallel import shards
from minimegatron.parallel.tensor_parallel import (ColumnParallelLinear, ParallelGPT, ParallelMLP,
                                                   RNGTracker, RowParallelLinear,
                                                   vocab_parallel_cross_entropy)
from minimegatron.autodiff.tensor import Tensor

GPT_CONFIG = nn.GPTConfig(vocab_size=24, seq_len=8, n_layer=2, n_head=8, d_model=32, seed=0)
PADDED_CONFIG = nn.GPTConfig(vocab_size=19, seq_len=8, n_layer=1, n_head=8, d_model=16, seed=1)


def worked_example(group):
    result = checks_worked_example(group)
    return {s: {k: v.tolist() for k, v in arrays.items()} for s, arrays in result.items()}


def cross_entropy_check(group, vocab=21, shape=(3, 5)):
    """Vocab-parallel CE vs F.cross_entropy on the same full logits: loss, dlogits, shapes."""
    vp = -(-vocab // group.size) * group.size
    width = vp // group.size
    rng = np.random.default_rng(7)
    full = asarray(rng.standard_normal(shape + (vocab,)))
    targets = asarray(rng.integers(0, vocab, size=shape))
    serial = Tensor(full, requires_grad=True)
    loss_s = cross_entropy(serial, targets)
    loss_s.backward()
    padded = np.concatenate([to_numpy(full), np.full(shape + (vp - vocab,), 5.0)], axis=-1)
    start = group.rank * width
    local = Tensor(asarray(padded[..., start:start + width].copy()), requires_grad=True)
    comm.barrier(group)
    trace.reset()
    loss = vocab_parallel_cross_entropy(local, targets, group, start, vocab)
    loss.backward()
    spans = [s for s in trace.spans() if s["group"] == group.name and s["kind"] == "comm"]
    want = np.concatenate([to_numpy(serial.grad), np.zeros(shape + (vp - vocab,))], axis=-1)
    return {"loss": abs(loss.item() - loss_s.item()),
            "grad": float(np.abs(to_numpy(local.grad) - want[..., start:start + width]).max()),
            "local_width": width, "ops": [s["op"] for s in spans],
            "nbytes": [s["nbytes"] for s in spans]}


def gradcheck_cross_entropy(group):
    """Central differences through the fused CE (one rank: no collective inside)."""
    rng = np.random.default_rng(3)
    logits = Tensor(asarray(rng.standard_normal((2, 3, 8))), requires_grad=True)
    targets = asarray(rng.integers(0, 6, size=(2, 3)))
    return gradcheck(lambda z: vocab_parallel_cross_entropy(z, targets, group, 0, 6), [logits])


def dropout_check(group):
    """Replicated masks agree over tp (and equal serial), sharded masks differ."""
    tracker = RNGTracker(seed=5, tp_rank=group.rank)
    rep = asarray(tracker.replicated("blocks.0.mlp.drop").random(16))
    own = asarray(tracker.sharded("blocks.0.attn.attn_drop").random(16))
    reps, owns = comm.all_gather(rep[None], group), comm.all_gather(own[None], group)
    config = nn.GPTConfig(vocab_size=24, seq_len=8, n_layer=1, n_head=8, d_model=32,
                          dropout=0.3, seed=2)
    x, _ = batch(config, 2, 0)
    mlp = ParallelMLP(config, group, name="blocks.0.mlp")
    y = mlp(Tensor(asarray(np.random.default_rng(1).standard_normal((2, 8, 32))))).data
    ys = comm.all_gather(y[None], group)
    embed_diff = float(np.abs(to_numpy(ParallelGPT(config, group).embed(x).data)
                              - to_numpy(nn.GPT(config).embed(x).data)).max())
    return {"replicated_equal": bool(all(np.array_equal(reps[0], r) for r in reps)),
            "sharded_distinct_pairs": int(sum(not np.array_equal(owns[i], owns[j])
                                              for i in range(len(owns))
                                              for j in range(i + 1, len(owns)))),
            "mlp_output_equal": bool(all(np.array_equal(ys[0], v) for v in ys)),
            "mlp_zero_fraction": float((y == 0).mean()),
            "embed_vs_serial_with_dropout": embed_diff}


def _error(fn):
    try:
        fn()
    except ValueError as err:
        return str(err)
    return None


def error_checks(group):
    """Every bad configuration raises on this rank with no collective started."""
    tp = group.size
    trace.reset()
    out = {
        "d_model": _error(lambda: ParallelGPT(nn.GPTConfig(24, 8, 1, 1, tp + 1), group)),
        "heads": _error(lambda: ParallelGPT(nn.GPTConfig(24, 8, 1, 1, 8 * tp), group)),
        "vocab": _error(lambda: ParallelGPT(nn.GPTConfig(tp + 1, 8, 1, tp, 8 * tp), group,
                                            pad_vocab=False)),
        "ffn_columns": _error(lambda: ColumnParallelLinear(8, 4 * tp + 1, group)),
        "row_in": _error(lambda: RowParallelLinear(4 * tp + 1, 8, group)),
        "master_weight": _error(lambda: ColumnParallelLinear(
            4, 2 * tp, group, master_weight=asarray(np.zeros((3, 2 * tp))))),
        "master_bias": _error(lambda: RowParallelLinear(
            2 * tp, 4, group, master_bias=asarray(np.zeros(5)))),
    }
    out["spans_after_errors"] = len(trace.spans())
    return out


def check_all():
    group = comm.world()
    tp = group.size
    out = {"tp": tp, "mappings": checks.check_mappings(group),
           "mappings_3d": checks.check_mappings(group, shape=(2, 3, 4 * tp), seed=9),
           "linears": checks.check_linears(group),
           "gpt": checks.check_gpt(group, GPT_CONFIG),
           "gpt_padded": checks.check_gpt(group, PADDED_CONFIG),
           "cross_entropy": cross_entropy_check(group),
           "dropout": dropout_check(group)}
    for layers in (1, 2):
        config = nn.GPTConfig(vocab_size=24, seq_len=8, n_layer=layers, n_head=8, d_model=32)
        out[f"comm_{layers}_layers"] = checks.count_all_reduces(group, config, batch_size=2)
    model = ParallelGPT(PADDED_CONFIG, group)
    out["tp_axes"] = {n: [list(p.shape), list(shards.shard_of(
        n, nn.gpt_init(n, full.shape, PADDED_CONFIG), group.rank, tp).shape),
        shards.tp_axis(n)] for (n, p), full in zip(model.named_parameters(),
                                                   nn.GPT(PADDED_CONFIG).parameters())}
    if tp == 1:
        out["ce_gradcheck"] = gradcheck_cross_entropy(group)
    else:
        out["errors"] = error_checks(group)
    if tp == 2:
        out["worked_example"] = worked_example(group)
    return out
