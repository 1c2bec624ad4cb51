"""A GPT (serial, tensor or context parallel) whose MoE blocks spread their experts over ep.

``use_experts(model, config, moe, ep_group, seq_group)`` puts an
ExpertParallelMoE in place of the MLP of every MoE block (``moe.every``) of any
GPT form with ``blocks[i].mlp``; its router and its E/ep experts start from the
serial MoEGPT's weights. ``expert_parallel_gpt(config, moe, grid)`` builds the
model a grid runs (tp: ParallelGPT, cp: the context-parallel GPT, else GPT).

With tp > 1 the MoE is not split over tp: its input LN2(x) is the full (B, T,
D) on every tp rank (with sequence parallelism it gathers it first, layer.py),
so each tp rank routes the same tokens and runs the same experts over its OWN
ep group (ep groups live inside dp x cp, one per tp rank): the output and
every gradient are equal on the tp ranks, and nothing is reduced over tp.
(Megatron can also split each expert over tp, "expert tensor parallelism";
not here.)
With cp > 1 the sequence's aux-loss counts are summed over ``grid.cp``; the
capacity queue needs a whole sequence on one rank, so cp needs dropless.
"""
from minimegatron.autodiff import fp8
from minimegatron.nn.gpt import GPT
from minimegatron.parallel.expert_parallel.layer import ExpertParallelMoE


def is_expert(name):
    """True for the weights of the experts themselves (split over ep, reduced over edp)."""
    return ".experts." in name


def use_experts(model, config, moe, ep_group, seq_group=None, sp_group=None):
    """Replace the MLP of every MoE block with an ExpertParallelMoE; returns the model."""
    for i, block in enumerate(model.blocks):
        if moe.is_moe_layer(i):
            layer = ExpertParallelMoE(config.d_model, moe, ep_group, config.dtype, seq_group,
                                      sp_group)
            layer.load_full(f"blocks.{i}.mlp", config)
            if config.fp8:                 # each local expert's own scales: no agreement
                fp8.mark_experts(layer)
            block.mlp = layer
    model.moe = moe
    return model


def check_moe_grid(config, moe, grid, sequence_parallel=False):
    """The same ValueError on every rank, before any collective, for a grid MoE cannot use."""
    if grid.cp_size > 1 and not moe.dropless:
        raise ValueError("MoE with cp > 1 needs dropless routing (capacity_factor=None): the "
                         "capacity queue orders a whole sequence's tokens, split over cp")
    if sequence_parallel and grid.tp_size > 1:
        from minimegatron.parallel.tensor_parallel.sequence import check_sequence_length
        check_sequence_length(config.seq_len // grid.cp_size, grid.tp_size)
    if config.dropout:
        raise ValueError(f"MoE: dropout={config.dropout} is not supported; use dropout=0")


def expert_parallel_gpt(config, moe, grid, attention="ring", sequence_parallel=False):
    """The dense model of a grid (GPT, ParallelGPT or the cp GPT) with its experts on grid.ep;
    ``sequence_parallel`` (tp > 1): the dense model's, the MoE gathers the sequence."""
    sp = sequence_parallel and grid.tp_size > 1
    if grid.cp_size > 1:
        from minimegatron.parallel.context_parallel import context_parallel_model
        split = "contiguous" if attention == "ulysses" else "zigzag"
        model = context_parallel_model(config, grid.tp, grid.cp, attention, split, sp)
    elif grid.tp_size > 1:
        from minimegatron.parallel.tensor_parallel import ParallelGPT
        model = ParallelGPT(config, grid.tp, sequence_parallel=sp)
    else:
        model = GPT(config)
    return use_experts(model, config, moe, grid.ep, grid.cp if grid.cp_size > 1 else None,
                       grid.tp if sp else None)
