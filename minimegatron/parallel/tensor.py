"""Tensor (intra-layer) parallelism, Megatron style: split each weight matrix over tp ranks.

The idea (Y = XA + b, A of shape (in, out), p = tp ranks):

    column split  A = [A_1, ..., A_p]        Y_i = X A_i          Y = [Y_1, ..., Y_p]
    row split     A = [A_1; ...; A_p]        X = [X_1, ..., X_p]  Y = X_1 A_1 + ... + X_p A_p

A column-parallel layer needs the whole X on every rank (f: identity forward,
all-reduce backward) and leaves Y split by columns; a row-parallel layer takes
X split by columns and sums the partial products (g: all-reduce forward,
identity backward). Column then row (the Megatron MLP) needs no communication
in between, so a block costs one g forward and one f backward.

Communication per call, for an activation of b*s*h values (8 bytes each in float64):

    copy_to_tp      (f)   forward none              backward all-reduce of dL/dX
    reduce_from_tp  (g)   forward all-reduce of Y   backward none
    gather_from_tp        forward all-gather (last axis)    backward none (split)
    scatter_to_tp         forward none (split)      backward all-gather (last axis)

Every mapping is a no-op (and sends nothing) when the group has one rank.
Tutorials: ``minimegatron run -n 2 tutorials/02_worked_example.py`` and
``minimegatron run -n 4 tutorials/03_tensor_parallel_mlp.py``.
"""
import contextlib

from minimegatron import trace
from minimegatron.backend import asarray
from minimegatron.comm import all_gather, all_reduce
from minimegatron.function import Function
from minimegatron.nn.init import linear_init
from minimegatron.nn.module import Module, Parameter


def _backward_label(ctx):
    """Backward collectives carry the forward's label + ".backward" (for counting)."""
    return trace.label(f"{ctx.label}.backward") if ctx.label else contextlib.nullcontext()


def _local_chunk(x, group):
    """This rank's chunk of x along the last axis: (..., n) -> (..., n/tp)."""
    width = x.shape[-1]
    if width % group.size:
        raise ValueError(f"cannot split a last axis of {width} over {group.size} tp ranks")
    size = width // group.size
    return x[..., group.rank * size:(group.rank + 1) * size].copy()


class CopyToTP(Function):
    """forward: identity | backward: all-reduce over tp   (Megatron's f)"""
    @staticmethod
    def forward(ctx, x, group):
        ctx.group, ctx.label = group, trace.current_label()
        return x

    @staticmethod
    def backward(ctx, grad_out):
        if ctx.group.size == 1:
            return grad_out, None
        with _backward_label(ctx):
            # EXERCISE 3.1 begin
            return all_reduce(grad_out, ctx.group), None
            # EXERCISE 3.1 end


class ReduceFromTP(Function):
    """forward: all-reduce over tp | backward: identity   (Megatron's g)"""
    @staticmethod
    def forward(ctx, x, group):
        # EXERCISE 3.2 begin
        return x if group.size == 1 else all_reduce(x, group)
        # EXERCISE 3.2 end

    @staticmethod
    def backward(ctx, grad_out):
        return grad_out, None


class GatherFromTP(Function):
    """forward: all-gather along the last axis | backward: split, keep this rank's chunk"""
    @staticmethod
    def forward(ctx, x, group):
        ctx.group = group
        return x if group.size == 1 else all_gather(x, group, axis=-1)   # (..., n*tp)

    @staticmethod
    def backward(ctx, grad_out):
        return _local_chunk(grad_out, ctx.group), None                    # (..., n)


class ScatterToTP(Function):
    """forward: split along the last axis, keep this rank's chunk | backward: all-gather"""
    @staticmethod
    def forward(ctx, x, group):
        ctx.group, ctx.label = group, trace.current_label()
        return _local_chunk(x, group)                                     # (..., n/tp)

    @staticmethod
    def backward(ctx, grad_out):
        if ctx.group.size == 1:
            return grad_out, None
        with _backward_label(ctx):
            return all_gather(grad_out, ctx.group, axis=-1), None         # (..., n)


