"""The watched arrays of the lesson checks (exercise_checks/watched.py): products counted
once each, a float64 step on float32 data seen even when cast back, right float32 work
not flagged. One process, no grader."""
import numpy as np
import pytest

from minimegatron.classroom.exercise_checks.watched import Watched, new_log, plain, watch


def watched(*arrays):
    log = new_log()
    return log, [watch(np.asarray(a), log) for a in arrays]


@pytest.fixture
def pair():
    rng = np.random.default_rng(0)
    return (rng.standard_normal((3, 4)).astype(np.float32),
            rng.standard_normal((4, 2)).astype(np.float32))


@pytest.mark.parametrize("product", [
    lambda a, b: a @ b, lambda a, b: np.matmul(a, b), lambda a, b: np.dot(a, b),
    lambda a, b: np.einsum("ik,km->im", a, b), lambda a, b: np.tensordot(a, b, 1)])
def test_one_product_is_counted_once_however_it_is_written(pair, product):
    log, (a, b) = watched(*pair)
    out = product(a, b)
    assert log == {"products": 1, "widened": 0}
    assert isinstance(out, Watched) and out.dtype == np.float32
    np.testing.assert_allclose(plain(out), pair[0] @ pair[1], rtol=1e-6)


def test_two_products_are_two(pair):
    log, (a, b) = watched(*pair)
    (a @ b, (a.T @ a) * 2.0)
    assert log["products"] == 2


@pytest.mark.parametrize("shortcut", [
    lambda a, b: np.matmul(a, b, dtype=np.float64).astype(np.float32),
    lambda a, b: (a.astype(np.float64) @ b).astype(np.float32),
    lambda a, b: a.sum(axis=0, dtype=np.float64).astype(np.float32),
    lambda a, b: (np.ones(a.shape) * a).astype(np.float32)])
def test_a_float64_step_is_seen_even_when_cast_back(pair, shortcut):
    log, (a, b) = watched(*pair)
    assert shortcut(a, b).dtype == np.float32
    assert log["widened"] >= 1


def test_float32_work_with_python_numbers_is_not_flagged(pair):
    log, (a, b) = watched(*pair)
    out = (1 - (a * 0.5) ** 2).sum(axis=1, keepdims=True) + np.swapaxes(a, 0, 1).T
    out = np.broadcast_to(out, a.shape).reshape(-1)
    assert out.dtype == np.float32 and log == {"products": 0, "widened": 0}


def test_plain_gives_an_ordinary_array(pair):
    _, (a, _) = watched(*pair)
    assert type(plain(a)) is np.ndarray and type(np.asarray(a + 1)) is np.ndarray
