"""FlatBuffer: all of a module's gradients in ONE contiguous array, each ``.grad`` a view.

As Megatron's DDP keeps them (its "grad buffer"): the P values of the
parameters p_0, p_1, ... (in the order given) lie back to back in one array,

    data = [ g_0 (size n_0) | g_1 (n_1) | ... ]          # (P,),  P = sum_i n_i
    offsets[i] = n_0 + ... + n_{i-1}
    views[i]   = data[offsets[i] : offsets[i+1]].reshape(p_i.shape)   # no copy

and ``p_i.grad_view = views[i]``: backward then writes (first gradient) or
adds (the next ones) each gradient INTO its view and sets ``p_i.grad`` to
that view (``tensor._accumulate_leaf``). Parameters that are neighbours in the
order are neighbours in memory, so DDP's bucket is the slice
``data[offsets[first] : offsets[last]]`` and is all-reduced in place: no
gradient is packed into a new array before the all-reduce nor unpacked after.

``optimizer.zero_grad()`` still sets ``p.grad = None`` (the buffer stays and
the next gradient overwrites the view); ``zero()`` fills the buffer with 0.
Memory: P * itemsize bytes, allocated once; the same as the gradients alone.
"""
from minimegatron.backend import xp


class FlatBuffer:
    """``FlatBuffer(params, dtype)``: one (P,) array of ``dtype``; ``p.grad`` views into it."""

    def __init__(self, params, dtype):
        self.params, self.dtype = list(params), xp.dtype(dtype)
        self.offsets = [0]
        for p in self.params:
            self.offsets.append(self.offsets[-1] + p.size)
        self.data = xp.zeros(self.offsets[-1], self.dtype)              # (P,)
        self.views = [self.data[a:b].reshape(p.shape)                    # no copy
                      for p, a, b in zip(self.params, self.offsets, self.offsets[1:])]

    def attach(self):
        """Make every parameter's gradient land in its view (a gradient already held moves in)."""
        for p, view in zip(self.params, self.views):
            if p.grad is not None:
                view[...] = p.grad
                p.grad = view
            p.grad_view = view

    def slice(self, first, last):
        """The contiguous values of params[first:last]: a view, (offsets[last]-offsets[first],)."""
        return self.data[self.offsets[first]:self.offsets[last]]

    def zero(self):
        self.data[...] = 0
