"""The judge: turn every rank's evidence into one verdict, in the grader's own process.

This module never imports the copy under test and runs no student code: it
reads back the lines ``runner.py`` wrote (JSON data, ``evidence.py``) and asks
each ``Point`` of the exercise's ``Lesson`` whether it was learned. A verdict
is one of

    PASS     every point holds
    FAIL     a point is missed (which one, in plain words, with a hint), or the
             student's code raised
    TODO     the exercise's own block is still blank ("not done yet")
    HANG     no progress within the timeout (grader.py fills this in)
    ERROR    the copy could not be graded at all (no package, broken markers,
             the check process crashed)
    CHANGED  a file of the copy outside the exercise blocks differs from the
             handout (grader.py): never PASS, whatever the numbers say
    TIMEOUT  the whole copy ran past its time (``grade --class``)
    SUSPECT  the block, read before it runs (``static_read.py``), uses something an
             exercise never needs (``open``, ``os``, the trace's switches...): not
             run, never PASS; the teacher reads the line

``missed`` holds the names of the missed points (the gradebook's "point"
column).
"""
import importlib
import re
from dataclasses import dataclass, field

from minimegatron import i18n
from minimegatron.classroom.blank import blank_message
from minimegatron.classroom.exercise_checks import by_id
from minimegatron.classroom.exercise_checks.evidence import decode

RANK_PREFIX = re.compile(r"^(rank|랭크) \d+: ")    # a check's own "rank 1: " (en or ko)
RESULTS = ("PASS", "FAIL", "TODO", "HANG", "ERROR", "CHANGED", "TIMEOUT", "SUSPECT")


@dataclass
class Verdict:
    result: str                     # one of RESULTS
    lines: list                     # what the grader prints under the verdict line
    missed: list = field(default_factory=list)   # names of the missed points
    seconds: float = None
    ko: object = None               # the same evidence judged in Korean (mutation tests)

    @property
    def passed(self):
        return self.result == "PASS"


def _todo(message, own_id):
    """(text, own): "not done yet" (own block) or "needs Exercise X first" for a blank block.

    A blank block raises "Exercise X: <English hint>"; the hint is shown in
    the current language when it is the exercise's own.
    """
    ex_id, message = blank_message(message)
    if ex_id is None or ex_id == own_id:
        return i18n.text("grader.todo", message=message), True
    return i18n.text("grader.needs_first", id=ex_id, message=message), False


def _status_lines(ex_id, records):
    """(own_todo, lines) for ranks whose status is not "ok": identical messages once, with
    the ranks that said them."""
    seen, own_todo = {}, set()
    for record in records:
        if record["status"] == "ok":
            continue
        message, own = record["message"], False
        if record["status"] == "todo":
            message, own = _todo(message, ex_id)
        message = RANK_PREFIX.sub("", message)
        seen.setdefault(message, []).append(record["rank"])
        if own:
            own_todo.add(message)
    lines = []
    for message, who in seen.items():
        everyone = len(who) == len(records) and message in own_todo
        prefix = "" if len(records) == 1 or everyone else (
            i18n.text("grader.rank", rank=who[0]) if len(who) == 1 else
            i18n.text("grader.ranks_prefix", ranks=", ".join(map(str, who))))
        lines.append(prefix + message)
    return bool(own_todo) and len(seen) == 1, lines


def judge(ex_id, records, seed):
    """The Verdict of one exercise from its ranks' records (one per rank, rank order)."""
    from minimegatron.classroom.exercise_checks.common import CheckFailed
    exercise = by_id(ex_id)
    seconds = max((r.get("seconds") or 0.0) for r in records)
    if any(r["status"] != "ok" for r in records):
        own_todo, lines = _status_lines(ex_id, records)
        return Verdict("TODO" if own_todo else "FAIL", lines, ["runs"], seconds)
    module = importlib.import_module(f"minimegatron.classroom.exercise_checks.{exercise.module}")
    lesson = module.LESSONS[ex_id]
    missed = []
    try:
        evidence = [decode(r["evidence"]) for r in records]
    except (ValueError, TypeError, KeyError) as err:
        return Verdict("FAIL", [i18n.text("grader.bad_evidence", error=err)], ["evidence"],
                       seconds)
    data = evidence[0] if exercise.nprocs == 1 else evidence
    held, missed_lines = [], []
    for point in lesson.points:
        try:
            point.judge(data, seed)
            held.append(i18n.text("grader.point_ok", point=point.teaches(ex_id)))
            continue
        except CheckFailed as err:
            detail = str(err)
        except Exception as err:   # noqa: BLE001 -- evidence of the wrong form
            detail = i18n.text("grader.bad_evidence", error=repr(err))
        missed.append(point.name)
        missed_lines.append(i18n.text("grader.point_missed", point=point.teaches(ex_id),
                                      detail=detail, hint=point.hint(ex_id)))
    if missed:
        return Verdict("FAIL", missed_lines, missed, seconds)
    return Verdict("PASS", held, [], seconds)
