"""Numeric guards on 4 ranks (tests/test_guards.py): every rank reports the error it raised.

Each case returns this rank's error text (None if nothing was raised). A case in
which only some ranks raised would hang the others in a collective, and the
harness's timeout would fail the test: so finishing at all shows the error was
raised on every rank together.
"""
from dataclasses import replace

import numpy as np
from mpi4py import MPI

from minimegatron import comm, nn
from minimegatron.backend import asarray
from minimegatron.data.demo import SMALL_CONFIG, batch, make_optimizer
from minimegatron.autodiff.functional import cross_entropy
from minimegatron.autodiff.guards import NonFiniteError
from minimegatron.parallel.grid import ProcessGrid
from minimegatron.parallel.tensor_parallel import (VocabParallelEmbedding,
                                                   vocab_parallel_cross_entropy)
from minimegatron.parallel.threed import Trainer3D
from minimegatron.autodiff.tensor import Tensor

CONFIG = replace(SMALL_CONFIG, vocab_size=14)      # padded to 16 under tp = 2 or 4


def _error(fn, kinds=(ValueError, NonFiniteError)):
    try:
        fn()
    except kinds as error:
        return f"{type(error).__name__}: {error}"
    return None


def ids_cases(group):
    """Out-of-range ids and targets: vocab-parallel text vs serial text, on every rank."""
    vocab, dim = 16, 4
    wte = VocabParallelEmbedding(vocab, dim, group)
    logits = Tensor(asarray(np.zeros((2, 3, vocab // group.size))), requires_grad=True)
    serial_wte = nn.Embedding(vocab, dim)
    out = {}
    for name, bad in (("too_big", vocab), ("minus_one", -1)):
        ids = asarray(np.array([[0, 1, bad], [2, 3, 4]]))
        out[f"embed_{name}"] = _error(lambda: wte(ids))
        out[f"serial_embed_{name}"] = _error(lambda: serial_wte(ids))
        out[f"ce_{name}"] = _error(lambda: vocab_parallel_cross_entropy(
            logits, ids, group, group.rank * (vocab // group.size), vocab))
        out[f"serial_ce_{name}"] = _error(lambda: cross_entropy(
            Tensor(asarray(np.zeros((2, 3, vocab)))), ids))
    ok = asarray(np.array([[0, 15, 7]]))
    out["in_range_ok"] = float(comm.all_reduce(wte(ok).data.sum(), group).sum()) == 0.0
    return out


def _poison_first_weight(trainer):
    """A NaN in one LayerNorm weight (used by every token) on world rank 0 only."""
    if MPI.COMM_WORLD.Get_rank() == 0:
        name, p = next((n, p) for n, p in trainer.named_parameters() if ".ln" in n)
        p.data.flat[0] = np.nan


def nan_weight_case(dims, check_finite=True, **options):
    """One good step, then a NaN weight on rank 0: the next step's error on this rank."""
    trainer = Trainer3D(CONFIG, ProcessGrid(*dims), check_finite=check_finite,
                        optimizer_fn=make_optimizer, **options)
    trainer.train_step(*batch(CONFIG, 4, 0))
    _poison_first_weight(trainer)
    error = _error(lambda: trainer.train_step(*batch(CONFIG, 4, 1)))
    if check_finite:
        return error
    loss = trainer.train_step(*batch(CONFIG, 4, 2))       # opted out: trains on, NaN loss
    return {"error": error, "loss_is_nan": bool(np.isnan(loss))}


def zero_grad_case():
    """ZeRO-1 calls update() itself: a NaN in every rank's gradient slice stops step()."""
    trainer = Trainer3D(CONFIG, ProcessGrid(2, 1, 2), zero_stage=1, optimizer_fn=make_optimizer)
    trainer.forward_backward(*batch(CONFIG, 4, 0))
    trainer.optimizer.grad_shard[0] = np.inf
    return _error(trainer.step)


def bad_batch_cases():
    """Ids or targets outside the vocabulary, and a batch of 0, with pp = 2 (no hang)."""
    trainer = Trainer3D(CONFIG, ProcessGrid(1, 2, 2), optimizer_fn=make_optimizer)
    x, y = batch(CONFIG, 4, 0)
    bad_x, bad_y = x.copy(), y.copy()
    bad_x[1, 2], bad_y[0, 0] = CONFIG.vocab_size, -1
    return {"ids": _error(lambda: trainer.train_step(bad_x, y)),
            "targets": _error(lambda: trainer.train_step(x, bad_y)),
            "empty": _error(lambda: trainer.train_step(x[:0], y[:0])),
            "still_works": trainer.train_step(x, y)}


def check_all():
    world = comm.world()
    return {"rank": world.rank,
            "ids": ids_cases(world),
            "nan_pp_tp": nan_weight_case((1, 2, 2)),
            "nan_zero1": nan_weight_case((1, 2, 2), zero_stage=1),
            "nan_opted_out": nan_weight_case((2, 1, 2), check_finite=False),
            "zero_grad": zero_grad_case(),
            "batch": bad_batch_cases()}
