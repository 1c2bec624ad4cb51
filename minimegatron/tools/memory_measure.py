"""Measured model state: the bytes one rank really holds, next to the ZeRO formulas.

``measure(params, optimizer)`` walks the real arrays: the weights, the
gradients and the optimizer state this rank keeps. A view counts as its
owning buffer, once (``a.base``), so a flat buffer viewed by many parameters
is counted at its real size, padding included. For ZeRO (a ``ShardedOptimizer``,
data_parallel/zero.py, or ``Zero3``, zero3.py) it asks ``held_arrays()``: at stage 3 the
persistent weight slices, not the weights gathered for a moment (their peak
is reported separately as ``peak_gathered``).

``formula(params, dp, zero, dtype)`` is ``tools.memory.model_state_bytes`` in
the code's precision (float64: b = 8; weights bP, grads bP, Adam m and v 2bP;
stage 1 shards m, v; stage 2 also grads; stage 3 also weights).

Margin: flattening pads each flat group to a multiple of N, fewer than N
values per group; every sharded quantity (weights, grads, m, v) may carry that
padding, and so may the gathered buffers of stages 1-2. So
    |measured - formula| <= 4 * b * N * groups          (``padding_margin``)
with groups = 1 for stages 1-2 and the number of units for stage 3. The
tutorial ``minimegatron run -n 8 tutorials/06_zero.py`` prints both.
"""
from minimegatron.tools.memory import model_state_bytes

KINDS = ("weights", "grads", "optimizer")


def owner(a):
    """The array that owns a view's memory."""
    while getattr(a, "base", None) is not None and hasattr(a.base, "nbytes"):
        a = a.base
    return a


def array_bytes(arrays):
    """Bytes of the distinct buffers behind ``arrays`` (None skipped, views counted once)."""
    seen = {}
    for a in arrays:
        if a is not None:
            base = owner(a)
            seen[id(base)] = base.nbytes
    return int(sum(seen.values()))


def held_arrays(params, optimizer=None):
    """{"weights", "grads", "optimizer": [arrays]} for plain (unsharded) training."""
    if hasattr(optimizer, "held_arrays"):
        return optimizer.held_arrays()
    states = [v for s in getattr(optimizer, "state", []) for v in s.values()]
    return {"weights": [p.data for p in params], "grads": [p.grad for p in params],
            "optimizer": states}


def measure(params, optimizer=None, buffers=()):
    """{"weights", "grads", "optimizer", "buffers", "total", "peak_gathered"} bytes held.

    ``buffers``: other arrays kept between steps, e.g. DDP's float32 reduce buffers
    (``DistributedDataParallel.buffers()``) under mixed precision.
    """
    held = held_arrays(params, optimizer)
    out = {kind: array_bytes(held[kind]) for kind in KINDS}
    out["buffers"] = array_bytes(buffers)
    out["total"] = sum(out[kind] for kind in KINDS) + out["buffers"]
    out["peak_gathered"] = int(getattr(optimizer, "peak_gathered_bytes", 0))
    return out


def formula(num_params, dp, zero, dtype="float64"):
    """tools.memory.model_state_bytes in this code's precision (no mixed-precision copies)."""
    return model_state_bytes(num_params, dp, zero, str(dtype))


def per_param_bytes(measured, num_params):
    """{"weights", "grads", "optimizer"}: measured bytes divided by the parameter count.

    An unsharded mixed-precision run gives {2, 2, 12}; tools.memory.sharded_state_bytes
    turns these into any model's totals (the 7.5B example of docs/mixed_precision.md).
    "buffers" is added when the run kept some (DDP's float32 reduce buffer: 4).
    """
    kinds = KINDS + (("buffers",) if measured.get("buffers") else ())
    return {kind: measured[kind] / num_params for kind in kinds}


def padding_margin(dp, groups, itemsize=8):
    """Most bytes padding can add to any measured total (see the module docstring)."""
    return 4 * itemsize * dp * groups


def table(rows):
    """Text table of [(label, measured dict, formula dict)]: bytes per kind and total."""
    lines = [f"{'':<10}" + "".join(f"{k:>20}" for k in KINDS + ("total",))
             + f"{'peak gathered':>15}",
             f"{'':<10}" + f"{'measured / formula':>20}" * 4]
    for label, got, want in rows:
        cells = "".join(f"{got[k]:>10,d} /{int(want[k]):>8,d}" for k in KINDS + ("total",))
        lines.append(f"{label:<10}{cells}{got['peak_gathered']:>15,d}")
    return "\n".join(lines)
