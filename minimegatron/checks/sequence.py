"""Sequence parallelism checked on every rank of a tp group: traffic and activation memory.

- ``tp_collectives(group, config, sequence_parallel)``: one traced training step
  of ParallelGPT; every collective of the tp group as (phase, op, label, nbytes,
  bytes_sent), phase "forward" or "backward". Block i's activation collectives
  carry the label "blocks.i" (backward "blocks.i.backward"), the re-gathers of
  the stored input "blocks.i.backward.regather", the LayerNorm / bias gradient
  all-reduces "blocks.i/sp-params.backward".
- ``layer_activation_bytes(group, config, sequence_parallel)``: what ONE block
  keeps for backward on this rank (tools/activation_memory.activation_bytes on
  the block's graph, from its input to its output): every array saved for
  backward plus the block's output, not the parameters and not the input.

The equality with one process (loss, gradients, weights) is ``tensor.check_gpt``
with ``sequence_parallel=True``, and ``threed.check_3d(..., sequence_parallel=True)``.
"""
import numpy as np

from minimegatron.backend import asarray
from minimegatron.checks.tensor import traced_step
from minimegatron.nn import GPT
from minimegatron.parallel.tensor_parallel.gpt import ParallelGPT
from minimegatron.autodiff.tensor import Tensor
from minimegatron.tools.activation_memory import activation_bytes


def tp_collectives(group, config, sequence_parallel, batch_size=2):
    """[(phase, op, label, nbytes, bytes_sent)] of one training step over the tp group."""
    model = ParallelGPT(config, group, sequence_parallel=sequence_parallel)
    return [(phase, s["op"], s["label"], s["nbytes"], s["bytes_sent"])
            for phase, s in traced_step(model, group, config, batch_size)]


def layer_activation_bytes(group, config, sequence_parallel, batch_size=2):
    """Bytes block 0 keeps for backward on this rank (group None: the serial nn.GPT block)."""
    model = GPT(config) if group is None else ParallelGPT(config, group,
                                                          sequence_parallel=sequence_parallel)
    parts = group.size if sequence_parallel and group is not None else 1
    shape = (batch_size, config.seq_len // parts, config.d_model)     # (B, T or T/tp, D)
    x = Tensor(asarray(np.random.default_rng(0).standard_normal(shape)), requires_grad=True)
    out = model.blocks[0](x)
    return activation_bytes([out], exclude=model.parameters() + [x])
