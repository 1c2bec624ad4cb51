"""Functions of Tensors: the fused ops that train, and the composites that teach.

Imported as ``F`` in examples::

    import minimegatron.autodiff.functional as F
    loss = F.cross_entropy(logits, targets)

``relu``, ``gelu``, ``softmax``, ``layer_norm`` and ``cross_entropy`` run the
fused Functions of fused.py: one graph node each, with a hand-written
backward. Each ``*_composite`` beside it is the same math built only from
primitives (ops.py), so it needs no backward of its own: read it to see the
formula, and tests/test_fused.py checks the fused op against it in float64.
Every function here is checked by a float64 central-difference gradcheck.
"""
import math

from minimegatron.autodiff import fused
from minimegatron.backend import xp, asarray
from minimegatron.autodiff.guards import check_targets
from minimegatron.autodiff.ops import where
from minimegatron.autodiff.tensor import unwrap


def relu(x):
    """relu(x) = max(x, 0); runs fused.ReLU (the composite: where(x > 0, x, 0))"""
    return fused.ReLU.apply(x)


def gelu(x):
    """GPT-2's tanh GeLU; runs fused.GeLU (the composite: gelu_composite)"""
    return fused.GeLU.apply(x)


def gelu_composite(x):
    """0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))), from primitives"""
    cube = x * x * x                                   # cheaper than x ** 3 (a float power)
    return 0.5 * x * (1.0 + (math.sqrt(2.0 / math.pi) * (x + 0.044715 * cube)).tanh())


def softmax(x, axis=-1, scale=1.0, causal=False):
    """softmax(scale x) over ``axis``; runs fused.Softmax (the composite: softmax_composite).

    ``causal=True``: x is (..., query, key) and query i sees keys 0..i only.
    """
    return fused.Softmax.apply(x, axis=axis, scale=scale, causal=causal)


def softmax_composite(x, axis=-1, scale=1.0, causal=False):
    """softmax(x)_i = exp(x_i - m) / sum_j exp(x_j - m), m = max_j x_j (for stability)"""
    if scale != 1.0:
        x = x * scale
    if causal:
        rows, cols = x.shape[-2:]
        x = where(xp.tri(rows, cols, dtype=bool), x, -math.inf)   # later keys: -inf
    e = (x - x.data.max(axis=axis, keepdims=True)).exp()
    return e / e.sum(axis=axis, keepdims=True)


def log_softmax(x, axis=-1):
    """log_softmax(x)_i = x_i - m - log sum_j exp(x_j - m)"""
    shifted = x - x.data.max(axis=axis, keepdims=True)
    return shifted - shifted.exp().sum(axis=axis, keepdims=True).log()


def cross_entropy(logits, targets):
    """mean over n of -log softmax(logits_n)[targets_n]; logits (..., V), targets (...).

    Runs fused.CrossEntropy (the composite: cross_entropy_composite).
    """
    targets = unwrap(targets)
    check_targets(targets, logits.shape[-1])          # no empty batch; -1 would wrap around
    return fused.CrossEntropy.apply(logits, targets)


def cross_entropy_composite(logits, targets):
    """-log_softmax(logits)[n, targets_n], averaged, from primitives"""
    targets = unwrap(targets)
    vocab = logits.shape[-1]
    check_targets(targets, vocab)
    logp = log_softmax(logits.reshape(-1, vocab), axis=-1)      # (N, V)
    rows = xp.arange(logp.shape[0])
    return -logp[rows, targets.reshape(-1)].mean()


def layer_norm(x, weight, bias, eps=1e-5):
    """(x - mean) / sqrt(var + eps) * weight + bias over the last axis; runs fused.LayerNorm
    (the composite: layer_norm_composite)"""
    return fused.LayerNorm.apply(x, weight, bias, eps=eps)


def layer_norm_composite(x, weight, bias, eps=1e-5):
    """y = (x - mean) / sqrt(var + eps) * weight + bias, from primitives"""
    centered = x - x.mean(axis=-1, keepdims=True)
    var = (centered * centered).mean(axis=-1, keepdims=True)
    return centered / (var + eps).sqrt() * weight + bias


def dropout(x, p, training=True, rng=None):
    """Zero each element with probability p and scale the rest by 1/(1-p).

    ``rng`` is a NumPy Generator (backend.host_rng) owned by the caller, so
    the masks are reproducible and the same on every backend. Identity when
    not training or p == 0.
    """
    if not training or p == 0.0:
        return x
    if rng is None:
        raise ValueError("dropout with p > 0 needs a seeded rng (backend.host_rng)")
    keep = asarray(rng.random(x.shape) >= p)
    return x * (keep / (1.0 - p)).astype(x.dtype)
