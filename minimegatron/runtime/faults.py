"""When one rank fails or ends early: the job ends, and says which rank and why.

``install()`` runs on every rank (``minimegatron.runtime.setup()``: under
``minimegatron run`` before the script, in every tutorial and command, and first
in a user's own script under a plain mpirun):

1. **Exception.** An uncaught exception prints ``[rank r] uncaught exception``
   and its traceback, then aborts every rank (MPI_Abort).
2. **The end is an exit barrier.** A rank that ends (returns, or
   ``sys.exit(code)``) sends a "finished" notice to every other rank, then
   waits in an ``Ibarrier`` for all of them (both on a private copy of
   COMM_WORLD, made by a blocking ``Dup`` at install, so no user message can
   match them; not ``Idup``: see ``install``):
   - a rank still waiting in a collective whose group holds a finished rank
     (or in a send or recv with it, also one started earlier and waited
     later), ``STUCK_S`` after the notice, can never finish: it prints
     ``[rank s] waits in all_reduce ... but rank r finished`` and aborts;
   - a rank that ends with a non-zero code waits ``NONZERO_GRACE_S``, then
     prints ``[rank r] finished (exit code 3) while ranks [..] still run`` and
     aborts with that code (``mpiexec python -m mpi4py`` aborts at once);
   - a rank that ends with code 0 waits ``MINIMEGATRON_EXIT_GRACE`` seconds
     (default 60, ``inf`` = forever, ``0`` = no exit barrier), so a slow
     rank 0 that plots is not killed.
   Under ``minimegatron run`` the exit code is known; under a plain mpiexec
   Python does not tell atexit the code, so it counts as 0.
3. **A watchdog thread** wakes every ``TICK_S``: it probes the notices while
   the main thread waits in a collective (where it waits: hang_report.py), and
   answers the launcher's ``dump_request`` (the hang report).

Each rank records its pid and how it ended in the job directory, where the
launcher (or the grader) reads them back: job_files.py.
"""
import atexit
import os
import sys
import threading
import time
import traceback
from array import array

from minimegatron import i18n
from minimegatron.i18n import book_errors
from minimegatron.i18n import text_or_english as say
from minimegatron.runtime.hang_report import (answer_dump_request, describe, in_wait,
                                              where_waits)
from minimegatron.runtime.job_files import JOB_DIR_ENV, write
from minimegatron.runtime.rank_setup import rank_from_env, world_size_from_env

EXIT_GRACE_ENV = "MINIMEGATRON_EXIT_GRACE"
EXIT_GRACE_S = 60.0
NONZERO_GRACE_S = 1.0
STUCK_S = 2.0             # a wait on a finished rank longer than this is a deadlock
TICK_S = 0.2
ABORT_GRACE_S = 0.5       # let mpiexec forward the last lines before it kills every rank
NOTICE_TAG = 7
YIELD_POLLS = 2000        # at exit: sched_yield between polls, then 1 ms sleeps

_state = {}


def install():
    """Abort on an uncaught exception, an exit barrier at the end, and the watchdog thread.

    The private communicator comes from a blocking ``Dup``: Open MPI (4.1) runs an
    ``Idup``'s context-id rounds as internal nonblocking collectives on COMM_WORLD,
    started from its progress engine, so a rank-dependent interleaving with the
    next ``Iallgather`` on COMM_WORLD mismatches them (MPI_ERR_TRUNCATE, garbage
    rows: a false ``CollectiveMismatch``; open-mpi/ompi#2025). The rule kept here:
    no collective on a communicator while an ``Idup`` of it is pending.
    """
    from minimegatron.comm import ending  # imports mpi4py: not before the reaper forks
    ending.stand_down()                  # the book's own guard (comm/ending.py) steps aside
    sys.excepthook = _on_exception
    if _state:
        return
    from mpi4py import MPI
    world = MPI.COMM_WORLD
    _check_world_size(MPI)
    dup = world.Dup()
    _state.update(MPI=MPI, rank=world.Get_rank(), size=world.Get_size(), dup=dup,
                  job_dir=os.environ.get(JOB_DIR_ENV), grace=_exit_grace(world.Get_rank()),
                  exit_code=None, finished={}, stop=threading.Event(), answered=None,
                  main=threading.main_thread().ident, wait_key=None, wait_since=0.0,
                  probe=_thread_may_call_mpi(MPI))
    write(_state["job_dir"], f"rank{_state['rank']}.pid", str(os.getpid()))
    atexit.register(_at_exit)
    keyval = MPI.COMM_SELF.Create_keyval(delete_fn=_before_finalize)   # MPI_Finalize calls it
    MPI.COMM_SELF.Set_attr(keyval, True)
    _state["watchdog"] = threading.Thread(target=_watch, name="minimegatron-watchdog",
                                          daemon=True)
    _state["watchdog"].start()


