"""The sandbox's other walls: an empty environment, a process limit, nothing left unreaped.

- The teacher's environment never reaches a check: a launch starts from an empty
  environment plus ``sandbox.ENV_NAMES`` (``clean_env``). A secret set in the grader's
  environment is printed by a command run through ``Sandbox.wrap`` and by a student's
  block that raises ``os.environ``: it is in neither, in bubblewrap or the fallback.
  The mutant (the old ``{**env}``) shows the secret, so the test sees it.
- A fork bomb ends its own cell: the grader counts the processes below it every poll
  (``process_cap.MAX_PROCESSES``), and RLIMIT_NPROC or a pids cgroup bound how far a
  bomb grows between two polls (``process_cap.py``). The bomb here is bounded itself
  (9 doublings: 512 processes, each asleep 20 s, at worst), so nothing here can take
  the machine down if every layer failed.
- What a launch orphans is reaped at once: no zombie waits until the class ends.
"""
import os
import shutil
import subprocess
import sys
import time

import pytest

from minimegatron.classroom import exercises, grader, process_cap, sandbox
from minimegatron.runtime.launcher import child_env

SECRET = "TEACHER_TOKEN_" + "c0ffee" * 6
HAS_BWRAP = shutil.which("bwrap") is not None
IN_CI = (os.environ.get("CI", "").lower() == "true"
         or os.environ.get("MINIMEGATRON_REQUIRE_SANDBOX") == "1")
MODES = ["bwrap", "off"]


def _box(mode, monkeypatch):
    if mode == "bwrap" and not HAS_BWRAP:
        if IN_CI:
            pytest.fail("in CI bubblewrap (bwrap) must be installed: the sandbox is tested")
        pytest.skip("bubblewrap (bwrap) is not installed or cannot start here")
    monkeypatch.setenv(sandbox.MODE_ENV, mode)
    return sandbox.choose()


def _run_in(box, tmp_path, code, timeout=60):
    """Run ``python -c code`` through the box as the grader launches a check."""
    run_dir, copy = tmp_path / "run", tmp_path / "copy"
    run_dir.mkdir()
    copy.mkdir()
    env = {**child_env(1), "MINIMEGATRON_JOB_DIR": str(run_dir)}
    cmd, env, preexec = box.wrap([sys.executable, "-c", code], env, str(run_dir), [str(copy)],
                                 timeout)
    before = sandbox.descendants()
    try:
        return subprocess.run(cmd, env=env, preexec_fn=preexec, cwd=run_dir, text=True,
                              capture_output=True, timeout=timeout, start_new_session=True)
    finally:
        sandbox.sweep(before)
        box.release()


# ---- the environment ------------------------------------------------------------------------

@pytest.mark.parametrize("mode", MODES)
def test_a_launch_sees_only_the_listed_environment(tmp_path, monkeypatch, mode):
    box = _box(mode, monkeypatch)
    monkeypatch.setenv("MM_TEACHER_SECRET", SECRET)
    monkeypatch.setenv("MINIMEGATRON_LANG", "ko")
    proc = _run_in(box, tmp_path, "import os; print(sorted(os.environ.items()))")
    assert proc.returncode == 0, proc.stderr
    assert SECRET not in proc.stdout and "MM_TEACHER_SECRET" not in proc.stdout
    names = {name for name, _ in eval(proc.stdout)}             # noqa: S307 -- our own print
    assert {"PATH", "PYTHONPATH", "MINIMEGATRON_LANG", "MINIMEGATRON_JOB_DIR"} <= names
    extra = names - sandbox.ENV_NAMES - {"PATH", "HOME", "TMPDIR", "PWD"}
    assert not [n for n in extra if not n.startswith(sandbox.ENV_PREFIXES)], extra
    assert ("'MINIMEGATRON_LANG', 'ko'") in proc.stdout


def test_without_the_list_the_secret_is_inside(tmp_path, monkeypatch):
    """The mutant: the teacher's environment passed on as it is."""
    box = _box("off", monkeypatch)
    monkeypatch.setenv("MM_TEACHER_SECRET", SECRET)
    monkeypatch.setattr(sandbox, "clean_env", dict)
    proc = _run_in(box, tmp_path, "import os; print(sorted(os.environ.items()))")
    assert SECRET in proc.stdout


def _copy(tmp_path, ex_id, lines):
    copy = str(tmp_path / "student")
    exercises.make(copy)
    exercises.put_block(copy, ex_id, lines)
    return copy


@pytest.mark.parametrize("mode", ["off"])      # in bubblewrap: test_grader_forgery_class
def test_a_block_that_raises_the_environment_shows_none_of_the_teachers(
        tmp_path, monkeypatch, mode):
    _box(mode, monkeypatch)
    monkeypatch.setenv("MM_TEACHER_SECRET", SECRET)
    monkeypatch.setenv("MINIMEGATRON_STATIC_READ", "off")        # the block really runs
    copy = _copy(tmp_path, "1.2", ["        import os\n",
                                   "        raise RuntimeError(repr(dict(os.environ)))\n"])
    verdict = grader.grade_copy(copy, "1.2", timeout=30, seed=grader.SEED)["1.2"]
    text = "\n".join(verdict.lines)
    assert verdict.result in ("FAIL", "ERROR") and "PYTHONPATH" in text, text
    assert SECRET not in text and "MM_TEACHER_SECRET" not in text, text


