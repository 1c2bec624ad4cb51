"""Runs on every rank: preallocated outputs (``out=``) and the two ways of waiting.

``check_out`` compares every collective's ``out=`` result with its fresh-output
result, under both waits, and counts the buffers comm/collectives.py allocates (0 when
MPI writes straight into ``out``). ``check_bad_out`` passes a wrong ``out`` on
every rank; each raises ValueError before any MPI call, so the next collective
still pairs up. ``check_waiting`` measures the CPU a rank burns while it waits.
"""
import os
import time

import numpy as np

from minimegatron import comm
from minimegatron.comm import polling, staging

from comm_checks import data, err


def _counting_empty():
    """Wrap staging.empty (comm's fresh output buffers) so that every one is counted."""
    counter, real = [0], staging.empty

    def empty(*args, **kw):
        counter[0] += 1
        return real(*args, **kw)
    staging.empty = empty
    return counter


def _same(got, want, out, allocs, before):
    """0.0 when got is out, holds want, and (``allocs``) comm allocated no buffer."""
    if got is not out or err(got, want) != 0.0:
        return 1.0 + err(got, want)
    return 0.0 if allocs is None or allocs[0] == before else 2.0


def _cases(g, dtype):
    """{name: (call with out=, call with a fresh output, empty out, MPI writes out itself)}."""
    N, r = g.size, g.rank
    x = data(r, (2 * N + 1, 3), dtype)
    cube = data(r, (2, 3, 4), dtype, salt=1)
    full = data(0, (2 * N, 3), dtype, salt=2)
    sizes = [len(p) for p in np.array_split(np.arange(2 * N + 1), N)]
    mine = np.array_split(x, N)[r]
    chunk = np.array_split(np.empty((2 * N + 1, 3)), N)[r].shape
    last = N - 1
    return {
        "all_reduce": (lambda o: comm.all_reduce(x, g, out=o), lambda: comm.all_reduce(x, g),
                       np.empty(x.shape, dtype), True),
        "all_reduce_mean": (lambda o: comm.all_reduce(x, g, op="mean", out=o),
                            lambda: comm.all_reduce(x, g, op="mean"),
                            np.empty(x.shape, dtype), True),
        "iall_reduce": (lambda o: comm.iall_reduce(x, g, out=o).wait(),
                        lambda: comm.iall_reduce(x, g).wait(), np.empty(x.shape, dtype), True),
        "all_gather": (lambda o: comm.all_gather(cube, g, out=o), lambda: comm.all_gather(cube, g),
                       np.empty((2 * N, 3, 4), dtype), True),
        "all_gather_sizes": (lambda o: comm.all_gather(mine, g, sizes=sizes, out=o),
                             lambda: comm.all_gather(mine, g, sizes=sizes),
                             np.empty(x.shape, dtype), True),
        "all_gather_axis-1": (lambda o: comm.all_gather(cube, g, axis=-1, out=o),
                              lambda: comm.all_gather(cube, g, axis=-1),
                              np.empty((2, 3, 4 * N), dtype), False),
        "iall_gather": (lambda o: comm.iall_gather(cube, g, out=o).wait(),
                        lambda: comm.iall_gather(cube, g).wait(),
                        np.empty((2 * N, 3, 4), dtype), True),
        "reduce_scatter_uneven": (lambda o: comm.reduce_scatter(x, g, out=o),
                                  lambda: comm.reduce_scatter(x, g), np.empty(chunk, dtype),
                                  True),
        "reduce_scatter_axis1": (lambda o: comm.reduce_scatter(cube, g, axis=1, op="mean",
                                                               out=o),
                                 lambda: comm.reduce_scatter(cube, g, axis=1, op="mean"),
                                 np.empty((2, np.array_split(np.arange(3), N)[r].size, 4),
                                          dtype), False),
        "ireduce_scatter": (lambda o: comm.ireduce_scatter(x, g, out=o).wait(),
                            lambda: comm.ireduce_scatter(x, g).wait(), np.empty(chunk, dtype),
                            True),
        "reduce": (lambda o: comm.reduce(x, g, root=last, out=o),
                   lambda: comm.reduce(x, g, root=last), np.empty(x.shape, dtype), True),
        "scatter": (lambda o: comm.scatter(full if r == 0 else None, g, root=0, out=o),
                    lambda: comm.scatter(full if r == 0 else None, g, root=0),
                    np.empty((2, 3), dtype), True),
        "gather": (lambda o: comm.gather(cube, g, root=0, out=o),
                   lambda: comm.gather(cube, g, root=0), np.empty((2 * N, 3, 4), dtype), True),
    }


