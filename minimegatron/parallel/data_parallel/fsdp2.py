"""Per-parameter sharding (FSDP2): every parameter split on its dim 0 over the data group.

Idea. ZeRO-3 (zero3.py, FSDP1) flattens a unit's parameters into one buffer and
shards the buffer, so a rank's slice starts and ends anywhere inside some weight.
PyTorch's FSDP2 (``fully_shard``, a DTensor with Shard(0) per parameter) shards each
parameter on its own, on dim 0. With N ranks and W of shape (d0, ...):

    c = ceil(d0 / N)                 rows per rank (W padded with zero rows to N c)
    shard_r = W_pad[r c : (r+1) c]   (c, ...): what rank r keeps, the model's parameter

So the model's parameters ARE the shards: any optimizer (SGD, AdamW) steps them as
they are and keeps its state per shard; a parameter may be frozen (gathered, never
reduced) or have its own dtype (one all-gather per dtype); a shard is a block of
whole rows of one weight, so a checkpoint cuts and joins it by rows (``full_state``,
``load_full_state``) for any number of ranks.

Per unit (a module that owns parameters: Linear, LayerNorm, Embedding):

    forward   all-gather the unit's shards (one Iallgather per dtype of the shards laid
              end to end), W_r -> W, run the unit, free W; with ``prefetch`` the next
              unit's all-gather is already posted when this one starts
    backward  all-gather again (the unit before it prefetched), recompute the unit's
              forward, backprop, reduce-scatter each dW on dim 0 (mean over the group;
              one Reduce_scatter per dtype), free W and dW
    step      the optimizer on the shards: no communication

HSDP (``replicate``): the data group is replicate x shard. Shards split over the
shard group, then each shard's gradient is averaged over the replicate group (the
ranks holding the same shard): one all-reduce per dtype, so every rank ends with the
mean over all R x N ranks, as one process's gradient of the whole batch.

Bytes each rank sends per step, S the shard values of every unit (P_pad / N) in b bytes:

    all-gather forward + backward   2 (N-1) S b
    reduce-scatter                  (N-1) S b              (the ring model of trace.py)
    HSDP all-reduce                 2 (R-1)/R S b

Memory per rank: weights, gradients and optimizer state of the shards, plus the
gathered weights of at most two units at a time (the one running and the one
prefetched): tools/memory.fsdp2_bytes.

Why backward re-runs a unit's forward: as in zero3.py, a gathered weight the graph
still references cannot be freed in NumPy, so the unit's forward runs without a graph.

    minimegatron run -n 8 tutorials/06_zero.py
"""
from minimegatron import comm
from minimegatron.autodiff.function import Function, enable_grad, is_grad_enabled, no_grad
from minimegatron.autodiff.tensor import Tensor, unwrap
from minimegatron.backend import xp
from minimegatron.comm import trace
from minimegatron.nn.module import Module, Parameter
from minimegatron.parallel.data_parallel.zero3 import GatheredBytes, as_input, replace_module
from minimegatron.parallel.split import pad, rows_of


def shard_rows(full, rank, parts):
    """Rank ``rank``'s rows of ``full`` (d0, ...) padded to parts * ceil(d0 / parts): (c, ...)."""
    return rows_of(pad(full, 0, parts), rank, parts).copy()


class ShardedForward(Function):
    """forward: all-gather the unit's W on dim 0, y = unit(x), free W | backward: all-gather
    W, recompute, backprop, reduce-scatter each dW on dim 0 (mean), free   (FSDP2's pair)

    The first arguments are the unit's shard Parameters: their gradients are this rank's
    rows of the averaged dW, so the shards are the leaves the optimizer updates.
    """

    @staticmethod
    def forward(ctx, *inputs, unit, kwargs):
        count = len(unit.keys)
        ctx.unit, ctx.args, ctx.kwargs = unit, inputs[count:], kwargs
        unit.gather("forward")
        if is_grad_enabled() and any(ctx.needs_input_grad):
            unit.state.expect(unit)                       # its backward will run
        with no_grad():
            out = unit.inner.forward(*[as_input(a, False) for a in ctx.args], **kwargs)
        unit.free()
        ctx.multi = isinstance(out, tuple)
        return tuple(unwrap(o) for o in out) if ctx.multi else unwrap(out)

    @staticmethod
    def backward(ctx, *grad_outs):
        unit, count = ctx.unit, len(ctx.unit.keys)
        unit.gather("backward")
        needs = ctx.needs_input_grad[count:]
        inputs = [as_input(a, need) for a, need in zip(ctx.args, needs)]
        for p in unit.full.values():
            p.grad = None
        with enable_grad():
            out = unit.inner.forward(*inputs, **ctx.kwargs)       # recompute with W gathered
        if ctx.multi:
            sum((o * Tensor(g)).sum() for o, g in zip(out, grad_outs)).backward()
        else:
            out.backward(grad_outs[0])
        grads = unit.reduce_gradients()                            # [(c, ...) or None]
        unit.free()
        unit.state.backward_done(unit)
        return tuple(grads) + tuple(t.grad if need else None for t, need in zip(inputs, needs))


