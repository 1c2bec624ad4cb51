"""Context parallelism next to one process: the GPT with its sequence split over cp ranks.

``check_context_parallel(grid, attention)`` trains ContextParallelGPT for a few
AdamW steps: each rank takes its B/dp rows (``grid.dp``) and its S/cp tokens
of them (``grid.cp``; zigzag for ring and all-gather, contiguous for Ulysses),
averages the gradients over ``grid.dp_cp`` and steps. After every step it
compares with ``serial_reference`` (the whole batch, one process): the loss
(mean over dp x cp of the ranks' losses), every gradient, every weight.
Returned for this rank: ``{"loss", "grad", "weight"}`` max abs differences and
``attention_sent``: bytes this rank sent inside attention per step (trace).
``check_attention(group, variant)`` checks one attention variant alone (forward, dQ,
dK, dV and its bytes); ``forward_bytes`` is the formula of each variant's docstring.

``layer_activation_bytes(cp_group, config, attention)`` measures what one block keeps for
backward on this rank (tools/activation_memory.py), next to tools/memory.py's formula.

``demo.CONTEXT_CONFIG`` has 16 tokens, so the zigzag split reaches cp = 8 (2cp chunks).
Tolerance in float64: 1e-10 absolute, as for the other schemes; observed ~1e-15.
"""
import numpy as np

from minimegatron import comm
from minimegatron.comm import trace
from minimegatron.backend import asarray, xp
from minimegatron.checks.common import max_abs_diff, serial_reference
from minimegatron.checks.precision import backward, check_optimizer, unscaled
from minimegatron.data.demo import CONTEXT_CONFIG as CP_CONFIG, batch
from minimegatron.nn.gpt import causal_attention
from minimegatron.parallel.context_parallel import (allgather_attention, ring_attention,
                                                    split_sequence, ulysses_attention)
from minimegatron.parallel.context_parallel.gpt import (ContextParallelGPT,
                                                        TensorContextParallelGPT,
                                                        average_gradients)
from minimegatron.parallel.split import shard_batch
from minimegatron.autodiff.tensor import Tensor
from minimegatron.tools.activation_memory import activation_bytes

STEPS, BATCH = 3, 4


def check_context_parallel(grid, attention="ring", config=CP_CONFIG, steps=STEPS,
                           batch_size=BATCH):
    """{"loss", "grad", "weight"}: max |this rank - one process| over ``steps`` steps."""
    ref = serial_reference(config, steps, batch_size)
    model = ContextParallelGPT(config, grid.cp, attention)
    opt = check_optimizer(model.parameters(), config, grid.dp_cp)
    out = {"loss": 0.0, "grad": 0.0, "weight": 0.0}
    comm.barrier(grid.world)
    trace.reset()
    for step in range(steps):
        x, y = batch(config, batch_size, step)
        x, y = shard_batch(x, grid.dp), shard_batch(y, grid.dp)        # (B/dp, S)
        x, y = model.shard(x), model.shard(y)                          # (B/dp, S/cp)
        opt.zero_grad()
        with trace.label("attention"):
            loss = model.loss(x, y)                                    # mean of my tokens
            backward(loss, opt)
        average_gradients(model, grid.dp_cp)
        with trace.label("check"):
            mean = comm.all_reduce(xp.asarray([loss.item()]), grid.dp_cp, op="mean")
        out["loss"] = max(out["loss"], abs(float(mean[0]) - ref["loss"][step]))
        out["grad"] = max(out["grad"], max(
            max_abs_diff(unscaled(p.grad, opt), ref["grads"][step][n])
            for n, p in model.named_parameters()))
        opt.step()
        out["weight"] = max(out["weight"], max(
            max_abs_diff(p.data, ref["weights"][step][n]) for n, p in model.named_parameters()))
    out["attention_sent"] = sum(s["bytes_sent"] for s in trace.spans()
                                if (s["label"] or "").startswith("attention")) / steps
    return out


