"""The job directory: what each rank leaves there, and how the launcher reads it back.

``$MINIMEGATRON_JOB_DIR`` (set by the launcher or the grader; optional) is one folder
per job. Each rank writes (faults.py, hang_report.py; each file at once, so a reader
sees all of it or nothing):

    rank<r>.pid    its pid, at install
    rank<r>.end    how it ended: "fail: ...", "exit: ..." at the exit barrier, "done: ...";
                   then, in a language other than English, "said: ..." (the same in it)
    rank<r>.said   it printed why the job ends (a usage error): the launcher adds nothing
    rank<r>.dump   where it waits, when asked (hang_report.py)

The launcher (or the grader) reads them, never through a link, FIFO or device::

    env[JOB_DIR_ENV] = job_dir            # the ranks run runtime.setup()
    for line in failures(job_dir): ...    # "rank 3: raised RuntimeError: ..." after a bad end
    pids = rank_pids(job_dir)             # {rank: pid}
"""
import os

from minimegatron.runtime.plain_files import publish, read_plain

JOB_DIR_ENV = "MINIMEGATRON_JOB_DIR"


# --- on every rank ---------------------------------------------------------------------------

def write(folder, name, text):
    """Write ``text`` to ``folder/name`` at once (a reader sees all of it or nothing); no
    folder (None, or gone): nothing."""
    if folder and os.path.isdir(folder):
        publish(folder, name, text + "\n")


# --- in the launcher (or the grader) ---------------------------------------------------------

def rank_pids(job_dir):
    """{rank: pid} of every rank that installed the hook."""
    pids = {}
    for name in os.listdir(job_dir):
        if name.startswith("rank") and name.endswith(".pid"):
            try:                          # the folder may be a sandboxed check's to write
                pids[int(name[4:-4])] = int(read_plain(os.path.join(job_dir, name), 64))
            except (OSError, ValueError):
                continue
    return pids


def said_why(job_dir):
    """True if any rank printed why the job ends (``faults.said``)."""
    return any(name.endswith(".said") for name in os.listdir(job_dir))


def all_done(job_dir, nprocs):
    """True if every rank passed the exit barrier (``done: ...``): a code they all chose."""
    return all(read(job_dir, f"rank{rank}.end").startswith("done:") for rank in range(nprocs))


def failures(job_dir, text=None):
    """Lines naming the failing ranks from their own records (causes first, then who noticed);
    a rank that died without a word is the waiters' to name (reaper.blame).

    A record is English ("fail: raised KeyError: 'w'"), the order read from it; a rank
    that speaks another language adds the line it said (``said: ...``, faults.py), which
    ``text(key, **fields)`` (i18n.text) frames; without ``text``, the English lines."""
    ends = {rank: read(job_dir, f"rank{rank}.end").strip().split("\n") for rank in
            rank_pids(job_dir)}
    said = [(lines[0][len("fail: "):], rank, _said(lines)) for rank, lines in ends.items()
            if lines[0].startswith("fail: ")]
    said.sort(key=lambda item: (not item[0].startswith("raised"), "waits in" in item[0],
                                _consequence(item[0]), item[1]))                 # the cause
    if text is None:
        return [f"rank {rank}: {english}" for english, rank, _ in said]
    return [text("launcher.cause", rank=rank, text=shown or english)
            for english, rank, shown in said]


def _said(lines):
    """The ``said: ...`` line of a record (the rank's words in its language), or None."""
    return next((line[len("said: "):] for line in lines[1:] if line.startswith("said: ")),
                None)


def _consequence(text):
    """0 for a NaN's origin (a weight), 1 for where it first showed (an activation, an aux
    loss), 2 for what it reached (a gradient, the loss) or anything else."""
    if "non-finite weight" in text:
        return 0
    return 1 if "non-finite activation" in text or "non-finite aux loss" in text else 2


def read(job_dir, name):
    """A rank's file as text ("" if missing); never through a link, FIFO or device."""
    try:
        return read_plain(os.path.join(job_dir, name)).decode("utf-8", "replace")
    except OSError:
        return ""