class ShardState:
    """What the units of one model share: the order they ran in (for prefetch), the
    all-gathers posted ahead, the units whose backward is still to come in this step
    (``waiting``), and the gathered bytes (now, peak)."""

    def __init__(self, prefetch):
        self.prefetch, self.order, self.posted, self.waiting = prefetch, [], {}, set()
        self.gathered = GatheredBytes()

    def expect(self, unit):
        self.waiting.add(unit)

    def before(self, unit, when):
        """Note the forward order; the first unit's forward drops what an unfinished step
        left posted."""
        if when == "forward" and unit not in self.order:
            self.order.append(unit)
        if when == "forward" and unit is self.order[0]:
            self.drain()
            self.waiting = set()

    def ahead(self, unit, when):
        """Post the all-gathers of the unit that runs next: in forward the one after
        ``unit``, in backward the one before it."""
        if not self.prefetch or unit not in self.order:
            return
        i = self.order.index(unit) + (1 if when == "forward" else -1)
        if not 0 <= i < len(self.order):
            return
        nxt = self.order[i]
        if nxt not in self.posted and (when == "forward" or nxt in self.waiting):
            self.posted[nxt] = nxt.post(when)

    def backward_done(self, unit):
        """The last backward of the step drops what was posted for a unit that ran earlier
        than the order said (two embeddings summed run in either order)."""
        self.waiting.discard(unit)
        if not self.waiting:
            self.drain()

    def drain(self):
        """Wait for every all-gather posted ahead and drop it (its shards may be stale)."""
        for posted in self.posted.values():
            for _, handle, nbytes in posted:
                handle.wait()
                self.gathered.add(-nbytes)
        self.posted = {}


class ShardedUnit(Module):
    """A unit whose parameters are dim-0 shards over ``group`` (FSDP2's ``fully_shard``).

    Its parameters keep the unit's names (``weight``, ``bias``), so the model's names
    are one process's; ``inner`` is the original module, whose parameters hold the
    gathered weights only between ``gather`` and ``free``.
    """

    def __init__(self, name, module, group, replicate, state):
        super().__init__()
        object.__setattr__(self, "inner", module)         # not a submodule: not listed
        self.name, self.group, self.replicate, self.state = name, group, replicate, state
        self.full = dict(module._parameters)               # key -> the original Parameter
        self.keys, self.rows = list(self.full), {k: p.shape[0] for k, p in self.full.items()}
        self.by_dtype, self.held = {}, 0
        for key, p in self.full.items():
            shard = Parameter(shard_rows(p.data, group.rank, group.size))      # (c, ...)
            shard.requires_grad = p.requires_grad                              # frozen stays
            setattr(self, key, shard)
            self.by_dtype.setdefault(str(p.dtype), []).append(key)
        self.free()

    def forward(self, *args, **kwargs):
        shards = [self._parameters[k] for k in self.keys]
        return ShardedForward.apply(*shards, *args, unit=self, kwargs=kwargs)

    def post(self, when):
        """Start the all-gathers: [(keys, handle, bytes)], one per dtype."""
        posted = []
        for keys in self.by_dtype.values():
            send = xp.concatenate([self._parameters[k].data.reshape(-1) for k in keys])  # (S,)
            with trace.label(f"fsdp.{self.name}.{when}"):
                handle = comm.iall_gather(send, self.group)                          # (N S,)
            posted.append((keys, handle, send.nbytes * self.group.size))
            self.state.gathered.add(send.nbytes * self.group.size)
        return posted

    def gather(self, when):
        """Every W of the unit whole: the posted all-gathers (prefetched, or posted now)."""
        self.state.before(self, when)
        posted = self.state.posted.pop(self, None) or self.post(when)
        self.state.ahead(self, when)                      # the next unit's, while I run
        n = self.group.size
        self.held = sum(nbytes for _, _, nbytes in posted)
        for keys, handle, _ in posted:
            full = handle.wait().reshape(n, -1)                    # (N, S): rank r's shards
            start = 0
            for k in keys:
                shard = self._parameters[k]
                rows = full[:, start:start + shard.data.size]       # (N, c*rest)
                whole = rows.reshape((n * shard.shape[0],) + shard.shape[1:])  # (N c, ...)
                self.full[k].data = whole[:self.rows[k]]            # (d0, ...)
                start += shard.data.size

    def reduce_gradients(self):
        """[this rank's rows of the mean dW, (c, ...), or None for a frozen weight]."""
        n, grads = self.group.size, {}
        for keys in self.by_dtype.values():
            live = [k for k in keys if self.full[k].requires_grad]
            if not live:
                continue
            parts = [pad(self._grad(k), 0, n).reshape(n, -1) for k in live]   # (N, c*rest)
            send = xp.concatenate(parts, axis=1)                                # (N, S)
            with trace.label(f"fsdp.{self.name}.grads"):
                mine = comm.reduce_scatter(send.reshape(-1), self.group, op="mean")   # (S,)
                if self.replicate is not None and self.replicate.size > 1:
                    comm.all_reduce(mine, self.replicate, op="mean", inplace=True)
            start = 0
            for k in live:
                shard = self._parameters[k]
                grads[k] = mine[start:start + shard.data.size].reshape(shard.shape)
                start += shard.data.size
        for p in self.full.values():
            p.grad = None
        return [grads.get(k) for k in self.keys]

    def _grad(self, key):
        """dW in W's own dtype (the engine may have computed it wider, e.g. a float32
        LayerNorm inside a float64 model): the reduce-scatter moves W's dtype, as PyTorch's
        gradients always have their parameter's dtype."""
        p = self.full[key]
        return xp.zeros(p.shape, p.dtype) if p.grad is None else p.grad.astype(p.dtype,
                                                                               copy=False)

    def free(self):
        """Drop the gathered weights: each original parameter becomes a 0-size array."""
        self.state.gathered.add(-self.held)
        self.held = 0
        for p in self.full.values():
            p.data = xp.empty((0,), p.dtype)


