"""Runs on every rank (tests/test_fp8_parallel.py): fp8 under sequence and expert parallelism.

World of 4 ranks, split into two pairs (strict subsets). Returned per rank:

- "sp": sequence parallelism's fused gather in fp8 (tensor_parallel/sequence_fp8.py) on
  tp = 2 next to one process's Fp8Matmul on the whole X: the gathered e4m3 bytes equal
  one process's e4m3(s_X X) bit for bit (the scales agreed over tp), Y_i, dA_i and dX_r
  within a bf16 rounding; and the trace's bytes: the two gathers of X (forward, backward's
  regather) a quarter of the float32 layer's, the reduce-scatter (float32 on the wire)
  equal. "sp_no_agree": the same with each rank's own scale (the mutant): not bitwise.
  "step_bytes": a whole training step of a sequence-parallel ParallelGPT, its all-gathers
  by trace label, in float32 and in fp8.
- "ep": an MoE layer in fp8 with its 8 experts over ep = 2 (each expert's grouped fp8
  matmul, a scale per expert) next to one process's MoE in fp8: output, dX and every
  local expert's gradient bit for bit equal (every row of expert e reaches the rank
  holding it: the same amax, the same roundings, the same float32 sums).
  "ep_unmarked": the mutant whose ep ranks leave their experts in bf16: not bitwise.
- "rows": verify's fp8 rows tp-sp (tp = 2) and MoE ep (ep = 2, capacity), each with a
  planted mistake: the experts' grouped product not unscaled (cast with its scales, then
  the scales forgotten), and the SP gather's product not unscaled. Each mistake fails its
  row and leaves the other passing (both pass as they are: tests/test_verify.py).
"""
import dataclasses

import ml_dtypes
import numpy as np

from minimegatron import comm
from minimegatron.autodiff import fp8
from minimegatron.autodiff.tensor import Tensor
from minimegatron.checks import moe as moe_checks
from minimegatron.checks import verify
from minimegatron.comm import all_reduce, trace
from minimegatron.data.demo import VERIFY_CONFIG, batch
from minimegatron.nn.moe import MoE, init_by_name
from minimegatron.parallel.expert_parallel.layer import ExpertParallelMoE
from minimegatron.parallel.split import rows_of
from minimegatron.parallel.tensor_parallel import ParallelGPT, sequence_fp8
from minimegatron.parallel.tensor_parallel.linear import ColumnParallelLinear
from minimegatron.parallel.tensor_parallel.sequence import seq_chunk

BF16 = np.dtype(ml_dtypes.bfloat16)
B, T, IN, OUT = 2, 8, 16, 8


def _bits_equal(a, b):
    a, b = np.asarray(a), np.asarray(b)
    return a.shape == b.shape and bool(np.array_equal(a.view(np.uint8), b.view(np.uint8)))


def _diff(a, b):
    return float(np.abs(np.asarray(a, np.float32) - np.asarray(b, np.float32)).max())


def _sp_data():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(B, T, IN)) * 3
    x[1, T - 1, 2] = 700.0              # the largest |x| is in the last rank's tokens only
    w = rng.normal(size=(IN, OUT)) * 0.2
    g = rng.normal(size=(B, T, OUT)) * 1e-3
    return x.astype(BF16), w.astype(BF16), g.astype(BF16)


def sp_layer(group, agree=True):
    """The fp8 SP gather-matmul on ``group`` against one process's Fp8Matmul."""
    x, w, g = _sp_data()
    xs, ws = Tensor(x, requires_grad=True), Tensor(w, requires_grad=True)
    ys = fp8.fp8_matmul(xs, ws)                                     # one process, whole X
    q_serial = ys._node.ctx.saved[0].reshape(B, T, IN)                # e4m3(s_X X)
    ys.backward(g)
    layer = ColumnParallelLinear(IN, OUT, group, bias=False, master_weight=w,
                                 dtype="bfloat16", sequence_parallel=True)
    fp8.mark(layer, agree=(lambda a: all_reduce(a, group, op="max")) if agree else None)
    cols = rows_of(np.arange(OUT), group.rank, group.size)          # my columns of A
    xr = Tensor(seq_chunk(x, group), requires_grad=True)            # (B, T/t, IN)
    y = layer(xr)                                                   # (B, T, OUT/t)
    kept = [int(a.nbytes) for a in y._node.ctx.saved]                # X_r's and A_i's bytes
    gathered = comm.all_gather(y._node.ctx.saved[0], group, axis=1)  # (B, T, IN) e4m3
    y.backward(np.ascontiguousarray(g[..., cols]))
    return {"q_bitwise": _bits_equal(gathered, q_serial),
            "y": _diff(y.data, ys.data[..., cols]),
            "dw": _diff(layer.weight.grad, ws.grad[:, cols]),
            "dx": _diff(xr.grad, seq_chunk(xs.grad, group)),
            "kept": kept, "scale": float(np.abs(ys.data.astype(np.float32)).max()),
            "dx_scale": float(np.abs(xs.grad.astype(np.float32)).max())}


