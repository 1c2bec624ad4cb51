"""MoEConfig: how many experts, how many each token picks, how much room each has.

    num_experts      E expert MLPs per MoE layer (each D -> 4D -> D, like the dense MLP)
    top_k            k experts per token (Switch: 1, GShard / Mixtral: 2)
    capacity_factor  room per expert and sequence: C = ceil(k * T * factor / E) slots for
                     the T tokens of one sequence (GShard's "group"); tokens over C are
                     dropped and pass through the residual. None: dropless (no C)
    aux_loss_coeff   alpha of the load-balancing loss  alpha * E * sum_i f_i * P_i
    z_loss_coeff     beta of the router z-loss        beta * mean_t logsumexp(logits_t)^2
    bias_update_rate gamma of aux-loss-free balancing (DeepSeek-V3, balancing.py): a
                     per-expert bias on the router's choice, nudged by +-gamma after each
                     step by the sign of the load's deviation; 0 = off
    every            MoE in place of the MLP in blocks i with i % every == 0:
                     1 = every block, 2 = every other block (0, 2, ...), Megatron's
                     ``moe_layer_freq`` pattern ``[1 if i % k == 0 else 0 for i in range(L)]``

``check_moe_config`` raises the same ValueError on every rank before any message.
"""
import math
import numbers
from dataclasses import dataclass


@dataclass(frozen=True)
class MoEConfig:
    num_experts: int = 8
    top_k: int = 2
    capacity_factor: float = 1.0       # None: dropless
    aux_loss_coeff: float = 1e-2
    z_loss_coeff: float = 1e-3
    every: int = 1
    bias_update_rate: float = 0.0

    def __post_init__(self):
        check_moe_config(self)

    @property
    def dropless(self):
        return self.capacity_factor is None

    def capacity(self, tokens):
        """C = ceil(k * T * factor / E): slots per expert for a group of T tokens."""
        if self.dropless:
            return None
        return math.ceil(self.top_k * tokens * self.capacity_factor / self.num_experts)

    def is_moe_layer(self, index):
        """True if block ``index`` has an MoE in place of its MLP."""
        return index % self.every == 0


def _positive_int(name, value):
    if not isinstance(value, numbers.Integral) or isinstance(value, bool) or value < 1:
        raise ValueError(f"MoEConfig.{name} must be an int >= 1, got {value!r}")


def check_moe_config(moe):
    """ValueError for E < 1, k > E, a capacity factor <= 0 or > E/k, negative coefficients,
    inf, nan. numpy numbers become Python's (the config is saved as JSON).

    E/k bounds the factor: with f = E/k, C = ceil(k * T * f / E) = T, room for every token
    of the group in every expert (a token picks an expert at most once), so a larger f only
    allocates (E, C, D) slots no token can fill (f = 1e4: 10^4 times the tokens)."""
    for name in ("num_experts", "top_k", "every"):
        _positive_int(name, getattr(moe, name))
        object.__setattr__(moe, name, int(getattr(moe, name)))
    if moe.top_k > moe.num_experts:
        raise ValueError(f"MoE: top_k={moe.top_k} > num_experts={moe.num_experts}: a token "
                         "cannot pick more experts than there are")
    factor, most = moe.capacity_factor, moe.num_experts / moe.top_k
    if factor is not None and (isinstance(factor, bool) or not isinstance(
            factor, numbers.Real) or not 0 < factor < math.inf):
        raise ValueError(f"MoE: capacity_factor must be a finite number > 0 (or None for "
                         f"dropless), got {factor!r}")
    if factor is not None and factor > most:
        raise ValueError(f"MoE: capacity_factor={factor!r} > num_experts/top_k = {most:g}: at "
                         f"{most:g} every expert has room for every token already (C = T); "
                         "use at most that, or None for dropless")
    if factor is not None:
        object.__setattr__(moe, "capacity_factor", float(factor))
    for name in ("aux_loss_coeff", "z_loss_coeff", "bias_update_rate"):
        value = getattr(moe, name)
        if isinstance(value, bool) or not isinstance(value, numbers.Real) or not (
                0 <= value < math.inf):
            raise ValueError(f"MoEConfig.{name} must be a finite number >= 0, got {value!r}")
        object.__setattr__(moe, name, float(value))
