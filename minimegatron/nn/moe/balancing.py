"""Auxiliary-loss-free load balancing (DeepSeek-V3): a bias on the router's choice only.

The aux loss (losses.py) balances the experts by adding a term to the loss, so its
gradient pulls on the router, and on every weight below it, away from what the
language model wants. DeepSeek-V3 balances without touching the loss: each MoE
layer keeps a bias b (E,) that is added to the router's scores for the CHOICE
only, and is nudged after every step by the sign of each expert's load:

    choice = top_k(p + b, k)               the experts picked   (b: no gradient)
    gate   = p[t, e]                       the weights of their outputs: unbiased
    load_i = assignments to expert i over the step (every micro-batch, every
             rank that holds a replica of the router: dp x cp), before capacity
    b_i   <- b_i + gamma * sign(mean(load) - load_i)

An expert that got more than the mean is made less attractive by gamma, one that
got less more attractive, one exactly at the mean is left alone. Only the SIGN of
the deviation counts, so a step's update is +-gamma whatever the batch size
(Megatron's ``moe_router_enable_expert_bias`` with ``moe_router_bias_update_rate``
1e-3; torchtitan's expert-bias update). ``MoEConfig.bias_update_rate`` is gamma
(0: off, the router as before).

The loads are counts of integers, so their sum over ranks is exact and every
rank applies the same update: the choices stay those of one process. Counted
once per forward: the layer logs its load in ``load_log`` (one (E,) array per
forward) and activation recomputation cuts that log as it cuts ``aux_log``
(pipeline_parallel/recompute.py), so a recomputed block does not count twice.

Communication (parallel/expert_parallel/trainer.py): one all-reduce of the
stacked loads (layers, E) of a stage over dp x cp per step: 8 * L * E bytes; under
DualPipe a second one over the mirror pair (each rank holds a copy of the same layers,
and each copy routed some of the step's micro-batches).
"""
from minimegatron.backend import xp


def bias_update(bias, load, rate):
    """b + gamma * sign(mean(load) - load): the new bias of one layer; load (E,)."""
    # EXERCISE 10.3 begin
    return bias + rate * xp.sign(load.mean() - load)       # (E,) +-gamma, 0 at the mean
    # EXERCISE 10.3 end


def take_load(layers):
    """(L, E) float64: each layer's load logged since the last call (and clear the logs)."""
    loads = []
    for layer in layers:
        total = xp.zeros(layer.moe.num_experts, dtype=xp.float64)
        for counts in layer.load_log:
            total += counts
        layer.load_log.clear()
        loads.append(total)
    return xp.stack(loads) if loads else xp.zeros((0, 0), dtype=xp.float64)


def update_expert_bias(layers, load):
    """b <- b + gamma sign(mean - load) for every layer; ``load`` (L, E) from take_load
    (summed over the ranks that hold a replica of the router, by the caller)."""
    for layer, counts in zip(layers, load):
        if layer.expert_bias is not None:
            layer.expert_bias = bias_update(layer.expert_bias, counts,
                                            layer.moe.bias_update_rate)
