"""Runs on 8 ranks: every context-parallel check, batched, for cp = 2, 4 and 8 at once.

The world splits into groups of cp ranks (8/cp groups work side by side); each
group runs the all-to-all adjoint, the three attention variants against one
process's causal attention (nn/gpt.py) in float64 and float32, the bytes each
moved (from the trace), and the bad inputs. Then the GPT with dp x cp, and with cp
next to tp and pp on the whole world. One dict of measurements per rank.
"""
import dataclasses

import numpy as np

from minimegatron import comm
from minimegatron.comm import trace
from minimegatron.backend import asarray, to_numpy
from minimegatron.checks.common import max_abs_diff
from minimegatron.checks.context import (CP_CONFIG, check_context_parallel,
                                         layer_activation_bytes)
from minimegatron.checks.threed import check_3d
from minimegatron.checks.tensor import _adjoint
from minimegatron.nn import causal_attention
from minimegatron.parallel import context_parallel as cp_
from minimegatron.parallel.grid import ProcessGrid
from minimegatron.autodiff.tensor import Tensor

BATCH, STEPS, HEADS, HD = 2, 16, 8, 4           # S = 16 splits into 2*cp chunks up to cp = 8
WIDTH = HEADS * HD


def _rand(shape, seed, rank=0, dtype="float64"):
    return asarray(np.random.default_rng([seed, rank]).standard_normal(shape).astype(dtype))