def sp_bytes(group):
    """{"op label": bytes} of one forward + backward of the SP column layer, float32 and fp8."""
    x, w, g = _sp_data()
    out = {}
    for name, dtype in (("float32", "float32"), ("fp8", "bfloat16")):
        layer = ColumnParallelLinear(IN, OUT, group, bias=False, master_weight=w,
                                     dtype=dtype, sequence_parallel=True)
        if name == "fp8":
            fp8.mark(layer, agree=lambda a: all_reduce(a, group, op="max"))
        cols = rows_of(np.arange(OUT), group.rank, group.size)
        xr = Tensor(seq_chunk(x.astype(dtype), group), requires_grad=True)
        comm.barrier(group)
        trace.reset()
        with trace.label("fc"):                        # forward "fc", backward "fc.backward*"
            y = layer(xr)
        y.backward(np.ascontiguousarray(g[..., cols].astype(dtype)))
        sent = {}
        for s in trace.spans():
            if s["kind"] == "comm" and s["group"] == group.name and s["op"] != "all_reduce":
                key = f"{s['op']} {s['label']}"
                sent[key] = sent.get(key, 0) + s["bytes_sent"]
        out[name] = sent
    return out


def sp_step_bytes(group):
    """{label: all-gather bytes} of one forward + backward of a 2-block sequence-parallel
    ParallelGPT on ``group``, in float32 and in fp8 (a whole step, not one layer)."""
    out = {}
    for name, extra in (("float32", {"dtype": "float32"}),
                        ("fp8", {"dtype": "bfloat16", "fp8": True})):
        config = dataclasses.replace(VERIFY_CONFIG, n_layer=2, **extra)
        model = ParallelGPT(config, group, sequence_parallel=True)
        x, y = batch(config, 2, 0)
        comm.barrier(group)
        trace.reset()
        model.loss(x, y).backward()
        sent = {}
        for s in trace.spans():
            if s["kind"] == "comm" and s["op"] == "all_gather" and s["group"] == group.name:
                sent[s["label"]] = sent.get(s["label"], 0) + s["bytes_sent"]
        out[name] = sent
    return out


def ep_layer(group, mark_parallel=True):
    """An fp8 MoE layer with its experts over ``group`` against one process's fp8 MoE
    (``mark_parallel=False``, the mutant: the ep ranks' experts left in bf16)."""
    ep, rank, width, sequences = group.size, group.rank, 16, 2
    rng = np.random.default_rng(3)
    full = (rng.normal(size=(ep * sequences, 8, width)) * 2).astype(BF16)
    grad = (rng.normal(size=full.shape) * 1e-2).astype(BF16)
    config = dataclasses.replace(moe_checks.MOE_CONFIG, d_model=width, dtype="bfloat16",
                                 fp8=True)
    moe = moe_checks.MOE
    serial = MoE(width, moe, "bfloat16")
    init_by_name(serial, "blocks.0.mlp", config)
    fp8.mark_experts(serial)
    xs = Tensor(full, requires_grad=True)
    (serial(xs) * Tensor(grad)).sum().backward()
    ys = serial(Tensor(full))
    layer = ExpertParallelMoE(width, moe, group, "bfloat16")
    layer.load_full("blocks.0.mlp", config)
    if mark_parallel:
        fp8.mark_experts(layer)
    layer.aux_grad_scale = 1.0 / ep
    mine = slice(rank * sequences, (rank + 1) * sequences)
    x = Tensor(full[mine].copy(), requires_grad=True)
    y = layer(x)
    (y * Tensor(grad[mine])).sum().backward()
    local = moe.num_experts // ep
    experts = {name: p for name, p in layer.named_parameters() if ".experts." in name}
    serial_params = dict(serial.named_parameters())
    return {"out": _bits_equal(y.data, ys.data[mine]), "dx": _bits_equal(x.grad, xs.grad[mine]),
            "marked": sorted(n for n, p in layer.named_parameters() if getattr(p, "fp8", 0)),
            "expert_grads": all(_bits_equal(p.grad, serial_params[n].grad[
                rank * local:(rank + 1) * local]) for n, p in experts.items())}


ROWS = (("tp-sp", (1, 1, 2, 1)), ("moe-ep", (4, 1, 1, 1, 1, 2)))


def verify_rows(world):
    split = {}
    return [verify.run_row(s, d, "fp8", 2, world, split)["status"] for s, d in ROWS]


def _cast_but_not_unscaled(x, fmt):
    """quantize_grouped's mistake: q cast with each expert's scale, the scales forgotten."""
    q, _ = REAL_GROUPED(x, fmt)
    return q, np.ones((x.shape[0],) + (1,) * (x.ndim - 1), np.float32)


REAL_GROUPED = fp8.quantize_grouped


def rows_with_mistakes(world):
    """verify's fp8 rows with one planted mistake each (the right rows: tests/test_verify.py)."""
    out = {}
    fp8.quantize_grouped = _cast_but_not_unscaled       # the experts' products not unscaled
    try:
        out["experts_not_unscaled"] = verify_rows(world)
    finally:
        fp8.quantize_grouped = REAL_GROUPED
        moe_checks.moe_reference.cache_clear()     # the one-process runs it made are wrong
    real_matmul = sequence_fp8.scaled_matmul               # the gather's product not unscaled
    sequence_fp8.scaled_matmul = lambda qa, sa, qb, sb, dtype: real_matmul(qa, 1.0, qb, 1.0,
                                                                          dtype)
    try:
        out["sp_not_unscaled"] = verify_rows(world)
    finally:
        sequence_fp8.scaled_matmul = real_matmul
    return out


def check_all():
    world = comm.world()
    pair = world.split(world.rank // 2, name="pair")
    return {"sp": sp_layer(pair), "sp_no_agree": sp_layer(pair, agree=False),
            "bytes": sp_bytes(pair), "step_bytes": sp_step_bytes(pair), "ep": ep_layer(pair),
            "ep_unmarked": ep_layer(pair, mark_parallel=False), "rows": rows_with_mistakes(world)}
