"""The vocabulary split over tp ranks: the embedding and the cross entropy (Megatron's
cross_entropy.py and VocabParallelEmbedding), with no rank ever holding (B, T, V).

Rank r of tp owns the vocabulary rows [r V/tp, (r+1) V/tp) (V padded to a multiple of
tp by the model; padded ids are never looked up and their logits count as -inf).

Embedding. W (V, D) is split by rows, W = [W_1; ...; W_tp]. Rank r looks up the ids
it owns and writes zeros for the others; the sum over ranks has exactly one
non-zero term per token:

    y = W[ids] = sum_r W_r[ids - r V/tp] * [id owned by r]    -> g: one all-reduce of B*T*D
    dL/dW_r = the rows of dL/dy at the ids rank r owns         -> backward: no communication

Cross entropy. The head leaves logits z split by vocabulary columns, (B, T, V/tp)
on each rank. For token n with target t_n,

    L = mean_n [ log sum_v exp(z_nv) - z_n,t_n ]

needs three all-reduces of B*T values each (not one of B*T*V):

    1. m_n   = max_v z_nv            all-reduce max (so exp never overflows)
    2. z_n,t = the target's logit    all-reduce sum (only its owner adds a non-zero)
    3. S_n   = sum_v exp(z_nv - m_n) all-reduce sum

    L = mean_n [ log S_n - (z_n,t - m_n) ]
    dL/dz_nv = (exp(z_nv - m_n) / S_n - [v == t_n]) / N   on this rank's slice, no communication

Used by ParallelGPT (gpt.py): ``wte`` is a VocabParallelEmbedding and ``head_loss``
calls vocab_parallel_cross_entropy. Tutorial: ``minimegatron run -n 8
tutorials/04_megatron_gpt.py``.
"""
from minimegatron.autodiff.function import Function
from minimegatron.autodiff.guards import check_ids, check_targets
from minimegatron.autodiff.ops import embedding, where
from minimegatron.autodiff.tensor import unwrap
from minimegatron.backend import xp
from minimegatron.comm import all_reduce
from minimegatron.nn import Module, Parameter
from minimegatron.parallel.split import row_slice
from minimegatron.parallel.tensor_parallel.mappings import reduce_from_tp
from minimegatron.parallel.tensor_parallel.sequence import reduce_scatter_to_sequence


class VocabParallelEmbedding(Module):
    """y = W[ids] with W split by rows: rank r owns ids [r*V/tp, (r+1)*V/tp), then g.

    ``sequence_parallel``: g-bar (reduce-scatter) instead, y is (B, T/tp, D).
    """

    def __init__(self, num_embeddings, dim, tp_group, master_weight=None, dtype="float64",
                 vocab_size=None, sequence_parallel=False):
        super().__init__()
        self.sequence_parallel = sequence_parallel
        tp = tp_group.size
        self.vocab_size = num_embeddings if vocab_size is None else vocab_size  # ids allowed
        if num_embeddings % tp:
            raise ValueError(f"VocabParallelEmbedding: num_embeddings={num_embeddings} is not "
                             f"divisible by tp={tp} (pad the vocabulary)")
        if master_weight is not None and tuple(master_weight.shape) != (num_embeddings, dim):
            raise ValueError(f"VocabParallelEmbedding: master_weight has shape "
                             f"{tuple(master_weight.shape)}, expected ({num_embeddings}, {dim})")
        full = xp.zeros((num_embeddings, dim), dtype=dtype) if master_weight is None \
            else xp.asarray(master_weight, dtype=dtype)
        rows = row_slice(num_embeddings, tp_group.rank, tp)
        self.start, self.end = rows.start, rows.stop
        self.tp_group = tp_group
        self.weight = Parameter(full[self.start:self.end].copy())      # (V/tp, D)

    def forward(self, ids):
        ids = unwrap(ids)
        check_ids(ids, self.vocab_size)        # every tp rank: same ids, same error, no hang
        outside = (ids < self.start) | (ids >= self.end)               # (B, T) not mine
        local = xp.where(outside, 0, ids - self.start)
        y = embedding(self.weight, local)                              # (B, T, D)
        y = where(~outside[..., None], y, 0.0)                         # zero rows not mine
        if self.sequence_parallel:
            return reduce_scatter_to_sequence(y, self.tp_group)        # g-bar: (B, T/tp, D)
        return reduce_from_tp(y, self.tp_group)                        # g: one owner each


class VocabParallelCrossEntropy(Function):
    """mean_n [log sum_v exp(z_nv) - z_n,t_n] from logits split by vocabulary, 3 all-reduces.

    dL/dz_nv = (softmax(z_n)_v - [v == t_n]) / N on this rank's slice, no communication.
    Padded columns (global index >= vocab_size) count as -inf: probability 0.
    """
    @staticmethod
    def forward(ctx, logits, targets, group=None, vocab_start=0, vocab_size=None):
        check_targets(targets, vocab_size)             # before the first all-reduce
        local_v = logits.shape[-1]                                     # V/tp
        cols = vocab_start + xp.arange(local_v)
        logits = xp.where(cols >= vocab_size, -xp.inf, logits)         # (B, T, V/tp)
        reduce = (lambda a, op="sum": a) if group.size == 1 else (
            lambda a, op="sum": all_reduce(a, group, op=op))
        row_max = reduce(logits.max(axis=-1), "max")                   # 1: (B, T) global max
        shifted = logits - row_max[..., None]
        mine = (targets >= vocab_start) & (targets < vocab_start + local_v)
        local_t = xp.where(mine, targets - vocab_start, 0)
        picked = xp.take_along_axis(shifted, local_t[..., None], axis=-1)[..., 0]
        picked = reduce(xp.where(mine, picked, 0.0))                   # 2: (B, T) target logit
        exp = xp.exp(shifted)
        sum_exp = reduce(exp.sum(axis=-1))                             # 3: (B, T)
        ctx.save_for_backward(exp / sum_exp[..., None], mine, local_t)
        return xp.mean(xp.log(sum_exp) - picked)

    @staticmethod
    def backward(ctx, grad_out):
        softmax, mine, local_t = ctx.saved
        grad = softmax.reshape(-1, softmax.shape[-1]).copy()           # (N, V/tp)
        rows = xp.arange(grad.shape[0])
        grad[rows, local_t.reshape(-1)] -= mine.reshape(-1)
        return (grad * (grad_out / grad.shape[0])).reshape(softmax.shape), None


def vocab_parallel_cross_entropy(logits, targets, group, vocab_start, vocab_size):
    """Mean cross entropy of logits (B, T, V/tp) split by vocabulary; targets (B, T)."""
    return VocabParallelCrossEntropy.apply(logits, unwrap(targets), group=group,
                                           vocab_start=vocab_start, vocab_size=vocab_size)


__all__ = ["VocabParallelEmbedding", "VocabParallelCrossEntropy", "vocab_parallel_cross_entropy"]
