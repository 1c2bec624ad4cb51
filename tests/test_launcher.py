"""`minimegatron run` and plain mpiexec: failures end the job fast, hangs hit the timeout."""
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest
from mpi_harness import REPO_ROOT, TESTS_DIR, minimegatron_run, run_script, time_bound

from minimegatron import i18n
from minimegatron.commands import run as run_command
from minimegatron.runtime import (hang_report, job_files, launcher, mpiexec, processes,
                                  rank_setup, reaper, threads)

WORKERS = os.path.join(TESTS_DIR, "workers")


def test_exception_on_rank3_aborts_job_via_run():
    code, out, err, seconds = minimegatron_run("-n", "8", "--timeout", "50",
                                               os.path.join(WORKERS, "raise_on_rank3.py"))
    assert code not in (0, 124), (code, out, err)
    assert "[rank 3] uncaught exception" in err and "deliberate failure on rank 3" in err
    assert "the job failed (exit code 1): rank 3: raised RuntimeError: deliberate failure" in err
    assert seconds < time_bound(20, 49)                     # a hang: --timeout 50


def test_exception_on_rank3_aborts_plain_mpiexec():
    start = time.perf_counter()
    code, out, err = run_script(8, os.path.join(WORKERS, "raise_on_rank3.py"), timeout=60)
    assert code != 124, "hung: does the script call minimegatron.runtime.setup()?"
    assert code != 0, (out, err)
    assert "[rank 3] uncaught exception" in err and "deliberate failure on rank 3" in err
    assert time.perf_counter() - start < time_bound(20, 59)  # a hang: run_script's 60 s


def test_deadlock_is_killed_by_timeout():
    code, out, err, seconds = minimegatron_run("-n", "4", "--timeout", "3",
                                               os.path.join(WORKERS, "deadlock.py"))
    assert code == 124
    assert "minimegatron run: HANG: timed out after 3 s; where each rank waits:" in err
    assert "[rank 0] waits in recv from rank 1 on group 'world' (ranks [0, 1, 2, 3])" in err
    for rank in (1, 2, 3):
        assert f"[rank {rank}] waits in barrier on group 'world'" in err, err
    assert "killed all 4 ranks" in err
    assert seconds < time_bound(15, 59)                     # not killed: the 60 s timeout
    leftover = subprocess.run(["pgrep", "-f", "workers/deadlock.py"], capture_output=True)
    assert leftover.stdout == b""


def test_wrong_grid_fails_with_value_error():
    code, out, err, _ = minimegatron_run("-n", "8", "--timeout", "50",
                                         os.path.join(WORKERS, "wrong_grid.py"))
    assert code not in (0, 124)
    assert "ValueError: grid dp=2 x pp=2 x tp=3 = 12 ranks, but the job has 8 ranks" in err


def test_run_sets_blas_threads_and_passes_args():
    code, out, err, _ = minimegatron_run("-n", "2", os.path.join(WORKERS, "report_env.py"),
                                         "--flag", "7")
    assert code == 0, err
    cores = threads.cores()
    want = f"OPENBLAS_NUM_THREADS={max(1, cores // 2)} loaded={max(1, cores // 2)}"
    assert out.count(want) == 2, out
    assert "[rank 1]" in out and "args=['--flag', '7']" in out


def test_plain_mpiexec_limits_blas_threads_after_numpy_import():
    env = {k: v for k, v in os.environ.items() if not k.endswith("_NUM_THREADS")}
    code, out, err = run_script(2, os.path.join(WORKERS, "report_env.py"), env=env)
    assert code == 0, err
    assert "loaded=" in out and "OPENBLAS_NUM_THREADS=None" not in out, \
        "does minimegatron/__init__.py call threads.limit_blas_threads() first?"
    assert out.count(f"loaded={max(1, threads.cores() // 2)}") == 2, out


def test_run_a_minimegatron_command():
    code, out, err, _ = minimegatron_run("-n", "2", "help")
    assert code == 0, err
    assert out.count("usage: minimegatron COMMAND") == 2