def copy_to_tp(x, group):
    """f: identity forward, all-reduce backward."""
    return CopyToTP.apply(x, group)


def reduce_from_tp(x, group):
    """g: all-reduce forward, identity backward."""
    return ReduceFromTP.apply(x, group)


def gather_from_tp(x, group):
    """All-gather the last axis forward, split backward."""
    return GatherFromTP.apply(x, group)


def scatter_to_tp(x, group):
    """Split the last axis forward, all-gather backward."""
    return ScatterToTP.apply(x, group)


# ---- the two parallel linear layers ---------------------------------------------------------
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
    ``last_partial`` keeps this rank's Y_i from the latest forward (for teaching).
    """

    def __init__(self, in_features, out_features, tp_group, bias=True, gather_output=False,
                 master_weight=None, master_bias=None, seed=0, dtype="float64"):
        super().__init__()
        weight, b = _full_weights("column", in_features, out_features, tp_group.size, bias,
                                  master_weight, master_bias, seed, dtype)
        self.in_features, self.out_features = in_features, out_features
        self.tp_group, self.gather_output = tp_group, gather_output
        # EXERCISE 3.3 begin
        width = out_features // tp_group.size
        cols = slice(tp_group.rank * width, (tp_group.rank + 1) * width)
        # EXERCISE 3.3 end
        self.weight = Parameter(weight[:, cols].copy())                   # (in, out/tp)
        self.weight.tp_axis = 1
        self.bias = Parameter(b[cols].copy()) if b is not None else None  # (out/tp,)
        if self.bias is not None:
            self.bias.tp_axis = 0
        self.last_partial = None

    def forward(self, x):
        x = copy_to_tp(x, self.tp_group)                 # f: (..., in) on every rank
        y = x @ self.weight                              # (..., out/tp) = X A_i
        if self.bias is not None:
            y = y + self.bias
        self.last_partial = y.data
        return gather_from_tp(y, self.tp_group) if self.gather_output else y


class RowParallelLinear(Module):
    """Y = X A + b with A = [A_1; ...; A_p] split by rows: Y = sum_i X_i A_i, then + b.

    weight (in/tp, out), bias (out,) replicated and added once after the sum.
    The input is split by columns (scatter) unless ``input_is_parallel``; the
    partial products X_i A_i go through g (all-reduce). ``last_partial`` keeps
    this rank's X_i A_i from the latest forward (for teaching).
    """

    def __init__(self, in_features, out_features, tp_group, bias=True, input_is_parallel=False,
                 master_weight=None, master_bias=None, seed=0, dtype="float64"):
        super().__init__()
        weight, b = _full_weights("row", in_features, out_features, tp_group.size, bias,
                                  master_weight, master_bias, seed, dtype)
        self.in_features, self.out_features = in_features, out_features
        self.tp_group, self.input_is_parallel = tp_group, input_is_parallel
        # EXERCISE 3.4 begin
        height = in_features // tp_group.size
        rows = slice(tp_group.rank * height, (tp_group.rank + 1) * height)
        # EXERCISE 3.4 end
        self.weight = Parameter(weight[rows, :].copy())                   # (in/tp, out)
        self.weight.tp_axis = 0
        self.bias = Parameter(b.copy()) if b is not None else None        # (out,) replicated
        if self.bias is not None:
            self.bias.tp_axis = None
        self.last_partial = None

    def forward(self, x):
        if not self.input_is_parallel:
            x = scatter_to_tp(x, self.tp_group)          # (..., in/tp) = X_i
        # EXERCISE 3.5 begin
        partial = x @ self.weight                        # (..., out) = X_i A_i
        self.last_partial = partial.data
        y = reduce_from_tp(partial, self.tp_group)       # g: sum_i X_i A_i
        # EXERCISE 3.5 end
        return y + self.bias if self.bias is not None else y
