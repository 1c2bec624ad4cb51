"""Every exercise checked alone in a student's fresh copy, as a Korean student would.

The student's copy has no answers, so its grader (self-check mode) runs the copy as it
is: a check that ran through another exercise's blank block stopped at "needs Exercise X
first". Now each check either needs no other block (3.1 and 3.2 run f and g alone) or is
given a stand-in for a needed block that is still the handout's raise
(``exercise_checks/standins.py``, ``staging.stand_ins``). So whichever exercise a student
does first, its grade is PASS, or FAIL with the lesson's point and hint, never "do X
first".

For every exercise: a fresh copy with only that block written (the reference) PASSes,
and one with a wrong answer (the first mutant of its lesson's mutation test) FAILs on
that mutant's point, in Korean. Copies hold several exercises where none of them runs
through another (``staging.NEEDS``), and all of them are graded by the copies' own
grader in one launch per rank count (GRADE_TOGETHER); one copy is also graded by
``grade`` itself, as the student types it.
"""
import json
import os
import subprocess
import sys

from test_lesson_autodiff import MUTANTS as AUTODIFF
from test_lesson_context_parallel import MUTANTS as CONTEXT
from test_lesson_data_parallel import MUTANTS as DATA
from test_lesson_fp8 import EX as FP8, MUTANTS as FP8_MUTANTS
from test_lesson_mixed_precision import EX as SCALING, MUTANTS as SCALING_MUTANTS
from test_lesson_moe import MUTANTS as MOE
from test_lesson_schedules import MUTANTS as SCHEDULES
from test_lesson_tensor_parallel import MUTANTS as TENSOR
from test_lesson_zero_bubble import MUTANTS as ZERO_BUBBLE

from minimegatron.classroom import exercises, staging
from minimegatron.classroom.exercise_checks import EXERCISES
from minimegatron.classroom.exercise_checks.lesson import Point
from minimegatron.i18n import speaking

MUTANTS = {**AUTODIFF, **CONTEXT, **DATA, **MOE, **SCHEDULES, **TENSOR, **ZERO_BUBBLE,
           FP8: FP8_MUTANTS, SCALING: SCALING_MUTANTS}
GROUPS = (          # the exercises of one copy: none runs through another of its copy
    ("1.1", "1.4", "2.1", "2.2", "6.1", "7.2", "9.2"),
    ("3.3", "3.4", "4.1", "5.1", "8.1", "8.2", "9.1", "10.2", "10.3"),
    ("1.2", "1.3", "1.5", "1.6", "3.1", "3.2", "10.1"),
    ("3.5", "6.2", "7.1"),
    ("5.2",),
)
GRADE_ONE = """
import sys
from minimegatron.classroom.grader import grade
grade(sys.argv[1], sys.argv[2])
"""
GRADE_TOGETHER = """
import json, os, sys, tempfile
from minimegatron.classroom import grader
from minimegatron.classroom.exercise_checks import standins
from minimegatron.classroom.exercises import PACKAGE_DIR, find_blocks
standins.install()                                  # as grade_copy does in self-check mode
reference, jobs = find_blocks(PACKAGE_DIR), []
with tempfile.TemporaryDirectory() as work:
    for n, (path, ids) in enumerate(json.loads(sys.argv[1])):
        package = os.path.join(path, "minimegatron")
        for job in grader.plan(package, ids, os.path.join(work, str(n)), reference,
                               find_blocks(package)):
            jobs.append({**job, "key": f"{path} {job['id']}"})
    verdicts = grader._run_by_size(jobs, work, 120.0, grader.SEED)
print(json.dumps({key: [v.result, v.lines, v.missed] for key, v in verdicts.items()}))
"""
NEEDS_FIRST = ("먼저 연습 문제", "needs Exercise", "미완성", "아직 하지 않음")


def _wrong(ex_id):
    """(body lines, point): the first mutant of the exercise's mutation test."""
    lines, point = next(iter(MUTANTS[ex_id].values()))
    return [line + "\n" for line in lines], point


def _copy(path, ids, wrong):
    exercises.make(path)
    for ex_id in ids:
        if wrong:
            exercises.put_block(path, ex_id, _wrong(ex_id)[0])
        else:
            exercises.solve(path, [ex_id])
    return path


def _run(script, args, copy, codes=(0,)):
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env.update(PYTHONPATH=copy, MINIMEGATRON_LANG="ko")           # the copy's own grader
    proc = subprocess.run([sys.executable, "-c", script] + args, cwd=copy,
                          capture_output=True, text=True, timeout=600, env=env)
    assert proc.returncode in codes, proc.stdout + proc.stderr
    return proc.stdout


def test_the_copies_group_exercises_that_do_not_run_through_each_other():
    assert sorted(sum(GROUPS, ())) == sorted(ex.id for ex in EXERCISES)
    for group in GROUPS:
        for ex_id in group:
            assert not set(staging.NEEDS.get(ex_id, ())) & set(group), (ex_id, group)
    assert set(MUTANTS) == {ex.id for ex in EXERCISES}


def test_every_exercise_first_in_a_fresh_copy_passes_or_fails_with_its_hint_in_korean(tmp_path):
    copies = [(_copy(str(tmp_path / f"{n}_{wrong}"), group, wrong), list(group), wrong)
              for n, group in enumerate(GROUPS) for wrong in (False, True)]
    shown = _run(GRADE_ONE, [copies[1][0], "1.1"], copies[0][0], (0, 1))    # as typed
    assert "자가 점검 모드" in shown, shown
    verdict = shown.split("채점합니다\n", 1)[1]
    assert verdict.startswith("실패  1.1 ") and "강의 노트: " in verdict, shown
    assert not any(text in verdict for text in NEEDS_FIRST), verdict
    graded = [[path, ids] for path, ids, _ in copies]
    graded[0][1] = graded[0][1] + ["1.3"]      # blank, after 1.1 in one process: still TODO
    out = _run(GRADE_TOGETHER, [json.dumps(graded)], copies[0][0])
    verdicts = json.loads(out.splitlines()[-1])
    assert verdicts[f"{copies[0][0]} 1.3"][0] == "TODO", verdicts[f"{copies[0][0]} 1.3"]
    for path, ids, wrong in copies:
        for ex_id in ids:
            result, lines, missed = verdicts[f"{path} {ex_id}"]
            text = "\n".join(lines)
            assert not any(needs in text for needs in NEEDS_FIRST), (ex_id, text)
            if not wrong:
                assert result == "PASS", (ex_id, text)
                continue
            point = _wrong(ex_id)[1]
            with speaking("ko"):
                teaches = Point(point, None).teaches(ex_id)
            assert result == "FAIL" and point in missed, (ex_id, missed, text)
            assert "놓친 점: " + teaches in text and "힌트: " in text, (ex_id, text)
