"""Runs on every rank (tests/mpi_harness.run_mpi): mismatched collectives in checking mode.

``check_all()`` returns {case: what this rank saw}: the CollectiveMismatch
message, "no error", or a measured value. In each mismatch the LAST rank makes
the different call, so on 4 ranks three ranks agree and one does not; every
rank must raise the same error anyway. Cases M1-M12 are the twelve
mismatches every collective check must catch.
"""
import numpy as np

from minimegatron import comm
from minimegatron.comm import comm_check, trace
from minimegatron.nn import Linear
from minimegatron.optim import SGD
from minimegatron.parallel.data_parallel import DistributedDataParallel, zero_optimizer


def outcome(fn):
    """The CollectiveMismatch message fn raises, or "no error"."""
    try:
        fn()
    except comm_check.CollectiveMismatch as error:
        return str(error)
    return "no error"


def mismatches(g):
    """{case: a zero-argument call}; the last rank's call differs from the others'."""
    N, odd = g.size, g.rank == g.size - 1
    x4, x8 = np.ones(4), np.ones(8)
    model = Linear(3, 2, seed=0)
    return {
        "M1_shape": lambda: comm.all_reduce(x8 if odd else x4, g),
        "M2_dtype": lambda: comm.all_reduce(np.ones(4, np.float32 if odd else np.float64), g),
        "M3_reduce_op": lambda: comm.all_reduce(x4, g, op="max" if odd else "sum"),
        "M4_root": lambda: comm.broadcast(x4.copy(), g, root=1 if odd else 0),
        "M5_all_gather_vs_reduce_scatter": lambda: (
            comm.reduce_scatter(np.ones(2 * N), g) if odd else comm.all_gather(np.ones(2), g)),
        "M6_rows_without_sizes": lambda: comm.all_gather(np.ones((3 if odd else 2, 2)), g),
        "M7_lying_sizes": lambda: comm.all_gather(np.ones((5 if odd else 3, 2)), g,
                                                  sizes=[3] * N),
        "M8_all_reduce_vs_broadcast": lambda: (
            comm.broadcast(x4.copy(), g) if odd else comm.all_reduce(x4, g)),
        "M9_ddp_buckets": lambda: DistributedDataParallel(model, g,
                                                          bucket_bytes=1 if odd else 2 ** 20),
        "M10_zero_stage": lambda: zero_optimizer(model, g, stage=2 if odd else 1,
                                                 optimizer=SGD(model.parameters(), lr=0.1)),
        "M11_nonblocking": lambda: (comm.ibroadcast(x4.copy(), g) if odd
                                    else comm.iall_reduce(x4, g)).wait(),
        "M12_reduce_root": lambda: comm.reduce(x4, g, root=1 if odd else 0),
        "gather_vs_scatter": lambda: (comm.scatter(np.ones((N, 2)) if g.rank == 0 else None, g)
                                      if odd else comm.gather(np.ones((1, 2)), g)),
        "scatter_axis": lambda: comm.scatter(np.ones((N, N)) if g.rank == 0 else None, g,
                                             axis=1 if odd else 0),
        "reduce_scatter_shape": lambda: comm.reduce_scatter(np.ones((8, 3 if odd else 2)), g),
        "sizes_length": lambda: comm.all_gather(np.ones(2), g, sizes=[2] * (N + 1)),
        "root_out_of_range": lambda: comm.broadcast(x4.copy(), g, root=N),
        "barrier_vs_all_reduce": lambda: comm.barrier(g) if odd else comm.all_reduce(x4, g),
        "all_to_all_shape": lambda: comm.all_to_all(np.ones((2 * N, 3 if odd else 2)), g),
        "all_to_all_axis": lambda: comm.all_to_all(np.ones((N, N)), g, axis=1 if odd else 0),
        "all_to_allv_width": lambda: comm.all_to_allv(np.ones((N, 3 if odd else 2)), g,
                                                      [1] * N, [1] * N),
        # the last rank expects 2 rows (then 0) from rank 0, which sends it 1
        "all_to_allv_expects_more": lambda: comm.all_to_allv(np.ones((N, 2)), g, [1] * N,
                                                             [2 if odd else 1] + [1] * (N - 1)),
        "all_to_allv_expects_fewer": lambda: comm.all_to_allv(np.ones((N, 2)), g, [1] * N,
                                                              [0 if odd else 1] + [1] * (N - 1)),
        "all_to_allv_nonblocking": lambda: comm.iall_to_allv(
            np.ones((N, 2)), g, [1] * N, [2 if odd else 1] + [1] * (N - 1)).wait(),
    }


