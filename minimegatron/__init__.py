"""minimegatron: data, pipeline and tensor parallelism you can read and check.

    import minimegatron as mm
    x = mm.Tensor(mm.xp.ones((2, 3)), requires_grad=True)
    (x * x).sum().backward()
"""
# Under `minimegatron run`: fork first, a waiter that records how this rank ends (reaper.py).
from minimegatron.runtime import reaper as _reaper

_reaper.reap_if_asked()

# Freed arrays stay in the heap: no page faults on every step (heap.py: 1.8x on a GPT step).
from minimegatron.runtime import heap as _heap  # noqa: E402

_heap.keep()

# Before NumPy loads its BLAS: 8 ranks on 2 cores must not each start 2 BLAS threads.
from minimegatron.runtime import threads as _threads  # noqa: E402

_threads.limit_blas_threads()
if _threads.world_size_from_env() > 1:   # started by mpirun: one failing rank aborts the job
    from minimegatron import comm as _comm
    _comm.install_abort_hook()

from minimegatron.backend import use_backend, xp, to_numpy, sync  # noqa: E402
from minimegatron.autodiff.function import Function, no_grad, enable_grad, is_grad_enabled
from minimegatron.autodiff.tensor import Tensor
from minimegatron.autodiff.ops import concatenate, split, where, embedding
from minimegatron import nn, optim
from minimegatron.autodiff import functional

__version__ = "0.1.0"
__all__ = ["use_backend", "xp", "to_numpy", "sync", "Function", "no_grad", "enable_grad",
           "is_grad_enabled", "Tensor", "concatenate", "split", "where", "embedding",
           "functional", "nn", "optim"]
