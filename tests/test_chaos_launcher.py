"""Chaos: every fault ends the job, non-zero, names the rank, and leaves no process behind.

Launcher signals (SIGTERM, SIGHUP, SIGINT), sys.exit(3), os._exit(1 or 0) and SIGKILL on a
chosen rank of 2, 4 and 8 (named every time, with its exit code or signal), a rank that returns
while the others wait, a divergent deadlock under --timeout, and the exit barrier's grace.
Each job has a unique MARKER in its argv; after the launcher exits no live process may
hold it, and no process of the job's tree (mpiexec, Hydra's proxy, ranks) may be alive.
"""
import os
import signal
import subprocess
import sys
import time
import uuid

import pytest
from mpi_harness import REPO_ROOT, TESTS_DIR, run_script, time_bound

from minimegatron.runtime import processes

WORKER = os.path.join(TESTS_DIR, "workers", "chaos_rank.py")


def _line_of(text):
    with open(WORKER) as f:
        return next(n for n, line in enumerate(f, 1) if text in line)


def leftovers(marker):
    """Live (not zombie) processes whose command line holds marker."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                hit = marker.encode() in f.read()
        except OSError:
            continue
        if hit and processes.alive(int(pid)):
            found.append(int(pid))
    return found


class Job:
    """``python -m minimegatron run [opts] -n N chaos_rank.py MODE MARKER`` in the background."""

    def __init__(self, tmp_path, nprocs, mode, *opts, env=None, extra=()):
        self.marker = f"chaos-{uuid.uuid4().hex[:12]}"
        self.out_path, self.err_path = tmp_path / "out.txt", tmp_path / "err.txt"
        cmd = [sys.executable, "-m", "minimegatron", "run", "-n", str(nprocs), *opts, WORKER,
               mode, self.marker, *extra]
        full_env = {**os.environ, "PYTHONPATH": REPO_ROOT, **(env or {})}
        with open(self.out_path, "w") as out, open(self.err_path, "w") as err:
            self.proc = subprocess.Popen(cmd, stdout=out, stderr=err, env=full_env)
        self.start = time.monotonic()

    def output(self):
        return self.out_path.read_text(), self.err_path.read_text()

    def wait_for_output(self, text, count, timeout):
        while self.output()[0].count(text) < count:
            assert self.proc.poll() is None and time.monotonic() - self.start < timeout, \
                self.output()
            time.sleep(0.1)

    def finish(self, timeout):
        """(returncode, stdout, stderr, seconds); a hang kills the job and fails the test."""
        try:
            code = self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            processes.kill_group(self.proc)
            for pid in leftovers(self.marker):
                os.kill(pid, signal.SIGKILL)
            pytest.fail(f"the launcher did not end in {timeout} s: {self.output()}")
        seconds = time.monotonic() - self.start
        assert leftovers(self.marker) == [], "processes outlived the launcher"
        return (code, *self.output(), seconds)


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP, signal.SIGINT])
def test_signal_to_the_launcher_stops_the_whole_job(tmp_path, sig):
    job = Job(tmp_path, 3, "sleep")
    job.wait_for_output("ready", 3, timeout=60)
    tree = processes.descendants(job.proc.pid)      # mpiexec, Hydra's proxy, 3 ranks
    assert len(tree) >= 5, tree
    sent = time.monotonic()
    job.proc.send_signal(sig)
    code, out, err, _ = job.finish(timeout=20)
    assert code == 128 + sig
    assert f"minimegatron run: got {sig.name}: stopped the job (mpiexec and all 3 ranks)" in err
    assert [pid for pid in tree if processes.alive(pid)] == []
    assert time.monotonic() - sent < time_bound(5, 19)      # finish() gives up at 20 s


def test_sys_exit_3_on_one_rank_ends_the_job_with_code_3(tmp_path):
    code, out, err, seconds = Job(tmp_path, 3, "sysexit").finish(timeout=60)
    assert code == 3, err
    assert "[rank 2] finished (exit code 3) while ranks [0, 1] still run" in err
    assert "the job failed (exit code 3): rank 2: finished (exit code 3)" in err
    assert "done" not in out
    assert seconds < time_bound(30, 59)                     # a hang runs to the 60 s timeout


# (ranks, the rank that dies, how, repeats): the old pidfd poll named another rank in about
# 6 of 10 runs (os._exit on rank 0 of 4) and SIGKILL on rank 1 of 2 in about 1 of 3
DEATHS = [(2, 1, "sigkill", 6), (4, 0, "osexit", 6), (4, 2, "osexit0", 2), (8, 7, "sigkill", 2),
          (8, 3, "osexit", 2)]


@pytest.mark.parametrize("nprocs,rank,mode,repeats", DEATHS)
def test_a_rank_that_dies_without_a_word_is_named_with_how_every_time(tmp_path, nprocs, rank,
                                                                      mode, repeats):
    how = {"osexit": "exit code 1", "osexit0": "exit code 0", "sigkill": "killed by SIGKILL"}
    others = [r for r in range(nprocs) if r != rank]
    for attempt in range(repeats):
        (tmp_path / str(attempt)).mkdir()
        job = Job(tmp_path / str(attempt), nprocs, mode, extra=[str(rank)])
        code, out, err, seconds = job.finish(timeout=60)      # no --timeout: it must end
        assert code != 0, err
        summary = err[err.index("minimegatron run: the job failed"):]
        assert summary.count("ended without") == 1, err
        assert (f"rank {rank}: ended without a clean exit or a Python exception ({how[mode]}: "
                in summary), err
        assert f"ranks {others} were ended after rank {rank}, by the launcher" in summary, err
        assert "Traceback" not in err and "OSError" not in err, err    # not even the waiter's
        assert seconds < time_bound(30, 59)                 # a hang runs to the 60 s timeout


def test_rank_returning_mid_training_ends_the_job(tmp_path):
    code, out, err, seconds = Job(tmp_path, 3, "exit0").finish(timeout=60)
    assert code != 0, err
    assert ("waits in all_reduce on group 'world' (ranks [0, 1, 2]) but rank 2 finished "
            "(exit code 0)") in err
    assert "rank 0 done" not in out and "rank 1 done" not in out
    assert seconds < time_bound(30, 59)                     # a hang runs to the 60 s timeout


def test_rank_returning_while_a_neighbour_waits_in_a_receive_ends_the_job_soon(tmp_path):
    """A ring of isend/irecv, as between pipeline stages: before, the receive did not know
    its peer, so only the exit barrier's 60 s grace ended the job."""
    code, out, err, seconds = Job(tmp_path, 3, "p2pexit").finish(timeout=90)
    assert code != 0, err
    assert ("[rank 0] waits in recv from rank 2 on group 'world' (ranks [0, 1, 2]) but rank 2 "
            "finished (exit code 0)") in err
    assert "rank 0 done" not in out
    assert seconds < time_bound(20, 59)                     # the exit barrier waits 60 s


