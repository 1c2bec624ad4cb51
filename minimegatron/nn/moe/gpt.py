"""A GPT whose MLPs are mixtures of experts (every block, or every other one).

``MoEGPT(config, moe)``: nn.GPT with ``blocks.i.mlp`` an MoE (layer.py) where
``moe.is_moe_layer(i)``. Every weight starts from gpt_init by its name, the
experts' stacked weights too (``blocks.i.mlp.experts.fc1.weight`` (E, D, 4D)).

The loss the model returns is cross entropy plus every MoE layer's aux loss
(load balancing + z-loss) of this forward; the aux losses' gradient joins
backward inside each layer (losses.attach_aux_loss), so ``loss.backward()`` is
all it takes. ``moe_layers(model)`` lists a model's MoE layers and
``take_aux_loss(model)`` sums (and clears) their logged aux values;
``balance_experts(model)`` is one process's aux-loss-free bias update, after a step's
forwards (balancing.py).
"""
from minimegatron.autodiff import fp8
from minimegatron.nn.gpt import GPT
from minimegatron.nn.init import gpt_init
from minimegatron.nn.moe.balancing import take_load, update_expert_bias
from minimegatron.nn.moe.layer import MoE


def moe_layers(model):
    """The MoE layers of a model (or pipeline stage), in block order."""
    return [m for _, m in model.named_modules() if isinstance(m, MoE)]


def take_aux_loss(model):
    """The sum of the aux losses logged since the last call (and clear the logs)."""
    total = 0.0
    for layer in moe_layers(model):
        total += sum(layer.aux_log)
        layer.aux_log.clear()
    return total


def balance_experts(model):
    """One process's bias update: b <- b + gamma sign(mean - load), the load of every
    forward since the last call (balancing.py); nothing when the bias is off."""
    layers = [m for m in moe_layers(model) if m.expert_bias is not None]
    update_expert_bias(layers, take_load(layers))


def init_by_name(module, prefix, config):
    """Every parameter of ``module`` from gpt_init(prefix + its name, its shape)."""
    for name, p in module.named_parameters(prefix):
        p.data = gpt_init(name, p.shape, config)


class MoEGPT(GPT):
    """GPT(config) with MoE(config.d_model, moe) in place of the MLP of the MoE blocks."""

    def __init__(self, config, moe):
        super().__init__(config)
        self.moe = moe
        for i, block in enumerate(self.blocks):
            if moe.is_moe_layer(i):
                block.mlp = MoE(config.d_model, moe, config.dtype)
                init_by_name(block.mlp, f"blocks.{i}.mlp", config)
                if config.fp8:
                    fp8.mark_experts(block.mlp)     # grouped fp8, a scale per expert

    def loss(self, idx, targets):
        """Mean next-token cross entropy + the MoE layers' aux losses (their value)."""
        take_aux_loss(self)
        ce = super().loss(idx, targets)
        return ce + take_aux_loss(self)
