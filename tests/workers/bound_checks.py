"""Runs on every rank: bound (persistent) all-reduces against comm.all_reduce, bit for bit.

Groups: the world, and the strict subsets of even and of odd world ranks
(``world.split(rank % 2)``; with 2 ranks those are single ranks). Each case is
run under both waits ("spin", "yield"), with MPI's persistent all-reduce and with
the fallback that mpi4py takes when ``Allreduce_init`` is missing (simulated:
``Allreduce_init`` raises NotImplementedError, as on Open MPI 4.1).
"""
import copy
import sys

import numpy as np

from minimegatron import comm
from minimegatron.comm import bound, comm_check, polling, trace
from minimegatron.runtime import hang_report

from comm_checks import data


class NoPersistent:
    """A communicator whose MPI library lacks MPI_Allreduce_init (what mpi4py raises then)."""

    def __init__(self, real):
        self.real = real

    def __getattr__(self, name):
        return getattr(self.real, name)

    def Allreduce_init(self, *args, **kw):
        raise NotImplementedError("MPI_Allreduce_init")


def without_persistent(g):
    fallback = copy.copy(g)
    fallback.comm = NoPersistent(g.comm)
    return fallback


def bitwise(a, b):
    """0 when a and b have the same dtype, shape and bytes, else 1."""
    a, b = np.asarray(a), np.asarray(b)
    return int(a.dtype != b.dtype or a.shape != b.shape or a.tobytes() != b.tobytes())


def compare(g, persistent):
    """{case: 0 if bound == comm.all_reduce bitwise over 3 calls with new data, else 1}."""
    res, r = {}, g.rank
    cases = [("float64", "sum"), ("float64", "mean"), ("float32", "mean"), ("float32", "max"),
             ("int64", "sum"), ("int32", "min")]
    for dtype, op in cases:
        for shape in ((7,), (3, 5)):
            x, src, out = np.empty(shape, dtype), np.empty(shape, dtype), np.empty(shape, dtype)
            in_place = bound.bind_all_reduce(x, g, op=op, inplace=True)
            into_out = bound.bind_all_reduce(src, g, op=op, out=out)
            assert in_place.persistent == into_out.persistent == persistent
            worst = 0
            for salt in range(3):                    # new values in the same memory
                value = data(r, shape, dtype, salt) / (3 if op == "mean" else 1)
                value = value.astype(dtype)
                want = comm.all_reduce(value, g, op=op)
                x[...], src[...] = value, value
                worst |= bitwise(in_place(), want) | bitwise(x, want)
                worst |= bitwise(into_out.start().wait(), want) | bitwise(out, want)
                worst |= bitwise(src, value)         # out=: x is only read
            res[f"{dtype}_{op}_{len(shape)}d"] = worst
            in_place.free()
            into_out.free()
    return res


def overlap_and_trace(g):
    """Two bound buffers in flight at once (start, test, wait), and their trace spans."""
    a, b = np.full(5, float(g.rank + 1)), np.full(3, float(g.rank + 1))
    bind_a = bound.bind_all_reduce(a, g, op="mean", inplace=True)
    bind_b = bound.bind_all_reduce(b, g, op="sum", inplace=True)
    trace.reset()
    with trace.label("bucket0"):
        bind_a.start()
    with trace.label("bucket1"):
        bind_b.start()
    while not bind_b.test():
        pass
    bind_a.wait()
    N = g.size
    spans = [s for s in trace.spans() if s["op"] == "all_reduce" and s["group"] == g.name]
    sent = trace.bytes_moved("all_reduce", a.nbytes, N)[0]
    return {"mean": float(np.max(np.abs(a - (N + 1) / 2))),
            "sum": float(np.max(np.abs(b - N * (N + 1) / 2))),
            "spans": len(spans), "labels": sorted(s["label"] for s in spans),
            "nbytes": [s["nbytes"] for s in spans], "first_sent": spans[-1]["bytes_sent"],
            "want_sent": sent, "ordered": int(all(s["end"] >= s["start"] for s in spans)),
            "twice": _start_twice(bind_a)}


def _start_twice(bound_all_reduce):
    bound_all_reduce.start()
    try:
        bound_all_reduce.start()
        caught = 0
    except RuntimeError:
        caught = 1
    bound_all_reduce.wait()
    return caught