def _check_world_size(MPI):
    """Started as one of N ranks, yet MPI sees a world of 1: the mpiexec belongs to another
    MPI library than mpi4py's, and each process would run alone. Say so once and stop."""
    expected = world_size_from_env()
    if expected > 1 and MPI.COMM_WORLD.Get_size() == 1:
        if rank_from_env() == 0:
            library = MPI.Get_library_version().splitlines()[0]
            print(say("faults.world_of_one", expected=expected, library=library),
                  file=sys.stderr, flush=True)
        os._exit(2)


def _thread_may_call_mpi(MPI):
    """The watchdog probes for notices only where MPI allows threads AND it is safe: Open
    MPI's nonblocking collectives fail ("NBC_Progress: an error 15") and hang when another
    thread calls MPI meanwhile, so there only the exit grace and --timeout catch a rank
    stuck on one that finished."""
    multiple = MPI.Query_thread() == MPI.THREAD_MULTIPLE
    return multiple and "Open MPI" not in MPI.Get_library_version()


def _exit_grace(rank):
    text = os.environ.get(EXIT_GRACE_ENV, "")
    try:
        value = float(text) if text else EXIT_GRACE_S
    except ValueError:
        value = -1.0
    if not value >= 0:
        if rank == 0:
            print(say("faults.bad_grace", env=EXIT_GRACE_ENV, text=text, default=EXIT_GRACE_S),
                  file=sys.stderr, flush=True)
        value = EXIT_GRACE_S
    return value


def set_exit_code(code):
    """The launcher's child tells the exit barrier the script's exit code."""
    _state["exit_code"] = code


def exit_code(stop):
    """The exit code Python gives SystemExit ``stop`` (printing a message, as Python does)."""
    if stop.code is None or isinstance(stop.code, int):
        return stop.code or 0
    print(stop.code, file=sys.stderr, flush=True)
    return 1


def _on_exception(kind, value, tb):
    rank = _state.get("rank", "?")
    text = "".join(traceback.format_exception(kind, value, tb)) + in_language(value)
    message = str(value)
    try:
        shown = book_errors.translate(message, i18n.language())
    except Exception:  # noqa: BLE001 - an unknown MINIMEGATRON_LANG: English
        shown = message
    _record(f"fail: raised {kind.__name__}: {message}".splitlines()[0],
            say("faults.raised", kind=kind.__name__, message=shown).splitlines()[0])
    abort_job(say("faults.uncaught", rank=rank) + "\n" + text, 1)


def in_language(error):
    """One more line after the traceback: the book's English message of ``error`` in the
    reader's language (i18n/book_errors.py); "" in English or for a message it does not
    know (a NonFiniteError in a tutorial under MINIMEGATRON_LANG=ko is said in Korean)."""
    try:
        said = book_errors.translate(str(error), i18n.language())
    except Exception:  # noqa: BLE001 - an unknown MINIMEGATRON_LANG: the traceback is enough
        return ""
    return "" if said == str(error) else f"{type(error).__name__}: {said}\n"


def abort_job(message, code):
    """Write ``message`` to stderr, give mpiexec ABORT_GRACE_S to forward it, then MPI_Abort.

    The pause matters: MPICH's mpiexec tears the job down as soon as one rank
    aborts, and the last lines still in a pipe would be lost with it.
    """
    sys.stderr.write(message if message.endswith("\n") else message + "\n")
    sys.stderr.flush()
    sys.stdout.flush()
    time.sleep(ABORT_GRACE_S)
    from mpi4py import MPI
    MPI.COMM_WORLD.Abort(code)
    time.sleep(ABORT_GRACE_S * 10)   # MPICH's Abort may return before mpiexec kills us:
    os._exit(code)                   # never run atexit (the exit barrier) after it


def _record(text, said=None):
    """How this rank ended, in English (``text``: the launcher orders the causes by it), then
    ``said``, the same in the reader's language, when it differs (job_files.failures)."""
    if said is not None and said != text[text.find(": ") + 2:]:
        text += f"\nsaid: {said}"
    if _state.get("rank") is not None:
        write(_state["job_dir"], f"rank{_state['rank']}.end", text)


