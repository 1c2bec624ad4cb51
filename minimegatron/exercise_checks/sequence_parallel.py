"""Check for exercise 6.2: sequence parallelism's g-bar, on the tp groups of a 2 x 2 grid.

The grader runs it on 4 ranks, on the tp groups [0, 1] and [2, 3]: each group
is a strict subset of the world, so a reduce-scatter over the world sums 4
ranks and splits in 4, and fails. First small integers: rank r holds
(r + 1) * X with X (1, 4, 2), and g-bar must give rank r tokens 2r, 2r + 1 of
3X (the sum), shape (1, 2, 2); its backward all-gathers. Then the adjoint
identity of every sequence-parallel operator and ParallelGPT with
sequence_parallel against one process (loss, gradients, weights after AdamW).
"""
import dataclasses

import numpy as np

from minimegatron.backend import asarray
from minimegatron.checks.tensor import _adjoint, check_gpt
from minimegatron.demo import VERIFY_CONFIG
from minimegatron.exercise_checks.common import CheckFailed, expect_close
from minimegatron.i18n import text
from minimegatron.parallel.tensor_parallel.sequence import reduce_scatter_to_sequence
from minimegatron.tensor import Tensor

X = np.arange(1.0, 9.0).reshape(1, 4, 2)          # (B, T, D) = (1, 4, 2)
TOL = 1e-12


def check_reduce_scatter(group):
    """g-bar: reduce-scatter along the sequence forward, all-gather backward."""
    if group.size != 2:
        raise CheckFailed(text("tp.need_two", size=group.size))
    r = group.rank
    x = Tensor(asarray(X * (r + 1)), requires_grad=True)
    y = reduce_scatter_to_sequence(x, group)
    want = 3 * X[:, 2 * r:2 * r + 2]                                  # (1, 2, 2)
    expect_close(text("sp.forward"), y.data, want, rank=r)
    (y * float(r + 1)).sum().backward()            # rank q's upstream gradient: q + 1
    grad = np.concatenate([np.full((1, 2, 2), 1.0), np.full((1, 2, 2), 2.0)], axis=1)
    expect_close(text("sp.backward"), x.grad, grad, rank=r)
    rng = np.random.default_rng([5, r])
    err, _ = _adjoint(reduce_scatter_to_sequence, asarray(rng.standard_normal((2, 4, 3))),
                      asarray(rng.standard_normal((2, 2, 3))), True, True, group)
    if not err < TOL:
        raise CheckFailed(text("tp.too_large", rank=r, what="reduce_scatter_to_sequence",
                               key="adjoint", error=err, tol=TOL, why=text("sp.adjoint")))
    config = dataclasses.replace(VERIFY_CONFIG, n_layer=2)
    diffs = check_gpt(group, config, steps=2, batch_size=2, sequence_parallel=True)
    for key, tol in (("loss", 1e-10), ("grad", 1e-10), ("weight", 1e-9)):
        if not diffs[key] < tol:
            raise CheckFailed(text("tp.too_large", rank=r, what=text("sp.gpt"), key=key,
                                   error=diffs[key], tol=tol, why=text("sp.gpt_why")))
    return text("sp.pass", loss=diffs["loss"], grad=diffs["grad"])


CHECKS = {"6.2": check_reduce_scatter}
