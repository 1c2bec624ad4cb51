"""How long a check may go without progress, on a machine that may be busy.

A right answer on a 2-core machine with load 20 gets a tenth of a core: by wall
time alone it looks like a hang. So the grader's "no progress" clock runs at the
share of the machine a process can get,

    progress_s += wall_dt / max(1, load1 / cores)          (os.getloadavg)

and when it still runs out, the ending is told apart: on a busy machine a check
whose processes kept using CPU was starved, not stuck (``starved``): TIMEOUT,
grade again, never HANG. A process asleep (``time.sleep``) or ranks each waiting
in a collective (their stacks say "waits in") is a HANG whatever the load.
"""
import os
import time

from minimegatron.runtime.plain_files import read_plain

BUSY = 1.5          # load / cores above this: the machine is busy
CPU_SHARE = 0.05    # CPU seconds per wall second below this: the processes were idle


def cores():
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (
        os.cpu_count() or 1)


def load_per_core():
    try:
        return os.getloadavg()[0] / cores()
    except OSError:
        return 0.0


class ProgressClock:
    """Seconds since the last progress, scaled down while the machine is busy."""

    def __init__(self):
        self.reset()

    def reset(self):
        self.last = time.monotonic()
        self.seconds, self.wall, self.peak = 0.0, 0.0, 0.0

    def tick(self):
        """Advance by the wall time since the last tick; the scaled seconds."""
        now, factor = time.monotonic(), load_per_core()
        self.seconds += (now - self.last) / max(1.0, factor)
        self.wall += now - self.last
        self.peak, self.last = max(self.peak, factor), now
        return self.seconds

    def busy(self):
        """True if the machine was busy while waiting (the clock ran slower than the wall)."""
        return self.peak > BUSY and self.wall > 1.5 * self.seconds


def cpu_seconds(pids):
    """User + system CPU seconds of the given processes (those gone count 0)."""
    tick, total = os.sysconf("SC_CLK_TCK"), 0.0
    for pid in pids:
        try:
            stat = read_plain(f"/proc/{pid}/stat", 4096).decode("utf-8", "replace")
            fields = stat.rpartition(")")[2].split()
            total += (int(fields[11]) + int(fields[12])) / tick
        except (OSError, ValueError, IndexError):
            pass
    return total


def cpu_share(pids, seconds=1.0):
    """CPU seconds per wall second the processes ``pids()`` use, over the next ``seconds``."""
    before = cpu_seconds(pids())
    time.sleep(seconds)
    return (cpu_seconds(pids()) - before) / seconds


def starved(clock, share, dumps=None):
    """True if a check that ran out of time was slowed by the machine, not stuck: the
    machine was busy, its processes are using CPU (``share``, from ``cpu_share``), and
    no rank said it waits in a collective."""
    if not clock.busy() or share < CPU_SHARE:
        return False
    return not (dumps and all(" waits in " in text for text in dumps.values()))
