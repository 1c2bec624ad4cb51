"""Tensor parallelism (Megatron): each weight split over the tp ranks of a group.

mappings.py   f and g: copy_to_tp (identity | all-reduce), reduce_from_tp (all-reduce | identity),
              gather_from_tp, scatter_to_tp
linear.py     ColumnParallelLinear (Y_i = X A_i) and RowParallelLinear (Y = sum_i X_i A_i)
vocab.py      the vocabulary split: VocabParallelEmbedding and the vocab-parallel cross entropy
gpt.py        the parallel MLP, attention (heads split), block and GPT
sequence.py   sequence parallelism: all-gather / reduce-scatter in place of g's all-reduce
rng.py        one dropout seed per tp rank where the activations are split, one where not
shards.py     which slice of each full weight a tp rank holds (for checkpoints and checks)

    from minimegatron.parallel.tensor_parallel import ColumnParallelLinear, RowParallelLinear
"""
from minimegatron.parallel.tensor_parallel.mappings import (  # f and g
    CopyToTP, GatherFromTP, ReduceFromTP, ScatterToTP, copy_to_tp, gather_from_tp,
    reduce_from_tp, scatter_to_tp)
from minimegatron.parallel.tensor_parallel.linear import ColumnParallelLinear, RowParallelLinear
from minimegatron.parallel.tensor_parallel.vocab import (
    VocabParallelCrossEntropy, VocabParallelEmbedding, vocab_parallel_cross_entropy)
from minimegatron.parallel.tensor_parallel.gpt import (
    ParallelBlock, ParallelGPT, ParallelMLP, ParallelSelfAttention, check_tp_config)
from minimegatron.parallel.tensor_parallel.sequence import (
    GatherFromSequence, ReduceScatterToSequence, ScatterToSequence, SequenceParallelLayerNorm,
    gather_from_sequence, reduce_scatter_to_sequence, scatter_to_sequence)
from minimegatron.parallel.tensor_parallel.rng import ParallelDropout, RNGTracker
from minimegatron.parallel.tensor_parallel.shards import shard_of, unshard

__all__ = ["CopyToTP", "ReduceFromTP", "GatherFromTP", "ScatterToTP", "copy_to_tp",
           "reduce_from_tp", "gather_from_tp", "scatter_to_tp",
           "ColumnParallelLinear", "RowParallelLinear",
           "ParallelMLP", "ParallelSelfAttention", "ParallelBlock", "ParallelGPT",
           "VocabParallelEmbedding", "VocabParallelCrossEntropy", "vocab_parallel_cross_entropy",
           "check_tp_config", "GatherFromSequence", "ReduceScatterToSequence",
           "ScatterToSequence", "SequenceParallelLayerNorm", "gather_from_sequence",
           "reduce_scatter_to_sequence", "scatter_to_sequence", "RNGTracker", "ParallelDropout",
           "shard_of", "unshard"]
