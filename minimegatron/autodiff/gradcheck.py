"""Central-difference gradient check: the test every primitive must pass.

For a scalar function L(x_1, ..., x_n) of float64 Tensors, compare autodiff's
dL/dx_i[j] with (L(x + eps e_j) - L(x - eps e_j)) / (2 eps), whose error is
O(eps^2). Used by the tests and by the exercise grader.
"""
from minimegatron.backend import to_numpy, xp
from minimegatron.autodiff.function import no_grad


def numerical_grad(fn, inputs, index, eps=1e-6):
    """d fn(*inputs) / d inputs[index], one entry at a time, by central differences."""
    x = inputs[index].data
    grad = xp.zeros_like(x)
    flat, gflat = x.reshape(-1), grad.reshape(-1)   # views: (n,)
    with no_grad():
        for j in range(flat.size):
            old = float(flat[j])
            flat[j] = old + eps
            plus = float(fn(*inputs).data)
            flat[j] = old - eps
            minus = float(fn(*inputs).data)
            flat[j] = old
            gflat[j] = (plus - minus) / (2 * eps)
    return grad


def gradcheck(fn, inputs, eps=1e-6, atol=1e-7, rtol=1e-5):
    """Return the largest |autodiff - numerical| over the inputs that require grad.

    Raises AssertionError naming the input and the worst entry when the two
    disagree beyond ``atol + rtol * |numerical|``.
    """
    for t in inputs:
        t.grad = None
    fn(*inputs).backward()
    worst = 0.0
    for i, t in enumerate(inputs):
        if not t.requires_grad:
            continue
        expected = to_numpy(numerical_grad(fn, inputs, i, eps))
        got = to_numpy(t.grad) if t.grad is not None else 0 * expected
        err = abs(got - expected)
        bad = err > atol + rtol * abs(expected)
        if bad.any():
            j = int(bad.reshape(-1).argmax())
            raise AssertionError(
                f"gradcheck: input {i} {t.shape}, flat entry {j}: autodiff "
                f"{got.reshape(-1)[j]!r} vs numerical {expected.reshape(-1)[j]!r}")
        worst = max(worst, float(err.max()) if err.size else 0.0)
    return worst
