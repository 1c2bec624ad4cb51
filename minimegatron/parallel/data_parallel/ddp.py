"""DistributedDataParallel: every rank a peer; gradients averaged with all-reduce.

Idea: each of the N ranks holds the same model, runs forward and backward on
its own B/N rows (its loss is the MEAN over its rows), then the gradients are
averaged over the group, so every replica applies the same update:

    g = (1/N) sum_r dL_r/dW,   L_r = mean over rank r's rows
      = dL/dW for L = mean over the whole batch   (equal shard sizes)

No rank is special: no root, no gathered output, every rank keeps the same
memory and moves the same bytes.

Buckets and overlap (as in PyTorch): the parameters, in REVERSE registration
order (their gradients become ready roughly in that order during backward),
are grouped into buckets of about ``bucket_bytes``. Their gradients live in
one flat buffer in that order (minimegatron/optim/flat.py, as Megatron's DDP keeps
them): every ``p.grad`` is a view into it, so a bucket is one contiguous slice. A grad hook
on every parameter (``Tensor.register_grad_hook``, fired once its gradient
for this backward is complete) counts the bucket's ready gradients; with
``overlap=True`` the last one starts the bucket's nonblocking all-reduce
(of its slice, in place: no pack, no unpack) while backward goes on through
the earlier layers:

    bucket.handle = comm.iall_reduce(bucket.reduce, group, op="mean", inplace=True)

``bound=True`` starts the same all-reduce bound once at construction instead
(``bound.bind_all_reduce``: MPI 4's persistent ``Allreduce_init``, then one
``Start`` per step), which costs less Python per step; the gradients are
bitwise the same (tests/test_flat_buffer.py). ``finish()`` waits for every
bucket; the averaged gradients are then already in ``p.grad``. ``no_sync()``
skips the all-reduce so gradients accumulate locally (gradient
accumulation); the next synced backward all-reduces the accumulated sum.

Communication per step: one all-reduce per bucket, in all G = P*b bytes of
gradients; the ring model sends and receives 2(N-1)/N * G per rank.
At construction: a checksum all-reduce (optional), with ``bound=True`` one small
exchange per bucket that binds its all-reduce (bound.py), one 8-byte-per-rank exchange
that checks every rank built the same buckets (``comm_check.agree``: different
``bucket_bytes``, ``overlap`` or ``bound`` per rank would pair unequal all-reduces) and
one broadcast of the weights from rank 0 (P*b bytes).

Mixed precision (``reduce_dtype``). A float16 model's gradients are
all-reduced in float32 by default: each bucket's float16 slice is cast up
into the same slice of a second, float32 flat buffer, averaged there, and cast
back down into the float16 slice (one rounding, of the mean). A float16 sum of
N scaled gradients can overflow (65504) or lose the small terms even where the
mean is fine. The float32 buffer is kept (``buffers()``): 4 bytes per parameter on top
of the 16 of mixed-precision model state, 20 in all (docs/mixed_precision.md),
and the all-reduce moves 4 bytes per parameter, not 2. ``reduce_dtype="float16"``
reduces in half (half the traffic, no buffer; the sums round in float16). A bf16
model does the same in float32 (bf16 cannot overflow, but a bf16 sum keeps only 8
bits: Megatron's ``grad_reduce_in_fp32``); MPI has no bf16 to reduce in anyway
(comm/wire.py). Other models reduce in their own dtype (``reduce_dtype=None``).

Non-finite numbers (``check_finite=True``, the default). Each bucket's local
gradients are tested before its all-reduce, as Megatron's DDP does: after it,
one rank's NaN is every rank's, and every rank would report it. A non-finite
bucket raises guards.NonFiniteError on the rank where it appeared, naming the
first place: a non-finite weight (its name) if the rank holds one, else the
first non-finite activation (an ActivationWatch, nn/watch.py, keeps each
module's last input and output; ``watch_activations=False`` keeps none), else
the gradient's parameter. A float16 model's inf/NaN gradient with finite
weights is an overflow, the loss scaler's to skip (mixed_precision/), not an
error.

Works on any Module (a tensor-parallel shard, a pipeline stage): it only
all-reduces, over the group it is given, the gradients of the parameters it
sees; the caller computes the loss.

    minimegatron run -n 8 tutorials/05_data_parallel.py
"""
import contextlib

from minimegatron import comm
from minimegatron.comm import comm_check, trace
from minimegatron.backend import to_numpy, xp
from minimegatron.comm.bound import bind_all_reduce
from minimegatron.optim.flat import FlatBuffer
from minimegatron.autodiff.cast import is_half
from minimegatron.autodiff.guards import all_finite
from minimegatron.nn.watch import ActivationWatch, name_non_finite
from minimegatron.parallel.split import flatten, unflatten

DEFAULT_BUCKET_BYTES = 2 ** 20


def parameter_checksums(params):
    """Two numbers per parameter: sum(w) and sum(w * cos(0.7 i)), in float64."""
    sums = []
    for p in params:
        w = p.data.ravel().astype("float64")
        sums += [w.sum(), (w * xp.cos(0.7 * xp.arange(w.size))).sum()]
    return xp.asarray(sums, dtype="float64")


