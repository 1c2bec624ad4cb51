"""Runs on every rank (via tests/mpi_harness.run_mpi): each collective against NumPy.

Inputs are small integers stored as floats, so every sum is exact in float32
and float64 and the expected error is exactly 0. Every rank can build every
other rank's input (``data(r, ...)``), so the NumPy reference is local.
"""
import numpy as np

from minimegatron import comm
from minimegatron.comm import polling, trace


def data(rank, shape, dtype, salt=0):
    rng = np.random.default_rng([rank, salt, len(shape)] + list(shape))
    return rng.integers(-8, 8, size=shape).astype(dtype)


def err(got, want):
    if got is None or want is None:
        return 0.0 if got is None and want is None else float("inf")
    got, want = np.asarray(got), np.asarray(want)
    if got.shape != want.shape or got.dtype != want.dtype:
        return float("inf")
    return float(np.max(np.abs(got - want))) if got.size else 0.0


def raises_value_error(fn):
    try:
        fn()
    except ValueError:
        return 1
    return 0


def check_dtype(g, dtype):
    """{check name: max abs error} for one dtype on group g."""
    N, r, last = g.size, g.rank, g.size - 1
    out = {}
    xs = [data(q, (5, 3), dtype) for q in range(N)]
    total = sum(xs)
    out["all_reduce_sum"] = err(comm.all_reduce(xs[r], g), total)
    out["all_reduce_mean"] = err(comm.all_reduce(xs[r], g, op="mean"), total / dtype(N))
    out["all_reduce_max"] = err(comm.all_reduce(xs[r], g, op="max"), np.max(xs, axis=0))
    x = xs[r].copy()
    out["all_reduce_inplace"] = err(comm.all_reduce(x, g, inplace=True), total)
    out["all_reduce_inplace_is_x"] = 0.0 if comm.all_reduce(x, g, inplace=True) is x else 1.0
    wide = np.stack([xs[r], xs[r]], axis=2)            # (5, 3, 2)
    view = wide[:, :, 0]                                # non-contiguous
    comm.all_reduce(view, g, inplace=True)
    out["all_reduce_inplace_noncontig"] = err(wide[:, :, 0], total) + err(wide[:, :, 1], xs[r])
    out["iall_reduce_eq"] = err(comm.iall_reduce(xs[r], g).wait(), comm.all_reduce(xs[r], g))
    out["reduce"] = err(comm.reduce(xs[r], g, root=last), total if r == last else None)
    out["reduce_mean"] = err(comm.reduce(xs[r], g, root=0, op="mean"),
                             total / dtype(N) if r == 0 else None)

    b = xs[r].copy()
    out["broadcast"] = err(comm.broadcast(b, g, root=last), xs[last]) + (
        0.0 if comm.broadcast(b, g, root=last) is b else 1.0)
    b = np.zeros((3, 5), dtype).T if r != last else xs[last].copy()
    out["broadcast_noncontig"] = err(comm.broadcast(b, g, root=last), xs[last])
    b = xs[r].copy()
    out["ibroadcast_eq"] = err(comm.ibroadcast(b, g, root=0).wait(), xs[0])

    for rows in (2 * N, 2 * N + 1, 3):                  # even, uneven, fewer rows than ranks
        full = data(0, (rows, 4), dtype, salt=rows)
        chunk = np.array_split(full, N, axis=0)[r]
        x = full if r == 0 else None
        out[f"scatter_rows{rows}"] = err(comm.scatter(x, g, root=0), chunk)
        out[f"scatter_rows{rows}_axis1"] = err(comm.scatter(
            full.T.copy() if r == 0 else None, g, root=0, axis=1), chunk.T)
        parts = np.array_split(full, N, axis=0)
        sizes = [len(p) for p in parts]
        out[f"gather_rows{rows}"] = err(comm.gather(parts[r], g, root=last, sizes=sizes),
                                        full if r == last else None)
        out[f"all_gather_rows{rows}"] = err(comm.all_gather(parts[r], g, sizes=sizes), full)
        out[f"all_gather_rows{rows}_axis-1"] = err(
            comm.all_gather(parts[r].T, g, axis=-1, sizes=sizes), full.T)
        sums = sum(data(q, (rows, 4), dtype, salt=rows) for q in range(N))
        mine = data(r, (rows, 4), dtype, salt=rows)
        want = np.array_split(sums, N, axis=0)[r]
        out[f"reduce_scatter_rows{rows}"] = err(comm.reduce_scatter(mine, g), want)
        out[f"reduce_scatter_rows{rows}_axis1"] = err(
            comm.reduce_scatter(mine.T.copy(), g, axis=1), want.T)
        out[f"ireduce_scatter_rows{rows}_eq"] = err(comm.ireduce_scatter(mine, g).wait(),
                                                    comm.reduce_scatter(mine, g))

    cube = [data(q, (2, 3, 4), dtype, salt=9) for q in range(N)]
    for axis in (0, 1, 2, -1):
        want = np.concatenate(cube, axis=axis)
        out[f"all_gather_axis{axis}"] = err(comm.all_gather(cube[r], g, axis=axis), want)
        out[f"iall_gather_axis{axis}_eq"] = err(comm.iall_gather(cube[r], g, axis=axis).wait(),
                                                want)
        out[f"gather_axis{axis}"] = err(comm.gather(cube[r], g, root=0, axis=axis),
                                        want if r == 0 else None)

    # all-to-all: rank r gets chunk r of every rank's x, in rank order
    blocks = [data(q, (2 * N, 3, N), dtype, salt=11) for q in range(N)]
    for axis in (0, 2, -1):
        want = np.concatenate([np.split(b, N, axis=axis)[r] for b in blocks], axis=axis)
        out[f"all_to_all_axis{axis}"] = err(comm.all_to_all(blocks[r], g, axis=axis), want)
        out[f"iall_to_all_axis{axis}_eq"] = err(
            comm.iall_to_all(blocks[r], g, axis=axis).wait(), want)
    twice = comm.all_to_all(comm.all_to_all(blocks[r], g), g)
    out["all_to_all_twice_is_identity"] = err(twice, blocks[r])
    buf = np.empty((2 * N, 3, N), dtype)
    got = comm.all_to_all(blocks[r], g, out=buf)
    out["all_to_all_out"] = err(got, np.concatenate([np.split(b, N)[r] for b in blocks])) + (
        0.0 if got is buf else 1.0)
    sizes = [[(q + j) % 3 for j in range(N)] for q in range(N)]       # sizes[q][j]: q -> j
    uneven = [data(q, (sum(sizes[q]), 4), dtype, salt=12) for q in range(N)]
    pieces = [np.split(u, np.cumsum(sizes[q])[:-1]) for q, u in enumerate(uneven)]
    want = np.concatenate([pieces[q][r] for q in range(N)])
    recv_sizes = [sizes[q][r] for q in range(N)]
    out["all_to_allv"] = err(comm.all_to_allv(uneven[r], g, sizes[r], recv_sizes), want)
    out["all_to_allv_axis1"] = err(
        comm.all_to_allv(uneven[r].T.copy(), g, sizes[r], recv_sizes, axis=1), want.T)

    right, left = (r + 1) % N, (r - 1) % N               # ring: nonblocking, no deadlock
    buf = np.zeros((5, 3), dtype)
    handles = [comm.irecv(buf, left, g, tag=7), comm.isend(xs[r], right, g, tag=7)]
    out["isend_irecv_ring"] = err(handles[0].wait(), xs[left])
    handles[1].wait()
    if N >= 2 and r in (0, last):                        # blocking pair 0 -> last
        if r == 0:
            comm.send(xs[0], last, g, tag=3)
        else:
            out["send_recv"] = err(comm.recv(np.zeros((5, 3), dtype), 0, g, tag=3), xs[0])
    h = comm.iall_reduce(xs[r], g)
    while not h.test():
        pass
    out["test_then_wait"] = err(h.wait(), total)
    return out


