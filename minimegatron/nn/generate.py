"""Autoregressive sampling: a GPT writes one token at a time, each fed back as input.

    repeat max_new_tokens times:
        context = idx[:, -seq_len:]            crop to the window the model was trained on
        z = logits of the LAST position        (B, V)
        z = z / temperature                    < 1 sharper, > 1 flatter
        z_v = -inf unless z_v is among the top_k largest   (top_k=None keeps every token)
        p = softmax(z); t = the first v with cumsum(p)_v >= u * sum(p)   (u in (0, 1])
        idx = [idx, t]                         (B, T + 1)

The draw is an inverse CDF at u, and u comes from ``host_rng(seed, "generate")``,
one number per sequence per step: the same seed gives the same text, and the
token is a pure function of (logits, u). That is why the parallel models write
the same tokens as the serial one. Tensor parallel ranks all-gather the
last position's logits (each holds V/tp of them) and then every tp rank draws
the same u from the same seed: no message carries the token. A pipeline draws
on its last stage only (the others have no logits) and broadcasts the B token
ids over the pp group, so the first stage can embed them. (Logits that differ in
the last bit from the serial model's change a token only if u lands within
~1e-15 of a CDF step.)

No graph: every forward runs under ``no_grad`` (function.py) and in eval mode
(dropout off), so no Node is recorded and no activation is kept for a backward.

No KV cache. A cache keeps each layer's K and V of earlier positions, so a new
token costs one position instead of T. Here it pays only until the context
is full: wpe is an ABSOLUTE position embedding, so once the window slides
(context cropped to seq_len) every kept token sits at a new position, its K and
V change, and all T positions must be recomputed anyway. With seq_len of 16-64
the full recompute is a few small matrix products; the short loop wins.
"""
import contextlib

import numpy as np

from minimegatron.backend import asarray, host_rng, to_numpy
from minimegatron.autodiff.function import no_grad
from minimegatron.autodiff.guards import check_ids


def sample(logits, u, temperature=1.0, top_k=None):
    """Token ids (B,) drawn from ``logits`` (B, V) at ``u`` (B,) in (0, 1]."""
    z = np.asarray(to_numpy(logits), dtype=np.float64) / temperature      # (B, V)
    if top_k is not None and top_k < z.shape[-1]:
        kth = np.sort(z, axis=-1)[:, -top_k, None]                         # (B, 1) k-th largest
        z = np.where(z < kth, -np.inf, z)
    p = np.exp(z - z.max(axis=-1, keepdims=True))                          # unnormalised softmax
    cdf = np.cumsum(p, axis=-1)                                            # (B, V)
    return (cdf < (u * cdf[:, -1])[:, None]).sum(axis=-1)                  # first cdf >= u*sum


def check_generate(idx, max_new_tokens, vocab_size, temperature, top_k):
    """idx as a (B, T) int64 host array; the same ValueError on every rank for bad arguments."""
    idx = np.asarray(to_numpy(idx))
    if idx.ndim != 2 or idx.shape[0] < 1 or idx.shape[1] < 1 or idx.dtype.kind not in "iu":
        raise ValueError(f"generate: idx must be a (B, T) array of token ids with B, T >= 1, "
                         f"got {idx.dtype} of shape {idx.shape}")
    check_ids(idx, vocab_size)
    if not isinstance(max_new_tokens, int) or max_new_tokens < 0:
        raise ValueError(f"generate: max_new_tokens must be an int >= 0, got {max_new_tokens!r}")
    if not temperature > 0:
        raise ValueError(f"generate: temperature must be > 0, got {temperature!r}")
    if top_k is not None and (not isinstance(top_k, int) or top_k < 1):
        raise ValueError(f"generate: top_k must be None or an int >= 1, got {top_k!r}")
    return idx.astype(np.int64)


@contextlib.contextmanager
def evaluating(module):
    """Eval mode (dropout off) and no graph; the module's training mode comes back after."""
    modes = [(m, m.training) for _, m in module.named_modules()]
    module.eval()
    try:
        with no_grad():
            yield
    finally:
        for m, mode in modes:
            object.__setattr__(m, "training", mode)


def autoregress(module, next_logits, idx, max_new_tokens, temperature=1.0, top_k=None, seed=0,
                share=None):
    """The sampling loop: (B, T + max_new_tokens) int64 ids on the host.

    ``next_logits(context)``: (B, t) ids -> the last position's logits (B, V), or
    None on a rank that holds no head; ``share(tokens or None, B) -> tokens`` gives
    every rank the drawn ids (a pipeline's broadcast; default: this rank drew them).
    """
    config = module.config
    idx = check_generate(idx, max_new_tokens, config.vocab_size, temperature, top_k)
    rng = host_rng(seed, "generate")
    with evaluating(module):
        for _ in range(max_new_tokens):
            logits = next_logits(asarray(idx[:, -config.seq_len:]))         # (B, V) or None
            tokens = None if logits is None else \
                sample(logits, 1.0 - rng.random(len(idx)), temperature, top_k)   # u in (0, 1]
            tokens = tokens if share is None else share(tokens, len(idx))     # (B,)
            idx = np.concatenate([idx, tokens[:, None]], axis=1)              # (B, t + 1)
    return idx


def generate(model, idx, max_new_tokens, temperature=1.0, top_k=None, seed=0):
    """Sample from a whole model (nn.GPT or a tensor-parallel GPT): embed, blocks, last_logits."""
    def next_logits(context):
        x = model.embed(context)                                           # (B, t, D)
        for block in model.blocks:
            x = block(x)
        return model.last_logits(x)                                        # (B, V)
    return autoregress(model, next_logits, idx, max_new_tokens, temperature, top_k, seed)
