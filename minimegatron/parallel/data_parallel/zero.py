"""ZeRO: shard the optimizer state (stage 1), the gradients (2), the weights (3) over dp.

This file: ShardedOptimizer (stages 1 and 2) and the flat shard every stage uses.

Idea (Rajbhandari et al. 2020): plain data parallelism keeps N identical copies
of weights W, gradients G and optimizer state S. The parameters are flattened
into one buffer of P values, padded to a multiple of N, and rank r OWNS the
slice [r P/N, (r+1) P/N). Each rank runs the optimizer's own rule,
``optimizer.update(flat_shard, grad_shard, state, step)``, on its slice only.

    stage 1  S sharded.  all-reduce(G, mean) -> full averaged G on every rank;
             update own slice; all-gather W.            bytes/rank 3(N-1)/N * Pb
    stage 2  + G sharded. reduce-scatter(G, mean) -> own slice of G only,
             p.grad freed; update; all-gather W.        bytes/rank 2(N-1)/N * Pb
    stage 3  + W sharded, per layer: zero3.py (Zero3, an FSDP-style wrapper).
                                                        bytes/rank 3(N-1)/N * Pb
(b bytes per value; ring model, trace.py. DDP moves 2(N-1)/N * Pb, so stage 3
moves 1.5x DDP. Stage 1 here keeps the full averaged gradient, as its memory
formula counts it, so it all-reduces; the paper's variant reduce-scatters.)
Non-finite numbers: before the gradient collective (the optimizer's
``check_finite``), a NaN/inf gradient raises NonFiniteError on the rank where it
appeared, naming a weight it holds, else the first non-finite activation, else the
gradient (nn/watch.py's name_non_finite, as DDP does); after the reduce every rank
would hold it. ``named`` / ``watch`` give the names and the ActivationWatch (a
Module passed as ``params`` brings its own).
In float16 (a mixed-precision rule, whose own ``check_finite`` is off: its loss scaler
skips an overflow) a non-finite WEIGHT is still named there; a non-finite gradient with
finite weights is an overflow, the scaler's to skip (``check_finite``: the caller's
switch, by default the rule's, on for a mixed-precision rule).
At construction the dp ranks agree on the stage and the flat layout
(``comm_check.agree``: one int64 per rank) and on the rule's settings (learning rate,
betas, eps, weight decay, momentum, the loss scaler's fields and group:
optim/settings.py, one more int64 per rank) before the weights' broadcast.

Model state per rank, P parameters (tools/memory.py, mixed precision Adam):
baseline 16P; stage 1 4P + 12P/N; stage 2 2P + 14P/N; stage 3 16P/N. In one
precision of b bytes (our float64 code, b = 8): 4bP, 2bP + 2bP/N, bP + 3bP/N,
4bP/N. tools/memory_measure.py measures these from the real arrays.

    minimegatron run -n 8 tutorials/06_zero.py
"""
import math

from minimegatron import comm
from minimegatron.comm import comm_check, trace
from minimegatron.comm.agreement import agree_fields
from minimegatron.backend import xp
from minimegatron.autodiff.function import no_grad
from minimegatron.autodiff.guards import all_finite
from minimegatron.nn.module import Module
from minimegatron.nn.watch import ActivationWatch, name_non_finite
from minimegatron.optim.settings import optimizer_fields
from minimegatron.parallel.split import flatten, pad, padded, row_slice, unflatten


def agree_on_layout(group, stage, groups, optimizer):
    """Every dp rank holds the same stage and flat groups [(values, dtype), ...] and the same
    rule settings (optim/settings.py), or all raise naming what differs."""
    sizes = [(sum(p.size for p in g), str(g[0].dtype) if g else None) for g in groups]
    comm_check.agree(group, "ZeRO shard layout",
                     f"stage {stage}, flat groups (values, dtype) {sizes}")
    agree_fields(group, "the ZeRO optimizer", optimizer_fields(optimizer))


def names_non_finite(optimizer, check_finite=None):
    """Whether ZeRO names a NaN/inf before its gradient collective: ``check_finite`` when
    given, else the rule's own switch; a mixed-precision rule (its switch off, its scaler
    skips overflows) names non-finite weights all the same."""
    if check_finite is not None:
        return check_finite
    return getattr(optimizer, "check_finite", True) or hasattr(optimizer, "loss_scale")


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

    def owned_parts(self, names, shard):
        """[(name, the part of that parameter in this rank's slice ``shard``)]: what this
        rank holds of each weight once the full weights are freed (ZeRO-3)."""
        parts, start = [], 0
        for name, shape in zip(names, self.shapes):     # the shapes: ZeRO-3 frees p.data
            size = math.prod(shape)
            lo, hi = max(start, self.owned.start), min(start + size, self.owned.stop)
            if lo < hi:
                parts.append((name, shard[lo - self.owned.start:hi - self.owned.start]))
            start += size
        return parts

    def write_weights(self, flat):
        """Point the parameters at views of a (P_pad,) buffer."""
        for p, value in zip(self.params, unflatten(flat, self.shapes)):
            p.data = value


