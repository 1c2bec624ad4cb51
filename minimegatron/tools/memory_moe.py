"""Mixture of experts in the calculator: total and active parameters, experts per rank,
and the dispatch buffers.

Notation as memory.py (L layers, h hidden, s tokens, b micro-batch, t = tp, K = pp) and
E experts, k chosen per token, f capacity factor, ep expert-parallel ranks, MoE in every
``every``-th block (n_moe = L // every layers). One expert is the dense MLP (fc1 4h^2 + 4h,
fc2 4h^2 + h); an MoE layer has E of them and a router h x E:

    expert        8h^2 + 5h
    total         param_count + n_moe ((E - 1)(8h^2 + 5h) + hE)
    active        param_count + n_moe ((k - 1)(8h^2 + 5h) + hE)      (what one token uses)

Per rank of stage p (n_p MoE layers among its blocks), tp t, ep ranks (folded over dp x cp;
the MoE is replicated over tp, nn not split):

    expert params   n_p (E/ep)(8h^2 + 5h)
    dense params    rank_param_count - n_p ((8h^2 + 4h)/t + h) + n_p hE

Dispatch buffers, per MoE layer and micro-batch, padded (C = ceil(k s f / E) per sequence):
the send buffer of the dispatch is E b C h values (expert-major rows, padding included),
and the dispatch's receive, the combine's send and receive are the same size: 4 E b C h
values in flight. Dropless the size follows the router: k b s h values on average, up to
k b s h x ep received by one rank whose experts every token chose.

Bytes over ep per step, padded (``ep_bytes``): every micro-batch crosses the stage's n_p MoE
layers, each runs four all-to-alls of one padded buffer (dispatch and combine forward, and
their backward), each rank sending the ep - 1 other ranks' part (dispatch.padded_bytes):

    ep bytes     M n_p 4 (ep - 1)(E/ep) C h b x bytes per value     (no recomputation)

    minimegatron memory moe --layers 2 --hidden 16 --heads 4 --vocab 16 --seq 8 \\
        --experts 8 --top-k 2 --ep 4 --dp 8 --micro-batch 1 --precision float64
"""
import math

from minimegatron.i18n import text as say
from minimegatron.i18n.columns import fit
from minimegatron.tools.memory import GPTShape, PRECISIONS, param_count, rank_param_count


def expert_size(h):
    """Parameters of one expert MLP h -> 4h -> h: 8h^2 + 5h."""
    return 8 * h * h + 5 * h


def moe_layer_indices(n_layer, every, layers=None):
    """The MoE blocks among ``layers`` (default all): i % every == 0 (Megatron's pattern)."""
    return [i for i in (range(n_layer) if layers is None else layers) if i % every == 0]


def moe_param_counts(cfg, experts, top_k, every=1):
    """{"total", "active", "experts"}: the whole MoE GPT, what one token uses, the experts."""
    g = GPTShape.of(cfg)
    h, n_moe = g.d_model, len(moe_layer_indices(g.n_layer, every))
    dense = param_count(g)
    return {"total": dense + n_moe * ((experts - 1) * expert_size(h) + h * experts),
            "active": dense + n_moe * ((top_k - 1) * expert_size(h) + h * experts),
            "experts": n_moe * experts * expert_size(h)}


def moe_rank_params(cfg, experts, every=1, ep=1, pp=1, tp=1, stage=0):
    """{"experts", "dense"}: the parameters one rank of stage ``stage`` holds."""
    from minimegatron.parallel.pipeline_parallel import stage_layers
    g = GPTShape.of(cfg)
    h = g.d_model
    if experts % ep:
        raise ValueError(f"experts={experts} is not divisible by ep={ep}")
    n_p = len(moe_layer_indices(g.n_layer, every, stage_layers(g.n_layer, pp, stage)))
    dense_mlp = (8 * h * h + 4 * h) // tp + h                        # the MLP's tp share
    return {"experts": n_p * experts // ep * expert_size(h),
            "dense": rank_param_count(g, pp, tp, stage) - n_p * dense_mlp + n_p * h * experts}


def dispatch_buffer_bytes(cfg, experts, top_k, capacity_factor, micro_batch, precision):
    """Bytes of ONE padded dispatch buffer (E b C h), per MoE layer and micro-batch."""
    g = GPTShape.of(cfg)
    capacity = math.ceil(top_k * g.seq_len * capacity_factor / experts)
    return experts * micro_batch * capacity * g.d_model * PRECISIONS[precision]


def ep_bytes(cfg, experts, top_k, capacity_factor, micro_batch, micro_batches=1, ep=1, pp=1,
             stage=0, every=1, precision="mixed"):
    """Bytes one rank of stage ``stage`` sends over ep per step, padded (module docstring)."""
    from minimegatron.parallel.expert_parallel.dispatch import padded_bytes
    from minimegatron.parallel.pipeline_parallel import stage_layers
    g = GPTShape.of(cfg)
    n_p = len(moe_layer_indices(g.n_layer, every, stage_layers(g.n_layer, pp, stage)))
    capacity = math.ceil(top_k * g.seq_len * capacity_factor / experts)
    return micro_batches * n_p * 4 * padded_bytes(ep, experts, capacity, g.d_model,
                                                  micro_batch, PRECISIONS[precision])


def moe_text(a):
    """The ``minimegatron memory moe`` report."""
    g = GPTShape(a.vocab, a.seq, a.layers, a.hidden, a.heads)
    counts = moe_param_counts(g, a.experts, a.top_k, a.moe_every)
    lines = [say("report.moe.title", layers=g.n_layer, hidden=g.d_model, seq=g.seq_len,
                 vocab=g.vocab, experts=a.experts, top_k=a.top_k, every=a.moe_every),
             say("report.moe.params", total=counts["total"], active=counts["active"],
                 experts=counts["experts"], dense=param_count(g)),
             say("report.moe.grid", dp=a.dp, cp=a.cp, pp=a.pp, tp=a.tp, ep=a.ep),
             " ".join([fit(say("report.col.stage"), 5), fit(say("report.col.expert_params"), 19),
                       fit(say("report.col.dense_params"), 18)])]
    for stage in range(a.pp):
        r = moe_rank_params(g, a.experts, a.moe_every, a.ep, a.pp, a.tp, stage)
        lines.append(f"{stage:5d} {r['experts']:19,d} {r['dense']:18,d}")
    if a.capacity_factor > 0:
        buf = dispatch_buffer_bytes(g, a.experts, a.top_k, a.capacity_factor, a.micro_batch,
                                    a.precision)
        lines.append(say("report.moe.buffer", factor=a.capacity_factor, bytes=buf))
    else:
        lines.append(say("report.moe.dropless"))
    return "\n".join(lines)
