"""Activation recomputation: keep a block's input, recompute its inside during backward.

The idea. Backward needs the arrays forward saved (inputs of every matmul,
softmax outputs, GeLU inputs...). For a transformer block of width D that
is about 20 values per token, most of them 4D wide inside the MLP. A
recomputed block keeps only its input x (D per token) and throws the rest
away; backward runs the block's forward a second time, with the graph on,
and backpropagates through that fresh graph:

    forward:   y = f(x) under no_grad          saved: x only
    backward:  y' = f(x) with the graph         (one extra forward per block)
               y'.backward(grad_y)  ->  params' .grad += dL/dW,  return dL/dx

Cost: one more forward per step (about +33% compute). Memory per block drops
from "everything inside" to "its input", so a pipeline stage holding several
micro-batches in flight (GPipe: all M) can afford more of them. The
gradients are the same arrays, computed by the same ops in the same order.

Randomness. A recompute must draw the same dropout masks as the first
forward, or the gradient belongs to a different network. ``recompute``
saves every Dropout module's Generator state (``rng.bit_generator.state``)
before the forward, rewinds to it for the recompute, then puts the stream
back where it was, so training continues as if nothing was recomputed.
(A tensor-parallel RNG tracker must do the same for its streams.)
Logs: a module that logs a value per forward (an MoE layer's ``aux_log``, its
aux loss, and ``load_log``, its load for the expert bias) would log it twice; the
recompute cuts each log back to its length before, so each is counted once.

No communication of its own (collectives inside ``fn``, e.g. tensor parallel
all-reduces, simply run again during the recompute). Used by the pipeline:

    minimegatron run -n 4 tutorials/07_pipeline.py
"""
from minimegatron.autodiff.function import Function, enable_grad, is_grad_enabled, no_grad
from minimegatron.nn.module import Module
from minimegatron.autodiff.tensor import Tensor


def _dropout_rngs(fn):
    """The numpy Generators of every module inside ``fn`` that draws masks (Dropout)."""
    owner = fn if isinstance(fn, Module) else getattr(fn, "__self__", None)
    if not isinstance(owner, Module):
        return []
    return [m.rng for _, m in owner.named_modules() if hasattr(getattr(m, "rng", None),
                                                                "bit_generator")]


def _logs(fn):
    """The per-forward logs (lists named ``aux_log`` or ``load_log``) of every module
    inside ``fn``."""
    owner = fn if isinstance(fn, Module) else getattr(fn, "__self__", None)
    if not isinstance(owner, Module):
        return []
    return [getattr(m, name) for _, m in owner.named_modules()
            for name in ("aux_log", "load_log") if isinstance(getattr(m, name, None), list)]


def _wrap(raw_inputs, was_tensor, needs_grad):
    """The inputs as fn got them: Tensors again (a fresh leaf where a gradient is wanted)."""
    return [Tensor(x, requires_grad=grad) if tensor else x
            for x, tensor, grad in zip(raw_inputs, was_tensor, needs_grad)]


class Recompute(Function):
    """y = fn(*inputs) without a graph; backward recomputes fn with one and backpropagates."""

    @staticmethod
    def forward(ctx, *inputs, fn, was_tensor):
        ctx.fn, ctx.was_tensor, ctx.rngs = fn, was_tensor, _dropout_rngs(fn)
        ctx.rng_states = [rng.bit_generator.state for rng in ctx.rngs]
        ctx.save_for_backward(*inputs)                  # the only activation kept
        with no_grad():
            out = fn(*_wrap(inputs, was_tensor, [False] * len(inputs)))
        if not isinstance(out, Tensor):
            raise TypeError("recompute(fn, ...) needs fn to return one Tensor")
        return out.data

    @staticmethod
    def backward(ctx, grad_out):
        now = [rng.bit_generator.state for rng in ctx.rngs]
        for rng, state in zip(ctx.rngs, ctx.rng_states):
            rng.bit_generator.state = state             # replay the same dropout masks
        inputs = _wrap(ctx.saved, ctx.was_tensor, ctx.needs_input_grad)
        logs = _logs(ctx.fn)
        lengths = [len(log) for log in logs]
        with enable_grad():
            out = ctx.fn(*inputs)                       # the recomputed graph
        for log, length in zip(logs, lengths):
            del log[length:]                            # logged at the first forward
        for rng, state in zip(ctx.rngs, now):
            rng.bit_generator.state = state             # the stream goes on unchanged
        out.backward(grad_out)                          # params: .grad += dL/dW
        return tuple(x.grad if isinstance(x, Tensor) else None for x in inputs)


def recompute(fn, *inputs):
    """``fn(*inputs)``, keeping only ``inputs`` for backward (see the module docstring).

    ``fn`` is a Module (e.g. a transformer Block) or a bound method of one,
    so its Dropout streams can be replayed. Without a graph to record (grad
    off, or no input needs a gradient) it just calls ``fn``: parameter
    gradients only flow through a recompute whose input carries a graph.
    """
    if not is_grad_enabled() or not any(isinstance(x, Tensor) and x.requires_grad
                                        for x in inputs):
        return fn(*inputs)
    return Recompute.apply(*inputs, fn=fn,
                            was_tensor=[isinstance(x, Tensor) for x in inputs])
