"""ZeRO stage 3, FSDP-style: the weights too are sharded over dp, gathered per layer.

Idea (Rajbhandari et al. 2020; PyTorch's FullyShardedDataParallel): on top of
the optimizer state and the gradients (zero.py, stages 1-2), each rank keeps
only its slice of the weights. ``Zero3(model, group, optimizer)`` replaces
every unit (a module that owns parameters: Linear, LayerNorm, Embedding) by a
ShardedUnit holding its flat shard; the model's parameters are then the shards.

    forward   all-gather the unit's W, run it, free W
    backward  all-gather W again, re-run the unit's forward, backprop,
              reduce-scatter(dW, mean) -> own slice, free W and dW
    step      update each owned slice: no communication
                                                        bytes/rank 3(N-1)/N * Pb
(b bytes per value; ring model, trace.py: 1.5x DDP's 2(N-1)/N * Pb.) Model
state per rank, one precision of b bytes: 4bP/N (tools/memory.py: 16P/N in
mixed precision); tools/memory_measure.py measures it, and the largest unit's
gathered weights as ``peak_gathered_bytes``.

Non-finite numbers (the optimizer's ``check_finite``): a unit's NaN/inf gradient,
before its reduce-scatter spreads it, raises NonFiniteError naming a weight of this
rank's shards, else the first non-finite activation, else the gradient
(nn/watch.py's name_non_finite, as DDP does).

Why backward re-runs a unit's forward: PyTorch frees a gathered weight's
storage in place, and the saved tensors see it refilled before backward. A
NumPy array the autograd graph still references cannot be freed, so here the
unit's forward runs under no_grad (nothing saved but its input) and backward
recomputes it with the weights gathered again. The extra cost is one more
forward of the units (not of attention, which owns no parameters).

    minimegatron run -n 8 tutorials/06_zero.py
"""
from minimegatron import comm
from minimegatron.comm import trace
from minimegatron.backend import xp
from minimegatron.autodiff.function import Function, enable_grad, no_grad
from minimegatron.autodiff.guards import all_finite, check_named
from minimegatron.nn.module import Module, ModuleList, Parameter
from minimegatron.nn.watch import ActivationWatch, name_non_finite
from minimegatron.parallel.data_parallel.zero import (FlatShard, ShardedOptimizer,
                                                      agree_on_layout, check_rule,
                                                      names_non_finite)
from minimegatron.parallel.split import unflatten
from minimegatron.autodiff.tensor import Tensor, unwrap


class GatheredForward(Function):
    """forward: all-gather unit W, y = unit(x), free W | backward: all-gather W, recompute,
    backprop, reduce-scatter dW (mean over dp), free   (ZeRO-3's gather/scatter pair)

    The first argument is the unit's shard Parameter: its gradient is this
    rank's averaged slice of dW, so the shard is the leaf the optimizer updates.
    """

    @staticmethod
    def forward(ctx, shard, *args, unit, kwargs):
        ctx.unit, ctx.args, ctx.kwargs = unit, args, kwargs
        unit.gather("forward")
        with no_grad():
            out = unit.run(*[as_input(a, False) for a in args], **kwargs)
        unit.free()
        ctx.multi = isinstance(out, tuple)
        return tuple(unwrap(o) for o in out) if ctx.multi else unwrap(out)

    @staticmethod
    def backward(ctx, *grad_outs):
        unit = ctx.unit
        unit.gather("backward")
        needs = ctx.needs_input_grad[1:]
        inputs = [as_input(a, need) for a, need in zip(ctx.args, needs)]
        for p in unit.flat.params:
            p.grad = None
        with enable_grad():
            out = unit.run(*inputs, **ctx.kwargs)                # recompute with W gathered
        if ctx.multi:
            total = sum((o * Tensor(g)).sum() for o, g in zip(out, grad_outs))
            total.backward()
        else:
            out.backward(grad_outs[0])
        if unit.report is not None and not all_finite(
                [p.grad for p in unit.flat.params if p.grad is not None]):
            unit.report(unit)                                    # before the reduce-scatter
        with trace.label(f"zero3.{unit.name}.grads"):
            grad_shard = comm.reduce_scatter(unit.flat.flat_grads(), unit.flat.group,
                                             op="mean")          # (P_pad/N,)
        for p in unit.flat.params:
            p.grad = None
        unit.free()
        input_grads = tuple(t.grad if need else None for t, need in zip(inputs, needs))
        return (grad_shard,) + input_grads


def as_input(a, needs_grad):
    """A module input rebuilt from a raw array: a Tensor for float arrays, else unchanged."""
    if needs_grad:
        return Tensor(a, requires_grad=True)
    return Tensor(a) if getattr(a, "dtype", None) is not None and a.dtype.kind == "f" else a


class GatheredBytes:
    """Bytes of weights gathered right now, and the most at any moment."""

    def __init__(self):
        self.now, self.peak = 0, 0

    def add(self, nbytes):
        self.now += nbytes
        self.peak = max(self.peak, self.now)


