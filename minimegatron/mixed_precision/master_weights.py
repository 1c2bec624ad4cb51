"""Float32 master weights: the optimizer steps float32 copies, the model runs in half.

A half-precision weight cannot take a small update: in float16 1 + 1e-4 == 1
(eps 2^-10), so lr x grad would vanish. Mixed precision (Micikevicius et al.
2018) keeps, for every half weight w16, a float32 master w32 and the optimizer
state in float32, and per step:

    found_inf over the group      -> skip (loss_scaler.py): nothing below runs
    g32 = float32(g16) / S        unscale (S: the loss scale backward started from)
    w32, m, v = rule(w32, g32)    the wrapped SGD / AdamW ``update``, unchanged
    w16 = half(w32)               the model's copy, rounded

Bytes per parameter (ZeRO paper, K = 12): w16 2 + g16 2 + (w32 4 + m 4 + v 4)
= 16, in float16 and in bf16 alike. A bf16 model needs no loss scale
(loss_scaler.NoLossScale: S = 1, no found-inf all-reduce); everything else here is
the same, the masters and m, v float32. ``tools/memory_measure.measure`` counts
them from these arrays.

``MixedPrecisionOptimizer(AdamW(params, ...), group)`` is an Optimizer
(optim/optimizers.py): ``step()`` runs ``check`` (the found-inf all-reduce) then
``update`` per parameter; ZeRO (data_parallel/zero.py, zero3.py) calls the
same ``check`` and ``update`` on its flat shards, so the masters and m, v it
keeps are float32 slices of 1/N. A skipped step does not count: AdamW's t
counts the steps taken (``steps_taken``), as in Megatron.

Non-finite weights. An inf/NaN gradient is an overflow (skip, halve S); an
inf/NaN weight or master is not: every step would overflow and be skipped, the
scale would halve to its floor and the loss print NaN. So ``check`` first tests
the half weights and ``update`` each master, and raises guards.NonFiniteError
naming the parameter (``names``: the model's names, e.g. from
``named_parameters()``; else its index and shape; a ZeRO flat shard by its
index) and the rank. ``skipped_steps`` counts the skips (the scaler's count).
"""
import numpy

from minimegatron.autodiff.function import no_grad
from minimegatron.autodiff.guards import all_finite, check_named
from minimegatron.autodiff.cast import is_bf16
from minimegatron.mixed_precision.loss_scaler import DynamicLossScaler, NoLossScale
from minimegatron.optim import Optimizer


class MixedPrecisionOptimizer(Optimizer):
    """Wraps ``optimizer`` (SGD / AdamW over half Parameters): float32 masters, loss scale.

    ``group``: every rank holding a gradient of this model (the found-inf MAX
    all-reduce runs over it; None: one process). ``scaler``: a DynamicLossScaler
    (the default for float16) or NoLossScale (the default for bf16).
    """

    def __init__(self, optimizer, group=None, scaler=None, names=None):
        if not hasattr(optimizer, "update"):
            raise ValueError("MixedPrecisionOptimizer wraps an Optimizer (SGD, AdamW)")
        self.inner = optimizer
        super().__init__(optimizer.params, optimizer.lr, check_finite=False)
        if scaler is None:                  # bf16: float32's range, nothing to scale
            half = [p.data.dtype for p in optimizer.params][:1]
            scaler = NoLossScale() if half and is_bf16(half[0]) else DynamicLossScaler()
        self.group, self.scaler = group, scaler
        self.steps_taken, self.skipped, self._unscale = 0, False, 1.0
        names = list(names) if names is not None else [
            f"parameter {i} {tuple(p.shape)}" for i, p in enumerate(self.params)]
        if len(names) != len(self.params):
            raise ValueError(f"MixedPrecisionOptimizer: {len(names)} names for "
                             f"{len(self.params)} parameters")
        self.names = names

    @property
    def skipped_steps(self):
        """How many steps were skipped (overflows) so far."""
        return self.scaler.skipped_steps

    def _name(self, array, index):
        """The parameter whose data is ``array``, else ZeRO's flat shard ``index``."""
        for name, p in zip(self.names, self.params):
            if p.data is array:
                return name
        return f"flat shard {index}"

    @property
    def lr(self):
        return self.inner.lr

    @lr.setter
    def lr(self, value):
        if hasattr(self, "inner"):
            self.inner.lr = value

    @property
    def loss_scale(self):
        """S: start backward from S x loss (``scale_loss``)."""
        return self.scaler.scale

    def scale_loss(self, loss):
        """S x loss, in float32 (backward from it; the loss itself stays the reported one)."""
        return loss * self.scaler.scale

    def check(self, params, grads, step):
        """The found-inf all-reduce and the scale update; decides whether ``update`` runs."""
        if not all_finite(params):                      # not an overflow: a broken weight
            check_named("weight", [(self._name(w, i), w) for i, w in enumerate(params)], step)
        self._unscale = 1.0 / self.scaler.scale       # the S this backward started from
        self.skipped = self.scaler.update(grads, self.group)
        if not self.skipped:
            self.steps_taken += 1

    def update(self, param, grad, state, step):
        """Step the float32 master of ``param`` (a half array, changed in place)."""
        if self.skipped:
            return
        if "master" not in state:
            state["master"] = param.astype(numpy.float32)              # exact copy
        if not all_finite([state["master"]]):
            check_named("master weight", [(self._name(param, 0), state["master"])], step)
        grad32 = grad.astype(numpy.float32) * self._unscale
        with no_grad():
            self.inner.update(state["master"], grad32, state, self.steps_taken)
        param[...] = state["master"].astype(param.dtype)

    def step(self):
        """One step (or a skip, on every rank of the group alike); True if it was taken."""
        super().step()
        return not self.skipped
