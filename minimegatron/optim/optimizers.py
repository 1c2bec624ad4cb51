"""Optimizers with PyTorch's update rules, written on raw arrays.

Each optimizer's math lives in ``update(param, grad, state, step)``, which
changes ``param`` in place. ``step()`` applies it to every parameter that has
a gradient. ZeRO (parallel/data_parallel/zero.py) calls the same ``update`` on the flat
1/N shard a rank owns, so the sharded and unsharded updates share one formula.

SGD (momentum mu, weight decay wd, lr):
    g = grad + wd * p;   b = g (first step) or mu * b + g;   p -= lr * b
AdamW (decoupled weight decay):
    p *= 1 - lr * wd
    m = b1 m + (1 - b1) g;   v = b2 v + (1 - b2) g^2
    p -= lr * (m / (1 - b1^t)) / (sqrt(v / (1 - b2^t)) + eps)

Guards. Hyper-parameters are checked when set (one-line ValueError): lr finite
and >= 0 (0 for a warm-up's first step; a scheduler's later ``opt.lr = x`` is
checked too), momentum and betas in [0, 1), eps finite and > 0, weight_decay
finite and >= 0. Before each ``step()`` every gradient and weight is checked:
a NaN or inf raises guards.NonFiniteError naming the parameter (``names``: a trainer
sets the model's names, else "parameter i (shape)"; a weight before a gradient, since a
NaN weight makes NaN gradients), the step and the rank, before any weight changes.
``check_finite=False`` opts out (then NaN trains on).

Flat mode (``flat=True``; minimegatron/optim/flat.py). At the first ``step()`` the
parameters of each dtype are laid out in ONE weight buffer (every ``p.data``
becomes a view into it), their gradients in one gradient buffer and the state
(m, v, momentum) in one buffer per name, all of the same layout; every
``state[i][name]`` is a view, so state_dict, load_state_dict and checkpoints
work unchanged. Then ``update`` runs ONCE per dtype on the whole buffers (the
same rule ZeRO applies to its flat shard) and the finiteness check is one
test per buffer. It waits for the first step, not the constructor, because
ZeRO and MixedPrecisionOptimizer only borrow an optimizer's ``update`` (a
buffer would be wasted memory) and DDP may be built after the optimizer.
Cases, each checked by tests/test_flat_params.py:
- every parameter's gradient and weight are its views: one update per dtype
  (NumPy: in cache-sized pieces, ``_update_flat``);
- a gradient that is not its view (set by hand, or in DDP's own buffer) is
  copied into it first; a ``p.data`` someone reassigned (same shape and dtype)
  is copied in and the result copied back, so it stays the array they set;
- DDP built before the first step (before or after the optimizer): its
  gradient buffer is the layout, no gradient is copied; DDP built after a
  step: the next step lays the buffers out again on DDP's;
- a parameter without a gradient this step: the whole dtype group takes the
  per-parameter path (the reference), so that parameter stays untouched,
  weight decay included;
- ``state[i][name]`` replaced (a loaded checkpoint): copied into its view.
"""
import math

from minimegatron.backend import backend_name, get_backend, xp
from minimegatron.optim.flat import FlatGroup
from minimegatron.autodiff.function import no_grad
from minimegatron.autodiff.guards import all_finite, check_finite, check_named


FLAT = True         # the default of SGD(flat=) and AdamW(flat=): see docs/performance.md
CHUNK_BYTES = 2 ** 18   # the piece of a flat buffer NumPy updates at a time (_update_flat)


def _check(name, value, low, high=math.inf, low_open=False, high_open=True):
    """ValueError unless value is a finite real number in the interval [low, high)."""
    try:
        ok = math.isfinite(value) and (value > low if low_open else value >= low) and \
            (value < high if high_open else value <= high)
    except TypeError:
        ok = False
    if not ok:
        interval = f"{'(' if low_open else '['}{low}, {high}{')' if high_open else ']'}"
        raise ValueError(f"{name} must be a finite number in {interval}, got {value!r}")
    return value


