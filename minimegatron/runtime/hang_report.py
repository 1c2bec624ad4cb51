"""The hang report: where each rank waits, told when the launcher (or the grader) asks.

A function that waits for other ranks is marked ``@waits`` (comm/waits.py). On every
rank the watchdog thread (faults.py) looks at the main thread's stack each tick:
``where_waits`` names the innermost marked frame, so the report says

    [rank 2] waits in all_reduce on group 'dp' (ranks [0, 2]) for 30.1 s
    [rank 2]   called at tutorials/05_data_parallel.py:88: loss = ...
    [rank 2]   main thread stack (innermost last): ...

At a timeout the launcher writes ``dump.request`` (an id) in the job directory
(job_files.py); each rank's watchdog answers in ``rank<r>.dump`` (``rank_report``),
and the launcher prints them side by side before it kills the job::

    dumps = dump_request(job_dir)         # {rank: "[rank r] waits in ..."} at a HANG
    print(format_dumps(dumps))
"""
import os
import sys
import time
import traceback

from minimegatron.i18n import text_or_english as say
from minimegatron.runtime.job_files import read, rank_pids, write
from minimegatron.runtime.plain_files import publish, read_plain

PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LAUNCHER_FILE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "launcher.py")
IN_WAIT_FRAMES = 3        # a marked function among the innermost 3 frames: this rank waits
STACK_FRAMES = 8


# --- on every rank (the watchdog thread) -----------------------------------------------------

def marks():
    """{code object: op} of every function marked ``@waits`` (comm/waits.py): where a rank
    waits for others. Read from ``sys.modules``, never imported: a rank that has not loaded
    the comm layer waits in none of its functions, and the launcher never loads it."""
    module = sys.modules.get("minimegatron.comm.waits")
    return module.WAITS if module is not None else {}


def in_wait(frame):
    waits = marks()
    for _ in range(IN_WAIT_FRAMES):
        if frame is None:
            return False
        if frame.f_code in waits:
            return True
        frame = frame.f_back
    return False


def where_waits(frame):
    """{op, group, ranks, peer, key, user}: what the stack from ``frame`` waits in.

    The innermost functions marked ``@waits`` name it: the first mark that gives
    an op (the mark's own, else the frame's ``self.op`` or local ``op``), the
    first ``group`` (local, or ``self.group``) and peer (``dest`` / ``source``,
    or ``self.peer``). ``caller``: the frame that called the outermost of them.
    """
    wait = {"op": None, "group": None, "ranks": [], "peer": None, "key": None, "user": None}
    waits, group, caller, inside = marks(), None, None, False
    for f in frames(frame):
        name = f.f_code.co_filename
        if wait["user"] is None and not name.startswith((PACKAGE_DIR, "<")):
            wait["user"] = f
        if f.f_code not in waits:
            if inside and caller is None:
                caller = f                    # the line that called the collective
            continue
        if caller is not None:                # an outer wait around this one's caller
            continue
        inside, local = True, f.f_locals
        this = local.get("self")
        op = waits[f.f_code] or getattr(this, "op", None) or local.get("op")
        if wait["op"] is None and isinstance(op, str):
            wait["op"], wait["key"] = op, id(this) if hasattr(this, "op") else id(f)
        if group is None:
            group = local.get("group") if hasattr(local.get("group"), "ranks") else getattr(
                this, "group", None)
        peer = local.get("dest", local.get("source", getattr(this, "peer", None)))
        if wait["peer"] is None and group is not None and isinstance(peer, int) and \
                0 <= peer < len(group.ranks):
            wait["peer"] = int(group.ranks[peer])
    if group is not None:
        wait["group"], wait["ranks"] = group.name, [int(r) for r in group.ranks]
    if wait["user"] is None:                  # all of it is package code (the grader's checks)
        wait["user"] = caller
    return wait


def describe(wait):
    """"all_reduce on group 'dp' (ranks [0, 2])", "recv from rank 1 on group ..." (in the
    reader's language)."""
    peer = "" if wait["peer"] is None else say(
        "hang.to" if wait["op"] == "send" else "hang.from", peer=wait["peer"])
    return say("hang.describe", op=wait["op"], peer=peer, group=repr(wait["group"]),
               ranks=wait["ranks"])


def frames(frame):
    """Innermost first."""
    while frame is not None:
        yield frame
        frame = frame.f_back


def answer_dump_request(job_dir, rank, answered, frame, wait, wait_since):
    """Answer a new ``dump.request`` in ``rank<r>.dump`` (its id, then ``rank_report``).
    Returns the id answered: ``answered`` again if there was nothing new to answer."""
    try:
        ident = read_plain(os.path.join(job_dir, "dump.request"), 256).decode().strip()
    except (OSError, UnicodeDecodeError):
        return answered
    if ident and ident != answered:
        write(job_dir, f"rank{rank}.dump", ident + "\n" + rank_report(rank, frame, wait,
                                                                       wait_since))
    return ident or answered


def rank_report(rank, frame, wait=None, wait_since=None):
    """Where this rank waits: the collective, its group, the user's line and a short stack.
    ``wait_since``: the monotonic time the wait began (None: the time is not told)."""
    prefix = f"[rank {rank}]"
    if wait and wait["op"]:
        waited = "" if wait_since is None else say("hang.waited",
                                                   seconds=time.monotonic() - wait_since)
        head = say("hang.waits", prefix=prefix, what=describe(wait), waited=waited)
    else:
        head = say("hang.not_waiting", prefix=prefix)
    lines = [head]
    user = (wait or {}).get("user") or (where_waits(frame)["user"] if frame else None)
    if user is not None:
        code = traceback.extract_stack(user, limit=1)[-1]
        lines.append(say("hang.called_at", prefix=prefix, file=code.filename,
                         line=code.lineno, code=code.line))
    stack = [e for e in (traceback.extract_stack(frame) if frame is not None else [])
             if e.filename != LAUNCHER_FILE and "runpy" not in e.filename]
    stack = stack[-STACK_FRAMES:]
    lines.append(say("hang.stack", prefix=prefix))
    lines += [say("hang.frame", prefix=prefix, file=os.path.basename(e.filename),
                  line=e.lineno, name=e.name, code=e.line) for e in stack]
    return "\n".join(lines)


# --- in the launcher (or the grader) ---------------------------------------------------------

def dump_request(job_dir, wait_s=2.0):
    """Ask every rank where it waits; {rank: text} (ranks that did not answer get a note)."""
    ident = f"{os.getpid()}-{time.monotonic_ns()}"
    try:                          # the folder may be a check's to write: never through a link
        publish(job_dir, "dump.request", ident)
    except OSError:               # a folder planted at that name: nobody is asked
        wait_s = 0.0
    ranks, answers, deadline = sorted(rank_pids(job_dir)), {}, time.monotonic() + wait_s
    while len(answers) < len(ranks) and time.monotonic() < deadline:
        time.sleep(0.05)
        for rank in ranks:
            head, _, text = read(job_dir, f"rank{rank}.dump").partition("\n")
            if head == ident:
                answers[rank] = text.rstrip("\n")
    for rank in ranks:
        answers.setdefault(rank, say("hang.no_answer", rank=rank, seconds=wait_s))
    return answers


def format_dumps(dumps):
    if not dumps:
        return say("hang.none")
    return "\n".join(dumps[rank] for rank in sorted(dumps))
