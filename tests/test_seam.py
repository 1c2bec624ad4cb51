"""The seam: a collective reads as MPI code reads, and its guard sits behind group.comm.

Read ``comm.all_reduce`` top to bottom, following every call into the package:
the first MPI call met is the one that moves the data, in all_reduce itself
(the signature check, the agreed steps, the polling stand-in are behind
``group.comm``: comm/checked.py). The walk is a reader's (``first_mpi_call``:
calls in source order, each package function entered before going on), and it
catches the check's 48-byte all-reduce when a planted collective checks first.
At run time, on 2 ranks, the check still runs, before the data moves.
Then the book's abort guard (comm/ending.py): a plain ``mpiexec -n 4 python
script.py`` that only makes ``comm.world()`` ends in seconds when one rank raises,
naming it, and non-zero when one rank calls ``os._exit(0)`` early.
"""
import ast
import importlib.util
import inspect
import os
import textwrap
import time
import types

import pytest
from mpi4py import MPI

from minimegatron.comm import collectives, nonblocking
from mpi_harness import run_mpi, run_script, time_bound

MPI_CALLS = {name for name in dir(MPI.Intracomm) + dir(MPI.Request) if name[:1].isupper()}
PICKLE_CALLS = {"bcast", "gather", "allgather", "alltoall", "allreduce", "scatter", "send",
                "recv", "barrier", "reduce"}


def is_mpi_call(call):
    """``something.Allreduce(...)`` (an mpi4py method), or ``x.comm.bcast(...)`` (pickle)."""
    func = call.func
    if not isinstance(func, ast.Attribute):
        return False
    return func.attr in MPI_CALLS or (func.attr in PICKLE_CALLS and
                                      ast.unparse(func.value).endswith("comm"))


def resolve(expr, scope):
    """The object a call's name or dotted name means in ``scope`` (module globals), or None."""
    if isinstance(expr, ast.Name):
        return scope.get(expr.id, getattr(__builtins__, expr.id, None)
                         if not isinstance(__builtins__, dict) else __builtins__.get(expr.id))
    if isinstance(expr, ast.Attribute):
        owner = resolve(expr.value, scope)
        return None if owner is None else getattr(owner, expr.attr, None)
    return None


def first_mpi_call(function, package="minimegatron", seen=None):
    """(function, line of source) of the first MPI call a reader meets reading ``function``
    top to bottom and entering each ``package`` function it calls; None if there is none."""
    seen = set() if seen is None else seen
    if function.__code__ in seen:
        return None
    seen.add(function.__code__)
    tree = ast.parse(textwrap.dedent(inspect.getsource(function)))
    calls = sorted((node for node in ast.walk(tree) if isinstance(node, ast.Call)),
                   key=lambda node: (node.lineno, node.col_offset))
    for call in calls:
        if is_mpi_call(call):
            return function, ast.unparse(call)
        target = resolve(call.func, function.__globals__)
        if isinstance(target, types.FunctionType) and \
                target.__module__.split(".")[0] == package:
            found = first_mpi_call(target, package, seen)
            if found is not None:
                return found
    return None


def test_the_first_mpi_call_read_from_all_reduce_moves_the_data():
    function, call = first_mpi_call(collectives.all_reduce)
    assert function is collectives.all_reduce, (function, call)
    assert call.startswith("group.comm.Allreduce(") and "host" in call, call


@pytest.mark.parametrize("function", [
    collectives.all_gather, collectives.reduce_scatter, collectives.all_to_all,
    collectives.all_to_allv, collectives.broadcast, collectives.reduce, collectives.gather,
    collectives.barrier, collectives.send, collectives.recv, nonblocking.iall_reduce,
    nonblocking.iall_gather, nonblocking.ireduce_scatter, nonblocking.iall_to_allv,
    nonblocking.isend, nonblocking.irecv])
def test_every_collectives_first_mpi_call_is_its_own(function):
    found, call = first_mpi_call(function)
    assert found is function and call.startswith("group.comm."), (found, call)


PLANTED = '''
from mpi4py import MPI


def check(group, x):
    sig = [0] * 6
    group.mpi.Allreduce(MPI.IN_PLACE, sig, op=MPI.MAX)


def all_reduce(x, group):
    check(group, x)
    group.comm.Allreduce(x, x)
'''


