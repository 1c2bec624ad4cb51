"""FSDP2's memory and bytes per rank, from the parameter shapes alone (no model built).

Per-parameter sharding (parallel/data_parallel/fsdp2.py) keeps, of a weight of shape
(d0, ...), c = ceil(d0 / N) rows on each of the N ranks of the shard group:

    shard values   s = c * prod(shape[1:])          S = the sum over every weight
    model state    weights S b, gradients S_g b (S_g: the weights not frozen),
                   optimizer k S_g b (AdamW: k = 2, m and v)
    gathered peak  max over consecutive units i, i+1 of N (S_i + S_{i+1}) b with prefetch
                   (the unit running and the next one posted), max_i N S_i b without

and sends per step, one all-gather per unit and dtype in forward and again in
backward, one reduce-scatter per unit and dtype, and with HSDP one all-reduce of the
shard gradient over the R replicas (the ring model of comm/trace.py, call by call):

    (N-1) (S + S_bwd) b  +  (N-1) S_g b  +  sum over calls of 2 (R-1) s_call b // R

``units``: [[(shape, dtype, frozen), ...] per unit in forward order]; ``leaves``: the
indices of units that take no input gradient (embeddings of token ids): when all
their weights are frozen their backward never runs, so neither does its all-gather.
"""
import math

import numpy as np


def shard_values(shape, n):
    """Values of one rank's shard of a weight of ``shape`` over n ranks: ceil(d0/n) rows."""
    return -(-shape[0] // n) * math.prod(shape[1:])


def _calls(unit, n, trained_only):
    """{dtype: shard values} of one unit: one collective per dtype."""
    calls = {}
    for shape, dtype, frozen in unit:
        if not (trained_only and frozen):
            calls[dtype] = calls.get(dtype, 0) + shard_values(shape, n)
    return calls


def units_of(model):
    """[[(shape, dtype, frozen), ...] per module that owns parameters] of a model before
    ``fully_shard`` (its units, in registration order: the forward order of a GPT)."""
    return [[(tuple(p.shape), str(p.dtype), not p.requires_grad) for p in m._parameters.values()]
            for _, m in model.named_modules() if m._parameters]


def fsdp2_bytes(units, n, replicate=1, prefetch=True, optimizer_states=2, leaves=()):
    """{"weights", "grads", "optimizer", "gathered_peak", "sent"} of one rank, in bytes."""
    size = {dtype: np.dtype(dtype).itemsize for unit in units for _, dtype, _ in unit}
    weights = [sum(v * size[d] for d, v in _calls(u, n, False).items()) for u in units]
    grads = [sum(v * size[d] for d, v in _calls(u, n, True).items()) for u in units]
    gathered = [n * w for w in weights]
    pairs = [a + b for a, b in zip(gathered, gathered[1:])] if prefetch else []
    backward = [w for i, (w, g) in enumerate(zip(weights, grads)) if g or i not in leaves]
    sent = (n - 1) * (sum(weights) + sum(backward) + sum(grads))
    if replicate > 1:
        sent += sum(2 * (replicate - 1) * (v * size[d]) // replicate
                    for u in units for d, v in _calls(u, n, True).items())
    return {"weights": sum(weights), "grads": sum(grads),
            "optimizer": optimizer_states * sum(grads),
            "gathered_peak": max(pairs + gathered, default=0), "sent": sent}
