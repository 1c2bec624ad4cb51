"""Mixture of experts, serial: config, routing, the layer, the GPT. docs/moe.md.

config.py (MoEConfig), routing.py (top-k, capacity, the row plan), rows.py (gather
and scatter of token rows), experts.py (E stacked MLPs), losses.py (load
balancing, z-loss, the aux-loss scaler), balancing.py (the aux-loss-free expert bias),
layer.py (MoE), gpt.py (MoEGPT).
Expert parallelism: minimegatron/parallel/expert_parallel/.
"""
from minimegatron.nn.moe.config import MoEConfig, check_moe_config
from minimegatron.nn.moe.experts import ExpertMLPs, StackedLinear
from minimegatron.nn.moe.balancing import bias_update, take_load, update_expert_bias
from minimegatron.nn.moe.gpt import (MoEGPT, balance_experts, init_by_name, moe_layers,
                                     take_aux_loss)
from minimegatron.nn.moe.layer import MoE
from minimegatron.nn.moe.losses import attach_aux_loss, load_balancing_loss, z_loss
from minimegatron.nn.moe.routing import RoutePlan, choose_experts, route, top_k
from minimegatron.nn.moe.rows import gather_rows, scatter_rows

__all__ = ["MoEConfig", "check_moe_config", "ExpertMLPs", "StackedLinear", "MoEGPT",
           "init_by_name", "moe_layers", "take_aux_loss", "balance_experts", "bias_update",
           "take_load", "update_expert_bias", "MoE", "attach_aux_loss",
           "load_balancing_loss", "z_loss", "RoutePlan", "choose_experts", "route", "top_k",
           "gather_rows", "scatter_rows"]
