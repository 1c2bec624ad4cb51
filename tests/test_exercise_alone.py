"""One exercise checked alone in a student's fresh copy, as a Korean student would.

The student's copy has no answers, so its grader (self-check mode) runs the copy
as it is: a check that ran through another exercise's blank block would stop at
"needs Exercise X first". Exercise 3.2 (g) is checked on g alone, so doing it first
gives PASS, or FAIL with the lesson's hint, and never "do X first".
"""
import os
import subprocess
import sys

from minimegatron.classroom import exercises

GRADE_TWO = """
import sys
from minimegatron.classroom.grader import grade
for path in sys.argv[1:]:
    grade(path, "3.2")
    print("=====")
"""


def _copy(path, body=None):
    exercises.make(path)
    if body is None:
        exercises.solve(path, ["3.2"])
        return path
    target = os.path.join(path, "minimegatron", "parallel", "tensor_parallel", "mappings.py")
    with open(target) as f:
        text = f.read()
    with open(target, "w") as f:
        f.write(exercises.replace_bodies(text, "mappings.py", {"3.2": body}))
    return path


def test_exercise_3_2_first_in_a_fresh_copy_passes_or_fails_with_its_hint_in_korean(tmp_path):
    right = _copy(str(tmp_path / "right"))
    wrong = _copy(str(tmp_path / "wrong"), ["        return x\n"])       # g forgot to sum
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
    assert "\n통과  3.2 " in passed, passed
    assert "\n실패  3.2 " in failed, failed
    assert "놓친 점: g의 forward" in failed, failed              # the lesson's point, in Korean
    assert "힌트: " in failed and "강의 노트: " in failed, failed
