"""Tensor: an xp array that remembers how it was made, so gradients can flow back.

    x = Tensor(xp.ones((2, 3)), requires_grad=True)
    y = (x * 2).sum()
    y.backward()          # x.grad == 2 everywhere

Backward is reverse-mode autodiff over the recorded Nodes (function.py):

1. Topologically sort the Nodes that lead to this tensor (depth-first).
2. Walk them in reverse order. Each Node's ``backward`` turns the gradient of
   its outputs into gradients of its inputs (the chain rule,
   dL/dx = dL/dy . dy/dx).
3. A gradient that reaches a leaf (a Tensor made by the user, such as a
   Parameter) is summed over every path. Once the last path has arrived, it is
   added to ``leaf.grad`` and the leaf's grad hooks fire. DistributedDataParallel
   uses that moment to start a bucket's all-reduce while backward goes on.
   A leaf's first gradient is taken as it is, without a copy, unless another
   leaf already holds that memory, the caller passed it in, or it is a
   read-only or strided view (``_accumulate_leaf``). So a backward must
   return arrays it does not use again (function.py says so). A leaf with a
   ``grad_view`` (a slice of a flat gradient buffer, minimegatron/optim/flat.py)
   has its gradient written or added into that view instead.

Gradients accumulate across ``backward`` calls until ``zero_grad``. Saved
arrays are freed after use, so each graph can be walked once.

``backward(grad, defer_weight_grads=True)`` splits the walk in two for
zero-bubble pipelines: the gradients of every input but the weights now (B),
the weights' (Parameters, ``is_weight``) later, when the returned
``WeightGradients`` is called (W). split_backward.py says how.
"""
from minimegatron.backend import get_backend, xp, to_numpy
from minimegatron.autodiff.function import no_grad


class Tensor:
    __array_priority__ = 100  # so ndarray + Tensor calls Tensor.__radd__

    def __init__(self, data, requires_grad=False, dtype=None):
        if isinstance(data, Tensor):
            data = data.data
        if dtype is not None or type(data) is not get_backend().ndarray:
            data = xp.asarray(data, dtype=dtype)     # a list, a scalar, or a new dtype
        self.data = data
        self.grad = None
        self.requires_grad = requires_grad
        self._node = None      # the Node that produced this tensor (None for a leaf)
        self._index = 0        # which output of that Node
        self._grad_hooks = []
        self.grad_view = None  # an array gradients are written into (minimegatron/optim/flat.py)

    is_weight = False          # a Parameter's gradient is a weight gradient (split_backward.py)

    # ---- array-like basics -------------------------------------------------
    shape = property(lambda self: self.data.shape)
    dtype = property(lambda self: self.data.dtype)
    ndim = property(lambda self: self.data.ndim)
    size = property(lambda self: self.data.size)
    T = property(lambda self: self.transpose())

    def __len__(self):
        return len(self.data)

    def __repr__(self):
        grad = ", requires_grad=True" if self.requires_grad else ""
        return f"Tensor({to_numpy(self.data)!r}{grad})"

    def numpy(self):
        return to_numpy(self.data)

    def item(self):
        return self.data.item()

    def detach(self):
        """The same data, cut off from the graph."""
        return Tensor(self.data)

    def register_grad_hook(self, hook):
        """Call ``hook(tensor)`` each time backward has finished this leaf's grad."""
        self._grad_hooks.append(hook)

    # ---- operators (each one is a primitive in ops.py) ---------------------
    def __add__(self, other): return ops.Add.apply(self, other)
    def __radd__(self, other): return ops.Add.apply(other, self)
    def __sub__(self, other): return ops.Sub.apply(self, other)
    def __rsub__(self, other): return ops.Sub.apply(other, self)
    def __mul__(self, other): return ops.Mul.apply(self, other)
    def __rmul__(self, other): return ops.Mul.apply(other, self)
    def __truediv__(self, other): return ops.Div.apply(self, other)
    def __rtruediv__(self, other): return ops.Div.apply(other, self)
    def __neg__(self): return ops.Neg.apply(self)
    def __pow__(self, exponent): return ops.Pow.apply(self, exponent)
    def __matmul__(self, other):
        if getattr(other, "fp8", False):          # a weight marked by fp8.mark: scaled fp8
            return fp8.fp8_matmul(self, other, other.fp8_agree)
        return ops.MatMul.apply(self, other)

    def __rmatmul__(self, other): return ops.MatMul.apply(other, self)
    def __getitem__(self, index): return ops.GetItem.apply(self, index=index)

    # ---- methods with NumPy's names and arguments --------------------------
    def sum(self, axis=None, keepdims=False):
        return ops.Sum.apply(self, axis=axis, keepdims=keepdims)

    def mean(self, axis=None, keepdims=False):
        return ops.Mean.apply(self, axis=axis, keepdims=keepdims)

    def max(self, axis=None, keepdims=False):
        return ops.Max.apply(self, axis=axis, keepdims=keepdims)

    def exp(self): return ops.Exp.apply(self)
    def log(self): return ops.Log.apply(self)
    def tanh(self): return ops.Tanh.apply(self)
    def sqrt(self): return ops.Sqrt.apply(self)

    def reshape(self, *shape):
        shape = shape[0] if len(shape) == 1 and isinstance(shape[0], (tuple, list)) else shape
        return ops.Reshape.apply(self, shape=tuple(shape))

    def transpose(self, *axes):
        axes = axes[0] if len(axes) == 1 and isinstance(axes[0], (tuple, list)) else axes
        return ops.Transpose.apply(self, axes=tuple(axes) if axes else None)

    # ---- backward ------------------------------------------------------------
    def backward(self, grad=None, defer_weight_grads=False):
        """Accumulate dself/dleaf into ``leaf.grad`` for every leaf that needs it.

        ``defer_weight_grads=True``: every gradient but the weights' now (B); returns
        a WeightGradients whose call adds the weights' gradients (W, split_backward.py).
        """
        if not self.requires_grad:
            raise RuntimeError("backward() on a tensor that does not require grad")
        if grad is None:
            if self.data.size != 1:
                raise RuntimeError(
                    f"backward() on a non-scalar tensor of shape {self.shape} needs "
                    "an explicit gradient: call t.backward(grad) with grad of that shape")
            grad = xp.ones_like(self.data)
        grad = unwrap(grad)
        given = {id(_owner(grad))}    # memory already held elsewhere: the caller's seed
        if self._node is None:
            _accumulate_leaf(self, grad, given)
            return WeightGradients({}, given) if defer_weight_grads else None
        order, leaf_uses = _topological_order(self._node)
        grads = {self._node: [None] * len(self._node.out_meta)}
        grads[self._node][self._index] = grad
        pending = {}  # id(leaf) -> summed gradient still waiting for other paths
        weights = WeightGradients(leaf_uses, given) if defer_weight_grads else None
        with no_grad():
            for node in reversed(order):
                grad_outs = [g if g is not None else xp.zeros(shape, dtype)
                             for g, (shape, dtype) in zip(grads.pop(node), node.out_meta)]
                if node.ctx is None:
                    raise RuntimeError("backward through a graph a second time: "
                                       "its saved arrays were already freed")
                if weights is None:
                    grad_ins = node.fn.backward(node.ctx, *grad_outs)
                else:                             # B now; the weights' half recorded for W
                    grad_ins = weights.input_half(node, grad_outs)
                if not isinstance(grad_ins, tuple):
                    grad_ins = (grad_ins,)
                for t, g in zip(node.inputs, grad_ins):
                    if t is None or g is None:
                        continue
                    if g.dtype != t.data.dtype and t.data.dtype.kind == "V":
                        g = g.astype(t.data.dtype)            # bf16 in, bf16 gradient
                    if t._node is not None:
                        slots = grads.setdefault(t._node, [None] * len(t._node.out_meta))
                        slots[t._index] = g if slots[t._index] is None else slots[t._index] + g
                        continue
                    deliver_to_leaf(t, g, pending, leaf_uses, given)
                node.ctx, node.inputs = None, ()
        return weights


