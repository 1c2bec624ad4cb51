"""Sampling from a pipeline: the stages pass one context forward per new token.

Every stage keeps the same ids (B, t) (every rank is given the same prompt).
Per new token, with K stages and the context cropped to T = min(t, seq_len):

    stage 0        embed + its blocks    send (B, T, D) ->  stage 1
    stage k        recv <- (B, T, D), its blocks, send -> stage k+1
    stage K-1      recv, its blocks, last_logits (B, V), DRAW the tokens (B,)
    every stage    broadcast of the B token ids from stage K-1 over pp

Only the last stage holds the head, so it alone draws (nn/generate.py: the
inverse CDF at u from ``host_rng(seed, "generate")``); the broadcast (B int64
values, buffer API) gives every stage the token, so stage 0 can embed it next
time. Bytes per token: (K-1) * B*T*D * 8 forward + (K-1) * B * 8 for the ids.
The sends are blocking and in stage order (a chain, not a cycle): no deadlock.
Tensor parallel stages (3D) all-gather the logits over tp inside last_logits
and every tp rank draws the same token; dp replicas each sample the same text.
"""
import numpy as np

from minimegatron import comm
from minimegatron.comm import trace
from minimegatron.backend import xp
from minimegatron.nn.generate import autoregress
from minimegatron.autodiff.tensor import Tensor


def pipeline_generate(stage_module, pp_group, idx, max_new_tokens, temperature=1.0, top_k=None,
                      seed=0):
    """(B, T + n) ids on every stage of ``pp_group`` (this rank is stage ``pp_group.rank``)."""
    config, last = stage_module.config, pp_group.size - 1
    stage = pp_group.rank

    def next_logits(context):                                     # (B, T) ids
        batch, steps = context.shape
        if stage_module.is_first:
            x = context
        else:
            with trace.label("generate"):
                x = Tensor(comm.recv(xp.empty((batch, steps, config.d_model), config.dtype),
                                     stage - 1, pp_group))        # (B, T, D)
        x = stage_module(x)                                       # (B, T, D)
        if not stage_module.is_last:
            with trace.label("generate"):
                comm.send(x.data, stage + 1, pp_group)
            return None
        return stage_module.shell.last_logits(x)                  # (B, V)

    def share(tokens, batch):                                     # (B,) from the last stage
        buf = tokens if tokens is not None else np.empty(batch, np.int64)
        with trace.label("generate"):
            return comm.broadcast(np.ascontiguousarray(buf, np.int64), pp_group, root=last)

    return autoregress(stage_module, next_logits, idx, max_new_tokens, temperature, top_k,
                       seed, share)