class Optimizer:
    def __init__(self, params, lr, check_finite=True, flat=False):
        self.params = list(params)
        if not self.params:
            raise ValueError("the optimizer got an empty parameter list")
        if flat and len({id(p) for p in self.params}) != len(self.params):
            raise ValueError("flat=True: the optimizer got the same parameter twice")
        self.lr = lr
        self.check_finite = check_finite
        self.state = [dict() for _ in self.params]   # per parameter, e.g. {"m": .., "v": ..}
        self.step_count = 0
        self.flat = flat
        self.groups = None                   # flat mode: one FlatGroup per dtype, at step 1
        self.names = [f"parameter {i} {tuple(p.shape)}" for i, p in enumerate(self.params)]

    @property
    def lr(self):
        return self._lr

    @lr.setter
    def lr(self, value):
        self._lr = _check("lr", value, 0.0)

    def update(self, param, grad, state, step):
        raise NotImplementedError

    def state_names(self):
        """The arrays ``update`` keeps per weight (flat mode lays each out in one buffer)."""
        return ()

    def check(self, params, grads, step):
        """NonFiniteError if a gradient or weight holds NaN/inf (unless check_finite=False)."""
        if self.check_finite and not (all_finite(grads) and all_finite(params)):
            named = list(zip(self.names, self.params))      # this optimizer's own parameters
            check_named("weight", [(n, p.data) for n, p in named], step)
            check_named("gradient", [(n, p.grad) for n, p in named if p.grad is not None],
                        step)
            check_finite("gradient", grads, step)   # arrays that are not its parameters'
            check_finite("weight", params, step)    # (a ZeRO shard): unnamed

    def step(self):
        self.step_count += 1
        if self.flat:
            return self._flat_step()
        live = [p for p in self.params if p.grad is not None]
        self.check([p.data for p in live], [p.grad for p in live], self.step_count)
        with no_grad():
            for p, state in zip(self.params, self.state):
                if p.grad is not None:
                    self.update(p.data, p.grad, state, self.step_count)

    def _flat_step(self):
        """``update`` once on each dtype's whole buffers (the cases: module docstring)."""
        if self.groups is None:
            by_dtype = {}
            for item in enumerate(self.params):
                by_dtype.setdefault(str(item[1].dtype), []).append(item)
            self.groups = [FlatGroup(items, self.state, self.state_names())
                           for items in by_dtype.values()]
        self.groups = [FlatGroup(g.items(), self.state, self.state_names())
                       if g.regathered() else g for g in self.groups]
        whole, weights, grads, single = [], [], [], []
        for group in self.groups:
            group.sync_state(self.state)
            if group.gather():
                whole.append(group)
                weights.append(group.weights.data)
                grads.append(group.grads.data)
            else:
                single += [(p, self.state[i]) for i, p in group.items() if p.grad is not None]
        self.check(weights + [p.data for p, _ in single], grads + [p.grad for p, _ in single],
                   self.step_count)
        with no_grad():
            for group in whole:                           # every parameter of this dtype at once
                self._update_flat(group)
                group.scatter()
            for p, state in single:                       # the reference, parameter by parameter
                self.update(p.data, p.grad, state, self.step_count)

    def _update_flat(self, group):
        """``update`` on a group's whole buffers (the rule is elementwise, so any split works).

        CuPy: one call, one kernel. NumPy: one call per CHUNK_BYTES piece. The
        rule makes about ten passes over its arrays; over a buffer larger than
        the cache each pass would stream from memory, and a piece keeps them
        in cache: 2x faster on a 13 MB buffer (docs/performance.md).
        """
        data = group.weights.data
        size = data.size if backend_name() == "cupy" else max(1, CHUNK_BYTES // data.itemsize)
        for start in range(0, data.size, size):
            piece = slice(start, start + size)
            self.update(data[piece], group.grads.data[piece],
                        {name: flat[piece] for name, flat in group.state.items()},
                        self.step_count)

    def zero_grad(self):
        for p in self.params:
            p.grad = None

    def state_dict(self):
        """{"step": t, "state": [{name: array}, ...]} in parameter order."""
        return {"step": self.step_count,
                "state": [{k: v.copy() for k, v in s.items()} for s in self.state]}

    def load_state_dict(self, saved):
        if len(saved["state"]) != len(self.params):
            raise ValueError(f"optimizer state for {len(saved['state'])} parameters, "
                             f"this optimizer has {len(self.params)}")
        self.step_count = int(saved["step"])
        self.state = [{k: xp.asarray(v) for k, v in s.items()} for s in saved["state"]]


class SGD(Optimizer):
    """p -= lr * b,  b = mu * b + (grad + wd * p)  (b = g on the first step)"""

    def __init__(self, params, lr=0.01, momentum=0.0, weight_decay=0.0, check_finite=True,
                 fused=True, flat=FLAT):
        super().__init__(params, lr, check_finite, flat)
        self.fused = fused          # sgd_fused (the same math, in place) or the lines below
        self.momentum = _check("momentum", momentum, 0.0, 1.0)
        self.weight_decay = _check("weight_decay", weight_decay, 0.0)

    def state_names(self):
        return ("momentum",) if self.momentum else ()

    def update(self, param, grad, state, step):
        if self.fused:
            if self.momentum and "momentum" not in state:
                state["momentum"] = xp.zeros_like(param)    # mu * 0 + g = g: the first step
            sgd_fused(param, grad, state.get("momentum"), self.lr, self.weight_decay,
                      self.momentum)
            return
        g = grad + self.weight_decay * param if self.weight_decay else grad
        if self.momentum:
            if "momentum" in state:
                b = state["momentum"]
                b[...] = self.momentum * b + g              # in place: flat mode holds a view
            else:
                state["momentum"] = g.copy()
            g = state["momentum"]
        param -= self.lr * g


class AdamW(Optimizer):
    """Adam with decoupled weight decay (Loshchilov and Hutter), as torch.optim.AdamW."""

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.01,
                 check_finite=True, fused=True, flat=FLAT):
        super().__init__(params, lr, check_finite, flat)
        self.fused = fused          # adamw_fused (the same math, in place) or the lines below
        if not isinstance(betas, (tuple, list)) or len(betas) != 2:
            raise ValueError(f"betas must be a pair (beta1, beta2), got {betas!r}")
        self.betas = tuple(_check(f"betas[{i}]", b, 0.0, 1.0) for i, b in enumerate(betas))
        self.eps = _check("eps", eps, 0.0, low_open=True)
        self.weight_decay = _check("weight_decay", weight_decay, 0.0)

    def state_names(self):
        return ("m", "v")

    def update(self, param, grad, state, step):
        b1, b2 = self.betas
        if "m" not in state:
            state["m"], state["v"] = xp.zeros_like(param), xp.zeros_like(param)
        if self.fused:
            adamw_fused(param, grad, state["m"], state["v"], self.lr, self.weight_decay,
                        self.betas, self.eps, step)
            return
        param *= 1.0 - self.lr * self.weight_decay
        m, v = state["m"], state["v"]                       # in place: flat mode holds views
        m[...] = b1 * m + (1.0 - b1) * grad
        v[...] = b2 * v + (1.0 - b2) * grad * grad
        m_hat = m / (1.0 - b1 ** step)
        v_hat = v / (1.0 - b2 ** step)
        param -= self.lr * m_hat / (xp.sqrt(v_hat) + self.eps)


