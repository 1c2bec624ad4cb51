"""One exercise checked alone in a student's fresh copy, as a Korean student would.

The student's copy has no answers, so its grader (self-check mode) runs the copy
as it is: a check that ran through another exercise's blank block would stop at
"needs Exercise X first". Exercise 3.2 (g) is checked on g alone, so doing it first
gives PASS, or FAIL with the lesson's hint, and never "do X first"; so does 3.1 (f).
The checks that train a model (4.1's DDP, 9.1's split backward, 8.1 and 8.2's
attention) run chapter 1's backward blocks: where those are still blank, the judge's
way stands in for them (``exercise_checks/standins.py``), so 1.1 too (which runs
through 1.5) is checked alone.

Two copies each way: one with 1.1 alone (every other check here runs through it), one
with the others, none of which runs through another of them. Each is graded by its own
grader, as the student types it.
"""
import os
import subprocess
import sys

from minimegatron.classroom import exercises

ALONE = ("3.1", "3.2", "4.1", "8.1", "8.2", "9.1")     # none runs through another of these
GRADE = """
import sys
from minimegatron.classroom.grader import grade
for path, spec in zip(sys.argv[1::2], sys.argv[2::2]):
    grade(path, spec)
    print("=====")
"""
WRONG = {       # one plausible mistake each: the lesson's point missed, not a crash
    "1.1": ["        if ctx.needs_input_grad[0]:\n",            # no transpose
            "            gx = unbroadcast(g @ a2, x2.shape).reshape(x.shape)\n",
            "        if ctx.needs_input_grad[1]:\n",
            "            ga = unbroadcast(x2 @ g, a2.shape).reshape(a.shape)\n"],
    "3.1": ["            return grad_out, None\n"],                # f's backward: no sum
    "3.2": ["        return x\n"],                                 # g's forward: no sum
    "4.1": ["            bucket.handle = comm.iall_reduce(bucket.reduce, self.group, "
            "op=\"sum\",\n", "                                             inplace=True)\n"],
    "8.1": ["    new_lse = xp.log(xp.exp(lse) + xp.exp(block_lse))\n",     # no shift
            "    return (xp.exp(lse - new_lse)[..., None] * out\n",
            "            + xp.exp(block_lse - new_lse)[..., None] * block_out), new_lse\n"],
    "8.2": ["    size = steps // cp\n",                            # contiguous, not zigzag
            "    return xp.arange(rank * size, (rank + 1) * size)\n"],
    "9.1": ["        return node.fn.backward(node.ctx, *grad_outs)\n"],   # all of it in B
}
MISSED = {"1.1": "놓친 점: ", "3.1": "놓친 점: f의 backward", "3.2": "놓친 점: g의 forward"}


def _copy(path, ids, wrong=False):
    exercises.make(path)
    for ex_id in ids:
        if wrong:
            exercises.put_block(path, ex_id, WRONG[ex_id])
        else:
            exercises.solve(path, [ex_id])
    return path


def _verdicts(out):
    """{id: the lines graded under it}: the verdicts below "grading N exercises of <path>"."""
    out = out.split("채점합니다\n", 1)[1]
    found, current = {}, None
    for line in out.splitlines():
        if not line.startswith(" ") and line[4:].split(" ", 1)[0].strip() in WRONG:
            current = line[4:].split()[0]
            found[current] = [line]
        elif current:
            found[current].append(line)
    return {ex_id: "\n".join(lines) for ex_id, lines in found.items()}


def test_every_exercise_first_in_a_fresh_copy_passes_or_fails_with_its_hint_in_korean(tmp_path):
    copies = []
    for name, ids in (("one", ("1.1",)), ("rest", ALONE)):
        for wrong in (False, True):
            path = _copy(str(tmp_path / f"{name}_{wrong}"), ids, wrong)
            copies += [path, ",".join(ids)]
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env.update(PYTHONPATH=copies[0], MINIMEGATRON_LANG="ko")      # the copy's own grader
    proc = subprocess.run([sys.executable, "-c", GRADE] + copies, cwd=copies[0],
                          capture_output=True, text=True, timeout=600, env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    one_right, one_wrong, rest_right, rest_wrong, _ = proc.stdout.split("=====\n")
    assert "자가 점검 모드" in one_right, one_right                    # the student's own grader
    graded = {}
    for right, wrong in ((one_right, one_wrong), (rest_right, rest_wrong)):
        passed, failed = _verdicts(right), _verdicts(wrong)
        graded.update(passed)
        for ex_id, text in passed.items():
            assert text.startswith("통과  "), text
            assert failed[ex_id].startswith("실패  "), failed[ex_id]
            for out in (text, failed[ex_id]):
                assert "먼저 연습 문제" not in out and "needs Exercise" not in out, out
                assert "미완성" not in out and "아직 하지 않음" not in out, out  # (a hint may
                # say 먼저 "first" of an order inside the answer: 8.2's early chunk)
            assert MISSED.get(ex_id, "놓친 점: ") in failed[ex_id], failed[ex_id]
            assert "힌트: " in failed[ex_id] and "강의 노트: " in failed[ex_id], failed[ex_id]
    assert sorted(graded) == sorted(WRONG), graded
