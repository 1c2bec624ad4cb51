"""Activation memory of a pipeline stage, measured from the autograd graph.

``activation_bytes(tensors, exclude)`` walks every Node reachable from the
tensors and adds up each distinct array kept for backward (a view counts as
the memory it views, once), plus the tensors' own data; the parameters and
the input batch (``exclude``) are not activations. ``ActivationMeter`` is the
``memory_meter`` a PipelineEngine calls after each forward: it keeps the peak,
over the micro-batches in flight at once, of their summed activations. The
walk costs time, so the engine runs it outside the traced compute spans.

    minimegatron run -n 4 tutorials/07_pipeline.py      (prints the peak per stage)
"""
from minimegatron.autodiff.tensor import unwrap


def _root_array(a):
    """The array that owns a view's memory (a view costs nothing of its own)."""
    while getattr(a, "base", None) is not None and hasattr(a.base, "nbytes"):
        a = a.base
    return a


def _arrays_of(ctx):
    """Every array a Node's context keeps: saved arrays and array attributes (one level)."""
    for value in list(ctx.saved) + list(vars(ctx).values()):
        items = value if isinstance(value, (tuple, list)) else (value,)
        for item in items:
            if hasattr(item, "nbytes") and hasattr(item, "shape"):
                yield item


def activation_bytes(tensors, exclude=()):
    """Bytes of the arrays the autograd graphs behind ``tensors`` keep alive.

    Each distinct array saved for backward (views counted once, by the memory
    they view), plus the tensors' own data; arrays in ``exclude`` (the
    parameters) are not activations. This is what a micro-batch in flight
    costs a stage.
    """
    skip = {id(_root_array(unwrap(p))) for p in exclude}
    seen, total, stack, visited = set(), 0, [], set()

    def count(a):
        nonlocal total
        root = _root_array(a)
        if id(root) not in seen and id(root) not in skip:
            seen.add(id(root))
            total += root.nbytes
    for t in tensors:
        count(t.data)
        if t._node is not None:
            stack.append(t._node)
    while stack:
        node = stack.pop()
        if id(node) in visited or node.ctx is None:
            continue
        visited.add(id(node))
        for array in _arrays_of(node.ctx):
            count(array)
        stack.extend(t._node for t in node.inputs if t is not None and t._node is not None)
    return total


class ActivationMeter:
    """``PipelineEngine(..., memory_meter=ActivationMeter())``; ``peak``: the most bytes
    of activations the stage held at one moment since the meter was made."""

    def __init__(self):
        self.bytes_of, self.peak = {}, 0        # micro-batch -> its graph's bytes

    def forward_done(self, micro_batch, tensors, in_flight, exclude):
        """Micro-batch ``micro_batch`` ran forward; ``in_flight``: the ones held now."""
        self.bytes_of[micro_batch] = activation_bytes(tensors, exclude)
        self.peak = max(self.peak, sum(self.bytes_of.get(i, 0) for i in in_flight))
