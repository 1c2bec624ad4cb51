"""Does waiting cost CPU? One rank computes while the others wait for its result.

    minimegatron run -n 8 benchmarks/bench_waiting.py

With more ranks than cores, a rank blocked in MPI's own Wait busy-polls and
takes CPU from the rank doing the work. polling.py waits by polling Test() with
os.sched_yield() (then short sleeps); ``polling.WAIT = "spin"`` (or the
environment variable MINIMEGATRON_WAIT=spin) switches back to MPI's Wait;
"auto" (the default) spins only when every rank has a core of its own, else
spins SPIN_POLLS polls, then yields.

Measured per mode (best of 3 interleaved repeats; bcast: median of 9):
  compute   rank 0's NumPy work alone would take `alone` seconds; `job` is how
            long the whole step takes while 7 ranks wait in recv for its result
  bcast     an 8-rank 1 MiB broadcast, the root arriving last
"""
import time

import numpy as np

from minimegatron import comm
from minimegatron.comm import comm_check, polling

# mode: (polling.WAIT, SPIN_POLLS, YIELD_POLLS); "auto" is the default, spin-then-yield here
MODES = {"spin": ("spin", 0, polling.YIELD_POLLS), "yield": ("yield", 0, polling.YIELD_POLLS),
         "sleep": ("yield", 0, 0), "auto": ("auto", polling.SPIN_POLLS, polling.YIELD_POLLS)}


def work(a, steps):
    for _ in range(steps):
        a = np.tanh(a @ a * 0.01)
    return a


def compute_step(g, a, steps):
    """Rank 0 computes, then sends the result to everyone; the others wait in recv."""
    comm.barrier(g)
    start = time.perf_counter()
    if g.rank == 0:
        out = work(a, steps)
        handles = [comm.isend(out, r, g) for r in range(1, g.size)]
        [h.wait() for h in handles]
    else:
        comm.recv(np.empty_like(a), 0, g)
    return time.perf_counter() - start


def timed(fn, *args):
    start = time.perf_counter()
    fn(*args)
    return time.perf_counter() - start


def late_bcast(g, x):
    """Root arrives 10 ms late; its time from starting the bcast until all ranks have it."""
    comm.barrier(g)
    if g.rank == 0:
        time.sleep(0.01)
    start = time.perf_counter()
    comm.broadcast(x, g, root=0)
    comm.barrier(g)
    return time.perf_counter() - start


def calibrate(g, a):
    """Steps of work() that take rank 0 about 0.3 s while the others sleep-wait."""
    polling.WAIT, polling.SPIN_POLLS, polling.YIELD_POLLS = "yield", 0, 0
    steps, alone = 1, 0.0
    if g.rank == 0:
        while alone < 0.15:
            steps *= 2
            start = time.perf_counter()
            work(a, steps)
            alone = time.perf_counter() - start
        alone = min(alone, *[timed(work, a, steps) for _ in range(3)])
    comm.barrier(g)
    return comm.bcast_object((steps, alone), g)


def main():
    comm_check.disable()      # benchmarks time the collectives alone (docs/notes_comm.md)
    g = comm.world()
    a = np.random.default_rng(0).standard_normal((256, 256))
    steps, alone = calibrate(g, a)
    comm.print0(f"{g.size} ranks; rank 0's work alone: {alone:.3f} s ({steps} steps)")
    comm.print0(f"{'mode':<7}{'job (s)':>9}{'job/alone':>11}{'late 1 MiB bcast (ms)':>23}")
    x = np.ones(1 << 17)
    jobs, bcasts = {name: [] for name in MODES}, {name: [] for name in MODES}
    for _ in range(3):  # interleave the modes so drifting machine speed hits all alike
        for name, (wait, spins, polls) in MODES.items():
            polling.WAIT, polling.SPIN_POLLS, polling.YIELD_POLLS = wait, spins, polls
            jobs[name].append(compute_step(g, a, steps))
            bcasts[name] += [late_bcast(g, x) for _ in range(3)]
    for name in MODES:
        job, bcast = min(jobs[name]), float(np.median(bcasts[name]))
        comm.print0(f"{name:<7}{job:>9.3f}{job / alone:>11.2f}{bcast * 1e3:>23.2f}")


if __name__ == "__main__":
    import minimegatron.runtime
    minimegatron.runtime.setup()      # as every tutorial: heap kept, BLAS threads, abort hook
    main()