def test_the_walk_finds_a_check_made_before_the_data(tmp_path):
    path = tmp_path / "planted.py"
    path.write_text(PLANTED)
    spec = importlib.util.spec_from_file_location("planted", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    function, call = first_mpi_call(module.all_reduce, package="planted")
    assert function is module.check and "sig" in call, (function, call)


def test_checking_still_runs_behind_the_seam_before_the_data_moves():
    results = run_mpi(2, "workers/seam_checks.py:all_reduce_calls", timeout=60)
    for rank in results:
        assert rank["right"], rank
        checked = [(method, module) for method, _, module in rank["checked"]]
        data_call = "Allreduce" if rank["spins"] else "Iallreduce"
        # the check's all-reduce (comm_check.check), then the data's, through the seam
        assert checked[0] == ("Allreduce", "minimegatron.comm.comm_check"), checked
        assert checked[-1][0] == data_call and checked[-1][1] in (
            "minimegatron.comm.checked", "minimegatron.comm.polling"), checked
        raw = rank["raw"]
        if rank["spins"]:          # checking off, a core per rank: the raw communicator
            assert raw == [["Allreduce", "all_reduce", "minimegatron.comm.collectives"]], raw
        assert len(raw) == 1, raw


RAISES = '''
import time
import numpy as np
from minimegatron import comm

g = comm.world()
comm.all_reduce(np.ones(4), g)
if g.rank == 2:
    raise ValueError("planted failure on one rank")
comm.barrier(g)
time.sleep(60)
'''

LEAVES = '''
import atexit, os, sys, time
import numpy as np
from minimegatron import comm
from minimegatron.comm import ending

atexit.register(lambda: open(os.path.join(sys.argv[1], f"passed{rank}"), "w").close())
g = comm.world()                    # after the marker: ending's barrier runs before it
rank = g.rank
if sys.argv[2] == "unwrapped":      # the guard without its os._exit wrapper (a planted gap)
    os._exit = ending._state["exit"]
if g.rank == 0 and os.fork() == 0:  # a forked child's os._exit is its own business
    os._exit(0)
comm.all_reduce(np.ones(4), g)
if g.rank == 1:
    time.sleep(1.0)                 # the others are done with their work by now
    os._exit(0)                     # leaves without reaching the end, "successfully"
print(f"rank {g.rank} finished", flush=True)
'''


def test_a_plain_script_ends_when_one_rank_raises_naming_it(tmp_path):
    script = tmp_path / "raises.py"
    script.write_text(RAISES)
    start = time.perf_counter()
    code, out, err = run_script(4, str(script), timeout=60)
    seconds = time.perf_counter() - start
    assert code != 0 and code != 124, (code, out, err)
    assert "[rank 2] uncaught exception" in err and "planted failure" in err, err
    assert seconds < time_bound(10, 55), seconds


def leaves_early(tmp_path, grace, wrapped=True):
    """(exit code, stdout, stderr, the ranks that got past the end of the script)."""
    script = tmp_path / "leaves.py"
    script.write_text(LEAVES)
    args = (tmp_path, "wrapped" if wrapped else "unwrapped")
    code, out, err = run_script(4, str(script), args=args, timeout=60,
                                env={"MINIMEGATRON_EXIT_GRACE": grace})
    return code, out, err, sorted(n for n in os.listdir(tmp_path) if n.startswith("pass"))


def test_a_plain_script_whose_rank_leaves_early_ends_non_zero_naming_it(tmp_path):
    """Rank 1 calls os._exit(0) before the end: the wrapped os._exit says so and aborts with
    exit code 1, every time (unwrapped, MPICH's hydra reports 9 or the early rank's 0); a
    forked child's os._exit on rank 0 is not taken for a rank's."""
    code, out, err, passed = leaves_early(tmp_path, "5")
    assert code == 1, (code, out, err)
    assert "[rank 1] called os._exit(0) before the end of the script" in err, err
    assert "[rank 0]" not in err, err
    assert passed == [], (code, passed)


def test_unwrapped_the_exit_barrier_still_keeps_the_others_from_passing_the_end(tmp_path):
    """The second line of defence, with the wrapper planted away: the others finish their
    work, then wait at the exit barrier for rank 1, which never comes. They abort when MPI
    reports rank 1 gone or the grace ends, unless mpiexec kills them first (then the code
    is mpiexec's: 9, or the early rank's 0, which is why the wrapper exists)."""
    code, out, err, passed = leaves_early(tmp_path, "5", wrapped=False)
    assert "rank 0 finished" in out, out
    assert passed == [], (code, passed)
    assert code != 124, code


def test_without_the_wrapper_and_the_barrier_the_others_end_as_a_success(tmp_path):
    """The planted failure: no wrapper and MINIMEGATRON_EXIT_GRACE=0 (no barrier) let the
    others pass the end as if the job had succeeded."""
    code, out, err, passed = leaves_early(tmp_path, "0", wrapped=False)
    assert passed == ["passed0", "passed2", "passed3"], (code, out, err, passed)