VARIANTS = ("allgather", "ring", "ulysses")


def attention_variant(name, q, k, v, group, n_head, split):
    """One of the three causal attention variants on this rank's tokens."""
    if name == "ulysses":
        return ulysses_attention(q, k, v, group, n_head)
    if name == "ring":
        return ring_attention(q, k, v, group, n_head, split)
    return allgather_attention(q, k, v, group, n_head, split)


def forward_bytes(name, cp, steps, width, itemsize, batch=1):
    """The formula: bytes one rank sends in one layer's forward (S tokens, h = K width)."""
    if cp == 1:
        return 0
    if name == "allgather":
        return 2 * (cp - 1) * steps * width * itemsize * batch // cp      # 2(cp-1)/cp S h b
    if name == "ring":
        return (cp - 1) * 2 * (steps // cp) * width * itemsize * batch    # (cp-1) 2(S/cp) h b
    return 4 * (cp - 1) * (steps // cp) * width * itemsize * batch // cp  # 4 (cp-1)/cp (S/cp) h b


def check_attention(group, name, split=None, dtype="float64", batch=2, steps=16, heads=8,
                    hd=4, seed=10):
    """One variant against one process's causal attention (nn/gpt.py) on this rank's tokens.

    Loss sum(Y * W) with a random W; returns max |diff| of Y ("out"), dQ, dK, dV on this
    rank and {"forward", "backward"}: {op: bytes sent} from the trace.
    """
    split = split or ("contiguous" if name == "ulysses" else "zigzag")
    cp, rank = group.size, group.rank
    rng = np.random.default_rng(seed)
    full = [asarray(rng.standard_normal((batch, steps, heads * hd)).astype(dtype))
            for _ in range(4)]                                     # Q, K, V, W: (B, S, H*hd)
    serial = [Tensor(a, requires_grad=True) for a in full[:3]]
    y_serial = causal_attention(*serial, heads)
    (y_serial * Tensor(full[3])).sum().backward()

    def mine(a):
        return split_sequence(a, rank, cp, split)                  # (B, S/cp, H*hd)
    qkv = [Tensor(mine(a), requires_grad=True) for a in full[:3]]
    comm.barrier(group)
    trace.reset()
    with trace.label("attention"):
        y = attention_variant(name, *qkv, group, heads, split)
        (y * Tensor(mine(full[3]))).sum().backward()
    out = {"out": max_abs_diff(y.data, mine(y_serial.data))}
    for letter, got, want in zip("qkv", qkv, serial):
        out[f"d{letter}"] = max_abs_diff(got.grad, mine(want.grad))
    for phase, label in (("forward", "attention"), ("backward", "attention.backward")):
        out[phase] = {}
        for s in trace.spans():
            if s["kind"] == "comm" and s["label"] == label and s["bytes_sent"]:
                out[phase][s["op"]] = out[phase].get(s["op"], 0) + s["bytes_sent"]
    return out


def layer_activation_bytes(cp_group, config, attention, batch_size=2, tp_group=None,
                           sequence_parallel=False):
    """Bytes block 0 keeps for backward on this rank: every array saved for backward plus
    the block's output, not the parameters and not its input (B, S/cp, D) (/tp with
    sequence parallelism)."""
    if tp_group is None:
        model = ContextParallelGPT(config, cp_group, attention)
        parts = cp_group.size
    else:
        model = TensorContextParallelGPT(config, tp_group, cp_group, attention,
                                         sequence_parallel=sequence_parallel)
        parts = cp_group.size * (tp_group.size if sequence_parallel else 1)
    shape = (batch_size, config.seq_len // parts, config.d_model)
    x = Tensor(asarray(np.random.default_rng(0).standard_normal(shape)), requires_grad=True)
    out = model.blocks[0](x)
    return activation_bytes([out], exclude=model.parameters() + [x])
