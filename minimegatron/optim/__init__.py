"""Optimizers and flat buffers.

optimizers.py  SGD and AdamW: a readable update per parameter, and the fused flat update
flat.py        many parameters' values (or gradients) in one contiguous array, each a view
"""
from minimegatron.optim.optimizers import (  # noqa: F401
    CHUNK_BYTES, FLAT, SGD, AdamW, Optimizer, adamw_fused, sgd_fused)
