"""Dynamic loss scaling: scale the loss up so small gradients survive float16, and back off.

Why. float16 holds numbers down to 2^-24 (6e-8); a gradient below that
becomes 0. So backward starts from S x loss instead of the loss (S = 2^16 at
first): every gradient is S times larger and lands in float16's range. The
optimizer divides by S again (in float32, master_weights.py).

Too large an S overflows: a gradient becomes inf (or NaN). Then the step is
useless on every rank, so (Megatron's DynamicGradScaler, DeepSpeed's
DynamicLossScaler):

    found_inf = MAX over every rank that holds a gradient of [any grad not finite]
    found_inf:  skip the step on EVERY rank, S = max(S / 2, min_scale), clean = 0
    otherwise:  take the step; clean += 1; after growth_interval clean steps S = 2 S

The MAX all-reduce (one float, buffer API, traced as "mixed.found_inf") is
what keeps the ranks in step: under ZeRO or tensor/pipeline parallelism each
rank holds different gradients, and a rank that skipped while another stepped
would leave the replicas (or the shards of one model) out of sync forever.

    scaler = DynamicLossScaler(growth_interval=1000)     # Megatron's default
    (loss * scaler.scale).backward()
    skipped = scaler.update(grads, group)                # the rule above

At the floor. An overflow at S = min_scale cannot be cured by a smaller S: the
gradients are not finite at any scale (a NaN weight, a diverged model). Skipping
on would print a NaN loss step after step and exit 0, so that skip raises
guards.NonFiniteError on every rank alike (found_inf is the same everywhere);
``at_min_scale="warn"`` asks for a warning each time instead. ``skipped_steps``
counts the steps skipped so far (the training output shows it).

bf16 needs no scale (``NoLossScale``): its exponent has float32's 8 bits, so a gradient
underflows only below 2^-133 (float16: 2^-24), and none overflows before float32 would.
S stays 1, nothing is all-reduced, nothing is skipped; a non-finite gradient is then not
an overflow to back off from but a broken run, and raises NonFiniteError.
"""
import collections
import warnings

from minimegatron import comm
from minimegatron.comm import trace
from minimegatron.backend import xp
from minimegatron.autodiff.guards import NonFiniteError, all_finite, where


def _check_scale(name, value, low):
    if not (isinstance(value, (int, float)) and value >= low and value < float("inf")):
        raise ValueError(f"{name} must be a finite number >= {low}, got {value!r}")
    return value


class DynamicLossScaler:
    """S starts at ``init_scale``; halves on an overflow, doubles after ``growth_interval``."""

    HISTORY_LEN = 10_000

    def __init__(self, init_scale=2.0 ** 16, growth_interval=1000, backoff_factor=0.5,
                 growth_factor=2.0, min_scale=1.0, at_min_scale="error"):
        self.scale = float(_check_scale("init_scale", init_scale, min_scale))
        if not isinstance(growth_interval, int) or growth_interval < 1:
            raise ValueError(f"growth_interval must be an int >= 1, got {growth_interval!r}")
        if not 0.0 < backoff_factor < 1.0:
            raise ValueError(f"backoff_factor must be in (0, 1), got {backoff_factor!r}")
        self.growth_interval, self.backoff_factor = growth_interval, backoff_factor
        self.growth_factor = _check_scale("growth_factor", growth_factor, 1.0)
        self.min_scale = _check_scale("min_scale", min_scale, 0.0)
        if at_min_scale not in ("error", "warn"):
            raise ValueError(f"at_min_scale must be 'error' or 'warn', got {at_min_scale!r}")
        self.at_min_scale = at_min_scale
        self.clean_steps = 0          # steps since the last overflow or growth
        self.skipped_steps = 0        # overflow steps skipped so far
        # (scale used, skipped) per update, for plots: the last HISTORY_LEN only, so a
        # run of a million steps does not keep a million tuples.
        self.history = collections.deque(maxlen=self.HISTORY_LEN)

    def update(self, grads, group):
        """True if this step must be skipped (an inf/NaN on ANY rank of ``group``).

        ``grads``: this rank's gradients (scaled, any dtype). ``group``: every rank
        that holds a gradient of the model (None: this process alone). Adjusts
        ``scale`` for the next step by the rule in the module docstring.
        """
        used = self.scale
        # EXERCISE 7.1 begin
        local = xp.asarray([0.0 if all_finite(grads) else 1.0])
        if group is not None:
            with trace.label("mixed.found_inf"):
                local = comm.all_reduce(local, group, op="max")       # MAX over the ranks
        found_inf = bool(local[0] > 0)
        if found_inf:
            self.scale = max(self.scale * self.backoff_factor, self.min_scale)
            self.clean_steps = 0
        else:
            self.clean_steps += 1
            if self.clean_steps == self.growth_interval:
                self.scale *= self.growth_factor
                self.clean_steps = 0
        # EXERCISE 7.1 end
        self.history.append((used, found_inf))
        if found_inf:
            self.skipped_steps += 1
            if used <= self.min_scale:
                self._at_floor(used)
        return found_inf

    def _at_floor(self, used):
        text = (f"an overflow at the minimum loss scale {used:g} {where()} "
                f"({self.skipped_steps} steps skipped so far): the gradients are not finite "
                "at any scale (a NaN/inf weight or input, a diverged model)")
        if self.at_min_scale == "warn":
            warnings.warn(text + "; skipped (at_min_scale='warn')", RuntimeWarning,
                          stacklevel=3)
            return
        raise NonFiniteError(text + "; pass at_min_scale='warn' to skip on")

    def state_dict(self):
        return {"scale": self.scale, "clean_steps": self.clean_steps,
                "skipped_steps": self.skipped_steps}

    def load_state_dict(self, saved):
        self.scale, self.clean_steps = float(saved["scale"]), int(saved["clean_steps"])
        self.skipped_steps = int(saved.get("skipped_steps", 0))


class NoLossScale:
    """bf16's scaler: S = 1 always; a non-finite gradient raises (no overflow to skip)."""

    scale, skipped_steps, min_scale = 1.0, 0, 1.0

    def __init__(self):
        self.history = collections.deque(maxlen=DynamicLossScaler.HISTORY_LEN)

    def update(self, grads, group):
        """False (never skip), with no collective; NonFiniteError on an inf/NaN gradient."""
        if not all_finite(grads):
            raise NonFiniteError(f"a non-finite bf16 gradient {where()}: bf16 has float32's "
                                 "range, so this is a broken run (a NaN/inf weight or input, "
                                 "a diverged model), not an overflow a loss scale would cure")
        self.history.append((1.0, False))
        return False

    def state_dict(self):
        return {"scale": 1.0, "clean_steps": 0, "skipped_steps": 0}

    def load_state_dict(self, saved):
        pass