def check_errors(g):
    ints = np.arange(4)
    return {
        "mean_of_ints_raises": raises_value_error(lambda: comm.all_reduce(ints, g, op="mean")),
        "unknown_op_raises": raises_value_error(lambda: comm.all_reduce(ints * 1.0, g, op="avg")),
        "int_all_reduce": err(comm.all_reduce(ints, g), ints * g.size),
        "all_to_all_uneven_raises": raises_value_error(
            lambda: comm.all_to_all(np.zeros(g.size + 1), g)) if g.size > 1 else 1,
        "all_to_allv_bad_sizes_raises": raises_value_error(
            lambda: comm.all_to_allv(np.zeros(3), g, [4] * g.size, [3] * g.size)),
    }


def check_all():
    """Every collective for float32 and float64 on the world group; one dict of errors.

    float32 runs with yielding waits (nonblocking calls), float64 with spinning ones
    (MPI's blocking calls), so both paths of comm/collectives.py run at every rank count.
    """
    g = comm.world()
    out = {"size": g.size, "ranks": g.ranks, "name": g.name}
    for dtype, wait in ((np.float32, "yield"), (np.float64, "spin")):
        polling.WAIT = wait
        out.update({f"{k}[{dtype.__name__}]": v for k, v in check_dtype(g, dtype).items()})
    polling.WAIT = "auto"
    out.update(check_errors(g))
    comm.print_ranks(f"hello from {g.rank}")
    return out


def check_trace():
    """A known sequence of calls -> this rank's trace summary and spans."""
    g = comm.world()
    comm.barrier(g)
    trace.reset()
    x = np.ones(1000, np.float64)                        # 8000 bytes
    comm.all_reduce(x, g)
    comm.all_reduce(x, g)
    comm.all_gather(x, g)
    comm.reduce_scatter(np.ones(1000 * g.size), g)
    comm.broadcast(x.copy(), g, root=0)
    comm.scatter(np.ones(1000 * g.size) if g.rank == 0 else None, g, root=0)
    comm.gather(x, g, root=0)
    comm.reduce(x, g, root=0)
    comm.all_to_all(np.ones(1000 * g.size), g)
    with trace.label("layer0"):
        comm.all_reduce(x, g)
    with trace.span("forward", label="mb3"):
        x * 2
    if g.size >= 2 and g.rank in (0, 1):
        if g.rank == 0:
            comm.send(x, 1, g)
        else:
            comm.recv(np.empty_like(x), 0, g)
    spans = list(trace.spans())
    trace.disable()
    comm.all_reduce(x, g)
    disabled_count = len(trace.spans()) - len(spans)
    trace.enable()
    gathered = comm.gather_object(list(trace.spans()), g, root=0)
    return {"summary": trace.summary(spans), "spans": spans, "disabled_count": disabled_count,
            "gathered_lengths": None if gathered is None else [len(s) for s in gathered]}
