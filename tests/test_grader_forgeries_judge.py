"""Hostile copies that go for the judge: none PASSes, with the static read on or off.

Each hostile copy answers one exercise by a trick, as a student with the grader's
code open beside her would, against what the grader promises (docs/teaching.md):

    pickle        1.2 wrong, and code run through an allowed import: numpy's ``load`` with
                  ``allow_pickle`` on a pickle the block writes itself, whose code
                  looks for the judge (``judge.py``) in the copy
    judge_helper  10.1 blank but for a call of the check module's own judge helpers
                  (``judge_top_k``, ``judge_slots``): the answer, held by the check
    evidence      3.2 done as a gather plus a sum, with the trace and the MPI counter
                  patched in the block's own process so the evidence shows one all-reduce
    handle        4.1 with a hand-made handle: a lambda with ``wait``, ``test``, ``done``
    reference     10.1 that reads the staged copy with numpy's ``fromfile``: another
                  exercise's reference block (8.2's zigzag) and the check module's
                  judge, and raises them so they reach its feedback

They are graded in one class with every other kind of hostile copy, the static read
off and on (``test_grader_forgery_class.py``): none PASSes, the in-process rewrite of
the evidence included (the judge pairs the trace with the MPI calls counted apart).

The mutation: graded with a copy that is NOT staged (``staging.stage`` a no-op), the
10.1 that calls the judge helpers PASSes and the one that reads the copy quotes 8.2's
answer: the staging is what stops them.
"""
import os
import pickle
import shutil

import pytest

from minimegatron.classroom import exercises, grader, staging
from minimegatron.classroom.exercises import PACKAGE_DIR, find_blocks
from test_grader_forgeries import _write_block

SPEC = "1.2,3.2,4.1,10.1"
HAS_BWRAP = shutil.which("bwrap") is not None
ZIGZAG_LINE = "early, late = rank, 2 * cp - 1 - rank"      # a line of 8.2's reference
JUDGE_LINES = ("def judge_top_k", "def layer_output")       # lines of 10.1's judge


class _Payload:
    """What the pickle runs when numpy loads it: a look for the judge in the copy."""

    def __reduce__(self):
        code = ("[m for m in ['minimegatron.classroom.exercise_checks.judge'] "
                "if __import__('importlib.util').util.find_spec(m)] or 'no judge in this copy'")
        return eval, (code,)


def _lines(text):
    return [line + "\n" for line in text.strip("\n").split("\n")]


def hostile_blocks():
    """{folder: (exercise, block lines)}."""
    payload = pickle.dumps(_Payload())
    return {
        "h_pickle": ("1.2", _lines(f"""
        from numpy import frombuffer, load, uint8
        frombuffer({payload!r}, dtype=uint8).tofile("/tmp/payload.pkl")
        found = load("/tmp/payload.pkl", allow_pickle=True)
        raise ValueError(f"the pickle ran: {{found}}")
        """)),
        "h_judge_helper": ("10.1", _lines("""
    from minimegatron.classroom.exercise_checks.moe_routing import judge_slots, judge_top_k
    choice = judge_top_k(probs, k)
    slot = judge_slots(choice, probs.shape[-1])
    kept = slot < capacity if capacity is not None else slot >= 0
    return xp.asarray(choice), xp.asarray(slot), xp.asarray(kept)
    """)),
        "h_evidence": ("3.2", _lines("""
        if group.size == 1:
            return x
        import sys
        trace = sys.modules["minimegatron.comm.trace"]
        counter = sys.modules["minimegatron.classroom.exercise_checks.mpi_count"]
        counter._untraced = lambda method, caller: False
        total = sum(group.comm.allgather(x))
        trace.record("all_reduce", group.name, x.nbytes, 2 * x.nbytes // 2, 0, 0.0, 0.0)
        return total
        """)),
        "h_handle": ("4.1", _lines("""
            h = lambda: None
            h.wait = lambda: None
            h.test = lambda: True
            h.done = True
            bucket.handle = h
            """)),
        "h_reference": ("10.1", _lines("""
    import numpy
    from minimegatron.parallel.context_parallel import zigzag
    from minimegatron.classroom import exercise_checks
    here = exercise_checks.__path__[0]
    found = []
    for path in (zigzag.__file__, here + "/moe_routing.py", here + "/judge.py"):
        try:
            found.append(numpy.fromfile(path, dtype=numpy.uint8).tobytes().decode())
        except OSError as err:
            found.append(str(err))
    raise ValueError("\\n".join(found))
    """)),
    }


def _grade_unstaged(tmp_path, monkeypatch, name):
    """The hostile copy ``name`` graded with the static read off and NO staging."""
    ex_id, lines = hostile_blocks()[name]
    copy = str(tmp_path / name)
    exercises.make(copy)
    _write_block(copy, ex_id, lines)
    monkeypatch.setenv("MINIMEGATRON_STATIC_READ", "off")
    monkeypatch.setattr(staging, "stage", lambda package_dir, ex_id: None)
    return grader.grade_copy(copy, ex_id, timeout=60)[ex_id]


def test_the_mutation_without_staging_the_judge_helper_passes(tmp_path, monkeypatch):
    verdict = _grade_unstaged(tmp_path, monkeypatch, "h_judge_helper")
    assert verdict.result == "PASS", verdict.lines


def test_the_mutation_without_staging_another_answer_reaches_the_feedback(tmp_path,
                                                                         monkeypatch):
    verdict = _grade_unstaged(tmp_path, monkeypatch, "h_reference")
    text = "\n".join(verdict.lines)
    assert verdict.result == "FAIL" and ZIGZAG_LINE in text and JUDGE_LINES[0] in text, text


def test_every_reference_block_passes_in_a_copy_staged_for_it():
    """No block of staging.NEEDS is missing: each exercise's reference, graded like a
    student's block (its copy cut and every other answer blank but NEEDS), PASSes."""
    reference = find_blocks(PACKAGE_DIR)
    verdicts = grader.grade_variants({ex_id: (ex_id, block.body)
                                      for ex_id, block in reference.items()}, timeout=120)
    assert {k: v.result for k, v in verdicts.items()} == {k: "PASS" for k in reference}, \
        {k: v.lines[:3] for k, v in verdicts.items() if not v.passed}


def test_a_staged_copy_holds_no_judge_and_no_other_answer(tmp_path):
    """What staging.stage leaves, read as files: no judge.py, no judge_* in a check module,
    LESSONS with no point; every block but its own, NEEDS and its chapter's is the
    handout's raise (10.1's copy: chapter 1 and 8.2 are blank)."""
    reference = find_blocks(PACKAGE_DIR)
    for ex_id in ("10.1", "4.1", "3.5"):
        target = tmp_path / ex_id / "minimegatron"
        shutil.copytree(PACKAGE_DIR, target, ignore=exercises.IGNORE)
        staging.stage(str(target), ex_id)
        checks = target / "classroom" / "exercise_checks"
        assert not (checks / "judge.py").exists()
        text = "".join(p.read_text() for p in checks.glob("*.py"))
        assert "def judge_" not in text and "Point(" not in text.replace("_Lesson(", "")
        blocks = find_blocks(str(target))
        for other, block in blocks.items():
            same = block.body == reference[other].body
            kept = other == ex_id or other in staging.kept_blocks(ex_id, blocks)
            assert same == kept, (ex_id, other)
            assert kept or exercises.is_blank(block), (ex_id, other)
        assert ex_id != "10.1" or (exercises.is_blank(blocks["8.2"])
                                   and exercises.is_blank(blocks["1.2"]))