class SpyRequest:
    """MPI's persistent request, plus: what hang_report.where_waits says when it is waited on."""

    def __init__(self, real, seen):
        self.real, self.seen = real, seen

    def look(self):
        frame = sys._getframe(1)
        wait = hang_report.where_waits(frame)
        self.seen.update(op=wait["op"], group=wait["group"], ranks=wait["ranks"],
                         in_wait=hang_report.in_wait(frame))

    def Start(self):
        self.real.Start()

    def Wait(self):                      # spin: bound.wait calls MPI_Wait itself
        self.look()
        self.real.Wait()

    def Test(self):                      # yield: polling.wait_all polls it
        self.look()
        return self.real.Test()


def faults_sees_the_wait(g):
    """What hang_report.where_waits reports from inside the bound wait (the current wait mode)."""
    seen, x = {}, np.ones(4)
    bound_ar = bound.bind_all_reduce(x, g, inplace=True)
    bound_ar.requests[0] = SpyRequest(bound_ar.requests[0], seen)
    bound_ar()
    bound_ar.requests[0] = bound_ar.requests[0].real
    return seen


def mismatch(g):
    """Checking mode: rank 0 starts a bound (4,) all-reduce, the others a (6,) one."""
    small, large = np.ones(4), np.ones(6)
    bound_small = bound.bind_all_reduce(small, g, inplace=True)
    bound_large = bound.bind_all_reduce(large, g, inplace=True)
    with comm_check.checking(True):
        try:
            (bound_small if g.rank == 0 else bound_large).start()
            caught = 0
        except comm_check.CollectiveMismatch:
            caught = 1
    return caught


def bad_inputs(g):
    """{case: 1 if every rank raised one ValueError naming the bad rank}; then a good one."""
    x, r, last = np.ones(6), g.rank, g.size - 1
    readonly = np.ones(6)
    readonly.flags.writeable = False
    cases = {
        "readonly_on_last": lambda: bound.bind_all_reduce(readonly if r == last else x, g,
                                                          inplace=True),
        "unknown_op": lambda: bound.bind_all_reduce(x, g, op="prod", inplace=True),
        "mean_of_ints": lambda: bound.bind_all_reduce(np.ones(6, np.int64), g, op="mean",
                                                      inplace=True),
        "not_contiguous": lambda: bound.bind_all_reduce(np.ones(12)[::2], g, inplace=True),
        "no_output": lambda: bound.bind_all_reduce(x, g),
        "inplace_and_out": lambda: bound.bind_all_reduce(x, g, inplace=True, out=np.ones(6)),
        "out_overlaps": lambda: bound.bind_all_reduce(x, g, out=x),
        "out_shape": lambda: bound.bind_all_reduce(x, g, out=np.ones(5)),
        "shape_differs": lambda: bound.bind_all_reduce(np.ones(6 + (r == last)), g,
                                                       inplace=True),
    }
    res = {}
    for name, call in cases.items():
        try:
            call()
            res[name] = 0
        except ValueError as e:
            text = str(e)
            res[name] = int(text.startswith("bind_all_reduce on group") and (
                name in ("readonly_on_last", "shape_differs") and f"rank {g.ranks[last]}"
                in text or name not in ("readonly_on_last", "shape_differs")))
    y = np.ones(3)
    res["after"] = float(np.max(np.abs(comm.all_reduce(y, g) - g.size)))
    return res


def check_all():
    """Every check on the world and on the strict subgroups of even / odd ranks."""
    world = comm.world()
    comm_check.disable()
    half = world.split(world.rank % 2, name=f"half{world.rank % 2}")
    res = {}
    for name, g in (("world", world), ("half", half)):
        for wait in ("spin", "yield"):
            polling.WAIT = wait
            res[f"{name}_{wait}_persistent"] = compare(g, True)
            res[f"{name}_{wait}_fallback"] = compare(without_persistent(g), False)
            res[f"{name}_{wait}_overlap"] = overlap_and_trace(g)
            res[f"{name}_{wait}_fallback_overlap"] = overlap_and_trace(without_persistent(g))
            res[f"{name}_{wait}_faults"] = faults_sees_the_wait(g)
        polling.WAIT = "auto"
        res[f"{name}_mismatch"] = mismatch(g) if g.size > 1 else 1
        res[f"{name}_bad"] = bad_inputs(g)
    res["half_ranks"] = half.ranks
    return res
