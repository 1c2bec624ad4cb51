"""How many ranks this machine can hold: ``run -n N`` above it is refused before any rank starts.

Uncapped, ``run -n 100000`` started ranks until mpiexec ran out of file descriptors,
driving a 2-core machine to a load of 241 and the kernel's OOM killer. Each rank is a
Python process with NumPy and MPI (about ``RANK_MB`` resident once a small model trains)
with its waiter beside it, and mpiexec keeps about ``FILES_PER_RANK`` descriptors open per
rank. Ranks may outnumber cores (they share them: comm/polling.py yields while it waits),
but not without bound::

    max_ranks = min(cores x RANKS_PER_CORE, available memory / RANK_MB,
                    (open-file limit - FILES_KEPT) / FILES_PER_RANK)

``MINIMEGATRON_MAX_RANKS=N`` replaces the limit (a machine bigger than it looks, a test).
Nothing here starts a process or imports MPI.
"""
import os
import resource

from minimegatron.cores import cores

MAX_RANKS_ENV = "MINIMEGATRON_MAX_RANKS"
RANKS_PER_CORE = 32
RANK_MB = 150
FILES_PER_RANK = 8
FILES_KEPT = 64             # the launcher's own files, pipes and the job directory


def available_mb():
    """MemAvailable of /proc/meminfo in MB (None where there is no /proc)."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) // 1024
    except OSError:
        pass
    return None


def max_ranks():
    """(the most ranks this machine holds, {what bounds it: its value}); the override's value
    (and {"override": it}) when MINIMEGATRON_MAX_RANKS is set. ValueError: a bad override."""
    override = os.environ.get(MAX_RANKS_ENV)
    if override is not None:
        if not override.strip().isdigit() or int(override) < 1:
            raise ValueError(override)
        return int(override), {"override": int(override)}
    limits = {"cores": cores() * RANKS_PER_CORE}
    memory = available_mb()
    if memory is not None:
        limits["memory"] = max(1, memory // RANK_MB)
    files = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    if files != resource.RLIM_INFINITY:
        limits["files"] = max(1, (files - FILES_KEPT) // FILES_PER_RANK)
    return min(limits.values()), {"cores": cores(), "memory_mb": memory, "files": files}
