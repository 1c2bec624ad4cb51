"""What student code cannot do to the grader: forge a PASS, outlive it, or flood it.

Each case is the reference package with exercise 1.2 (Exp backward) answered
correctly, plus a trick in the same block (``grader.grade_variants``), so the
check itself would PASS and only the trick can change the verdict:

- forging: write PASS lines for every exercise into the grader's results file,
  at once and again from an ``atexit`` hook. Lines without the run's nonce
  mark those exercises FAIL; the hook never runs (``os._exit``).
- a background process started by student code is killed with the check.
- printing without end is stopped at the output cap, with a message.
"""
import os
import time

from minimegatron.grader import MAX_OUTPUT, grade_variants

RIGHT = "        return grad_out * ctx.saved[0]\n"

FORGE = [                      # the runner's argv: JOBS.json RESULTS.jsonl
    "        import atexit, json, sys\n",
    "        def forge():\n",
    "            keys = [job['key'] for job in json.load(open(sys.argv[1]))]\n",
    "            with open(sys.argv[2], 'a') as f:\n",
    "                for key in keys:\n",
    "                    f.write(json.dumps({'id': '1.2', 'key': key, 'nonce': 'guess',\n",
    "                                        'ranks': [['pass', 'forged']]}) + '\\n')\n",
    "        if not getattr(sys, 'forged', False):\n",
    "            sys.forged = True\n",
    "            forge()\n",
    "            atexit.register(forge)\n",
    RIGHT]


def _alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with open(f"/proc/{pid}/stat") as f:                # a zombie is dead too
        return f.read().split(")")[-1].split()[0] != "Z"


def test_forged_result_lines_fail_and_an_honest_answer_passes():
    passed, lines = grade_variants({"forged": ("1.2", FORGE)})["forged"]
    assert not passed and "did not come from the grader's runner" in "\n".join(lines), lines
    assert grade_variants({"honest": ("1.2", [RIGHT])})["honest"][0]


def test_a_background_process_of_student_code_does_not_outlive_the_grade(tmp_path):
    pid_file = tmp_path / "pid"
    body = ["        import subprocess\n",
            f"        if not __import__('os').path.exists({str(pid_file)!r}):\n",
            "            p = subprocess.Popen(['sleep', '300'])\n",
            f"            open({str(pid_file)!r}, 'w').write(str(p.pid))\n",
            RIGHT]
    passed, _ = grade_variants({"spawns": ("1.2", body)})["spawns"]
    assert passed                                       # the answer itself is right
    pid = int(pid_file.read_text())
    deadline = time.monotonic() + 5
    while _alive(pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _alive(pid), f"student's process {pid} outlived the grader"


def test_endless_output_is_cut_off_with_a_message():
    body = ["        while True:\n",
            "            print('x' * 65536)\n"]
    passed, lines = grade_variants({"floods": ("1.2", body)}, timeout=60)["floods"]
    text = "\n".join(lines)
    assert not passed and f"more than {MAX_OUTPUT // 2 ** 20} MiB" in text, text