class ShardedOptimizer:
    """``ShardedOptimizer(params, group, stage, optimizer=AdamW(params, ...))``, stage 1 or 2.

    ``params``: a Module or a list of Parameters. ``optimizer`` lends its update
    rule and hyper-parameters; its own state stays empty. A step:
    ``loss.backward(); zero.step(); zero.zero_grad()``.
    """

    def __init__(self, params, group, stage=1, optimizer=None, named=None, watch=None,
                 check_finite=None):
        if stage not in (1, 2):
            raise ValueError(f"ShardedOptimizer is ZeRO stage 1 or 2, got {stage!r} (stage 3 "
                             "is Zero3, stage 0 plain DistributedDataParallel)")
        check_rule(optimizer)
        self.group, self.stage, self.optimizer, self.step_count = group, stage, optimizer, 0
        plist = params.parameters() if isinstance(params, Module) else list(params)
        self.flat = FlatShard([p for p in plist if p.requires_grad], group)
        if isinstance(params, Module):                # names and activations for a NaN report
            named = params.named_parameters() if named is None else named
            watch = ActivationWatch(params) if watch is None else watch
        names = {id(p): n for n, p in (named or ())}
        self.names = [names.get(id(p), f"parameter {i}") for i, p in enumerate(self.flat.params)]
        self.watch, self.check_finite = watch, names_non_finite(optimizer, check_finite)
        agree_on_layout(group, stage, [self.flat.params], optimizer)
        full = self.flat.flat_weights()
        with trace.label("zero.init"):
            comm.broadcast(full, group, 0)                       # every rank = rank 0's
        self.flat.write_weights(full)
        self.shard = self.flat.own(full)                         # (P_pad/N,) view, owned
        self.grad_shard = None

    def reduce_gradients(self):
        """Stage 1: all-reduce(mean) of all grads. Stage 2: reduce-scatter(mean), free p.grad."""
        if self.grad_shard is not None:
            return
        flat = self.flat
        if self.check_finite and not all_finite(
                [p.grad for p in flat.params if p.grad is not None]):
            self._name_non_finite()                   # before the reduce spreads it
        if self.watch is not None:
            self.watch.clear()                        # the step's activations go
        with trace.label(f"zero{self.stage}.grads"):
            if self.stage == 1:
                averaged = comm.all_reduce(flat.flat_grads(), self.group, op="mean",
                                           inplace=True)    # (P_pad,), a fresh flat copy
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

    def _name_non_finite(self):
        """NonFiniteError at the first place, as DDP's: a weight of this rank, else an
        activation, else a gradient (float16: an overflow, the loss scaler's)."""
        pairs = list(zip(self.names, self.flat.params))
        name_non_finite([(n, p.data) for n, p in pairs],
                        [(n, p.grad) for n, p in pairs if p.grad is not None], self.watch,
                        f", before ZeRO-{self.stage}'s gradient reduce over group "
                        f"{self.group.name!r}",
                        overflow_ok=xp.dtype(self.flat.dtype) == xp.float16)

    def step(self, checked=False):
        """Update this rank's slice with the optimizer's rule, then all-gather W.
        ``checked``: the caller already ran the rule's ``check`` on this shard with others
        (one found-inf for several flat buffers: MoE's dense and expert parts)."""
        self.step_count += 1
        self.reduce_gradients()
        if not checked:
            self.optimizer.check([self.shard], [self.grad_shard], self.step_count)  # NaN: stop
        flat = self.flat
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
        for p in self.flat.params:
            p.grad = None

    # ---- what each rank holds --------------------------------------------------------------
    def local_shards(self):
        """[(FlatShard, weight slice, grad slice or None)] this rank owns: one flat group."""
        return [(self.flat, self.shard, self.grad_shard)]

    def held_arrays(self):
        """{"weights", "grads", "optimizer": [arrays]}: the persistent model state of this rank."""
        params = self.flat.params
        grads = [p.grad for p in params] if self.stage == 1 else [self.grad_shard]
        return {"weights": [p.data for p in params] + [self.shard], "grads": grads,
                "optimizer": list(self.flat.state.values())}

    def full_weights(self):
        """{id(param): array}: every parameter's full weights (for checks)."""
        return {id(p): p.data for p in self.flat.params}


def check_rule(optimizer):
    """ZeRO needs an Optimizer whose ``update`` rule it applies to each rank's slice."""
    if optimizer is None or not hasattr(optimizer, "update"):
        raise ValueError("ZeRO needs optimizer=an Optimizer (e.g. AdamW(...)) "
                         "whose update rule it applies to each rank's slice")
