"""A backward split in two: the input gradients now (B), the weight gradients later (W).

The idea (zero-bubble pipelines, Qi et al. 2024). An op with a weight,
Y = f(X, A) with A a Parameter, has two gradients:

    B   dL/dX = (dL/dY) (dY/dX)     the stage before waits for it
    W   dL/dA = (dL/dY) (dY/dA)     nobody waits: only the optimizer step needs it

A Linear Y = X A (ops.MatMul) has B = dY A^T and W = X^T dY. Both need only
what the forward saved (X, A) and dL/dY, so W can run later, from those.

How the engine does it. ``loss.backward(defer_weight_grads=True)`` walks the
graph as usual (tensor.py). At a node none of whose inputs is a weight it calls
``backward`` once, as always. At a node with a weight input (a leaf Tensor with
``is_weight``, i.e. a Parameter) it calls the op's ``backward`` with
``ctx.needs_input_grad`` masked to the other inputs: the B half. It records
(the op, its context, dL/dY) and keeps them alive. Calling the returned
``WeightGradients`` calls each recorded ``backward`` again, masked to the weights:
the W half. So an op declares its two halves by computing each gradient only
when ``ctx.needs_input_grad`` asks for it (MatMul, Add, Mul, LayerNorm do;
an op that computes every gradient anyway is still right, only slower).

    weights = out.backward(grad_out, defer_weight_grads=True)  # B: .grad of activations
    ...                                                        # send dL/dX on, run more F, B
    weights()                                                  # W: param.grad += dL/dA

The numbers equal the whole backward bit for bit: each gradient is the same
expression, and W visits the recorded ops in the order the whole backward
visits them, so every weight used twice sums its paths in the same order
(tests/test_split_backward.py). Memory: a micro-batch's saved inputs and
its dL/dY of every op with a weight stay alive until its W.

Not split: an op whose weight input is itself computed (``A.T``, a cast) sees a
non-leaf there and computes its gradient in B; a recomputed block
(recompute.py) runs its whole inner backward in B.
"""
from minimegatron.autodiff.function import no_grad


def is_weight(t):
    """A leaf Tensor whose gradient is a weight gradient (a Parameter); None is not."""
    return t is not None and t._node is None and t.is_weight


def masked_backward(fn, ctx, grad_outs, mask):
    """``fn.backward`` with ``ctx.needs_input_grad`` = ``mask``; a gradient where mask is True."""
    needs = ctx.needs_input_grad
    ctx.needs_input_grad = mask
    try:
        grads = fn.backward(ctx, *grad_outs)
    finally:
        ctx.needs_input_grad = needs
    grads = grads if isinstance(grads, tuple) else (grads,)
    return tuple(g if wanted else None for g, wanted in zip(grads, mask))


class WeightGradients:
    """The W half of one backward: call it (once) to add every weight's gradient."""

    def __init__(self, leaf_uses, given):
        self.steps = []               # (fn, ctx, inputs, grad_outs, weight mask), backward order
        self.leaf_uses, self.given = leaf_uses, given     # shared with the B walk (tensor.py)
        self.done = False

    def input_half(self, node, grad_outs):
        """B: the gradients of ``node``'s inputs that are not weights; records the W half.

        For a Linear's Y = X A: B computes dL/dX = dY A^T now, and records what W needs
        to compute dL/dA = X^T dY later (the op, its ctx, its inputs, dY, and which
        inputs are weights). An op with no weight runs its whole backward now.
        """
        # EXERCISE 9.1 begin
        weights = tuple(is_weight(t) for t in node.inputs)
        if True not in weights:
            return node.fn.backward(node.ctx, *grad_outs)
        self.steps.append((node.fn, node.ctx, node.inputs, grad_outs, weights))
        others = tuple(need and not w for need, w in zip(node.ctx.needs_input_grad, weights))
        if True not in others:                            # only weights here: all of it is W
            return (None,) * len(weights)
        return masked_backward(node.fn, node.ctx, grad_outs, others)
        # EXERCISE 9.1 end

    def __len__(self):
        return len(self.steps)

    def __call__(self):
        """W: each recorded op's weight gradients, added into the weights' ``.grad``."""
        if self.done:
            raise RuntimeError("these weight gradients were already computed (W runs once)")
        from minimegatron.autodiff.tensor import deliver_to_leaf
        pending = {}                                      # id(weight) -> sum of its paths so far
        with no_grad():
            for fn, ctx, inputs, grad_outs, weights in self.steps:
                for t, g in zip(inputs, masked_backward(fn, ctx, grad_outs, weights)):
                    if g is not None:
                        deliver_to_leaf(t, g, pending, self.leaf_uses, self.given)
        self.steps, self.done = [], True                  # free the saved arrays
