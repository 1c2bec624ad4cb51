"""Flat buffers: many parameters' values in ONE contiguous array, each parameter a view.

As Megatron keeps them (its "grad buffer" and "param buffer"): the P values of
the parameters p_0, p_1, ... (in the order given) lie back to back in one array,

    data = [ x_0 (size n_0) | x_1 (n_1) | ... ]          # (P,),  P = sum_i n_i
    offsets[i] = n_0 + ... + n_{i-1}
    views[i]   = data[offsets[i] : offsets[i+1]].reshape(p_i.shape)   # no copy

Gradients (``FlatBuffer.attach``): ``p_i.grad_view = views[i]``; backward then
writes (first gradient) or adds (the next ones) each gradient INTO its view
and sets ``p_i.grad`` to that view (``tensor._accumulate_leaf``). Parameters
that are neighbours in the order are neighbours in memory, so DDP's bucket
(parallel/data_parallel/ddp.py) is the slice ``data[offsets[first] :
offsets[last]]`` and is all-reduced in place: no pack, no unpack.
``optimizer.zero_grad()`` still sets ``p.grad = None`` (the buffer stays and
the next gradient overwrites the view); ``zero()`` fills the buffer with 0.

Weights and optimizer state (``FlatGroup``, used by optim/optimizers.py with
``flat=True``): the weights, the gradients and each state array (AdamW's m and
v, SGD's momentum) of one dtype are flat buffers of the SAME layout, so
element k of each belongs to the same weight, and an elementwise update rule
applied once to the whole buffers updates every parameter: a few whole-array
operations (NumPy) or one kernel (CuPy) instead of that many per parameter.
Memory: P * itemsize bytes per buffer, allocated once.
"""
from minimegatron.backend import backend_name, xp


def _address(array):
    """Where an array's first element lies in memory (NumPy: ctypes.data; CuPy: data.ptr)."""
    return array.data.ptr if backend_name() == "cupy" else array.ctypes.data


class FlatBuffer:
    """``FlatBuffer(params, dtype)``: one (P,) array of ``dtype``; ``views[i]`` is params[i]'s."""

    def __init__(self, params, dtype):
        self.params, self.dtype = list(params), xp.dtype(dtype)
        self.offsets = [0]
        for p in self.params:
            self.offsets.append(self.offsets[-1] + p.size)
        self.data = xp.zeros(self.offsets[-1], self.dtype)              # (P,)
        self.views = self.split(self.data)

    def split(self, flat):
        """Views of any (P,) array laid out like this buffer, one per parameter (no copy)."""
        return [flat[a:b].reshape(p.shape)
                for p, a, b in zip(self.params, self.offsets, self.offsets[1:])]

    def attach(self, keep_existing=False):
        """Make every parameter's gradient land in its view (a gradient already held moves in).

        ``keep_existing``: a parameter whose gradients already go to another
        buffer (DDP's ``grad_view``) keeps it.
        """
        for p, view in zip(self.params, self.views):
            if keep_existing and p.grad_view is not None:
                continue
            if p.grad is not None:
                view[...] = p.grad
                p.grad = view
            p.grad_view = view

    def slice(self, first, last):
        """The contiguous values of params[first:last]: a view, (offsets[last]-offsets[first],)."""
        return self.data[self.offsets[first]:self.offsets[last]]

    def zero(self):
        self.data[...] = 0

    @classmethod
    def of_grad_views(cls, params):
        """The buffer that the params' ``grad_view``s already tile end to end, else None.

        DDP attaches its own gradient buffer (in bucket order). When it holds
        exactly these parameters, the optimizer takes its layout: the
        parameters are sorted by where their gradient view starts, and the
        buffer's data is DDP's array itself, so no gradient is ever copied.
        """
        views = [p.grad_view for p in params]
        if any(v is None for v in views):
            return None
        base = views[0].base                                # the (P,) array they view
        if base is None or base.ndim != 1 or any(
                v.base is not base or not v.flags.c_contiguous for v in views):
            return None
        start = {id(p): (_address(v) - _address(base)) // base.itemsize
                 for p, v in zip(params, views)}
        order = sorted(params, key=lambda p: start[id(p)])
        buffer = cls.__new__(cls)
        buffer.params, buffer.dtype, buffer.data = order, base.dtype, base
        buffer.offsets = [0]
        for p in order:
            buffer.offsets.append(buffer.offsets[-1] + p.size)
        if base.size != buffer.offsets[-1] or [start[id(p)] for p in order] != \
                buffer.offsets[:-1]:
            return None                                     # a gap, an overlap or a subset
        buffer.views = [p.grad_view for p in order]         # the very arrays backward fills
        return buffer