_ADAMW_KERNEL, _SGD_KERNELS = [], {}


def sgd_fused(param, grad, momentum_buf, lr, weight_decay, momentum):
    """SGD.update's math on param (and momentum_buf, unless None) in place.

    On CuPy one elementwise kernel (instead of up to five); on NumPy the same
    steps with ``out=`` into one scratch array: bitwise the readable update.
    """
    if backend_name() == "cupy":
        with_b = momentum_buf is not None
        if with_b not in _SGD_KERNELS:
            body = ("T d = g + wd * p;" + (" b = mu * b + d; d = b;" if with_b else "") +
                    " p = p - lr * d;")
            _SGD_KERNELS[with_b] = get_backend().ElementwiseKernel(
                "T g, float64 lr, float64 wd, float64 mu", "T p" + (", T b" if with_b else ""),
                body, "mm_sgd" + ("_momentum" if with_b else ""))
        args = (param, momentum_buf) if with_b else (param,)
        _SGD_KERNELS[with_b](grad, lr, weight_decay, momentum, *args)
        return
    g = grad
    if weight_decay:
        g = xp.multiply(param, weight_decay)                 # wd * p
        g += grad                                            # g = grad + wd * p
    if momentum_buf is not None:
        momentum_buf *= momentum
        momentum_buf += g                                    # b = mu * b + g
        g = momentum_buf
    owned = g is not grad and g is not momentum_buf          # our temporary: reuse it
    scratch = xp.multiply(g, lr, out=g if owned else None)
    param -= scratch                                         # p -= lr * b


def adamw_fused(param, grad, m, v, lr, weight_decay, betas, eps, step):
    """AdamW.update's math on param, m and v in place, without temporaries per line.

    On CuPy it is one elementwise kernel per parameter (instead of about ten);
    on NumPy the same steps with ``out=``, reusing one scratch array.
    tests/test_fused.py checks it against the readable update.
    """
    b1, b2 = betas
    step_size = lr / (1.0 - b1 ** step)               # lr / (1 - b1^t), applied to m
    root_bc2 = math.sqrt(1.0 - b2 ** step)            # sqrt(v_hat) = sqrt(v) / root_bc2
    if backend_name() == "cupy":
        if not _ADAMW_KERNEL:
            _ADAMW_KERNEL.append(get_backend().ElementwiseKernel(
                "T g, float64 decay, float64 b1, float64 b2, float64 step_size, "
                "float64 root_bc2, float64 eps", "T p, T m, T v", """
                p = p * decay;
                m = b1 * m + (1 - b1) * g;
                v = b2 * v + (1 - b2) * g * g;
                p = p - step_size * m / (sqrt(v) / root_bc2 + eps);""", "mm_adamw"))
        _ADAMW_KERNEL[0](grad, 1.0 - lr * weight_decay, b1, b2, step_size, root_bc2, eps,
                         param, m, v)
        return
    param *= 1.0 - lr * weight_decay
    m *= b1
    scratch = xp.multiply(grad, 1.0 - b1)
    m += scratch
    v *= b2
    xp.multiply(grad, grad, out=scratch)
    scratch *= 1.0 - b2
    v += scratch
    xp.sqrt(v, out=scratch)
    scratch *= 1.0 / root_bc2
    scratch += eps
    xp.divide(m, scratch, out=scratch)
    scratch *= step_size
    param -= scratch
