"""The one initialisation rule: every weight is a function of (seed, its dotted name).

    *.bias, ln*.bias              -> 0
    ln*.weight                    -> 1
    *.proj.weight, *.fc2.weight   -> N(0, (0.02 / sqrt(2 n_layer))^2)   (GPT-2 residual scaling)
    any other weight              -> N(0, 0.02^2)

Each draw comes from ``backend.host_rng(seed, name)``: a stream of its own,
keyed by the parameter's name. So a pipeline stage, or a tensor-parallel rank
that holds one slice, rebuilds exactly the full weight the serial GPT has
(``gpt_init(name, full_shape, config)``) and keeps its part. Nothing else in
the model needs to exist.

A stand-alone ``Linear`` (outside a GPT) uses PyTorch's default,
U(-1/sqrt(in), 1/sqrt(in)) for weight and bias, keyed by (seed, "linear.*").
"""
import math

from minimegatron.backend import asarray, host_rng, xp


def gpt_init(name, shape, config):
    """The full initial array of the GPT parameter ``name`` (see the module docstring)."""
    leaf = name.rsplit(".", 1)[-1]
    owner = name.rsplit(".", 2)[-2] if name.count(".") >= 1 else ""
    if leaf == "bias":
        return xp.zeros(shape, dtype=config.dtype)
    if owner.startswith("ln"):
        return xp.ones(shape, dtype=config.dtype)
    std = 0.02
    if owner in ("proj", "fc2"):
        std = 0.02 / math.sqrt(2 * config.n_layer)
    return asarray(host_rng(config.seed, name).normal(0.0, std, size=shape), dtype=config.dtype)


def linear_init(in_features, out_features, seed=0, dtype="float64"):
    """(weight (in, out), bias (out,)) of a stand-alone Linear, U(-k, k), k = 1/sqrt(in)."""
    k = 1.0 / math.sqrt(in_features)
    weight = host_rng(seed, "linear.weight").uniform(-k, k, size=(in_features, out_features))
    bias = host_rng(seed, "linear.bias").uniform(-k, k, size=(out_features,))
    return asarray(weight, dtype=dtype), asarray(bias, dtype=dtype)