def unwrap(a):
    """The raw array of a Tensor; anything else unchanged."""
    return a.data if isinstance(a, Tensor) else a


def _topological_order(root):
    """Nodes reachable from ``root``, inputs before outputs; and how often each leaf is used."""
    order, expanded_ids, leaf_uses = [], set(), {}
    stack = [(root, False)]
    while stack:
        node, done = stack.pop()
        if done:                      # every input of node is already in order
            order.append(node)
            continue
        if id(node) in expanded_ids:  # reached again by another path
            continue
        expanded_ids.add(id(node))
        stack.append((node, True))
        for t in node.inputs:
            if t is None:
                continue
            if t._node is None:
                leaf_uses.setdefault(id(t), [t, 0])[1] += 1
            elif id(t._node) not in expanded_ids:
                stack.append((t._node, False))
    return order, leaf_uses


def deliver_to_leaf(leaf, grad, pending, leaf_uses, given):
    """Add one path's gradient; once every path has arrived, into ``leaf.grad``."""
    key = id(leaf)
    pending[key] = grad if key not in pending else pending[key] + grad
    leaf_uses[key][1] -= 1
    if leaf_uses[key][1] == 0:
        _accumulate_leaf(leaf, pending.pop(key), given)


def _owner(a):
    """The array that owns a view's memory (the array itself if it owns it)."""
    return a if getattr(a, "base", None) is None else a.base


def _accumulate_leaf(leaf, grad, given):
    """leaf.grad += grad, then the hooks. ``given``: ids of memory other leaves hold.

    The first gradient of a leaf is stored as it is, with no copy, when this
    leaf will be its only holder: its memory (``_owner``) was not handed to
    another leaf or passed in by the caller, and it is a writable contiguous
    array (not a broadcast view). Otherwise it is copied, so an in-place
    change of one ``.grad`` (a clip, an unscale) never reaches another.
    With ``leaf.grad_view`` set, the sum is written into that view and
    ``leaf.grad`` is the view (no array is allocated for it).
    """
    if grad.shape != leaf.shape:
        raise RuntimeError(f"gradient of shape {grad.shape} for a leaf of shape {leaf.shape}")
    view = leaf.grad_view
    if view is not None:
        if leaf.grad is view:
            view += grad                                     # accumulate in place
        else:
            view[...] = grad if leaf.grad is None else leaf.grad + grad
        leaf.grad = view
    elif leaf.grad is not None:
        leaf.grad = leaf.grad + grad
    else:
        owner = _owner(grad)
        shared = id(owner) in given or not grad.flags.c_contiguous or not getattr(
            grad.flags, "writeable", True)
        leaf.grad = grad.copy() if shared else grad
        given.add(id(owner))
    for hook in leaf._grad_hooks:
        hook(leaf)


from minimegatron.autodiff import ops  # noqa: E402  (ops imports Tensor; bound here at the end)
from minimegatron.autodiff import fp8  # noqa: E402
from minimegatron.autodiff.split_backward import WeightGradients  # noqa: E402
