"""ZeRO: shard the optimizer state (stage 1), the gradients (2), the weights (3) over dp.

Idea (Rajbhandari et al. 2020): plain data parallelism keeps N identical copies
of weights W, gradients G and optimizer state S. The parameters are flattened
into one buffer of P values, padded to a multiple of N, and rank r OWNS the
slice [r P/N, (r+1) P/N). Each rank runs the optimizer's own rule,
``optimizer.update(flat_shard, grad_shard, state, step)``, on its slice only.

    stage 1  S sharded.  all-reduce(G, mean) -> full averaged G on every rank;
             update own slice; all-gather W.            bytes/rank 3(N-1)/N * Pb
    stage 2  + G sharded. reduce-scatter(G, mean) -> own slice of G only,
             p.grad freed; update; all-gather W.        bytes/rank 2(N-1)/N * Pb
    stage 3  + W sharded, per unit (a module that owns parameters: Linear,
             LayerNorm, Embedding). forward: all-gather the unit's W, run it,
             free W. backward: all-gather W again, re-run the unit's forward,
             backprop, reduce-scatter(dW, mean) -> own slice, free W and dW.
             The step needs no communication.           bytes/rank 3(N-1)/N * Pb
(b bytes per value; ring model, trace.py. DDP moves 2(N-1)/N * Pb, so stage 3
moves 1.5x DDP. Stage 1 here keeps the full averaged gradient, as its memory
formula counts it, so it all-reduces; the paper's variant reduce-scatters.)
At construction the dp ranks agree on the stage and the flat layout
(``comm_check.agree``: one int64 per rank) before the weights' broadcast.

Model state per rank, P parameters (tools/memory.py, mixed precision Adam):
baseline 16P; stage 1 4P + 12P/N; stage 2 2P + 14P/N; stage 3 16P/N. In one
precision of b bytes (our float64 code, b = 8): 4bP, 2bP + 2bP/N, bP + 3bP/N,
4bP/N. tools/memory_measure.py measures these from the real arrays.

Why stage 3 re-runs a unit's forward in backward: PyTorch frees a gathered
weight's storage in place, and the saved tensors see it refilled before
backward. A NumPy array the autograd graph still references cannot be freed,
so here the unit's forward runs under no_grad (nothing saved but its input)
and backward recomputes it with the weights gathered again. The extra cost is
one more forward of the units (not of attention, which owns no parameters).

    mpirun -n 8 python tutorials/06_zero.py
"""
from minimegatron import comm, comm_check, trace
from minimegatron.backend import xp
from minimegatron.function import Function, enable_grad, no_grad
from minimegatron.nn.module import Module, Parameter
from minimegatron.parallel.split import flatten, pad, padded, row_slice, unflatten
from minimegatron.tensor import Tensor, unwrap

STAGES = (1, 2, 3)


def shard_layout(params, stage):
    """'stage s, flat groups [(values, dtype), ...]': what every rank of dp must agree on."""
    if stage == 3:
        groups = [list(m._parameters.values()) for _, m in params.named_modules()
                  if m._parameters]
    else:
        plist = params.parameters() if isinstance(params, Module) else list(params)
        groups = [[p for p in plist if p.requires_grad]]
    sizes = [(sum(p.size for p in g), str(g[0].dtype) if g else None) for g in groups]
    return f"stage {stage}, flat groups (values, dtype) {sizes}"


