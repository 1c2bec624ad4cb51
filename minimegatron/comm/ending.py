"""How a job ends when one rank fails, also in a script that sets nothing up.

MPI trusts every rank to reach every collective. A rank that raises and exits
leaves the others waiting for it, in their next collective, for ever; a rank
that leaves early with ``os._exit(0)`` can end the job with exit code 0. So the
first ``comm.world()`` of a multi-rank job calls ``install()``:

1. **an uncaught exception** prints ``[rank r] uncaught exception`` and its
   traceback, then aborts every rank (``MPI_Abort``): the job ends in seconds,
   naming the rank;
2. **the end is a bounded barrier**: a rank that ends waits in an
   ``Ibarrier`` for the others, at most ``MINIMEGATRON_EXIT_GRACE`` seconds
   (default 60: a slow rank 0 that plots is not killed; ``inf``: for ever;
   ``0``: no barrier); when a rank never arrives (it left early: MPI reports
   its process gone, or the grace ends), the rank says so and aborts with exit
   code 1.

3. **``os._exit`` before the end is an error**, as MPI says it is: every process must
   reach ``MPI_Finalize`` (mpi4py calls it at the interpreter's exit), and ``os._exit``
   skips it. MPI's launcher then kills the others, and MPICH's hydra reports the early
   rank's 0 as often as not (measured: 2 of 8 bare mpi4py runs ended 0). So ``os._exit``
   is wrapped, as a checker such as MUST wraps ``exit`` (``left_early``): in this process,
   before the end, it says which rank left and aborts with exit code 1 (or the code it
   was given). A forked child (multiprocessing) and the interpreter's own end are not
   touched.

Installing starts nothing but these hooks (no thread); ``import`` alone
installs nothing. The lab's fuller form (runtime/faults.py: the watchdog that
finds a rank stuck on one that finished, the job files the launcher reads,
messages in the reader's language) replaces both: ``minimegatron run``, the
tutorials and the commands install it, and it calls ``stand_down()``.
"""
import atexit
import math
import os
import sys
import time
import traceback

from mpi4py import MPI

EXIT_GRACE_ENV = "MINIMEGATRON_EXIT_GRACE"
EXIT_GRACE_S = 60.0
ABORT_GRACE_S = 0.5       # let mpiexec forward the last lines before it kills every rank
_state = {}


def install():
    """Abort the job on an uncaught exception; a bounded exit barrier. Once per process."""
    if _state or MPI.COMM_WORLD.Get_size() == 1:
        return
    _state.update(rank=MPI.COMM_WORLD.Get_rank(), on=True, pid=os.getpid(), exit=os._exit)
    if sys.excepthook is sys.__excepthook__:     # a hook of the user's or the lab's stays
        sys.excepthook = on_exception
    atexit.register(at_exit)
    os._exit = left_early                        # (3): this process's os._exit, wrapped


def stand_down():
    """The lab's faults.py took over: these hooks do nothing (and install nothing later)."""
    _state.update(on=False)
    if sys.excepthook is on_exception:
        sys.excepthook = sys.__excepthook__
    atexit.unregister(at_exit)
    if os._exit is left_early:
        os._exit = _state["exit"]


def on_exception(kind, value, tb):
    text = "".join(traceback.format_exception(kind, value, tb))
    abort(f"[rank {_state.get('rank', '?')}] uncaught exception\n{text}")


def left_early(code=0):
    """``os._exit`` while the guard is on (module docstring, 3): abort, naming the rank."""
    real = _state["exit"]
    if not _state.get("on") or os.getpid() != _state["pid"] or MPI.Is_finalized():
        real(code)                               # a forked child, the lab's own exit
    abort(f"[rank {_state['rank']}] called os._exit({code}) before the end of the script: "
          "MPI needs every rank to reach MPI_Finalize; aborting", code or 1)


def abort(message, code=1):
    """Say ``message`` on stderr, give mpiexec a moment to forward it, then MPI_Abort."""
    sys.stderr.write(message if message.endswith("\n") else message + "\n")
    sys.stderr.flush()
    sys.stdout.flush()
    time.sleep(ABORT_GRACE_S)
    MPI.COMM_WORLD.Abort(code)
    _state.get("exit", os._exit)(code)


def exit_grace():
    """MINIMEGATRON_EXIT_GRACE in seconds (EXIT_GRACE_S when unset or not a number >= 0)."""
    try:
        value = float(os.environ.get(EXIT_GRACE_ENV, "") or EXIT_GRACE_S)
    except ValueError:
        return EXIT_GRACE_S
    return value if value >= 0 else EXIT_GRACE_S


def at_exit():
    """The bounded exit barrier (module docstring, 2)."""
    grace = exit_grace()
    if not _state.get("on") or grace == 0 or MPI.Is_finalized():
        return
    deadline, polls = time.monotonic() + grace, 0
    try:
        barrier = MPI.COMM_WORLD.Ibarrier()
        while math.isinf(grace) or time.monotonic() < deadline:
            if barrier.Test():
                return
            polls += 1
            os.sched_yield() if polls < 2000 else time.sleep(0.001)
    except MPI.Exception as error:          # MPI saw a rank's process end without MPI
        abort(f"[rank {_state['rank']}] finished, but a rank ended without reaching the end "
              f"(os._exit, a signal): {str(error).splitlines()[0]}; aborting")
    abort(f"[rank {_state['rank']}] finished, but not every rank reached the end within "
          f"{grace:g} s: a rank left early (os._exit, a signal) or still runs; aborting "
          f"(set {EXIT_GRACE_ENV} to wait longer)")