def _at_exit():
    """The exit barrier (see the module docstring)."""
    s, MPI = _state, _state["MPI"]
    code = s["exit_code"]         # None: a plain mpiexec, where atexit cannot see it
    grace = min(s["grace"], NONZERO_GRACE_S) if code else s["grace"]
    if MPI.Is_finalized():                # the script called MPI.Finalize(): all ended
        _record(f"done: {ended(code)} (MPI finalized)")
        return
    if grace == 0:
        _record(f"done: {ended(code)} (no exit barrier)")
        _before_finalize()
        return
    s["stop"].set()
    s["watchdog"].join(timeout=1.0)
    _record(f"exit: {ended(code)}, waiting for the other ranks")
    deadline, polls = time.monotonic() + grace, 0
    notice = array("i", [-1 if code is None else code])
    sends = [s["dup"].Isend(notice, dest=r, tag=NOTICE_TAG)
             for r in range(s["size"]) if r != s["rank"]]
    barrier = s["dup"].Ibarrier()
    while time.monotonic() < deadline:
        if barrier.Test():
            MPI.Request.Waitall(sends)
            _record(f"done: {ended(code)}")
            return
        polls += 1
        os.sched_yield() if polls < YIELD_POLLS else time.sleep(0.001)
    _receive_notices()
    running = [r for r in range(s["size"]) if r != s["rank"] and r not in s["finished"]]
    _record(f"fail: {ended(code)} while ranks {running} still ran",
            say("faults.still_ran", ended=ended_said(code), running=running))
    why = "" if code else say("faults.grace_env", env=EXIT_GRACE_ENV)
    abort_job(say("faults.still_run", rank=s["rank"], ended=ended_said(code), running=running,
                  grace=grace, why=why), code or 1)


def said(text):
    """This rank printed why the job ends (``entry.usage_error``): the launcher adds nothing."""
    if _state.get("rank") is not None:
        write(_state["job_dir"], f"rank{_state['rank']}.said", text)


def ended(code):
    """"finished (exit code 3)", or "finished" when the code is unknown (None or -1)."""
    return "finished" if code is None or code < 0 else f"finished (exit code {code})"


def ended_said(code):
    """``ended(code)`` in the reader's language."""
    if code is None or code < 0:
        return say("faults.finished")
    return say("faults.finished_code", code=code)


def _before_finalize(*_):
    """No MPI call from the watchdog after MPI_Finalize. Also called by MPI.Finalize() in a
    script, through a COMM_SELF attribute (mpi4py's own Finalize at exit runs after Python,
    without it)."""
    _state["stop"].set()
    _state["watchdog"].join(timeout=1.0)


def _receive_notices():
    """Move every finished notice that arrived into _state["finished"]: {rank: (code, time)}."""
    s, MPI = _state, _state["MPI"]
    status, code = MPI.Status(), array("i", [0])
    while s["dup"].Iprobe(source=MPI.ANY_SOURCE, tag=NOTICE_TAG, status=status):
        s["dup"].Recv(code, source=status.Get_source(), tag=NOTICE_TAG)
        s["finished"][status.Get_source()] = (code[0], time.monotonic())


def _watch():
    s = _state
    while not s["stop"].wait(TICK_S):
        frame = sys._current_frames().get(s["main"])
        wait = where_waits(frame) if frame is not None and in_wait(frame) else None
        key = wait and (wait["op"], wait["group"], wait["key"])
        if key != s["wait_key"]:
            s["wait_key"], s["wait_since"] = key, time.monotonic()
        if wait and s["probe"]:
            _receive_notices()
            _abort_if_stuck(wait)
        if s["job_dir"]:
            s["answered"] = answer_dump_request(s["job_dir"], s["rank"], s["answered"], frame,
                                                wait, s["wait_since"])
        frame = wait = None       # keep no frame of the main thread (its locals) alive


def _abort_if_stuck(wait):
    """A wait that involves a rank which finished STUCK_S ago can never complete."""
    now = time.monotonic()
    for rank, (code, since) in sorted(_state["finished"].items()):
        involved = (wait["peer"] == rank if wait["op"] in ("send", "recv")
                    else rank in wait["ranks"])
        if involved and now - max(since, _state["wait_since"]) > STUCK_S:
            text = say("faults.stuck", what=describe(wait), rank=rank, ended=ended_said(code),
                       seconds=now - since)
            _record(f"fail: waits in {describe(wait)} but rank {rank} {ended(code)} "
                    f"{now - since:.1f} s ago", text)
            abort_job(say("faults.aborting", rank=_state["rank"], text=text),
                      code if code > 0 else 1)