class ShardedUnit(Module):
    """A unit with its weights sharded: owns ``shard``, this rank's (P_pad/N,) slice."""

    def __init__(self, name, module, group, gathered):
        super().__init__()
        self.name, self.gathered_bytes, self.report = name, gathered, None
        self.keys = [f"{name}.{key}" for key in module._parameters]     # full-model names
        self.flat = FlatShard(list(module._parameters.values()), group)
        self.run = module.forward                                # the unit's own forward
        full = self.flat.flat_weights()
        with trace.label("zero.init"):
            comm.broadcast(full, group, 0)                       # every rank = rank 0's
        self.shard = Parameter(self.flat.own(full).copy())       # (P_pad/N,), persistent
        self.gathered = False                                    # not counted as gathered
        self.free()

    def forward(self, *args, **kwargs):
        return GatheredForward.apply(self.shard, *args, unit=self, kwargs=kwargs)

    def gather(self, when):
        with trace.label(f"zero3.{self.name}.{when}"):
            full = comm.all_gather(self.shard.data, self.flat.group)  # (P_pad,)
        self.flat.write_weights(full)
        self.gathered = True
        self.gathered_bytes.add(full.nbytes)

    def free(self):
        """Drop the gathered weights: each parameter becomes a 0-size array."""
        if self.gathered:
            self.gathered_bytes.add(-self.flat.padded * xp.dtype(self.flat.dtype).itemsize)
        self.gathered = False
        for p in self.flat.params:
            p.data = xp.empty((0,), self.flat.dtype)


def replace_module(model, name, unit):
    """Put ``unit`` where the module called ``name`` (dotted) sits in ``model``."""
    *path, last = name.split(".")
    parent = model
    for part in path:
        parent = parent._modules[part]
    setattr(parent, last, unit)
    if isinstance(parent, ModuleList):
        parent._list[int(last)] = unit


class Zero3(Module):
    """``Zero3(model, group, optimizer=AdamW(model.parameters(), ...))``: ZeRO stage 3.

    Wraps ``model`` in place (its units become ShardedUnits). ``optimizer``
    lends its update rule; its own state stays empty. A step:
    ``loss.backward(); zero.step(); zero.zero_grad()``.
    """

    def __init__(self, model, group, optimizer):
        check_rule(optimizer)
        owners = [(name, m) for name, m in model.named_modules() if m._parameters]
        if owners and owners[0][0] == "":
            raise ValueError("Zero3 shards a model's layers: its root module must own no "
                             "parameters (put them in a submodule)")
        super().__init__()
        agree_on_layout(group, 3, [list(m._parameters.values()) for _, m in owners], optimizer)
        self.group, self.optimizer, self.step_count = group, optimizer, 0
        self.gathered = GatheredBytes()
        self.units = [ShardedUnit(name, m, group, self.gathered) for name, m in owners]
        for (name, _), unit in zip(owners, self.units):
            replace_module(model, name, unit)
        self.model = model                                       # its parameters: the shards
        self.watch = ActivationWatch(model)                      # names a NaN's origin
        for unit in self.units:
            unit.report = self.name_non_finite

    def name_non_finite(self, unit):
        """A NaN/inf gradient of ``unit`` before its reduce-scatter (the optimizer's
        ``check_finite``): NonFiniteError naming a weight in THIS rank's shards (the rank
        that holds it), else the first non-finite activation, else the gradient."""
        if not names_non_finite(self.optimizer):
            return
        note = f", before ZeRO-3's reduce-scatter over group {self.group.name!r}"
        for u in self.units:                  # the rank whose shard holds it names the weight
            check_named("weight", u.flat.owned_parts(u.keys, u.shard.data),
                        note=" (in its ZeRO-3 shard)" + note)
        name_non_finite([], [(k, p.grad) for k, p in zip(unit.keys, unit.flat.params)
                             if p.grad is not None], self.watch, note,
                        overflow_ok=xp.dtype(unit.flat.dtype) == xp.float16)

    def forward(self, *args, **kwargs):
        return self.model(*args, **kwargs)

    @property
    def peak_gathered_bytes(self):
        return self.gathered.peak

    def reduce_gradients(self):
        """Nothing left to do: backward reduce-scattered each unit's dW (GatheredForward)."""

    def step(self):
        """Update this rank's slice of every unit with the optimizer's rule: no communication."""
        self.step_count += 1
        self.watch.clear()                                       # the step's activations go
        grads = [xp.zeros_like(u.shard.data) if u.shard.grad is None else u.shard.grad
                 for u in self.units]
        self.optimizer.check([u.shard.data for u in self.units], grads, self.step_count)
        with no_grad(), trace.span("optimizer"):
            for unit, grad in zip(self.units, grads):
                self.optimizer.update(unit.shard.data, grad, unit.flat.state, self.step_count)

    # ---- what each rank holds --------------------------------------------------------------
    def local_shards(self):
        """[(FlatShard, weight slice, grad slice or None)] this rank owns, one per unit."""
        return [(u.flat, u.shard.data, u.shard.grad) for u in self.units]

    def held_arrays(self):
        """{"weights", "grads", "optimizer": [arrays]}: the persistent model state of this rank."""
        return {"weights": [u.shard.data for u in self.units],
                "grads": [u.shard.grad for u in self.units],
                "optimizer": [v for u in self.units for v in u.flat.state.values()]}

    def full_weights(self):
        """{id(param): array}: every unit's weights all-gathered (for checks)."""
        out = {}
        for unit in self.units:
            full = comm.all_gather(unit.shard.data, self.group)[:unit.flat.numel]
            for p, value in zip(unit.flat.params, unflatten(full, unit.flat.shapes)):
                out[id(p)] = value
        return out


def zero_optimizer(params, group, stage, optimizer):
    """ZeRO at ``stage``: ShardedOptimizer (1, 2; a Module or Parameters) or Zero3 (3).

    Stage 3 needs the Module: it gathers weights per layer.
    """
    if stage not in (1, 2, 3):
        raise ValueError(f"ZeRO stage must be 1, 2 or 3, got {stage!r} (stage 0 is plain "
                         "DistributedDataParallel)")
    if stage < 3:
        return ShardedOptimizer(params, group, stage, optimizer)
    if not isinstance(params, Module):
        raise ValueError("ZeRO stage 3 needs the Module (it gathers weights per layer)")
    return Zero3(params, group, optimizer)
