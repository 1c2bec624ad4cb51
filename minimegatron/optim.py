"""Optimizers with PyTorch's update rules, written on raw arrays.

Each optimizer's math lives in ``update(param, grad, state, step)``, which
changes ``param`` in place. ``step()`` applies it to every parameter that has
a gradient. ZeRO (parallel/zero.py) calls the same ``update`` on the flat
1/N shard a rank owns, so the sharded and unsharded updates share one formula.

SGD (momentum mu, weight decay wd, lr):
    g = grad + wd * p;   b = g (first step) or mu * b + g;   p -= lr * b
AdamW (decoupled weight decay):
    p *= 1 - lr * wd
    m = b1 m + (1 - b1) g;   v = b2 v + (1 - b2) g^2
    p -= lr * (m / (1 - b1^t)) / (sqrt(v / (1 - b2^t)) + eps)
"""
from minimegatron.backend import xp
from minimegatron.function import no_grad


class Optimizer:
    def __init__(self, params, lr):
        self.params = list(params)
        if not self.params:
            raise ValueError("the optimizer got an empty parameter list")
        self.lr = lr
        self.state = [dict() for _ in self.params]   # per parameter, e.g. {"m": .., "v": ..}
        self.step_count = 0

    def update(self, param, grad, state, step):
        raise NotImplementedError

    def step(self):
        self.step_count += 1
        with no_grad():
            for p, state in zip(self.params, self.state):
                if p.grad is not None:
                    self.update(p.data, p.grad, state, self.step_count)

    def zero_grad(self):
        for p in self.params:
            p.grad = None

    def state_dict(self):
        """{"step": t, "state": [{name: array}, ...]} in parameter order."""
        return {"step": self.step_count,
                "state": [{k: v.copy() for k, v in s.items()} for s in self.state]}

    def load_state_dict(self, saved):
        if len(saved["state"]) != len(self.params):
            raise ValueError(f"optimizer state for {len(saved['state'])} parameters, "
                             f"this optimizer has {len(self.params)}")
        self.step_count = int(saved["step"])
        self.state = [{k: xp.asarray(v) for k, v in s.items()} for s in saved["state"]]


class SGD(Optimizer):
    """p -= lr * b,  b = mu * b + (grad + wd * p)  (b = g on the first step)"""

    def __init__(self, params, lr=0.01, momentum=0.0, weight_decay=0.0):
        super().__init__(params, lr)
        self.momentum, self.weight_decay = momentum, weight_decay

    def update(self, param, grad, state, step):
        g = grad + self.weight_decay * param if self.weight_decay else grad
        if self.momentum:
            if "momentum" in state:
                state["momentum"] = self.momentum * state["momentum"] + g
            else:
                state["momentum"] = g.copy()
            g = state["momentum"]
        param -= self.lr * g


class AdamW(Optimizer):
    """Adam with decoupled weight decay (Loshchilov and Hutter), as torch.optim.AdamW."""

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.01):
        super().__init__(params, lr)
        self.betas, self.eps, self.weight_decay = betas, eps, weight_decay

    def update(self, param, grad, state, step):
        b1, b2 = self.betas
        if "m" not in state:
            state["m"], state["v"] = xp.zeros_like(param), xp.zeros_like(param)
        param *= 1.0 - self.lr * self.weight_decay
        state["m"] = b1 * state["m"] + (1.0 - b1) * grad
        state["v"] = b2 * state["v"] + (1.0 - b2) * grad * grad
        m_hat = state["m"] / (1.0 - b1 ** step)
        v_hat = state["v"] / (1.0 - b2 ** step)
        param -= self.lr * m_hat / (xp.sqrt(v_hat) + self.eps)
