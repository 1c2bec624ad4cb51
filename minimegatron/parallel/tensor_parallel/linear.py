"""Column- and row-parallel linear layers (Megatron): Y = XA + b with A split over tp ranks.

    column split  A = [A_1, ..., A_p]        Y_i = X A_i          Y = [Y_1, ..., Y_p]
    row split     A = [A_1; ...; A_p]        X = [X_1, ..., X_p]  Y = X_1 A_1 + ... + X_p A_p

A column-parallel layer passes its input through f (mappings.py: identity
forward, all-reduce backward); a row-parallel layer sums its partial products
with g (all-reduce forward, identity backward). Each rank keeps its slice of
the full (serial) weight, so the parallel layer starts equal to nn.Linear.
With ``sequence_parallel`` (sequence.py) the input of a column-parallel layer
arrives split by tokens and is all-gathered (g, fused with the product), and a
row-parallel layer reduce-scatters its sum (g-bar) instead of all-reducing it.
Tutorial: ``minimegatron run -n 2 tutorials/02_worked_example.py``.
"""
from minimegatron.backend import asarray
from minimegatron.nn.init import linear_init
from minimegatron.nn.module import Module, Parameter
from minimegatron.parallel.tensor_parallel.mappings import (copy_to_tp, gather_from_tp,
                                                            reduce_from_tp, scatter_to_tp)
from minimegatron.parallel.tensor_parallel.sequence import (gather_matmul,
                                                            reduce_scatter_to_sequence,
                                                            shared_param)
from minimegatron.parallel.tensor_parallel.sequence_fp8 import fp8_gather_matmul


def _full_weights(kind, in_features, out_features, tp, bias, master_weight, master_bias,
                  seed, dtype):
    """Check sizes (before any collective), then the full (weight, bias) every rank slices."""
    split_name, split = (("out_features", out_features) if kind == "column"
                         else ("in_features", in_features))
    if split % tp:
        raise ValueError(f"{kind.capitalize()}ParallelLinear: {split_name}={split} is not "
                         f"divisible by tp={tp}")
    if master_weight is not None and tuple(master_weight.shape) != (in_features, out_features):
        raise ValueError(f"{kind.capitalize()}ParallelLinear: master_weight has shape "
                         f"{tuple(master_weight.shape)}, expected (in_features, out_features)"
                         f" = ({in_features}, {out_features})")
    if master_bias is not None and tuple(master_bias.shape) != (out_features,):
        raise ValueError(f"{kind.capitalize()}ParallelLinear: master_bias has shape "
                         f"{tuple(master_bias.shape)}, expected ({out_features},)")
    weight, b = linear_init(in_features, out_features, seed, dtype)   # the serial Linear's rule
    if master_weight is not None:
        weight = asarray(master_weight, dtype=dtype)
    if master_bias is not None:
        b = asarray(master_bias, dtype=dtype)
    return weight, (b if bias else None)


class ColumnParallelLinear(Module):
    """Y = X A + b with A = [A_1, ..., A_p] split by columns: rank i computes Y_i = X A_i + b_i.

    weight (in, out/tp), bias (out/tp,). The input passes through f (its
    gradient is all-reduced); the output stays split unless ``gather_output``.
    ``sequence_parallel``: the input is (B, T/tp, in) and goes through g instead.
    ``last_partial`` keeps this rank's Y_i from the latest forward (for teaching).
    """

    def __init__(self, in_features, out_features, tp_group, bias=True, gather_output=False,
                 master_weight=None, master_bias=None, seed=0, dtype="float64",
                 sequence_parallel=False):
        super().__init__()
        self.sequence_parallel = sequence_parallel
        weight, b = _full_weights("column", in_features, out_features, tp_group.size, bias,
                                  master_weight, master_bias, seed, dtype)
        self.in_features, self.out_features = in_features, out_features
        self.tp_group, self.gather_output = tp_group, gather_output
        # EXERCISE 3.3 begin
        width = out_features // tp_group.size
        cols = slice(tp_group.rank * width, (tp_group.rank + 1) * width)
        # EXERCISE 3.3 end
        self.weight = Parameter(weight[:, cols].copy())                   # (in, out/tp)
        self.bias = Parameter(b[cols].copy()) if b is not None else None  # (out/tp,)
        self.last_partial = None

    def forward(self, x):
        if self.sequence_parallel and getattr(self.weight, "fp8", False):   # e4m3 gathered
            y = fp8_gather_matmul(x, self.weight, self.tp_group, self.weight.fp8_agree)
        elif self.sequence_parallel:
            y = gather_matmul(x, self.weight, self.tp_group)   # g: (B, T, out/tp) = X A_i
        else:
            x = copy_to_tp(x, self.tp_group)             # f: (..., in) on every rank
            y = x @ self.weight                          # (..., out/tp) = X A_i
        if self.bias is not None:
            y = y + self.bias
        self.last_partial = y.data
        return gather_from_tp(y, self.tp_group) if self.gather_output else y


class RowParallelLinear(Module):
    """Y = X A + b with A = [A_1; ...; A_p] split by rows: Y = sum_i X_i A_i, then + b.

    weight (in/tp, out), bias (out,) replicated and added once after the sum.
    The input is split by columns (scatter) unless ``input_is_parallel``; the
    partial products X_i A_i go through g (all-reduce). ``last_partial`` keeps
    this rank's X_i A_i from the latest forward (for teaching). ``sequence_parallel``:
    g-bar (reduce-scatter) in place of g, the output is (B, T/tp, out), the bias
    goes through f (it sees only this rank's tokens).
    """

    def __init__(self, in_features, out_features, tp_group, bias=True, input_is_parallel=False,
                 master_weight=None, master_bias=None, seed=0, dtype="float64",
                 sequence_parallel=False):
        super().__init__()
        self.sequence_parallel = sequence_parallel
        weight, b = _full_weights("row", in_features, out_features, tp_group.size, bias,
                                  master_weight, master_bias, seed, dtype)
        self.in_features, self.out_features = in_features, out_features
        self.tp_group, self.input_is_parallel = tp_group, input_is_parallel
        # EXERCISE 3.4 begin
        height = in_features // tp_group.size
        rows = slice(tp_group.rank * height, (tp_group.rank + 1) * height)
        # EXERCISE 3.4 end
        self.weight = Parameter(weight[rows, :].copy())                   # (in/tp, out)
        self.bias = Parameter(b.copy()) if b is not None else None        # (out,) replicated
        self.last_partial = None

    def forward(self, x):
        if self.sequence_parallel:
            return self.forward_sequence_parallel(x)
        if not self.input_is_parallel:
            x = scatter_to_tp(x, self.tp_group)          # (..., in/tp) = X_i
        # EXERCISE 3.5 begin
        partial = x @ self.weight                        # (..., out) = X_i A_i
        self.last_partial = partial.data
        y = reduce_from_tp(partial, self.tp_group)       # g: sum_i X_i A_i
        # EXERCISE 3.5 end
        return y + self.bias if self.bias is not None else y

    def forward_sequence_parallel(self, x):
        """g-bar: this rank's tokens of sum_i X_i A_i, (B, T/tp, out), + b (through f)."""
        partial = x @ self.weight                        # (B, T, out) = X_i A_i
        self.last_partial = partial.data
        y = reduce_scatter_to_sequence(partial, self.tp_group)   # (B, T/tp, out)
        return y if self.bias is None else y + shared_param(self.bias, self.tp_group)
