"""minimegatron: data, pipeline and tensor parallelism you can read and check.

    import minimegatron as mm
    x = mm.Tensor(mm.xp.ones((2, 3)), requires_grad=True)
    (x * x).sum().backward()
"""
from minimegatron.backend import use_backend, xp, to_numpy, sync
from minimegatron.function import Function, no_grad, enable_grad, is_grad_enabled
from minimegatron.tensor import Tensor
from minimegatron.ops import concatenate, split, where, embedding
from minimegatron import functional, nn, optim

__version__ = "0.1.0"
__all__ = ["use_backend", "xp", "to_numpy", "sync", "Function", "no_grad", "enable_grad",
           "is_grad_enabled", "Tensor", "concatenate", "split", "where", "embedding",
           "functional", "nn", "optim"]
