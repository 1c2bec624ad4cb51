"""Numeric guards: stop on a non-finite number, reject an id outside its range.

Non-finite values. A NaN or inf in a loss, a gradient or a weight never heals:
AdamW turns one NaN gradient entry into a NaN weight, the next forward makes
every logit NaN, and training "finishes" with exit 0. So the optimizers
(optim/optimizers.py) check every gradient and weight before an update and raise
``NonFiniteError`` naming the step and the rank, and ``Trainer3D`` checks the
loss. ``all_finite(arrays)`` is the one test; mixed-precision loss scaling
(skip the step and halve the scale on overflow) reuses it.

Multi-rank: the error is raised where the bad number is seen, with no extra
collective. A loss is the same on every rank after its all-reduce, so a NaN
loss raises on every rank together; a gradient or weight is checked only by
the ranks that hold it (after DDP's averaging every dp replica holds the same
one), and the abort hook (minimegatron.runtime.setup) ends the whole job when the
error reaches the top of any rank.

Token ids. ``check_ids(ids, size, what)`` gives the same ValueError in the
serial and the vocab-parallel embedding and cross entropy: without it an id
>= V raises IndexError in serial, is silently masked under tensor
parallelism, and -1 wraps around to the last row.
"""
import sys

import numpy

from minimegatron.backend import backend_name, xp


class NonFiniteError(FloatingPointError):
    """A NaN or inf in a loss, gradient or weight; the message names the step and rank."""


def all_finite(arrays):
    """True if every element of every array is finite (no NaN, no +-inf).

    On a GPU the arrays are first laid end to end, so the test is a few kernels
    and one answer read back, not two kernels and a wait per array.
    """
    arrays = list(arrays)
    if not arrays:
        return True
    if backend_name() == "cupy":
        if len(arrays) == 1:                 # one flat buffer (optim/flat.py's flat mode): no copy
            return bool(xp.isfinite(arrays[0]).all())
        return bool(xp.isfinite(xp.concatenate([a.ravel() for a in arrays])).all())
    return all(bool(xp.isfinite(a).all()) for a in arrays)


def rank_name():
    """"rank r" (world rank) once MPI is initialised, else "serial"; never imports mpi4py."""
    mpi = sys.modules.get("mpi4py.MPI")
    if mpi is not None and mpi.Is_initialized() and not mpi.Is_finalized():
        return f"rank {mpi.COMM_WORLD.Get_rank()}"
    return "serial"


def where():
    """"on rank r", or "in a serial run"."""
    rank = rank_name()
    return "in a serial run" if rank == "serial" else f"on {rank}"


def check_finite(what, arrays, step):
    """NonFiniteError "non-finite {what} at step {step} on rank r" unless all finite."""
    if not all_finite(arrays):
        rank = rank_name()
        where = "in a serial run" if rank == "serial" else f"on {rank}"
        raise NonFiniteError(f"non-finite {what} at step {step} {where} "
                             "(pass check_finite=False to train on)")


def check_named(what, named_arrays, step=None, note=""):
    """NonFiniteError naming the first (name, array) of ``named_arrays`` that is not finite:
    "non-finite weight 'h.0.attn.qkv.weight' at step 3 on rank 1" + ``note``."""
    for name, array in named_arrays:
        if not all_finite([array]):
            at = "" if step is None else f" at step {step}"
            raise NonFiniteError(f"non-finite {what} {name!r}{at} {where()}{note}")


def check_targets(targets, size):
    """check_ids for a loss's targets, which must also be non-empty (a batch of 0: ValueError)."""
    if getattr(targets, "size", 1) == 0:
        raise ValueError("the loss got no targets (an empty batch): batch and seq_len "
                         "must be >= 1")
    check_ids(targets, size, "target id")


def check_ids(ids, size, what="token id"):
    """ValueError unless every integer in ``ids`` lies in [0, size); the same text everywhere."""
    if not hasattr(ids, "min"):
        ids = numpy.asarray(ids)                     # a list of ids
    if ids.size == 0:
        return
    low, high = int(ids.min()), int(ids.max())
    if low < 0 or high >= size:
        bad = low if low < 0 else high
        raise ValueError(f"{what} {bad} is outside the vocabulary [0, {size})")
