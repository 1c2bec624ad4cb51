"""Layers and the GPT. ``from minimegatron import nn``; ``nn.Linear``, ``nn.GPT``, ..."""
from minimegatron.nn.module import Module, ModuleList, Parameter
from minimegatron.nn.layers import Dropout, Embedding, LayerNorm, Linear
from minimegatron.nn.gpt import GPT, MLP, Block, CausalSelfAttention, GPTConfig, causal_attention
from minimegatron.nn.init import gpt_init, linear_init

__all__ = ["Module", "ModuleList", "Parameter", "Dropout", "Embedding", "LayerNorm", "Linear",
           "GPT", "GPTConfig", "MLP", "Block", "CausalSelfAttention", "causal_attention",
           "gpt_init", "linear_init"]