class FlatShard:
    """Parameters flattened into P_pad = padded(P, N) values; rank r owns slice r."""

    def __init__(self, params, group):
        self.params, self.group = params, group
        self.dtype = params[0].dtype
        self.numel = sum(p.size for p in params)
        self.padded = padded(self.numel, group.size)
        self.owned = row_slice(self.padded, group.rank, group.size)       # split.py's rule
        self.shapes = [p.shape for p in params]
        self.state = {}                   # the optimizer's state for this slice (m, v)

    def pad(self, flat):
        """(P,) -> (P_pad,) with zeros at the end."""
        return pad(flat, 0, self.group.size)

    def flat_weights(self):
        return self.pad(flatten([p.data for p in self.params], self.dtype))

    def flat_grads(self):
        return self.pad(flatten([p.grad if p.grad is not None else xp.zeros(s, self.dtype)
                                 for p, s in zip(self.params, self.shapes)], self.dtype))

    def own(self, flat):
        """This rank's slice of a (P_pad,) buffer: a view."""
        return flat[self.owned]                                          # (P_pad/N,)

    def write_weights(self, flat):
        """Point the parameters at views of a (P_pad,) buffer."""
        for p, value in zip(self.params, unflatten(flat, self.shapes)):
            p.data = value


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
            out = unit.run(*[_as_input(a, False) for a in args], **kwargs)
        unit.free()
        ctx.multi = isinstance(out, tuple)
        return tuple(unwrap(o) for o in out) if ctx.multi else unwrap(out)

    @staticmethod
    def backward(ctx, *grad_outs):
        unit = ctx.unit
        unit.gather("backward")
        needs = ctx.needs_input_grad[1:]
        inputs = [_as_input(a, need) for a, need in zip(ctx.args, needs)]
        for p in unit.flat.params:
            p.grad = None
        with enable_grad():
            out = unit.run(*inputs, **ctx.kwargs)                # recompute with W gathered
        if ctx.multi:
            total = sum((o * Tensor(g)).sum() for o, g in zip(out, grad_outs))
            total.backward()
        else:
            out.backward(grad_outs[0])
        with trace.label(f"zero3.{unit.name}.grads"):
            grad_shard = comm.reduce_scatter(unit.flat.flat_grads(), unit.flat.group,
                                             op="mean")          # (P_pad/N,)
        for p in unit.flat.params:
            p.grad = None
        unit.free()
        input_grads = tuple(t.grad if need else None for t, need in zip(inputs, needs))
        return (grad_shard,) + input_grads


def _as_input(a, needs_grad):
    """A module input rebuilt from a raw array: a Tensor for float arrays, else unchanged."""
    if needs_grad:
        return Tensor(a, requires_grad=True)
    return Tensor(a) if getattr(a, "dtype", None) is not None and a.dtype.kind == "f" else a


class Unit:
    """A module that owns parameters, with its weights sharded (ZeRO-3)."""

    def __init__(self, name, module, zero):
        self.name, self.module, self.zero = name, module, zero
        self.flat = FlatShard(list(module._parameters.values()), zero.group)
        full = self.flat.flat_weights()
        with trace.label("zero.init"):
            comm.broadcast(full, zero.group, 0)                  # every rank = rank 0's
        self.shard = Parameter(self.flat.own(full).copy())       # (P_pad/N,), persistent
        self.run = module.forward                                # the module's own forward
        self.gathered = False                                    # not counted as gathered
        self.free()
        object.__setattr__(module, "forward", self.forward)

    def forward(self, *args, **kwargs):
        return GatheredForward.apply(self.shard, *args, unit=self, kwargs=kwargs)

    def gather(self, when):
        with trace.label(f"zero3.{self.name}.{when}"):
            full = comm.all_gather(self.shard.data, self.flat.group)  # (P_pad,)
        self.flat.write_weights(full)
        self.gathered = True
        self.zero.gathered_bytes += full.nbytes
        self.zero.peak_gathered_bytes = max(self.zero.peak_gathered_bytes,
                                            self.zero.gathered_bytes)

    def free(self):
        """Drop the gathered weights: each parameter becomes a 0-size array."""
        if self.gathered:
            self.zero.gathered_bytes -= self.flat.padded * xp.dtype(self.flat.dtype).itemsize
        self.gathered = False
        for p in self.flat.params:
            p.data = xp.empty((0,), self.flat.dtype)


