"""ActivationWatch: the last forward's module inputs and outputs, kept to name a NaN's origin.

A NaN that first appears in an activation (every weight finite: a forward op
overflows, an input arrives with a NaN) makes every gradient behind it NaN, and
a gradient check alone can only say "non-finite gradient". So
DistributedDataParallel (parallel/data_parallel/ddp.py) watches its module:
every watched Module call keeps a reference to its first input and to its
output, in call order (inputs when the call starts, outputs when it returns).
Only when a check has found a non-finite gradient with every weight finite does
``first_non_finite()`` walk them and name the first that is not finite:

    "output of 'blocks.1.attn.proj'"      (the op before it made the NaN)
    "input of pipeline stage 1, received from stage 0"

Cost. The normal path does no test: a watched call is two counter ticks and
one dict entry. Each module keeps one record (its last call), so a pipeline's
micro-batches or gradient accumulation keep one set, not one per micro-batch;
``clear()`` (DDP's finish) lets them go after each step. Most of these arrays
are saved by the graph until backward anyway; the rest (an output only added
to the residual) live until the step ends.

``name_non_finite`` is the one report every scheme raises before its gradient
collective spreads a NaN (DDP's all-reduce, ZeRO's reduce-scatter, the MoE
trainer's reductions): a weight this rank holds, else the first non-finite
activation, else the aux losses, else the gradient.

Limits: only the last call of each module is kept, so a NaN from an earlier
micro-batch (or an earlier accumulated backward) is not found here; the report
then names the gradient, as before.
"""
import itertools

from minimegatron.backend import xp
from minimegatron.autodiff.guards import NonFiniteError, check_named, where
from minimegatron.autodiff.tensor import unwrap


class ActivationWatch:
    """``ActivationWatch(module)`` watches ``module`` and every sub-Module it registers."""

    def __init__(self, module):
        self.names, self.records, self._tick = {}, {}, itertools.count()
        for name, m in module.named_modules():
            self.names[id(m)] = name
            object.__setattr__(m, "_watch", self)          # Module.__call__ reports here
        for chunk in getattr(module, "chunks", ()):        # a ChunkedStage's model chunks
            object.__setattr__(chunk, "_watch", self)

    def call(self, module, args, kwargs):
        """Module.__call__ for a watched module: forward, keeping its first input and output."""
        start = next(self._tick)
        out = module.forward(*args, **kwargs)
        self.records[id(module)] = (start, args[0] if args else None,
                                    next(self._tick), out, module)
        return out

    def clear(self):
        """Let the kept arrays go (after each synced step)."""
        self.records.clear()

    def first_non_finite(self):
        """"output of 'name'" / "input of ..." of the first non-finite activation, or None."""
        events = []
        for start, inp, finish, out, module in self.records.values():
            events += [(start, "input", inp, module), (finish, "output", out, module)]
        for _, kind, value, module in sorted(events, key=lambda e: e[0]):
            if not _finite(value):
                return self._describe(kind, module)
        return None

    def _describe(self, kind, module):
        origin = getattr(module, "input_origin", None)
        if kind == "input" and origin:
            return f"input of {origin}"
        name = self.names.get(id(module)) or type(module).__name__
        return f"{kind} of {name!r}"


def _finite(value):
    """False only for a floating array (or a Tensor, or a tuple of them) holding a NaN/inf."""
    if isinstance(value, (tuple, list)):
        return all(_finite(v) for v in value)
    data = unwrap(value)
    if not hasattr(data, "dtype") or not xp.issubdtype(data.dtype, xp.floating):
        return True
    return bool(xp.isfinite(data).all())


def name_non_finite(weights, grads, watch=None, note="", overflow_ok=False, aux_losses=()):
    """Raise NonFiniteError at the first place a NaN/inf shows on this rank: a weight it
    holds (``weights``: [(name, array)]), else the first non-finite module input or output
    (``watch``), else an aux loss (``aux_losses``: [(MoE layer name, value)]), else a
    gradient (``grads``: [(name, array)]). ``overflow_ok`` (float16 with a loss scaler): a
    non-finite gradient with finite weights is an overflow, the scaler's to skip."""
    check_named("weight", weights, note=note)
    if overflow_ok:
        return
    first = watch.first_non_finite() if watch is not None else None
    if first is not None:
        raise NonFiniteError(f"non-finite activation: {first} (the first module input or "
                             f"output that is not finite; every weight finite) {where()}{note}")
    check_named("aux loss of", [(name, xp.asarray(value)) for name, value in aux_losses],
                note=note)
    check_named("gradient", grads, note=note)