def check_same_parameters(named_params, group):
    """Raise the same ValueError on every rank if the replicas' parameters differ.

    Metadata (names, shapes, dtypes) is compared with ``allgather_object``; the
    values with ONE all-reduce (op max) of [c, -c], c the checksums: max == min
    on every entry iff every rank computed the same checksum.
    """
    meta = [(n, tuple(p.shape), str(p.dtype)) for n, p in named_params]
    if any(m != meta for m in comm.allgather_object(meta, group)):
        raise ValueError(f"DistributedDataParallel: the ranks of group {group.name!r} hold "
                         "different parameter names, shapes or dtypes")
    local = parameter_checksums([p for _, p in named_params])
    with trace.label("ddp.checksum"):
        extremes = comm.all_reduce(xp.concatenate([local, -local]), group, op="max")
    high, low = to_numpy(extremes[:local.size]), -to_numpy(extremes[local.size:])
    differ = sorted({named_params[i // 2][0] for i in range(local.size) if high[i] != low[i]})
    if differ:
        raise ValueError(f"DistributedDataParallel: parameters differ across the {group.size} "
                         f"ranks of group {group.name!r} before the broadcast from rank 0: "
                         f"{', '.join(differ[:6])}{' ...' if len(differ) > 6 else ''} "
                         f"({len(differ)} in all). Build every replica from the same seed, or "
                         "pass check_consistency=False to let rank 0's weights overwrite them.")


class Bucket:
    """Parameters whose gradients travel in one all-reduce of a flat buffer's slice."""

    def __init__(self, index, params):
        self.index, self.params = index, params
        self.nbytes = sum(p.data.nbytes for p in params)
        self.ready, self.handle = 0, None
        self.views = self.grads = self.reduce = None   # set by DistributedDataParallel
        self.all_reduce = None                         # bound to self.reduce (bound=True)

    def place(self, grads, reduce, first):
        """Bind to params first.. of the flat buffers: ``grads`` (p.grad's dtype), ``reduce``
        (the reduce dtype; the same buffer unless float16 is reduced in float32)."""
        last = first + len(self.params)
        self.views = grads.views[first:last]               # each p.grad, a view
        self.grads = grads.slice(first, last)              # (bucket values,)
        self.reduce = self.grads if reduce is grads else reduce.slice(first, last)
        return last


def _reduce_dtype(name, own):
    """The dtype gradients are all-reduced in (see "Mixed precision")."""
    if name not in (None, "float16", "float32"):
        raise ValueError(f"reduce_dtype must be None, 'float16' or 'float32', got {name!r}")
    if name is None:
        return xp.dtype("float32") if is_half(own) else xp.dtype(own)      # float16, bf16
    return xp.dtype(name)


def make_buckets(params, bucket_bytes):
    """Greedy: fill a bucket (params in reverse order) until it holds >= bucket_bytes."""
    buckets, current, size = [], [], 0
    for p in reversed(params):
        current.append(p)
        size += p.data.nbytes
        if size >= bucket_bytes:
            buckets.append(Bucket(len(buckets), current))
            current, size = [], 0
    if current:
        buckets.append(Bucket(len(buckets), current))
    return buckets


class DistributedDataParallel:
    """``ddp = DistributedDataParallel(model, group)``; ``loss.backward(); ddp.finish()``.

    ``ddp(*args)`` calls the module. ``ddp.backward(loss)`` is
    ``loss.backward()`` inside a "backward" trace span, then ``finish()``.
    ``reduce_dtype``: None (float32 for a float16 model, else the model's dtype),
    "float16" or "float32" (see "Mixed precision" above). ``bound=True``: each
    bucket's all-reduce is bound once (bound.py), for speed; the same gradients.
    ``watch_activations`` (with ``check_finite``): keep each module's last activations so
    that a NaN report can name the first non-finite one (nn/watch.py).
    """

    def __init__(self, module, group, bucket_bytes=DEFAULT_BUCKET_BYTES, overlap=True,
                 check_consistency=True, root=0, reduce_dtype=None, bound=False,
                 check_finite=True, watch_activations=True):
        if not isinstance(bucket_bytes, int) or bucket_bytes < 1:
            raise ValueError(f"bucket_bytes must be a positive int, got {bucket_bytes!r}")
        self.module, self.group, self.overlap, self.bound = module, group, overlap, bound
        named = [(n, p) for n, p in module.named_parameters() if p.requires_grad]
        if not named:
            raise ValueError("DistributedDataParallel: the module has no trainable parameters")
        self.params = [p for _, p in named]
        self.named, self.check_finite = named, check_finite
        if len({str(p.dtype) for p in self.params}) > 1:
            raise ValueError("DistributedDataParallel: the parameters have different dtypes "
                             f"{sorted({str(p.dtype) for p in self.params})}; one flat "
                             "gradient buffer holds one dtype")
        self.reduce_dtype = _reduce_dtype(reduce_dtype, self.params[0].dtype)
        if check_consistency and group.size > 1:
            check_same_parameters(named, group)
        self.buckets = make_buckets(self.params, bucket_bytes)
        comm_check.agree(group, "DistributedDataParallel bucket layout",
                         f"bucket_bytes={bucket_bytes}, overlap={overlap}, bound={bound}, "
                         f"reduce_dtype={self.reduce_dtype}, "
                         f"bucket sizes (bytes) {[b.nbytes for b in self.buckets]}")
        flat = flatten([p.data for p in self.params], self.params[0].dtype)
        with trace.label("ddp.init"):
            comm.broadcast(flat, group, root)                 # every replica = rank 0's
        for p, value in zip(self.params, unflatten(flat, [p.shape for p in self.params])):
            p.data[...] = value
        order = [p for b in self.buckets for p in b.params]     # reverse registration order
        self.grad_buffer = FlatBuffer(order, self.params[0].dtype)
        self.reduce_buffer = (self.grad_buffer if self.reduce_dtype == self.params[0].dtype
                              else FlatBuffer(order, self.reduce_dtype))
        first = 0
        for bucket in self.buckets:
            first = bucket.place(self.grad_buffer, self.reduce_buffer, first)
            if bound:
                bucket.all_reduce = bind_all_reduce(bucket.reduce, group, op="mean",
                                                    inplace=True)
        self.grad_buffer.attach()                               # p.grad_view = its view
        self._bucket_of = {}
        for bucket in self.buckets:
            for p in bucket.params:
                self._bucket_of[id(p)] = bucket
                p.register_grad_hook(self._grad_ready)
        self._sync = True
        self.watch = ActivationWatch(module) if check_finite and watch_activations else None

    def __call__(self, *args, **kwargs):
        if any(b.handle is not None for b in self.buckets):
            raise RuntimeError("DistributedDataParallel: call finish() after backward, "
                               "before the next forward")
        return self.module(*args, **kwargs)

    @contextlib.contextmanager
    def no_sync(self):
        """Backward passes inside accumulate gradients locally, with no communication."""
        self._sync = False
        try:
            yield
        finally:
            self._sync = True

    def _grad_ready(self, param):
        """Grad hook: count ready gradients; the bucket's last one starts its all-reduce."""
        if not (self._sync and self.overlap):
            return
        bucket = self._bucket_of[id(param)]
        if bucket.handle is not None:
            raise RuntimeError("DistributedDataParallel: a second backward before finish()")
        bucket.ready += 1
        if bucket.ready == len(bucket.params):
            self._launch(bucket)
        for other in self.buckets:            # let MPI progress the buckets already started
            if other.handle is not None:
                other.handle.test()

    def _launch(self, bucket):
        for p, view in zip(bucket.params, bucket.views):
            if p.grad is None:
                view[...] = 0                         # no gradient this step: it adds 0
            elif p.grad is not view:                  # replaced by the caller: moved in
                view[...], p.grad = p.grad, view
        if self.check_finite and not all_finite([bucket.grads]):
            self._name_non_finite(bucket)             # before the all-reduce spreads it
        if bucket.reduce is not bucket.grads:
            bucket.reduce[...] = bucket.grads         # float16 -> float32, into the slice
        with trace.label(f"ddp.bucket{bucket.index}"):
            if self.bound:                      # the same all-reduce, bound once (bound.py)
                bucket.handle = bucket.all_reduce.start()
                return
            # EXERCISE 4.1 begin
            bucket.handle = comm.iall_reduce(bucket.reduce, self.group, op="mean", inplace=True)
            # EXERCISE 4.1 end

    def _name_non_finite(self, bucket):
        """NonFiniteError at the first place: a weight of this rank, else an activation, else
        the gradient (a float16 gradient with finite weights is an overflow: the loss
        scaler's)."""
        names = {id(p): n for n, p in self.named}
        name_non_finite([(n, p.data) for n, p in self.named],
                        [(names[id(p)], view) for p, view in zip(bucket.params, bucket.views)],
                        self.watch, f", before DDP's all-reduce over group {self.group.name!r}",
                        overflow_ok=xp.dtype(self.params[0].dtype) == xp.float16)

    def finish(self):
        """Start any bucket not started yet and wait for all: p.grad (views) hold the mean."""
        if not self._sync:
            return
        for bucket in self.buckets:
            if bucket.handle is None:
                self._launch(bucket)
        for bucket in self.buckets:
            bucket.handle.wait()                              # bucket.reduce: the mean
            if bucket.reduce is not bucket.grads:
                bucket.grads[...] = bucket.reduce             # cast down: one rounding
            bucket.handle, bucket.ready = None, 0
        if self.watch is not None:
            self.watch.clear()                                # the step's activations go

    def buffers(self):
        """The float32 reduce buffer when float16 gradients are reduced in float32, else []."""
        return [] if self.reduce_buffer is self.grad_buffer else [self.reduce_buffer.data]

    def backward(self, loss):
        """loss.backward() (traced as "backward"), then finish()."""
        with trace.span("backward"):
            loss.backward()
        self.finish()
