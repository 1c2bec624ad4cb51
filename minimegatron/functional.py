"""Composite functions built only from primitives (ops.py), so they need no backward.

Imported as ``F`` in examples::

    import minimegatron.functional as F
    loss = F.cross_entropy(logits, targets)

Every function here is checked by a float64 central-difference gradcheck.
"""
import math

from minimegatron.backend import xp, asarray
from minimegatron.guards import check_targets
from minimegatron.ops import where
from minimegatron.tensor import unwrap


def relu(x):
    """relu(x) = max(x, 0)"""
    return where(x.data > 0, x, 0.0)


def gelu(x):
    """GPT-2's tanh form: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))"""
    cube = x * x * x                                   # cheaper than x ** 3 (a float power)
    return 0.5 * x * (1.0 + (math.sqrt(2.0 / math.pi) * (x + 0.044715 * cube)).tanh())


def softmax(x, axis=-1):
    """softmax(x)_i = exp(x_i - m) / sum_j exp(x_j - m), m = max_j x_j (for stability)"""
    e = (x - x.data.max(axis=axis, keepdims=True)).exp()
    return e / e.sum(axis=axis, keepdims=True)


def log_softmax(x, axis=-1):
    """log_softmax(x)_i = x_i - m - log sum_j exp(x_j - m)"""
    shifted = x - x.data.max(axis=axis, keepdims=True)
    return shifted - shifted.exp().sum(axis=axis, keepdims=True).log()


def cross_entropy(logits, targets):
    """mean over n of -log softmax(logits_n)[targets_n]; logits (..., V), targets (...)"""
    targets = unwrap(targets)
    vocab = logits.shape[-1]
    check_targets(targets, vocab)                     # no empty batch; -1 would wrap around
    logp = log_softmax(logits.reshape(-1, vocab), axis=-1)      # (N, V)
    rows = xp.arange(logp.shape[0])
    return -logp[rows, targets.reshape(-1)].mean()


def layer_norm(x, weight, bias, eps=1e-5):
    """y = (x - mean) / sqrt(var + eps) * weight + bias, over the last axis"""
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
