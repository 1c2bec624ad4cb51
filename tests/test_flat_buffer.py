"""DDP's flat gradient buffer (minimegatron/optim/flat.py): one array, views, no copies.

Single process: FlatBuffer's views and the ``grad_view`` hook of
``tensor._accumulate_leaf`` (write, then accumulate in place). On 2 and 4
real ranks (tests/workers/flatbuf_checks.py), dp groups of N/2 ranks, strictly
smaller than the world: DDP equals one process (loss, grads, weights after 5
AdamW steps, 1e-10 in float64), every ``.grad`` is a view of the buffer, each
bucket is all-reduced in place as a slice of it, and ``finish()`` allocates
far less than the buffer (the old pack/unpack allocated it twice).
"""
import numpy as np
import pytest

from mpi_harness import run_mpi

from minimegatron.nn import Linear
from minimegatron.optim.flat import FlatBuffer
from minimegatron.autodiff.tensor import Tensor

TOL = 1e-10


def test_views_share_one_array_and_backward_writes_into_them():
    layer = Linear(3, 2, dtype="float64")
    params = layer.parameters()
    flat = FlatBuffer(params, "float64")
    flat.attach()
    x = Tensor(np.arange(6.0).reshape(2, 3))
    layer(x).sum().backward()
    first = [p.grad.copy() for p in params]
    assert all(p.grad is v and np.shares_memory(p.grad, flat.data)
               for p, v in zip(params, flat.views))
    assert flat.data.size == sum(p.size for p in params)
    np.testing.assert_array_equal(np.concatenate([g.ravel() for g in first]), flat.data)
    layer(x).sum().backward()                               # accumulates in place
    for p, g in zip(params, first):
        np.testing.assert_array_equal(p.grad, 2 * g)
        assert p.grad is p.grad_view
    for p in params:                                        # optimizer.zero_grad
        p.grad = None
    layer(x).sum().backward()                               # overwrites the view
    for p, g in zip(params, first):
        np.testing.assert_array_equal(p.grad, g)
    flat.zero()
    assert not flat.data.any() and not params[0].grad.any()


@pytest.fixture(scope="module", params=[2, 4])
def launch(request):
    return request.param, run_mpi(request.param, "workers/flatbuf_checks.py:check_all",
                                  timeout=240)


def test_flat_ddp_equals_one_process_on_a_subgroup(launch):
    nprocs, results = launch
    for rank, res in enumerate(results):
        assert res["group_size"] == nprocs // 2 < nprocs
        for name in ("flat_4k", "flat_no_overlap", "flat_accumulate"):
            r = res[name]
            assert max(r["loss"], r["grad"], r["weight"]) < TOL, (rank, name, r)
            assert r["buckets"] > 1


@pytest.mark.parametrize("facts", ["facts64", "facts16"])
def test_grads_are_views_and_buckets_reduce_in_place(launch, facts):
    _, results = launch
    for rank, res in enumerate(results):
        f = res[facts]
        assert f["grads_are_views"], (rank, f)
        assert f["calls"] == f["buckets"] > 1, (rank, f)
        assert f["slices_in_place"] and f["slices_cover_buffer"], (rank, f)
        assert f["finish_peak_bytes"] < f["buffer_bytes"] / 4, (rank, f)
    assert results[0]["facts16"]["grad_dtype"] == "float16"
    assert results[0]["facts16"]["reduce_dtype"] == "float32"    # reduce_dtype default


@pytest.mark.parametrize("precision", ["float64", "float16"])
def test_the_bound_all_reduce_gives_bitwise_the_gradients_of_exercise_4_1(precision):
    """DDP's buckets all-reduced by ``comm.iall_reduce`` (the readable line of exercise 4.1)
    and by the all-reduce bound once (``bound=True``, bound.py): bitwise equal gradients
    and weights after 2 AdamW steps, on dp groups of 2 of 4 ranks."""
    config = "HALF_CONFIG" if precision == "float16" else "SMALL_CONFIG"
    results = run_mpi(4, "workers/flatbuf_checks.py:bound_equals_readable_named", [config],
                      timeout=240)
    for rank, res in enumerate(results):
        assert res["buckets"] > 1 and res["grads_equal"] and res["weights_equal"], (rank, res)