def check_out():
    """{case[wait]: 0.0 when out= gives the fresh result, in out, without a new buffer}."""
    g, res = comm.world(), {}
    allocs = _counting_empty()
    for wait, dtype in (("yield", np.float32), ("spin", np.float64)):
        polling.WAIT = wait
        for name, (with_out, fresh, out, direct) in _cases(g, dtype).items():
            want = fresh()
            before = allocs[0]
            got = with_out(out)
            if want is None:                             # reduce / gather off the root
                res[f"{name}[{wait}]"] = 0.0 if got is None else 3.0
                continue
            res[f"{name}[{wait}]"] = _same(got, want, out, allocs if direct else None, before)
        x = data(g.rank, (4, 5), dtype)
        out = np.empty((4, 5), dtype)
        handle = comm.iall_reduce(x, g, out=out)
        res[f"handle_keeps_out[{wait}]"] = float(not any(b is out for b in handle.keep))
        handle.wait()
    polling.WAIT = "auto"
    return res


def check_bad_out():
    """{case: 1 if every rank raised ValueError naming out=}; then one good all_reduce."""
    g, res = comm.world(), {}
    x = np.ones((4, 3))
    bad = {
        "shape": lambda: comm.all_reduce(x, g, out=np.empty((3, 4))),
        "dtype": lambda: comm.all_gather(x, g, out=np.empty((4 * g.size, 3), np.float32)),
        "readonly": lambda: comm.all_reduce(x, g, out=_readonly((4, 3))),
        "overlap": lambda: comm.all_reduce(x, g, out=x),
        "inplace_and_out": lambda: comm.all_reduce(x, g, inplace=True, out=np.empty((4, 3))),
        "not_an_array": lambda: comm.all_reduce(x, g, out=[0.0] * 12),
        "gather_shape": lambda: comm.gather(x, g, out=np.empty((4, 3))),
    }
    for name, call in bad.items():
        try:
            call()
            res[name] = 0
        except ValueError as e:
            res[name] = int("out=" in str(e) or "inplace" in str(e))
    res["after"] = err(comm.all_reduce(x, g), x * g.size)
    return res


def _readonly(shape):
    a = np.empty(shape)
    a.flags.writeable = False
    return a


def check_waiting(seconds=0.2, rounds=3):
    """CPU seconds / wall seconds of the ranks that wait while rank 0 sleeps, per wait mode:
    the least over ``rounds`` for auto_shared, the most for the spinning modes (other
    programs on the machine only take CPU away from a spinning rank)."""
    g, res = comm.world(), {"oversubscribed": polling.OVERSUBSCRIBED,
                            "cores": len(os.sched_getaffinity(0))}
    x = np.ones(1024)
    modes = (("auto_shared", "auto", True, min), ("auto_own_core", "auto", False, max),
             ("spin", "spin", True, max))
    for _ in range(rounds):
        for name, wait, oversubscribed, keep in modes:
            polling.WAIT, polling.OVERSUBSCRIBED = wait, oversubscribed
            comm.barrier(g)
            wall, cpu = time.perf_counter(), time.process_time()
            if g.rank == 0:
                time.sleep(seconds)
            comm.broadcast(x, g, root=0)
            share = (time.process_time() - cpu) / (time.perf_counter() - wall)
            res[name] = keep(res.get(name, share), share)
    polling.WAIT, polling.OVERSUBSCRIBED = "auto", res["oversubscribed"]
    return res
