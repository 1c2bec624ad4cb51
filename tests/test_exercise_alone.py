"""One exercise checked alone in a student's fresh copy, as a Korean student would.

The student's copy has no answers, so its grader (self-check mode) runs the copy
as it is: a check that ran through another exercise's blank block would stop at
"needs Exercise X first". Exercise 3.2 (g) is checked on g alone, so doing it first
gives PASS, or FAIL with the lesson's hint, and never "do X first"; so does 3.1 (f).
"""
import os
import subprocess
import sys

from minimegatron.classroom import exercises

GRADE_TWO = """
import sys
from minimegatron.classroom.grader import grade
for path in sys.argv[1:]:
    grade(path, "3.1,3.2")
    print("=====")
"""


def _copy(path, bodies=None):
    exercises.make(path)
    if bodies is None:
        exercises.solve(path, ["3.1", "3.2"])
        return path
    target = os.path.join(path, "minimegatron", "parallel", "tensor_parallel", "mappings.py")
    with open(target) as f:
        text = f.read()
    with open(target, "w") as f:
        f.write(exercises.replace_bodies(text, "mappings.py", bodies))
    return path


def test_exercise_3_2_first_in_a_fresh_copy_passes_or_fails_with_its_hint_in_korean(tmp_path):
    right = _copy(str(tmp_path / "right"))
    wrong = _copy(str(tmp_path / "wrong"), {          # f's backward and g's forward: no sum
        "3.1": ["            return grad_out, None\n"], "3.2": ["        return x\n"]})
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env.update(PYTHONPATH=right, MINIMEGATRON_LANG="ko")          # the copy's own grader
    proc = subprocess.run([sys.executable, "-c", GRADE_TWO, right, wrong], cwd=right,
                          capture_output=True, text=True, timeout=300, env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    passed, failed, _ = proc.stdout.split("=====\n")
    assert "자가 점검 모드" in passed, passed                          # the student's own grader
    for out in (passed, failed):          # the verdicts: below "grading N exercises of <path>"
        out = out.split("채점합니다\n", 1)[1]
        assert "먼저" not in out and "first" not in out, out
        assert "미완성" not in out and "아직 하지 않음" not in out, out
    assert "\n통과  3.1 " in passed and "\n통과  3.2 " in passed, passed
    assert "\n실패  3.1 " in failed and "\n실패  3.2 " in failed, failed
    assert "놓친 점: f의 backward" in failed, failed          # the lessons' points, in Korean
    assert "놓친 점: g의 forward" in failed, failed
    assert "힌트: " in failed and "강의 노트: " in failed, failed
