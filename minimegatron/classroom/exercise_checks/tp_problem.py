"""The problem the tensor-parallel exercises (3.x, and 6.2) are graded on, and the
judge's tools to read it.

The grader runs these on 4 ranks, on the tp groups [0, 1] and [2, 3]: each group
is a strict subset of the world, so a collective over the world sums 4 ranks
instead of 2. The problem (shapes and small integer values, exact in float32 and
float64) is drawn from the grading seed; the judge draws it again and computes
every expected value itself, serially, with NumPy. Every run is traced, so the
judge also reads which collectives ran (op, group, bytes).

Here: the problem's integers (``ints``, ``dims``, ``layer_problem``), the
source notes' worked example, the traced collectives (``traced_calls``,
``expect_calls``) and exact comparisons. The lessons: ``mappings.py`` (3.1 f, 3.2
g), ``linear.py`` (3.3 - 3.5), ``sequence_parallel.py`` (6.2).
"""
import numpy as np

from minimegatron.classroom.exercise_checks.common import CheckFailed, expect_close
from minimegatron.classroom.exercise_checks.lesson import comm_log
from minimegatron.i18n import text

DTYPES = ("float64", "float32")
A = [[10, 14], [11, 15], [12, 16], [13, 17]]
Y = [[74, 98], [258, 346]]
DX = [[24, 26, 28, 30], [24, 26, 28, 30]]              # dL/dX for L = sum(Y): ones(2, 2) A^T
COLUMN_Y_I = [[[74], [258]], [[98], [346]]]            # Y_1 = X A_1, Y_2 = X A_2
ROW_Y_I = [[[11, 15], [95, 131]], [[63, 83], [163, 215]]]    # X_1 A_1, X_2 A_2


# --- the problem, drawn from the seed (the judge draws it again) ----------------------------

def ints(seed, tag, shape, *key):
    """Small integers in [-3, 3] as float64, drawn from (seed, tag, *key): exact in float32."""
    rng = np.random.default_rng([seed, tag, *key])
    return rng.integers(-3, 4, size=shape).astype(np.float64)


def dims(seed, tag, choices):
    """One entry of each tuple in ``choices``, drawn from the seed (the same on every rank)."""
    rng = np.random.default_rng([seed, tag, 999])
    return tuple(int(rng.choice(c)) for c in choices)


def world_rank(ev):
    return ev["group"][ev["rank"]]


def tensor_of(a, dtype, grad=False):
    from minimegatron.backend import asarray
    from minimegatron.autodiff.tensor import Tensor
    return Tensor(asarray(np.asarray(a, dtype=dtype)), requires_grad=grad)


def alone_group(group):
    """A group of this rank alone (a collective over ``group``)."""
    return group.split(group.rank, name=f"alone{group.rank}")


MADE = "MPI"        # the op of an entry of the MPI calls counted apart from the trace


def traced_calls(groups):
    """The collectives traced since the last reset, as evidence (then reset), followed by
    the MPI calls counted apart from the trace in the same time (``mpi_count.made_calls``):
    one entry {"op": MADE, "method": ""} first, then one {"op": MADE, "method", "group",
    "nbytes"} per call (none at all when nothing counts: not under the grader)."""
    from minimegatron.classroom.exercise_checks import mpi_count
    from minimegatron.comm import trace
    from minimegatron.comm import world
    groups = list(groups) + [world()]
    calls = comm_log(list(trace.spans()), groups)
    trace.reset()
    made = mpi_count.made_calls()
    if made is not None:
        named = {g.name: list(g.ranks) for g in groups}
        calls += [{"op": MADE, "method": "", "group": "", "nbytes": 0, "bytes_sent": 0}] + [
            {"op": MADE, "method": method, "group": named.get(name, name), "nbytes": nbytes,
             "bytes_sent": 0} for method, name, nbytes in made]
    return calls


def start_trace():
    from minimegatron.classroom.exercise_checks import mpi_count
    from minimegatron.comm import trace
    trace.reset()
    mpi_count.made_calls()                  # forget what was counted before


class Products:
    """``with Products() as products:`` counts the products X @ A made inside (MatMul's
    forward, however it is reached: ``x @ w``, ``matmul``, a Linear)."""

    def __enter__(self):
        from minimegatron.autodiff import ops
        self.ops, self.saved, self.count = ops, ops.MatMul.__dict__["forward"], 0

        def forward(ctx, *args, **kwargs):
            self.count += 1
            return self.saved.__func__(ctx, *args, **kwargs)
        ops.MatMul.forward = staticmethod(forward)
        return self

    def __exit__(self, *exc):
        self.ops.MatMul.forward = self.saved


def copied(a):
    return None if a is None else a.copy()


def dtype_of(a):
    return str(getattr(a, "dtype", None))


def sent(op, group, nbytes):
    """Bytes one rank sends in ``op`` of an ``nbytes`` argument (trace.py's ring model)."""
    n = len(group)
    return {"all_reduce": 2 * (n - 1) * nbytes // n, "reduce_scatter": (n - 1) * nbytes // n,
            "all_gather": (n - 1) * nbytes}.get(op, 0)


def show_calls(calls):
    return ", ".join(text("tp.call", op=op, group=g, nbytes=n, sent=s) for op, g, n, s in calls)


# the MPI methods under each traced collective (buffer API, blocking or not)
MADE_BY = {"all_reduce": ("Allreduce", "Iallreduce"),
           "all_gather": ("Allgather", "Allgatherv", "Iallgather", "Iallgatherv"),
           "reduce_scatter": ("Reduce_scatter_block", "Reduce_scatter",
                              "Ireduce_scatter_block", "Ireduce_scatter")}
