"""The mixture-of-experts layer, in place of a GPT block's MLP.

    probs  = softmax(x W_r)                       (b, T, E)   router, W_r (D, E)
    choice = top_k(probs + bias, k)               (b, T, k)   ties: lower expert id
    rows   = x[plan.token]                        (n, D)      dispatch (routing.py)
    out    = expert_{plan.expert}(rows)           (n, D)
    y[t]   = sum over t's kept choices e of probs[t, e] * out[row of (t, e)]

A dropped choice adds nothing, so a token that lost all k choices leaves the
block as it came (y = 0 here, the residual x + y keeps x). The gate is the
router's probability itself, not renormalised over the k (Switch, GShard's
first expert): the router then learns from every kept row.

``exchange(rows, plan)`` is where the rows meet their experts: here the local
ExpertMLPs; expert parallelism (parallel/expert_parallel/layer.py) sends them
to the ranks that hold the experts and brings the outputs back.

Losses: load balancing and z-loss (losses.py) are joined to backward through
y (attach_aux_loss, gradient ``aux_grad_scale``); their value is appended to
``aux_log`` (one float per forward) for the model to report. ``last_plan`` keeps
the last RoutePlan (the router's choices, the load, the drops) for tutorials.

Aux-loss-free balancing (``moe.bias_update_rate`` > 0, balancing.py): ``expert_bias``
(E,) is added to the probs for the choice only (the gates stay probs), and each
forward appends its load (E,) to ``load_log``; the trainer updates the bias once
per step from the loads. Without it ``expert_bias`` is None and the choice is
made from the probs themselves.
"""
from minimegatron.autodiff import functional as F
from minimegatron.backend import xp
from minimegatron.nn.layers import Linear
from minimegatron.nn.module import Module
from minimegatron.nn.moe.experts import ExpertMLPs
from minimegatron.nn.moe.losses import attach_aux_loss, load_balancing_loss, z_loss
from minimegatron.nn.moe.routing import route
from minimegatron.nn.moe.rows import gather_rows, scatter_rows


class MoE(Module):
    """Router + E experts on (b, T, D) tokens; ``moe`` is an MoEConfig."""

    def __init__(self, d_model, moe, dtype="float64"):
        super().__init__()
        self.moe = moe
        self.router = Linear(d_model, moe.num_experts, bias=False, dtype=dtype)
        self.experts = ExpertMLPs(self.local_experts(), d_model, dtype)
        self.aux_grad_scale, self.aux_log, self.last_plan = 1.0, [], None
        self.load_log = []
        self.expert_bias = (xp.zeros(moe.num_experts, dtype=xp.float64)
                            if moe.bias_update_rate else None)

    def local_experts(self):
        return self.moe.num_experts

    def whole_sequence(self, counts):
        """(counts, 1): one process holds whole sequences (the cp layer sums over its ranks)."""
        return counts, 1

    def exchange(self, rows, plan):
        """Expert-major rows (n, D) -> the experts' outputs, the same layout."""
        return self.experts(rows, plan.counts)

    def forward(self, x):
        b, steps, width = x.shape
        E, k = self.moe.num_experts, self.moe.top_k
        logits = self.router(x)                                  # (b, T, E)
        probs = F.softmax(logits, axis=-1)                       # (b, T, E)
        scores = probs.data if self.expert_bias is None else probs.data + self.expert_bias
        plan = route(scores, k, self.moe.capacity(steps))                   # the choice
        if self.expert_bias is not None:
            self.load_log.append(plan.load(E).astype(xp.float64))           # (E,)
        rows = gather_rows(x.reshape(b * steps, width), plan.token)        # (n, D)
        out = self.exchange(rows, plan)                                     # (n, D)
        where = xp.where(plan.token < 0, -1, plan.token * E + plan.expert)  # probs[t, e]
        gate = gather_rows(probs.reshape(b * steps * E), where)             # (n,)
        y = scatter_rows(out * gate.reshape(len(where), 1), plan.token, b * steps)
        aux = load_balancing_loss(probs, plan.choice, self.moe.aux_loss_coeff,
                                  self.whole_sequence) + z_loss(logits, self.moe.z_loss_coeff)
        self.aux_log.append(aux.item())
        self.last_plan = plan
        y = attach_aux_loss(y, aux, self.aux_grad_scale)                   # (b*T, D)
        return y.reshape(b, steps, width)
