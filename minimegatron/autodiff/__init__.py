"""The engine, read first: Tensors that remember how they were made, and their backward.

backend.py (one level up) picks the arrays: xp = numpy or cupy.
function.py    Function (forward/backward on raw arrays), the graph, no_grad
tensor.py      Tensor: data, grad, and backward() in topological order
split_backward.py  backward(defer_weight_grads=True): input gradients now (B), weights' later (W)
ops.py         the primitive ops, one class each, the gradient in the docstring
fused.py       fused ops (softmax-cross-entropy, GeLU, layer norm) with hand backward
functional.py  composites built from the ops (no backward of their own)
gradcheck.py   central differences: the test every op passes
guards.py      stop on a non-finite number, reject an id out of range
"""
from minimegatron.autodiff.function import (  # noqa: F401
    Function, enable_grad, is_grad_enabled, no_grad)
from minimegatron.autodiff.tensor import Tensor  # noqa: F401
