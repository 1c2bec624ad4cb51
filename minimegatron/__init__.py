"""minimegatron: data, pipeline and tensor parallelism you can read and check.

    import minimegatron as mm
    x = mm.Tensor(mm.xp.ones((2, 3)), requires_grad=True)
    (x * x).sum().backward()
"""
# Importing starts nothing (no thread, handler, child process or hook). A rank is set up
# by one explicit call, minimegatron.runtime.setup(): `minimegatron run` and every
# tutorial make it; a script of your own under plain mpirun makes it first.
from minimegatron.backend import use_backend, xp, to_numpy, sync
from minimegatron.autodiff.function import Function, no_grad, enable_grad, is_grad_enabled
from minimegatron.autodiff.tensor import Tensor
from minimegatron.autodiff.ops import concatenate, split, where, embedding
from minimegatron import nn, optim
from minimegatron.autodiff import functional

__version__ = "0.1.0"
__all__ = ["use_backend", "xp", "to_numpy", "sync", "Function", "no_grad", "enable_grad",
           "is_grad_enabled", "Tensor", "concatenate", "split", "where", "embedding",
           "functional", "nn", "optim"]
