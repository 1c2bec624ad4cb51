"""Two gradient groups, and a gradient norm that counts every parameter once.

Rank r's loss L_r is the mean over its tokens; one process's loss is the mean
over the N = dp*cp ranks: L = (1/N) sum_r L_r.

    dense weight W (the same on all N ranks):   dL/dW = (1/N) sum_r dL_r/dW
        -> all-reduce mean over dp x cp                        (grid.dp_cp)
    expert weight V_e (on the N/ep ranks of one edp group): the holder's
        gradient is already sum over its ep group of dL_r/dV_e (the combine's
        backward brought every token's contribution home), so
        dL/dV_e = (1/N) sum over edp of it
        -> all-reduce sum over edp, then / N                   (grid.edp)

Reducing the experts over dp x cp instead would average DIFFERENT experts
(rank j holds experts j*E/ep..): a bug the tests must catch.

Gradient norm (clipping). ||g||^2 = sum over every parameter of the model,
each counted ONCE: a dense weight is the same on its dp x cp ranks (count one
copy: this rank's), an expert weight lives on one rank of each ep group (sum
over ep), a tp shard on one tp rank (sum over tp; a weight replicated over tp,
such as LayerNorm or the MoE, counts on tp rank 0 only), a stage on one pp rank
(sum over pp). Megatron once summed expert norms over the wrong group; here

    s = all_reduce(expert_sq, ep) + dense_sq;  s = all_reduce(s, tp);  s = all_reduce(s, pp)
"""
import math

from minimegatron.comm import trace
from minimegatron.backend import xp
from minimegatron.comm import all_reduce
from minimegatron.parallel.expert_parallel.gpt import is_expert
from minimegatron.parallel.split import flatten, unflatten
from minimegatron.parallel.tensor_parallel.shards import tp_axis


def _reduce(params, group, op, divide=1.0):
    params = [p for p in params if p.grad is not None]
    if not params or (group.size == 1 and divide == 1.0):
        return
    flat = flatten([p.grad for p in params], params[0].grad.dtype)    # (P,)
    if group.size > 1:
        all_reduce(flat, group, op=op, inplace=True)
    if divide != 1.0:
        flat /= divide
    for p, grad in zip(params, unflatten(flat, [p.grad.shape for p in params])):
        p.grad = xp.ascontiguousarray(grad)


def reduce_gradients(named_params, grid, expert_group=None):
    """Dense gradients: mean over grid.dp_cp; expert gradients: sum over grid.edp / (dp*cp).
    ``expert_group`` replaces grid.edp (a test passes grid.dp_cp: the wrong group)."""
    named = list(named_params)
    dense = [p for n, p in named if not is_expert(n)]
    experts = [p for n, p in named if is_expert(n)]
    with trace.label("dp.grads"):
        _reduce(dense, grid.dp_cp, "mean")
    with trace.label("edp.grads"):
        _reduce(experts, expert_group or grid.edp, "sum", float(grid.dp_cp.size))


def grad_norm(named_params, grid):
    """sqrt of the sum of squares of every gradient of the model, each counted once."""
    dense_sq = expert_sq = 0.0
    for name, p in named_params:
        if p.grad is None:
            continue
        square = float((p.grad.astype("float64") ** 2).sum())
        if is_expert(name):
            expert_sq += square if grid.tp_rank == 0 else 0.0   # experts: replicated over tp
        elif tp_axis(name) is not None or grid.tp_rank == 0:     # tp shard, or one tp copy
            dense_sq += square
    with trace.label("grad_norm"):
        total = _sum(expert_sq, grid.ep) + dense_sq       # each expert once
        total = _sum(_sum(total, grid.tp), grid.pp)       # each tp shard, each stage once
    return math.sqrt(total)


def _sum(value, group):
    """value summed over ``group`` (a float; one all-reduce of 8 bytes unless alone)."""
    if group.size == 1:
        return value
    return float(all_reduce(xp.asarray([value]), group)[0])


def clip_grad_norm(named_params, grid, max_norm):
    """Scale every gradient by min(1, max_norm / ||g||); returns ||g|| before clipping."""
    named = list(named_params)
    norm = grad_norm(named, grid)
    if norm > max_norm:
        for _, p in named:
            if p.grad is not None:
                p.grad *= max_norm / (norm + 1e-6)
    return norm