def hsdp_groups(dp, shard):
    """(shard group, replicate group) cut from the data group ``dp``: consecutive blocks of
    ``shard`` ranks shard the weights; the ranks at the same place in each block replicate."""
    if not isinstance(shard, int) or isinstance(shard, bool) or shard < 1 or dp.size % shard:
        raise ValueError(f"HSDP: shard={shard!r} must be an int >= 1 dividing the data group's "
                         f"{dp.size} ranks (replicate x shard)")
    j = dp.rank
    return (dp.split(color=j // shard, key=j, name=f"shard{j // shard}"),
            dp.split(color=j % shard, key=j, name=f"replicate{j % shard}"))


def fully_shard(model, group, replicate=None, prefetch=True):
    """Shard every parameter of ``model`` on dim 0 over ``group`` (HSDP: averaged over
    ``replicate`` too); returns the ShardState (the order, the gathered bytes).

    In place: each module that owns parameters becomes a ShardedUnit, so
    ``model.parameters()`` are the shards, named as one process's. Then build the
    optimizer on them: ``opt = AdamW(model.parameters())``.
    """
    owners = [(name, m) for name, m in model.named_modules() if m._parameters]
    for name, m in owners:
        nested = [n for n, sub in m.named_modules() if n and sub._parameters]
        if name == "" or nested:
            raise ValueError(f"fully_shard shards the modules that own parameters; "
                             f"{name or 'the root'!r} owns parameters and holds modules that "
                             f"own more ({nested[:2]}): give its own weights a submodule")
        if any(p.ndim == 0 for p in m._parameters.values()):
            raise ValueError(f"fully_shard: {name!r} holds a 0-d parameter (no dim 0 to shard)")
    state = ShardState(prefetch)
    for name, m in owners:
        replace_module(model, name, ShardedUnit(name, m, group, replicate, state))
    return state


def full_state(model, group):
    """{name: the whole weight} of a sharded model, on every rank: each shard all-gathered
    on dim 0, the padding rows dropped (a checkpoint of one process's names and shapes)."""
    out = {}
    for name, unit in model.named_modules():
        if isinstance(unit, ShardedUnit):
            for key in unit.keys:
                rows = comm.all_gather(unit._parameters[key].data, group)      # (N c, ...)
                out[f"{name}.{key}"] = rows[:unit.rows[key]]
    return out


def load_full_state(model, weights):
    """Each unit takes its rows of one process's weights ({name: (d0, ...)}): any N."""
    for name, unit in model.named_modules():
        if isinstance(unit, ShardedUnit):
            for key in unit.keys:
                shard = unit._parameters[key]
                shard.data[...] = shard_rows(weights[f"{name}.{key}"], unit.group.rank,
                                             unit.group.size)
