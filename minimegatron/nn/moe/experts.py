"""E expert MLPs side by side, with stacked weights: expert e is row e of each.

    fc1.weight (E, D, 4D)  fc1.bias (E, 4D)  fc2.weight (E, 4D, D)  fc2.bias (E, D)
    expert_e(x) = gelu(x W1[e] + b1[e]) W2[e] + b2[e]        (the dense MLP's math)

Rows come expert-major (routing.py): counts[e] rows of expert e, one block
after another. With capacity every expert has the same count c, and the
experts run as ONE batched matmul on (E, c, D); dropless, each expert runs on
its own block. The names follow the GPT's (``...experts.fc2.weight`` starts
like ``fc2``, nn/init.py), so expert parallelism can build the full weight and
keep its rows e*E/ep .. (e+1)*E/ep ("master weight, then split").
In fp8 (``fp8.mark_experts``) each expert's matmul has its own scales: the batched
call is one grouped fp8 matmul, an expert alone an fp8 matmul of W[e] (autodiff/fp8.py).
"""
from minimegatron.autodiff import fp8, functional as F
from minimegatron.backend import xp
from minimegatron.nn.module import Module, Parameter
from minimegatron.autodiff.ops import concatenate


class StackedLinear(Module):
    """E Linears: weight (E, in, out), bias (E, out); y_e = x_e W[e] + b[e]."""

    def __init__(self, experts, in_features, out_features, dtype="float64"):
        super().__init__()
        self.weight = Parameter(xp.zeros((experts, in_features, out_features), dtype=dtype))
        self.bias = Parameter(xp.zeros((experts, out_features), dtype=dtype))

    def batched(self, x):
        """(E, c, in) -> (E, c, out), every expert at once."""
        experts, _, out = self.weight.shape
        return x @ self.weight + self.bias.reshape(experts, 1, out)

    def one(self, x, e):
        """(c, in) -> (c, out) through expert e alone (in fp8 if its weights are marked)."""
        if getattr(self.weight, "fp8", False):
            return fp8.fp8_matmul(x, self.weight[e]) + self.bias[e]
        return x @ self.weight[e] + self.bias[e]


class ExpertMLPs(Module):
    """``experts`` MLPs D -> 4D -> D; ``forward(rows, counts)`` on expert-major rows."""

    def __init__(self, experts, d_model, dtype="float64"):
        super().__init__()
        self.num_experts = experts
        self.fc1 = StackedLinear(experts, d_model, 4 * d_model, dtype)
        self.fc2 = StackedLinear(experts, 4 * d_model, d_model, dtype)

    def forward(self, rows, counts):
        """rows (n, D), counts[e] rows of expert e in order -> (n, D)."""
        counts = [int(c) for c in counts]
        experts, width = self.num_experts, rows.shape[-1]
        if len(set(counts)) == 1:                              # capacity: one batched call
            x = rows.reshape(experts, counts[0], width)        # (E, c, D)
            y = self.fc2.batched(F.gelu(self.fc1.batched(x)))  # (E, c, D)
            return y.reshape(experts * counts[0], width)       # (n, D)
        outs, start = [], 0
        for e, count in enumerate(counts):                     # dropless: expert by expert
            if count:
                x = rows[start:start + count]                  # (counts[e], D)
                outs.append(self.fc2.one(F.gelu(self.fc1.one(x, e)), e))
            start += count
        if not outs:
            return rows * 0.0
        return concatenate(outs, axis=0)                       # (n, D)
