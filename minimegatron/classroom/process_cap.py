"""How many processes one launch of a check may have: a fork bomb ends its own cell.

Three layers, because none of them holds everywhere:

1. ``RLIMIT_NPROC`` (``rlimit_nproc``): the tasks the teacher's user runs now plus
   MAX_TASKS. The kernel compares it with the tasks of the user in each user
   namespace up to the first (Linux 5.14 and later), so in bubblewrap's namespace
   and outside it alike the limit must leave room for what the teacher already
   runs. It never applies to root, nor to root's processes mapped into a
   namespace: a grader run as root (CI) needs layer 2.
2. A pids cgroup of its own (``PidsCgroup``: ``pids.max = MAX_TASKS``), where
   this process may make one (root with the cgroup v1 ``pids`` hierarchy, or a
   cgroup v2 tree that delegates ``pids``). The launch's first process joins it
   before exec, so every task below it counts, root's too. Removed after.
3. The grader's own count (every poll of ``grader._launch``): more
   than MAX_PROCESSES processes below it, and the launch is killed, its cell
   ERROR. This holds everywhere; layers 1 and 2 only bound how far a bomb
   grows between two polls.

A check needs 4 ranks, mpiexec, hydra's proxy and bubblewrap (a dozen processes,
a few threads each), far below either number.
"""
import os
import time

from minimegatron.runtime.plain_files import read_plain

MAX_PROCESSES = 64      # processes below the grader during one launch (layer 3)
MAX_TASKS = 256         # tasks (threads count) of one launch: RLIMIT_NPROC, pids.max
V1_ROOT, V2_ROOT = "/sys/fs/cgroup/pids", "/sys/fs/cgroup"


def user_tasks(uid):
    """Tasks (threads) of user ``uid`` now, from /proc: what RLIMIT_NPROC counts."""
    total = 0
    for entry in filter(str.isdigit, os.listdir("/proc")):
        try:
            if os.stat(f"/proc/{entry}").st_uid == uid:
                total += len(os.listdir(f"/proc/{entry}/task"))
        except OSError:
            continue
    return total


def rlimit_nproc():
    """The RLIMIT_NPROC of a launch (None: it would not apply, the user is root)."""
    uid = os.getuid()
    return None if uid == 0 else user_tasks(uid) + MAX_TASKS


def _own_cgroup(hierarchy):
    """This process's cgroup path in the v1 ``pids`` hierarchy ("pids") or v2 ("")."""
    for line in read_plain("/proc/self/cgroup", 65536).decode().splitlines():
        ident, controllers, path = line.split(":", 2)
        if (hierarchy == "pids" and "pids" in controllers.split(",")) or \
                (hierarchy == "" and ident == "0" and controllers == ""):
            return path
    return None


class PidsCgroup:
    """A pids cgroup for one launch, or nothing where none can be made (``folder`` None)."""

    def __init__(self, name):
        self.folder = None
        for root, hierarchy in ((V1_ROOT, "pids"), (V2_ROOT, "")):
            try:
                here = _own_cgroup(hierarchy)
                if here is None or (hierarchy == "" and "pids" not in read_plain(
                        os.path.join(root, here.lstrip("/"), "cgroup.subtree_control"),
                        4096).decode().split()):
                    continue
                folder = os.path.join(root, here.lstrip("/"), name)
                os.mkdir(folder)
            except (OSError, ValueError):
                continue
            try:
                with open(os.path.join(folder, "pids.max"), "w") as f:   # a kernel file
                    f.write(str(MAX_TASKS))
            except OSError:
                os.rmdir(folder)
                continue
            self.folder = folder
            return

    def join(self):
        """In the launch's first process, before exec: it and all it starts count here."""
        if self.folder is not None:
            with open(os.path.join(self.folder, "cgroup.procs"), "w") as f:
                f.write(str(os.getpid()))

    def remove(self, wait_s=2.0):
        """After the launch: the cgroup goes too, once its last task is gone (waited for
        up to ``wait_s``); True when it is gone (or there was none)."""
        deadline = time.monotonic() + wait_s
        while self.folder is not None:
            try:
                os.rmdir(self.folder)
                self.folder = None
            except FileNotFoundError:
                self.folder = None
            except OSError:                     # a task not reaped yet: EBUSY
                if time.monotonic() > deadline:
                    return False
                time.sleep(0.05)
        return True