def test_divergent_deadlock_reports_hang_with_every_rank_s_wait(tmp_path):
    code, out, err, seconds = Job(tmp_path, 2, "hang", "--timeout", "8").finish(timeout=60)
    assert code == 124, err
    assert "minimegatron run: HANG: timed out after 8 s; where each rank waits:" in err
    assert "[rank 0] waits in all_reduce on group 'world' (ranks [0, 1])" in err
    assert "[rank 1] waits in recv from rank 0 on group 'world' (ranks [0, 1])" in err
    line0, line1 = _line_of("chaos: rank 0 waits here"), _line_of("chaos: rank 1 waits here")
    assert f"[rank 0]   called at {WORKER}:{line0}: comm.all_reduce(grad, world)" in err
    assert f"[rank 1]   called at {WORKER}:{line1}: comm.recv(" in err
    assert "killed all 2 ranks" in err


def test_a_slow_rank_0_is_not_killed_but_the_grace_is_a_limit(tmp_path):
    (tmp_path / "default").mkdir()
    (tmp_path / "short").mkdir()
    code, out, err, _ = Job(tmp_path / "default", 3, "slow0").finish(timeout=60)
    assert code == 0, err
    assert out.count("done") == 3
    code, out, err, _ = Job(tmp_path / "short", 3, "slow0",
                            env={"MINIMEGATRON_EXIT_GRACE": "1"}).finish(timeout=60)
    assert code != 0
    assert "finished (exit code 0) while ranks [0] still run after 1 s" in err
    assert "rank 0 done" not in out


def test_plain_mpiexec_sys_exit_on_one_rank_ends_the_job_and_names_it():
    marker = f"chaos-{uuid.uuid4().hex[:12]}"
    start = time.monotonic()
    code, out, err = run_script(3, WORKER, ["sysexit", marker], timeout=60)
    assert code not in (0, 124), err
    assert "waits in all_reduce on group 'world' (ranks [0, 1, 2]) but rank 2 finished" in err
    assert time.monotonic() - start < time_bound(30, 59)    # run_script gives up at 60 s
    end = time.monotonic() + 2           # Hydra returns while its SIGKILLed ranks still die
    while leftovers(marker) and time.monotonic() < end:
        time.sleep(0.05)
    assert leftovers(marker) == []
