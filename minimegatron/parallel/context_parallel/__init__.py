"""Context parallelism: the sequence split over cp ranks, attention in three ways.

zigzag.py (who holds which tokens, the load balance), blockwise.py (attention
on one block with its log-sum-exp; the online-softmax merge), mappings.py (the
all-to-all pair), one file per variant: allgather.py (Llama 3), ring.py
(ring attention, zigzag), ulysses.py (DeepSpeed Ulysses), and gpt.py (the GPT on
cp ranks, alone or on tp ranks too, gradients averaged over dp x cp; with
pipeline stages through threed.Trainer3D). docs/context_parallel.md.
"""
from minimegatron.parallel.context_parallel.allgather import allgather_attention
from minimegatron.parallel.context_parallel.blockwise import (MaskedAttention, block_backward,
                                                              block_forward, masked_attention,
                                                              merge)
from minimegatron.parallel.context_parallel.gpt import (ContextParallelGPT,
                                                        TensorContextParallelGPT,
                                                        average_gradients, check_config,
                                                        context_parallel_model)
from minimegatron.parallel.context_parallel.mappings import (AllToAll, all_to_all_along,
                                                             heads_to_sequence,
                                                             sequence_to_heads)
from minimegatron.parallel.context_parallel.ring import RingAttention, ring_attention
from minimegatron.parallel.context_parallel.ulysses import check_heads, ulysses_attention
from minimegatron.parallel.context_parallel.zigzag import (causal_mask, causal_pairs,
                                                           check_split, positions, ring_blocks,
                                                           split_sequence, unsplit_sequence)

__all__ = ["ContextParallelGPT", "TensorContextParallelGPT", "context_parallel_model",
           "average_gradients", "check_config",
           "allgather_attention", "ring_attention", "ulysses_attention", "RingAttention",
           "MaskedAttention", "masked_attention", "block_forward", "block_backward", "merge",
           "AllToAll", "all_to_all_along", "sequence_to_heads", "heads_to_sequence",
           "check_heads", "causal_mask", "causal_pairs", "check_split", "positions",
           "ring_blocks", "split_sequence", "unsplit_sequence"]
