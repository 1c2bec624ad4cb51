"""Module and Parameter: the containers every layer, serial or parallel, is made of.

A Module registers the Parameters and sub-Modules assigned to its attributes,
in assignment order, so ``named_parameters()`` gives stable dotted names such
as ``blocks.0.attn.qkv.weight``. Those names are the keys of ``state_dict()``,
of checkpoints, and of the comparison of every parallel scheme with one process.
"""
from minimegatron.autodiff.tensor import Tensor


class Parameter(Tensor):
    """A leaf Tensor that a Module owns and an optimizer updates."""

    is_weight = True      # its gradient is W in a split backward (autodiff/split_backward.py)

    def __init__(self, data, dtype=None):
        super().__init__(data, requires_grad=True, dtype=dtype)

    def __repr__(self):
        return f"Parameter(shape={self.shape}, dtype={self.dtype})"


class Module:
    def __init__(self):
        object.__setattr__(self, "_parameters", {})
        object.__setattr__(self, "_modules", {})
        object.__setattr__(self, "training", True)

    def __setattr__(self, name, value):
        if isinstance(value, Parameter):
            self._parameters[name] = value
        elif isinstance(value, Module):
            self._modules[name] = value
        object.__setattr__(self, name, value)

    def forward(self, *args, **kwargs):
        raise NotImplementedError

    _watch = None        # an ActivationWatch (nn/watch.py) keeps this module's activations

    def __call__(self, *args, **kwargs):
        if self._watch is not None:
            return self._watch.call(self, args, kwargs)
        return self.forward(*args, **kwargs)

    # ---- traversal ---------------------------------------------------------------
    def named_modules(self, prefix=""):
        yield prefix, self
        for name, module in self._modules.items():
            yield from module.named_modules(f"{prefix}.{name}" if prefix else name)

    def named_parameters(self, prefix=""):
        for module_name, module in self.named_modules(prefix):
            for name, p in module._parameters.items():
                yield (f"{module_name}.{name}" if module_name else name), p

    def parameters(self):
        return [p for _, p in self.named_parameters()]

    def num_parameters(self):
        return sum(p.size for p in self.parameters())

    # ---- state -----------------------------------------------------------------------
    def state_dict(self):
        """name -> a copy of the parameter's array."""
        return {name: p.data.copy() for name, p in self.named_parameters()}

    def load_state_dict(self, state):
        """Copy arrays into the parameters; names and shapes must match exactly."""
        own = dict(self.named_parameters())
        missing, unexpected = sorted(set(own) - set(state)), sorted(set(state) - set(own))
        if missing or unexpected:
            raise ValueError(f"load_state_dict: missing {missing}, unexpected {unexpected}")
        for name, p in own.items():
            if tuple(state[name].shape) != p.shape:
                raise ValueError(f"load_state_dict: {name} has shape {tuple(state[name].shape)}"
                                 f", the model expects {p.shape}")
            p.data[...] = state[name]

    def train(self, mode=True):
        for _, module in self.named_modules():
            object.__setattr__(module, "training", mode)
        return self

    def eval(self):
        return self.train(False)

    def zero_grad(self):
        for p in self.parameters():
            p.grad = None


class ModuleList(Module):
    """A list of Modules, registered as ``0``, ``1``, ... for dotted names."""

    def __init__(self, modules=()):
        super().__init__()
        object.__setattr__(self, "_list", [])
        for m in modules:
            self.append(m)

    def append(self, module):
        setattr(self, str(len(self._list)), module)
        self._list.append(module)

    def __iter__(self):
        return iter(self._list)

    def __len__(self):
        return len(self._list)

    def __getitem__(self, i):
        return self._list[i]
