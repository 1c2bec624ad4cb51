"""The two router losses, and how their gradient joins the model's.

Load balancing (Switch Transformer), per sequence s of T tokens, then the mean:

    f_{s,i} = (assignments of sequence s to expert i) / (k T)      counted, no gradient
    P_{s,i} = (1/T) sum_t p_{s,t,i}                                  mean router prob
    L_aux   = alpha * E * mean_s sum_i f_{s,i} P_{s,i}

It is 1 * alpha when the load is uniform (f = P = 1/E) and grows as the router
favours a few experts; the gradient flows through P only. Per sequence (not per
batch) so that a data-parallel rank, a micro-batch or a pipeline stage, each
holding whole sequences, computes exactly its share of one process's loss.
Split over cp ranks a sequence's counts are summed over them (``whole_sequence``:
the parallel layer's one all-reduce of b*E counts, parallel/expert_parallel/layer.py)
and each rank adds its tokens' probs: with T_g = cp*T,

    L_aux(rank) = cp * alpha * E / (k T_g^2) * mean_s sum_i count_{s,i} Psum_{s,i}(rank)

whose mean over the cp ranks is L_aux of the whole sequence.

Router z-loss (ST-MoE): L_z = beta * mean_t logsumexp(logits_t)^2, keeps the
logits small. A mean over tokens, so each rank's share is its tokens' mean.

How they join the loss (Megatron's MoEAuxLossAutoScaler). ``attach_aux_loss(y,
aux, scale)`` returns y unchanged; in backward it also hands ``scale`` to aux as
dL/daux. So the layer's aux loss gets its gradient wherever the layer sits (a
pipeline stage without the head included) and the loss the model returns adds
its value, detached. ``scale`` is 1 for loss.backward(); a pipeline whose loss
is (1/M) sum_m L_m started from S sets it to S/M.
"""
from minimegatron.autodiff import functional as F
from minimegatron.backend import xp
from minimegatron.autodiff.function import Function
from minimegatron.nn.moe.routing import assignment_counts
from minimegatron.autodiff.tensor import Tensor


def load_balancing_loss(probs, choice, coeff, whole_sequence=None):
    """alpha * E * mean_s sum_i f_{s,i} P_{s,i} of probs (b, T, E) and choice (b, T, k).

    ``whole_sequence(counts) -> (counts, cp)``: when a sequence is split over cp
    ranks (context parallelism), the counts of the whole sequence and cp; the
    parallel layer passes one that all-reduces over its cp group. None: one rank.
    """
    b, steps, num_experts = probs.shape
    k = choice.shape[-1]
    counts = assignment_counts(choice, num_experts).astype(probs.dtype)    # (b, E)
    cp = 1
    if whole_sequence is not None:
        counts, cp = whole_sequence(counts)               # the whole sequence's counts
    total = steps * cp                                    # T_g
    scale = cp * coeff * num_experts / (k * total * total * b)
    return (probs.sum(axis=1) * Tensor(counts)).sum() * scale


def z_loss(logits, coeff):
    """beta * mean over tokens of logsumexp(logits)^2; logits (b, T, E)."""
    lse = (logits - F.log_softmax(logits, axis=-1))[..., :1]           # (b, T, 1)
    return (lse * lse).mean() * coeff


class AttachAuxLoss(Function):
    """forward: y | backward: dL/dy to y, ``scale`` to aux   (Megatron's aux-loss scaler)"""
    @staticmethod
    def forward(ctx, y, aux, scale):
        ctx.aux = (aux.shape, aux.dtype, scale)
        return y

    @staticmethod
    def backward(ctx, grad_out):
        shape, dtype, scale = ctx.aux
        return grad_out, xp.full(shape, scale, dtype=dtype), None


def attach_aux_loss(y, aux, scale=1.0):
    """y, with aux's gradient (scale) joined to backward through y."""
    return AttachAuxLoss.apply(y, aux, scale)