def counting_slow_paths():
    """Wrap comm_check.diagnose (the slow path after a failed fast check); [count]."""
    count, diagnose = [0], comm_check.diagnose

    def counted(*args, **kw):
        count[0] += 1
        return diagnose(*args, **kw)
    comm_check.diagnose = counted
    return count


def legal_calls(g):
    """Matching calls in checking mode: values right, the trace counts only them, and the
    fast check passes every one of them without the slow path ("slow_paths")."""
    N, r = g.size, g.rank
    out = {}
    slow = counting_slow_paths()
    comm.barrier(g)
    trace.reset()
    sizes = [q + 1 for q in range(N)]                                     # uneven rows
    mine = np.full((sizes[r], 2), float(r))
    want = np.concatenate([np.full((s, 2), float(q)) for q, s in enumerate(sizes)])
    out["uneven_all_gather"] = float(np.abs(comm.all_gather(mine, g, sizes=sizes) - want).max())
    got = comm.gather(mine.T.copy(), g, root=0, axis=1, sizes=sizes)
    out["uneven_gather"] = float(np.abs(got - want.T).max()) if r == 0 else 0.0
    full = np.arange(3.0 * N).reshape(3, N)
    got = comm.scatter(full if r == 0 else None, g, axis=-1 if r == 0 else 1)  # same axis
    out["scatter_negative_axis"] = float(np.abs(got - full[:, r:r + 1]).max())
    out["all_reduce"] = float(comm.all_reduce(np.full(4, float(r)), g)[0])
    out["reduce_scatter"] = float(comm.reduce_scatter(np.ones(2 * N + 1), g).sum())
    out["broadcast"] = float(comm.broadcast(np.full(3, float(r)), g, root=N - 1)[0])
    reduced = comm.reduce(np.ones(3), g, root=0)
    out["reduce"] = float(reduced[0]) if r == 0 else None
    send = [r + j + 1 for j in range(N)]                 # rank i sends i + j + 1 rows to j
    moved = comm.all_to_allv(np.full((sum(send), 2), float(r)), g, send, send)
    expected = np.concatenate([np.full((i + r + 1, 2), float(i)) for i in range(N)])
    out["uneven_all_to_allv"] = float(np.abs(moved - expected).max())
    comm.barrier(g)
    left, right = (r - 1) % N, (r + 1) % N
    handles = [comm.irecv(np.empty(2), left, g, tag=5), comm.isend(np.full(2, float(r)), right, g,
                                                                   tag=5)]
    out["ring"] = float(handles[0].wait()[0])
    handles[1].wait()
    out["trace"] = {op: row["count"] for op, row in trace.summary().items()}
    out["slow_paths"] = slow[0]
    with comm_check.checking(False):
        got = comm.all_gather(mine, g, sizes=sizes)
        out["uneven_all_gather_unchecked"] = float(np.abs(got - want).max())
        out["unchecked_M3"] = outcome(lambda: comm.all_reduce(np.ones(4), g,
                                                              op="max" if r == N - 1 else "sum"))
    return out


def point_to_point(g):
    """Rank 0 sends, rank 1 receives the wrong dtype, then too few elements."""
    out = {}
    for case, (sent, buf) in {"p2p_dtype": (np.ones(4, np.float32), np.empty(4)),
                              "p2p_count": (np.ones(8), np.empty(4))}.items():
        if g.rank == 0:
            out[case] = outcome(lambda: comm.send(sent, 1, g, tag=9))
        elif g.rank == 1:
            out[case] = outcome(lambda: comm.recv(buf, 0, g, tag=9))
    return out


def check_all():
    g = comm.world()
    out = {"mode_on_by_default": comm_check.enabled()}
    slow = counting_slow_paths()
    for case, call in mismatches(g).items():
        out[case] = outcome(call)
    out["mismatch_slow_paths"] = slow[0]
    out.update(legal_calls(g))
    out.update(point_to_point(g))
    out["after_all"] = float(comm.all_reduce(np.array([float(g.rank)]), g)[0])
    return out


def uncaught():
    """all_reduce against broadcast, not caught: the abort hook must end the job."""
    g = comm.world()
    x = np.ones(4)
    comm.broadcast(x, g) if g.rank == g.size - 1 else comm.all_reduce(x, g)
