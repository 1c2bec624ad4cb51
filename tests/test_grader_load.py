"""A loaded machine never turns a right answer into HANG: the no-progress clock follows
the load, and a check that runs out of time while starved says TIMEOUT (grade again).

The load is made up (``load.load_per_core``), so the test is the same on any machine:
at a load of 8 per core the clock runs 8 times slower than the wall; a check that
keeps a CPU busy past the timeout is TIMEOUT there, and HANG on a quiet machine (the
mutation: without the load, the same check is called a hang). A check that sleeps is
a HANG at any load: it is stuck, not starved.
"""
import pytest

from minimegatron.classroom import grader, load

BUSY = ["        while True:\n",
        "            pass\n"]
ASLEEP = ["        import time\n",
          "        time.sleep(600)\n"]


def test_the_clock_runs_at_the_share_of_the_machine(monkeypatch):
    monkeypatch.setattr(load, "load_per_core", lambda: 4.0)
    clock = load.ProgressClock()
    clock.last -= 8.0                          # 8 s of wall time at load 4 per core
    assert clock.tick() == pytest.approx(2.0, abs=0.1)
    assert clock.busy()
    monkeypatch.setattr(load, "load_per_core", lambda: 0.5)
    quiet = load.ProgressClock()
    quiet.last -= 8.0
    assert quiet.tick() == pytest.approx(8.0, abs=0.1) and not quiet.busy()


def test_starved_is_busy_machine_and_working_processes_not_waiting_ranks(monkeypatch):
    monkeypatch.setattr(load, "load_per_core", lambda: 8.0)
    clock = load.ProgressClock()
    clock.last -= 16.0
    clock.tick()
    assert load.starved(clock, share=0.12)                   # an eighth of a core: starved
    assert not load.starved(clock, share=0.0)                # asleep: stuck
    waits = {0: "[rank 0] waits in recv from rank 1", 1: "[rank 1] waits in recv from rank 0"}
    assert not load.starved(clock, share=0.5, dumps=waits)   # a deadlock stays a HANG


@pytest.mark.parametrize("load_per_core, body, result", [
    (8.0, BUSY, "TIMEOUT"), (0.0, BUSY, "HANG"), (8.0, ASLEEP, "HANG")])
def test_busy_machine_timeout_quiet_machine_hang(monkeypatch, load_per_core, body, result):
    monkeypatch.setattr(load, "load_per_core", lambda: load_per_core)
    verdict = grader.grade_variants({"v": ("1.2", body)}, timeout=0.5)["v"]
    text = "\n".join(verdict.lines)
    assert verdict.result == result, text
    if result == "TIMEOUT":
        assert "machine was busy" in text and "grade this copy again" in text, text
