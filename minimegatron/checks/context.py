"""Context parallelism next to one process: the GPT with its sequence split over cp ranks.

``check_context_parallel(grid, attention)`` trains ContextParallelGPT for a few
AdamW steps: each rank takes its B/dp rows (``grid.dp``) and its S/cp tokens
of them (``grid.cp``; zigzag for ring and all-gather, contiguous for Ulysses),
averages the gradients over ``grid.dp_cp`` and steps. After every step it
compares with ``serial_reference`` (the whole batch, one process): the loss
(mean over dp x cp of the ranks' losses), every gradient, every weight.
Returned for this rank: ``{"loss", "grad", "weight"}`` max abs differences and
``attention_sent``: bytes this rank sent inside attention per step (trace).
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