class FlatGroup:
    """One dtype's parameters as flat weight, gradient and state buffers of one layout.

    ``FlatGroup(items, states, names)``: items [(i, param)], ``states`` the
    optimizer's per-parameter state dicts (states[i] is param i's), ``names``
    the state arrays the rule keeps per weight (("m", "v") for AdamW).

    Layout: the gradient buffer's. If the parameters' ``grad_view``s already
    tile one buffer (DDP made before this group), that buffer is used as it is;
    else a new one is attached to every parameter without a ``grad_view``.
    Construction copies each ``p.data`` into its view of the weight buffer and
    points ``p.data`` at the view: the memory becomes contiguous, and whoever
    held the old array now holds a stale copy (as after torch's
    ``flatten_parameters``). ``states[i][name]`` becomes a view of the flat
    state array ``state[name]`` (zeros where absent: for AdamW and SGD a
    missing state and a zero one give the same update).
    """

    def __init__(self, items, states, names):
        params = [p for _, p in items]
        grads = FlatBuffer.of_grad_views(params)
        if grads is None:
            grads = FlatBuffer(params, params[0].dtype)
            grads.attach(keep_existing=True)
        position = {id(p): i for i, p in items}
        self.grads, self.params = grads, grads.params
        self.index = [position[id(p)] for p in self.params]        # into the optimizer's lists
        self.weights = FlatBuffer(self.params, grads.dtype)          # the same offsets
        for p, view in zip(self.params, self.weights.views):
            view[...] = p.data
            p.data = view                                            # see the docstring
        self.state = {name: xp.zeros_like(self.weights.data) for name in names}   # (P,) each
        self.state_views = {name: self.weights.split(flat) for name, flat in self.state.items()}
        self.moved = []
        self.sync_state(states)

    def items(self):
        return [(i, p) for i, p in zip(self.index, self.params)]

    def sync_state(self, states):
        """Make every states[i][name] its view again (a replaced array, e.g. a loaded
        checkpoint's, is copied in; a missing one is zero)."""
        for name, views in self.state_views.items():
            for i, view in zip(self.index, views):
                value = states[i].get(name)
                if value is view:
                    continue
                if value is not None and tuple(value.shape) != view.shape:
                    raise ValueError(f"optimizer state {name!r} of parameter {i} has shape "
                                     f"{tuple(value.shape)}, the parameter {view.shape}")
                view[...] = 0 if value is None else value
                states[i][name] = view

    def regathered(self):
        """True if the gradients now go to another buffer that tiles these parameters
        (DDP made after this group): the optimizer then builds the group again on it."""
        if all(p.grad_view is v for p, v in zip(self.params, self.grads.views)):
            return False
        return FlatBuffer.of_grad_views(self.params) is not None

    def gather(self):
        """Bring this step's weights and gradients into the flat buffers.

        False (nothing copied) if a parameter has no gradient: then the
        per-parameter rule must run, so that it stays untouched. A gradient
        that is not its view (assigned by hand, or DDP's own buffer) is copied
        in; so is a ``p.data`` someone reassigned, and ``scatter()`` copies the
        result back into it after the update.
        """
        for i, p, view in zip(self.index, self.params, self.weights.views):
            if p.data is not view and (p.data.shape != view.shape or p.data.dtype != view.dtype):
                raise ValueError(f"parameter {i} became {p.data.dtype} {p.data.shape} after the "
                                 f"optimizer laid it out as {view.dtype} {view.shape} in its "
                                 "flat buffer: build the optimizer after changing the model")
        if any(p.grad is None for p in self.params):
            return False
        self.moved = []
        for p, weight, grad in zip(self.params, self.weights.views, self.grads.views):
            if p.grad is not grad:
                grad[...] = p.grad
            if p.data is not weight:
                weight[...] = p.data
                self.moved.append((p, weight))
        return True

    def scatter(self):
        """After a flat update: copy the new values into every reassigned ``p.data``."""
        for p, weight in self.moved:
            p.data[...] = weight
        self.moved = []