def test_finder_and_environment():
    assert mpiexec.find_mpiexec() == os.path.join(os.path.dirname(sys.executable), "mpiexec") \
        or os.access(mpiexec.find_mpiexec(), os.X_OK)
    env = launcher.child_env(8, {"PYTHONPATH": "/elsewhere"})
    assert env["PYTHONPATH"].split(os.pathsep) == [REPO_ROOT, "/elsewhere"]
    assert env["OMP_NUM_THREADS"] == str(max(1, threads.cores() // 8))
    cmd = launcher.build_command(8, "verify", ["--quick"], mpiexec="/x/mpiexec")
    assert cmd[0] == "/x/mpiexec" and cmd[cmd.index("-n") + 1] == "8"
    assert cmd[-5:] == ["-m", "minimegatron.runtime.launcher", "--child", "verify", "--quick"]
    assert threads.threads_per_rank(8, 2) == 1 and threads.threads_per_rank(2, 16) == 8


def test_a_thread_count_the_user_set_wins(tmp_path):
    """``minimegatron run -n 1`` once replaced the user's OPENBLAS_NUM_THREADS."""
    for name in threads.BLAS_ENV:
        env = launcher.child_env(1, {name: "3"})
        assert env[name] == "3" and not (set(threads.BLAS_ENV) - {name}) & set(env), env
    assert launcher.child_env(1, {})["OPENBLAS_NUM_THREADS"] == str(threads.cores())
    script = tmp_path / "show.py"
    script.write_text("import os\nprint(os.environ['OPENBLAS_NUM_THREADS'])\n")
    env = {**os.environ, "PYTHONPATH": REPO_ROOT, "OPENBLAS_NUM_THREADS": "3"}
    code, out, err, _ = processes.run_job(
        [sys.executable, "-m", "minimegatron", "run", "-n", "1", str(script)], timeout=60,
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert code == 0 and out.split()[-1] == "3", (out, err)     # the last line: the rank's


def test_local_and_world_size_from_env(monkeypatch):
    for name in threads.LOCAL_SIZE_ENV + rank_setup.WORLD_SIZE_ENV:
        monkeypatch.delenv(name, raising=False)
    assert threads.local_ranks() == 1 and rank_setup.world_size_from_env() == 1
    assert threads.limit_blas_threads() is None
    monkeypatch.setenv("OMPI_COMM_WORLD_LOCAL_SIZE", "4")
    monkeypatch.setenv("OMPI_COMM_WORLD_SIZE", "8")
    assert threads.local_ranks() == 4 and rank_setup.world_size_from_env() == 8


TIMEOUT_ERROR = "argument --timeout: must be a finite positive number, got "


@pytest.mark.parametrize("argv, message", [
    (["-n", "0", "x.py"], "argument -n/--np: must be a positive integer, got '0'"),
    (["-n", "two", "x.py"], "argument -n/--np: must be a positive integer, got 'two'"),
    (["-n", "2", "--timeout", "-5", "x.py"], TIMEOUT_ERROR + "'-5'"),
    (["-n", "2", "--timeout", "nan", "x.py"], TIMEOUT_ERROR + "'nan'"),
    (["-n", "2", "--timeout", "inf", "x.py"], TIMEOUT_ERROR + "'inf'"),
    (["-n", "2", "--timeout", "0", "x.py"], TIMEOUT_ERROR + "'0'"),
])
def test_bad_arguments_give_one_line_and_exit_2(argv, message, capsys):
    with pytest.raises(SystemExit) as stop:
        run_command.main(argv)
    err = capsys.readouterr().err
    assert stop.value.code == 2
    assert err.splitlines()[-1] == f"minimegatron run: error: {message}", err
    assert "Traceback" not in err


@pytest.mark.parametrize("flags,message", [
    (["--dp", "two"], "error: 08_3d_parallel.py: argument --dp: must be a positive integer, "
                      "got 'two'"),
    (["--dp", "0"], "error: 08_3d_parallel.py: argument --dp: must be a positive integer, "
                    "got '0'")])
def test_a_usage_error_under_run_is_one_line_once_and_not_contradicted(flags, message):
    """Before: argparse's usage and error once per rank, "launch with -n 0" for --dp 0, then
    the launcher's "the job failed ...: no rank said why"."""
    code, out, err, _ = minimegatron_run("-n", "2", os.path.join(REPO_ROOT, "tutorials",
                                                                 "08_3d_parallel.py"), *flags)
    assert code == 2
    assert err.strip().splitlines()[-1] == message, err
    assert err.count("error:") == 1 and "usage:" not in err and "-n 0" not in err, err
    assert "minimegatron run: the job failed" not in err, err


def test_a_peer_outside_the_group_is_a_clear_error():
    from minimegatron import comm
    world = comm.world()
    for call, peer in ((comm.send, 5), (comm.recv, -3), (comm.isend, 1.0), (comm.irecv, True)):
        word = "to" if call in (comm.send, comm.isend) else "from"
        with pytest.raises(ValueError, match=rf"^(send|recv) {word} rank {peer!r} of group "
                                             rf"'world', which has ranks 0..{world.size - 1}"):
            call(np.zeros(2), peer, world)


def test_rank_watch_kills_the_ranks_left(tmp_path):
    sleepers = [subprocess.Popen(["sleep", "30"]) for _ in range(3)]
    try:
        for rank, proc in enumerate(sleepers):
            (tmp_path / f"rank{rank}.pid").write_text(f"{proc.pid}\n")
        watch = launcher.RankWatch(str(tmp_path))
        watch.poll(0)
        sleepers[1].kill()
        watch.poll(2)
        assert sorted(watch.fds) == [0, 2]
        watch.kill_left()
        assert all(p.wait(timeout=5) == -signal.SIGKILL for p in sleepers)
        assert watch.fds == {}
    finally:
        for proc in sleepers:
            proc.kill()


def test_failures_prefer_what_ranks_said_then_who_ended_first(tmp_path):
    job = str(tmp_path)
    for rank in range(3):
        (tmp_path / f"rank{rank}.pid").write_text("1\n")
    (tmp_path / "rank0.end").write_text("done: finished\n")
    (tmp_path / "rank0.exit").write_text("100 code 0\n")           # a clean end: not blamed
    (tmp_path / "rank1.exit").write_text("300 signal 9\n")         # killed after rank 2
    (tmp_path / "rank2.exit").write_text("200 code 1\n")
    assert job_files.failures(job) == []
    assert reaper.blame(job, 3, i18n.text) == [
        "rank 2: ended without a clean exit or a Python exception (exit code 1: os._exit, "
        "a signal, or a crash)", "ranks [1] were ended after rank 2, by the launcher"]
    assert reaper.exit_code(job) == 1 and reaper.early_end(job) == 200e-9
    (tmp_path / "rank1.end").write_text("fail: raised KeyError: 'w'\n")
    assert job_files.failures(job) == ["rank 1: raised KeyError: 'w'"]
    dumps = hang_report.dump_request(job, wait_s=0.2)      # nobody answers: each rank gets a note
    assert sorted(dumps) == [0, 1, 2] and "[rank 2] gave no answer in 0.2 s" in dumps[2]


def test_the_launcher_ends_a_job_that_mpiexec_leaves_waiting(tmp_path, capsys):
    """A rank ended with code 0 before the exit barrier while the rest wait: mpiexec sees
    nothing wrong, so the launcher ends the job END_GRACE_S later and names the rank."""
    fake = ("import os, sys, time; d = os.environ['MINIMEGATRON_JOB_DIR']\n"
            "open(os.path.join(d, 'rank0.pid'), 'w').write(str(os.getpid()))\n"
            "open(os.path.join(d, 'rank1.exit'), 'w').write(f'{time.monotonic_ns()} code 0')\n"
            "time.sleep(60)\n")
    start = time.monotonic()
    code = launcher.supervise([sys.executable, "-c", fake], 2)
    assert code == 1 and time.monotonic() - start < launcher.END_GRACE_S + time_bound(5, 30)
    err = capsys.readouterr().err
    assert ("the job failed (exit code 1): rank 1: ended without a clean exit or a Python "
            "exception (exit code 0: ") in err
    assert "ranks [0] were ended after rank 1, by the launcher" in err