# ---- processes --------------------------------------------------------------------------------

BOMB = """import os, time
if not os.path.exists('bomb_once'):
    open('bomb_once', 'w').close()
    for _ in range(9):
        try:
            os.fork()
        except OSError:
            pass
    time.sleep(20)
    os._exit(0)
"""


def _zombies():
    """Zombie children of this process."""
    found = []
    for pid in sandbox.descendants():
        try:
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rpartition(")")[2].split()
        except OSError:
            continue
        if fields[0] == "Z" and int(fields[1]) == os.getpid():
            found.append(pid)
    return found


@pytest.mark.parametrize("mode", MODES)
def test_a_fork_bomb_ends_its_own_cell_and_nothing_is_left(tmp_path, monkeypatch, mode):
    _box(mode, monkeypatch)
    monkeypatch.setenv("MINIMEGATRON_STATIC_READ", "off")
    lines = ["        " + line + "\n" for line in BOMB.splitlines()]
    copy = _copy(tmp_path, "1.2", lines + ["        return grad_out * ctx.saved[0]\n"])
    before = sandbox.descendants()          # what earlier tests of the session still run, and
    dead_before = set(_zombies())           # the orphans the grader adopted (its subreaper)
    start = time.monotonic()
    verdict = grader.grade_copy(copy, "1.2", timeout=30, seed=grader.SEED)["1.2"]
    seconds = time.monotonic() - start
    text = "\n".join(verdict.lines)
    assert verdict.result == "ERROR" and verdict.missed == ["processes"], text
    assert f"more than {process_cap.MAX_PROCESSES} processes" in text
    assert seconds < 180
    assert subprocess.run(["true"], timeout=30).returncode == 0      # the machine forks
    time.sleep(0.5)
    assert sandbox.descendants() - before - set(_zombies()) == set()
    assert set(_zombies()) - dead_before == set()


@pytest.mark.parametrize("mode", MODES)
def test_the_kernel_caps_a_launch_between_two_polls(tmp_path, monkeypatch, mode):
    """RLIMIT_NPROC (not root) or a pids cgroup (root) stops forks past MAX_TASKS."""
    box = _box(mode, monkeypatch)
    probe = process_cap.PidsCgroup(f"mm_probe_{os.getpid()}")
    where = probe.folder
    assert probe.remove() and probe.folder is None
    if os.getuid() == 0 and where is None:
        pytest.skip("root here, and no pids cgroup can be made: only the grader's count "
                    "(the fork bomb test) holds")
    monkeypatch.setattr(process_cap, "MAX_TASKS", 24)
    code = ("import os, time\nmade = 0\nfor _ in range(60):\n    try:\n        pid = os.fork()\n"
            "    except OSError:\n        break\n    if pid == 0:\n        time.sleep(3)\n"
            "        os._exit(0)\n    made += 1\nprint(made)\n")
    proc = _run_in(box, tmp_path, code)
    assert proc.returncode == 0, proc.stderr
    assert int(proc.stdout) < 24
    if where is not None:                              # the launch's cgroup is gone too
        left = os.listdir(os.path.dirname(where))
        assert not [name for name in left if name.startswith(f"mm_{os.getpid()}_")], left


def test_an_orphan_is_reaped_at_once():
    sandbox.become_subreaper()
    subprocess.run(["sh", "-c", "sleep 0.2 & exit 0"], timeout=30)     # sleep: our orphan
    deadline = time.monotonic() + 10
    while not _zombies() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _zombies(), "the orphan did not come back to this subreaper"
    sandbox.reap()
    assert _zombies() == []


class _Sampler:
    """The gradebook's progress stream: at each line, the zombie children of this process."""

    def __init__(self):
        self.zombies, self.lines = [], []

    def write(self, text):
        if text.strip():
            self.lines.append(text)
            self.zombies.append(len(_zombies()))

    def flush(self):
        pass


@pytest.mark.parametrize("mode", ["bwrap" if HAS_BWRAP or IN_CI else "off"])
def test_a_class_leaves_no_zombie_waiting_for_its_end(tmp_path, monkeypatch, mode):
    """A copy whose grader is stopped at --student-timeout orphans its launch: what comes
    back to the class (the subreaper) is reaped at the next tick, not at the end."""
    from minimegatron.classroom import gradebook
    _box(mode, monkeypatch)
    monkeypatch.setenv("MINIMEGATRON_STATIC_READ", "off")
    class_dir = tmp_path / "class"
    for name, lines in (("a_sleeps", ["        import time\n", "        time.sleep(600)\n"]),
                        ("b_right", ["        return grad_out * ctx.saved[0]\n"])):
        exercises.make(str(class_dir / name))
        exercises.put_block(str(class_dir / name), "1.2", lines)
    sampler = _Sampler()
    book = gradebook.grade_class(str(class_dir), "1.2", timeout=300, jobs=2,
                                 student_timeout=8, err=sampler)
    assert book["a_sleeps"]["1.2"]["result"] == "TIMEOUT", book
    assert book["b_right"]["1.2"]["result"] == "PASS", book
    assert len(sampler.lines) == 2 and sampler.zombies == [0, 0], sampler.__dict__
    assert _zombies() == []
