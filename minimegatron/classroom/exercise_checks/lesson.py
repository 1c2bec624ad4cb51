"""What an exercise teaches, and how the grader sees that it was learned.

An exercise is graded in two halves that never share a process:

    collect(group, seed) -> evidence        the STUDENT side: runs the student's code on a
                                            problem made from ``seed``, and records what it
                                            did (values, the collectives from the trace,
                                            which buffers are alive, state over many steps)
    point.judge(evidence, seed)             the JUDGE side, in the grader's process: reads
                                            the evidence of every rank and raises
                                            CheckFailed when the point is missed

``collect`` runs under ``exercise_checks.runner`` in the copy under test; the
evidence travels back as JSON data (``evidence.py``); the points are judged by
``grader.py`` with the grader's own package, which runs no student code. So a
student's code can only change what the judge READS, never how it judges.

A ``Lesson`` lists 2 to 5 ``Point``s: one idea each, in the words a student
reads in ``exercises/<id>.md`` (and ``exercises/ko/<id>.md``). The words live in
``minimegatron.i18n`` under ``point.<id>.<name>`` (what it teaches) and
``point.<id>.<name>.hint`` (what to do when it is missed), so a FAIL names the
point and the hint in the student's language. Single-process lessons get
``group=None`` and one evidence dict; multi-rank lessons get every rank's dict,
in world-rank order, each with ``"rank"`` (in its group) and ``"group"`` (the
group's world ranks) added by the runner.

Judge against what the idea leaves behind, not only final numbers: a right
value reached through the wrong collective, the wrong group, the wrong buffer,
memory that is never freed, or state that only works for default settings
must miss a point.
"""
from dataclasses import dataclass
from typing import Callable

from minimegatron.i18n import text


@dataclass(frozen=True)
class Point:
    """One idea an exercise teaches; ``judge(evidence, seed)`` raises CheckFailed if missed."""
    name: str
    judge: Callable

    def teaches(self, ex_id):
        return text(f"point.{ex_id}.{self.name}")

    def hint(self, ex_id):
        return text(f"point.{ex_id}.{self.name}.hint")


@dataclass(frozen=True)
class Lesson:
    """``collect`` (student side) and the ``points`` it is judged on (judge side)."""
    collect: Callable
    points: tuple


def comm_log(spans, groups):
    """The collectives among trace spans, as evidence: a list of
    {"op", "group", "nbytes", "bytes_sent", "label"}, ``group`` the world ranks of the
    group when its name is in ``groups`` ({name: Group}), else the name itself. Under the
    grader an MPI call the trace would not show (the pickle API, a direct call on a
    communicator) is here too, as op "<method> (untraced MPI)" (``mpi_count.py``)."""
    named = {g.name: list(g.ranks) for g in groups}
    return [{"op": s["op"], "group": named.get(s["group"], s["group"]),
             "nbytes": s["nbytes"], "bytes_sent": s["bytes_sent"], "label": s["label"]}
            for s in spans if s["kind"] == "comm"]