UNTRACED = " (untraced MPI)"


def _made_by(call):
    """The MPI methods that may stand under a trace entry."""
    if call["op"].endswith(UNTRACED):
        return (call["op"][:-len(UNTRACED)],)
    return MADE_BY.get(call["op"], ())


def cross_check(ev, phase, calls):
    """The trace's collectives, minus MADE entries, once each matched with an MPI call
    counted apart from the trace (same group, a method that makes that collective, the
    same bytes where both know them); CheckFailed for a traced collective no MPI call
    made (a forged span), an MPI call no span shows (a hidden collective), or no count."""
    traced = [c for c in calls if c["op"] != MADE]
    made = [c for c in calls if c["op"] == MADE]
    where = {"rank": world_rank(ev), "phase": text(f"tp.{phase}")}
    if not made or made[0]["method"] != "":
        raise CheckFailed(text("tp.no_mpi_count", **where))
    left = made[1:]
    for call in traced:
        match = next((m for m in left if m["method"] in _made_by(call)
                      and m["group"] == call["group"]
                      and (not m["nbytes"] or not call["nbytes"]
                           or int(m["nbytes"]) == int(call["nbytes"]))), None)
        if match is None:
            raise CheckFailed(text("tp.trace_not_made", op=call["op"], group=call["group"],
                                   **where))
        left.remove(match)
    if left:
        raise CheckFailed(text("tp.made_not_traced", method=left[0]["method"],
                               group=left[0]["group"], **where))
    return traced


def expect_calls(ev, phase, calls, want):
    """CheckFailed unless ``calls`` are exactly ``want``, [(op, world ranks, nbytes)], each
    sending what the ring model says, and every one of them is an MPI call counted apart
    from the trace (``cross_check``)."""
    calls = cross_check(ev, phase, calls)
    got = [(c["op"], c["group"], int(c["nbytes"]), int(c["bytes_sent"])) for c in calls]
    want = [(op, list(g), int(n), sent(op, g, n)) for op, g, n in want]
    if got != want:
        raise CheckFailed(text("tp.calls_wrong", rank=world_rank(ev), phase=text(f"tp.{phase}"),
                               got=show_calls(got) or text("tp.no_collective"),
                               want=show_calls(want) or text("tp.no_collective")))


def expect_dtype(ev, what, got, want):
    if got != want:
        raise CheckFailed(text("tp.dtype_wrong", rank=world_rank(ev), what=what, got=got,
                               want=want))


def exact(what, got, want, ev):
    """expect_close with no tolerance: every value here is a small integer."""
    expect_close(what, got, np.asarray(want, dtype=np.float64), atol=0.0, rank=world_rank(ev))


def worked(ev, split, key, want):
    name = text(f"tp.{key}", n=ev["rank"] + 1)
    exact(text("tp.worked", split=text(f"tp.{split}"), name=name), ev["worked"].get(key), want,
          ev)


# ---- the layers' problem (3.3 - 3.5) --------------------------------------------------------

COLUMN_DIMS = ((2, 3), (3, 5), (8, 12))            # X (b, in) . A (in, out), out % 4 == 0
ROW_DIMS = ((2, 3), (8, 12), (3, 5))               # in % 4 == 0
MEMORY_DIMS = (32, 32)                             # a master weight of 8 KB in float64


def layer_problem(seed, tag, choices):
    b, n_in, n_out = dims(seed, tag, choices)
    return {"seed": seed, "b": b, "in": n_in, "out": n_out,
            "W": ints(seed, tag, (n_in, n_out), 1),
            "bias": ints(seed, tag, (n_out,), 2), "X": ints(seed, tag, (b, n_in), 3),
            "G": ints(seed, tag, (b, n_out), 4)}


def layer_groups(group):
    """(name, group): the tp group, a group of this rank alone, the world (tp = 4), and a
    group that is no block of consecutive ranks ([0, 2] and [1, 3]: world rank 2 is rank 1
    there, so "world rank % tp" is not the group's rank)."""
    from minimegatron.comm import world
    strided = world().split(world().rank % 2, name=f"strided{world().rank % 2}")
    return (("tp", group), ("alone", alone_group(group)), ("world", world()),
            ("strided", strided))


def agree(ok, group):
    """True on every rank of the group when ``ok`` holds on every one (one small all-reduce),
    so that a wrong shard skips the layer's collectives on all of them, not on some."""
    from minimegatron import comm
    from minimegatron.backend import asarray
    return bool(comm.all_reduce(asarray([1.0 if ok else 0.0]), group, op="min")[0] > 0)


def run_layer(layer, group, shard_shapes, x_in, g, dtype):
    """This rank's shard, then (when every rank's shard has the right shape) forward and
    backward of one layer; the gradients only when Y has the right shape."""
    out = {"weight": layer.weight.data, "bias": layer.bias.data, "tp": group.size,
           "r": group.rank}
    shapes = (tuple(layer.weight.shape), tuple(layer.bias.shape))
    if not agree(shapes == shard_shapes, group):
        return out
    x = tensor_of(x_in, dtype, grad=True)
    y = layer(x)
    out.update({"Y_i": layer.last_partial, "Y": y.data, "dtype": dtype_of(y.data)})
    if tuple(y.shape) == g.shape:
        (y * tensor_of(g, dtype)).sum().backward()
        out.update({"dX": x.grad, "dW": layer.weight.grad, "db": layer.bias.grad})
    return out
