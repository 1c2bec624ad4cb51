"""Where the experts live: ep folded over the ranks of dp x cp (Megatron's expert grid).

A dp x cp group (``grid.dp_cp``, N = dp*cp ranks with the same dense weights)
is cut into N/ep blocks of ep consecutive ranks. Inside a block the E experts
are split: rank j of the block holds experts j*E/ep .. (j+1)*E/ep - 1. So for
rank position j in dp_cp:

    ep rank   = j % ep      ep group  (the all-to-all):       positions with the same j // ep
    edp rank  = j // ep     edp group (expert gradients):     positions with the same j % ep

On 8 ranks, dp = 8, ep = 4: ep groups [0,1,2,3] [4,5,6,7]; edp groups [0,4] [1,5]
[2,6] [3,7]. Dense weights are the same on all N ranks: their gradients average
over dp x cp. An expert's weights are on N/ep ranks (its edp group): its
gradient sums over edp (each holder already has the sum over its ep group's
tokens, brought back by the all-to-all) and divides by N.
"""
import numbers


def check_expert_parallel(ep, dp, cp=1, num_experts=None):
    """The same ValueError on every rank, before any message, for an ep that cannot fit."""
    if not isinstance(ep, numbers.Integral) or isinstance(ep, bool) or ep < 1:
        raise ValueError(f"expert parallel: ep must be an int >= 1, got {ep!r}")
    if (dp * cp) % ep:
        raise ValueError(f"expert parallel: ep={ep} does not fit the grid: experts fold over "
                         f"the dp x cp = {dp} x {cp} = {dp * cp} ranks that hold the same "
                         f"dense weights, so ep must divide {dp * cp}")
    if num_experts is not None and num_experts % ep:
        raise ValueError(f"expert parallel: num_experts={num_experts} is not divisible by "
                         f"ep={ep}; every ep rank holds E/ep experts")


def expert_layout(ranks, ep):
    """{"ep": [...], "edp": [...]} of one dp x cp group's world ranks (sorted)."""
    n = len(ranks)
    return {"ep": [[ranks[j] for j in range(n) if j // ep == g] for g in range(n // ep)],
            "edp": [[ranks[j] for j in range(n) if j % ep == g] for g in range(ep)]}


def expert_groups(dp_cp, ep):
    """(ep group, edp group) of this rank, cut from its dp x cp group (two Splits)."""
    j = dp_cp.rank
    ep_group = dp_cp.split(color=j // ep, key=j, name=f"ep{j // ep}")
    edp_group = dp_cp.split(color=j % ep, key=j, name=f"edp{j % ep}")
    return ep_group, edp_group