def adjoint(group):
    """<f(x), y> = <x, f^T(y)> for both all-to-all directions, and f^T f = identity."""
    r, cp, out = group.rank, group.size, {}
    seq = _rand((BATCH, STEPS // cp, HEADS, HD), 1, r)
    head = _rand((BATCH, STEPS, HEADS // cp, HD), 2, r)
    out["seq_to_heads_adjoint"], y = _adjoint(cp_.sequence_to_heads, seq, head, True, True,
                                              group)
    everyone = [_rand((BATCH, STEPS // cp, HEADS, HD), 1, q) for q in range(cp)]
    full = np.concatenate([to_numpy(e) for e in everyone], axis=1)       # (B, S, H, hd)
    out["seq_to_heads_forward"] = max_abs_diff(y, full[:, :, r * HEADS // cp:
                                                      (r + 1) * HEADS // cp])
    out["heads_to_seq_adjoint"], back = _adjoint(cp_.heads_to_sequence, head, seq, True, True,
                                                 group)
    out["round_trip"] = max_abs_diff(
        cp_.heads_to_sequence(cp_.sequence_to_heads(Tensor(seq), group), group).data, seq)
    return out


VARIANTS = {
    "allgather": lambda q, k, v, g: cp_.allgather_attention(q, k, v, g, HEADS),
    "allgather_contiguous": lambda q, k, v, g: cp_.allgather_attention(q, k, v, g, HEADS,
                                                                       "contiguous"),
    "ring": lambda q, k, v, g: cp_.ring_attention(q, k, v, g, HEADS),
    "ring_contiguous": lambda q, k, v, g: cp_.ring_attention(q, k, v, g, HEADS, "contiguous"),
    "ulysses": lambda q, k, v, g: cp_.ulysses_attention(q, k, v, g, HEADS),
}


def serial(dtype):
    """One process: q, k, v, the weight w of the loss sum(Y * w), Y and dQ, dK, dV."""
    qkv = [Tensor(_rand((BATCH, STEPS, WIDTH), 10 + i, dtype=dtype), requires_grad=True)
           for i in range(3)]
    weight = _rand((BATCH, STEPS, WIDTH), 13, dtype=dtype)
    y = causal_attention(*qkv, HEADS)
    (y * Tensor(weight)).sum().backward()
    return [t.data for t in qkv], weight, y.data, [t.grad for t in qkv]


def attention(group, dtype):
    """{variant_{out,dq,dk,dv}: max |diff| against one process; bytes by op and direction}."""
    inputs, weight, y_serial, grads = serial(dtype)
    cp, r, out = group.size, group.rank, {}
    for name, fn in VARIANTS.items():
        split = "contiguous" if name in ("ulysses",) or name.endswith("contiguous") else "zigzag"

        def mine(a):
            return cp_.split_sequence(a, r, cp, split)                  # (B, S/cp, ...)
        qkv = [Tensor(mine(a), requires_grad=True) for a in inputs]
        comm.barrier(group)
        trace.reset()
        with trace.label("attn"):
            y = fn(*qkv, group)
            (y * Tensor(mine(weight))).sum().backward()
        out[f"{name}_out"] = max_abs_diff(y.data, mine(y_serial))
        for letter, t, g in zip("qkv", qkv, grads):
            out[f"{name}_d{letter}"] = max_abs_diff(t.grad, mine(g))
        for direction, label in (("fwd", "attn"), ("bwd", "attn.backward")):
            for s in trace.spans():
                if s["kind"] == "comm" and s["label"] == label:
                    key = f"{name}_{direction}_{s['op']}"
                    out[key] = out.get(key, 0) + s["bytes_sent"]
                    out[key + "_count"] = out.get(key + "_count", 0) + 1
        # every rank's output, reassembled in token order, is one process's output
        shards = [asarray(np.asarray(s)) for s in
                  comm.allgather_object(to_numpy(y.data).tolist(), group)]
        out[f"{name}_unsplit"] = max_abs_diff(cp_.unsplit_sequence(shards, split), y_serial)
    return out


def bad_inputs(group):
    """The ValueError each variant raises before any collective (its text)."""
    out = {}
    odd = [Tensor(_rand((1, 3, WIDTH), 20 + i)) for i in range(3)]     # 3*cp tokens
    for name in ("allgather", "ring"):
        try:
            VARIANTS[name](*odd, group)
            out[f"{name}_bad"] = "no error"
        except ValueError as error:
            out[f"{name}_bad"] = str(error)
    five = [Tensor(_rand((1, 2, 5 * 2), 30 + i)) for i in range(3)]   # 5 heads of 2
    try:
        cp_.ulysses_attention(*five, group, 5)
        out["ulysses_bad"] = "no error"
    except ValueError as error:
        out["ulysses_bad"] = str(error)
    return out


def gpt_training(world):
    """The GPT trained 3 steps with cp alone and with dp x cp, next to one process."""
    out = {}
    for dp, cp in ((1, world.size), (2, world.size // 2), (world.size // 2, 2)):
        if cp < 2 or dp * cp != world.size:
            continue
        grid = ProcessGrid(dp=dp, cp=cp)
        for attention in ("ring", "allgather", "ulysses"):
            if attention == "ulysses" and 4 % cp:                  # CP_CONFIG has 4 heads
                continue
            out[f"dp{dp}_cp{cp}_{attention}"] = check_context_parallel(grid, attention)
    return out


# (dp, pp, tp, cp), attention, sequence parallel, dtype; 8 ranks, 3 AdamW steps, M = 2
MIXED = [((2, 1, 2, 2), "ring", False, "float64"), ((2, 1, 2, 2), "ring", True, "float64"),
         ((2, 1, 2, 2), "allgather", True, "float64"), ((2, 1, 2, 2), "ulysses", False,
                                                        "float64"),
         ((1, 2, 2, 2), "ring", True, "float64"), ((1, 2, 2, 2), "allgather", False, "float64"),
         ((1, 2, 2, 2), "ulysses", True, "float64"), ((2, 2, 1, 2), "ring", False, "float64"),
         ((1, 2, 2, 2), "ring", True, "float32"), ((2, 1, 2, 2), "ulysses", True, "float32")]


def mixed_grids():
    """cp with tp (and sequence parallelism) and pp, next to one process; and the same grid
    with its gradients averaged over dp only, which must not match."""
    out = {}
    for dims, attention, sp, dtype in MIXED:
        config = dataclasses.replace(CP_CONFIG, dtype=dtype)
        got = check_3d(dims, micro_batches=2, batch_size=4, config=config,
                       attention=attention, sequence_parallel=sp)
        key = "dp{}_pp{}_tp{}_cp{}".format(*dims) + f"_{attention}{'_sp' * sp}[{dtype}]"
        out[key] = {k: got[k] for k in ("loss", "grad", "weight", "compared")}
    for dims, attention, zero, recompute in (((2, 1, 2, 2), "ring", 2, True),
                                             ((2, 2, 1, 2), "allgather", 1, False)):
        got = check_3d(dims, micro_batches=2, batch_size=4, config=CP_CONFIG,
                       attention=attention, zero_stage=zero, checkpoint_activations=recompute)
        out[f"zero{zero}_" + "dp{}_pp{}_tp{}_cp{}".format(*dims)] = {
            k: got[k] for k in ("loss", "grad", "weight")}
    got = check_3d((2, 1, 2, 2), micro_batches=2, batch_size=4, config=CP_CONFIG,
                   grad_group="dp")
    out["dp_only"] = {k: got[k] for k in ("loss", "grad", "weight")}
    return out


def check_all():
    world = comm.world()
    results = {}
    for cp in (2, 4, 8):
        if world.size % cp:
            continue
        group = world.split(color=world.rank // cp, name=f"cp{world.rank // cp}")
        res = {"size": group.size, **adjoint(group), **bad_inputs(group)}
        for dtype in ("float64", "float32"):
            res.update({f"{k}[{dtype}]": v for k, v in attention(group, dtype).items()})
        results[str(cp)] = res
    results["gpt"] = gpt_training(world)
    results["mixed"] = mixed_grids()
    grid = ProcessGrid(dp=2, tp=2, cp=2)
    results["mixed_memory"] = {
        f"{attention}_{'sp' if sp else 'tp'}": layer_activation_bytes(
            grid.cp, CP_CONFIG, attention, 2, grid.tp, sp)
        for attention in ("ring", "allgather", "ulysses") for sp in (False, True)}
    comm.barrier(world)
    return results