class ZeroOptimizer:
    """``ZeroOptimizer(model, group, stage, optimizer=AdamW(model.parameters(), ...))``.

    ``params``: a Module (required for stage 3, whose units it hooks) or a list
    of Parameters. ``optimizer`` lends its update rule and hyper-parameters; its
    own state stays empty. A step: ``loss.backward(); zero.step(); zero.zero_grad()``.
    """

    def __init__(self, params, group, stage=1, optimizer=None):
        if stage not in STAGES:
            raise ValueError(f"ZeRO stage must be 1, 2 or 3, got {stage!r} (stage 0 is plain "
                             "DistributedDataParallel)")
        if optimizer is None or not hasattr(optimizer, "update"):
            raise ValueError("ZeroOptimizer needs optimizer=an Optimizer (e.g. AdamW(...)) "
                             "whose update rule it applies to each rank's slice")
        if stage == 3 and not isinstance(params, Module):
            raise ValueError("ZeRO stage 3 needs the Module (it gathers weights per layer)")
        self.group, self.stage, self.optimizer = group, stage, optimizer
        self.step_count, self.gathered_bytes, self.peak_gathered_bytes = 0, 0, 0
        comm_check.agree(group, "ZeRO shard layout", shard_layout(params, stage))
        if stage == 3:
            self.units = [Unit(name or "root", m, self) for name, m in params.named_modules()
                          if m._parameters]
            self.flats = [u.flat for u in self.units]
            return
        plist = params.parameters() if isinstance(params, Module) else list(params)
        self.flats = [FlatShard([p for p in plist if p.requires_grad], group)]
        full = self.flats[0].flat_weights()
        with trace.label("zero.init"):
            comm.broadcast(full, group, 0)                       # every rank = rank 0's
        self.flats[0].write_weights(full)
        self.shard = self.flats[0].own(full)                     # (P_pad/N,) view, owned
        self.grad_shard = None

    # ---- stage 1 and 2: the gradient step after backward ---------------------------------
    def reduce_gradients(self):
        """Stage 1: all-reduce(mean) of all grads. Stage 2: reduce-scatter(mean), free p.grad.

        Stage 3 reduce-scatters each unit's gradient during backward already.
        """
        if self.stage == 3 or self.grad_shard is not None:
            return
        flat = self.flats[0]
        with trace.label(f"zero{self.stage}.grads"):
            if self.stage == 1:
                averaged = comm.all_reduce(flat.flat_grads(), self.group, op="mean")  # (P_pad,)
                for p, g in zip(flat.params, unflatten(averaged, flat.shapes)):
                    p.grad = g
                self.grad_shard = flat.own(averaged)
            else:
                # EXERCISE 5.1 begin
                self.grad_shard = comm.reduce_scatter(flat.flat_grads(), self.group,
                                                      op="mean")                   # (P_pad/N,)
                for p in flat.params:
                    p.grad = None
                # EXERCISE 5.1 end

    def step(self):
        """Update this rank's slice with the optimizer's rule; stages 1-2 all-gather W."""
        self.step_count += 1
        if self.stage == 3:
            grads = [xp.zeros_like(u.shard.data) if u.shard.grad is None else u.shard.grad
                     for u in self.units]
            self.optimizer.check([u.shard.data for u in self.units], grads, self.step_count)
            with no_grad(), trace.span("optimizer"):
                for unit, grad in zip(self.units, grads):
                    self.optimizer.update(unit.shard.data, grad, unit.flat.state,
                                          self.step_count)
            return
        self.reduce_gradients()
        self.optimizer.check([self.shard], [self.grad_shard], self.step_count)  # NaN: stop
        flat = self.flats[0]
        # EXERCISE 5.2 begin
        with no_grad(), trace.span("optimizer"):
            self.optimizer.update(self.shard, self.grad_shard, flat.state, self.step_count)
        with trace.label(f"zero{self.stage}.weights"):
            full = comm.all_gather(self.shard, self.group)      # (P_pad,)
        # EXERCISE 5.2 end
        flat.write_weights(full)
        self.shard, self.grad_shard = flat.own(full), None       # the slice of dW is spent

    def zero_grad(self):
        self.grad_shard = None
        for flat in self.flats:
            for p in flat.params:
                p.grad = None
        for unit in getattr(self, "units", []):
            unit.shard.grad = None

    # ---- what each rank holds --------------------------------------------------------------
    def local_shards(self):
        """[(FlatShard, weight slice, grad slice or None)] this rank owns, one per flat group."""
        if self.stage == 3:
            return [(u.flat, u.shard.data, u.shard.grad) for u in self.units]
        return [(self.flats[0], self.shard, self.grad_shard)]

    def held_arrays(self):
        """{"weights", "grads", "optimizer": [arrays]}: the persistent model state of this rank."""
        if self.stage == 3:
            weights = [u.shard.data for u in self.units]
            grads = [u.shard.grad for u in self.units]
        else:
            params = self.flats[0].params
            weights = [p.data for p in params] + [self.shard]
            grads = ([p.grad for p in params] if self.stage == 1 else [self.grad_shard])
        states = [v for f in self.flats for v in f.state.values()]
        return {"weights": weights, "grads": grads, "optimizer": states}

    def full_weights(self):
        """Stage 3: every unit's weights all-gathered, as {id(param): array} (for checks)."""
        out = {}
        for flat, shard, _ in self.local_shards():
            full = comm.all_gather(shard, self.group)[:flat.numel] if self.stage == 3 \
                else flatten([p.data for p in flat.params], flat.dtype)
            for p, value in zip(flat.params, unflatten(full, flat.shapes)):
                out[id(p)] = value
        return out
