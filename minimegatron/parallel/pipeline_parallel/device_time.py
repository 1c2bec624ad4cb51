"""Emulated device time: each forward lasts t_f and each backward t_b, without using a core.

Why. The bubble formula (K-1)/(M+K-1) assumes every stage's forward takes the
same time, every backward the same time, and a stage that waits costs
nothing. On a GPU that holds: a stage launches its kernels and its CPU
thread then waits for the device, leaving the CPU core to anyone else. On a
laptop the "device" is the CPU itself. With 4 ranks on 2 cores the ranks
steal each other's core: a stage that computes while its neighbours compute
runs at half speed, a stage that waits may not get a core back at once when
its message arrives, and the measured bubble is set by the OS scheduler
(45-67% for K = 4, M = 16 on 2 cores, against the formula's 15.8%).

How. ``with device_time.lasts("forward"): ...`` runs the real compute (so
every number stays exact: losses and gradients equal the serial model's),
then ``time.sleep``s the remainder of t_f. A sleeping process gives its core
back, as a CPU thread waiting for its GPU does, so 4 emulated stages fit on
2 cores as long as the real compute is shorter than the emulated time::

    real compute (~1-5 ms)  |---- sleep: the core is free ----|   = t_f
    |<------------------------- one forward span ------------>|

The engine opens ``lasts`` inside the traced ``forward``/``backward`` span,
so the trace, the timeline and the measured bubble see the emulated
duration. A step whose real compute is longer than its emulated time is not
shortened (it lasts the compute); ``slowest`` keeps the longest real compute
of each op, so a caller can check that the emulated times dominate.

While it sleeps, a stage keeps its messages moving: ``lasts(op, progress)``
sleeps in slices of ``PROGRESS_S`` and calls ``progress()`` between them (the
engine tests its pending sends). Many MPI libraries (Open MPI, for one) move a
large message only while the sender is inside an MPI call; a sender that
sleeps through its device time would hold every activation back until its
next call, and GPipe's measured bubble doubled on 16 idle cores. A GPU's copy
engine moves data while its kernels run, which this models.

What it cannot remove: a sleeping process wakes up when the OS gives it a
core back, a little after its deadline (~0.1 ms on an idle machine, several
ms when other programs keep both cores busy). ``late`` adds these delays up;
along the pipeline's critical path they add to the measured bubble, so on a
busy machine choose longer device times.

    engine = PipelineEngine(stage, group, "gpipe", 8, device_time=(0.02, 0.04))

DeviceTime(0, 0) (the engine's default) adds nothing: a plain run.
"""
import contextlib
import numbers
import time

PROGRESS_S = 0.0002       # a sleeping stage tests its pending messages this often


class DeviceTime:
    """Forward, backward (B) and weight gradient (W) of one micro-batch last at least
    ``forward`` / ``backward`` / ``weight`` s. A backward that is not split into B and W
    runs ``lasts("backward+weight")``: the sum (weight = 0, the default: backward alone)."""

    def __init__(self, forward=0.0, backward=0.0, weight=0.0):
        for name, value in (("forward", forward), ("backward", backward), ("weight", weight)):
            if (not isinstance(value, numbers.Real) or isinstance(value, bool)
                    or not 0 <= value < float("inf")):
                raise ValueError(f"device time {name}={value!r} must be seconds >= 0 "
                                 f"(got forward={forward!r}, backward={backward!r}, "
                                 f"weight={weight!r})")
        self.seconds = {"forward": float(forward), "backward": float(backward),
                        "weight": float(weight)}
        self.slowest = {"forward": 0.0, "backward": 0.0, "weight": 0.0}   # longest compute, s
        self.late = {"seconds": 0.0, "sleeps": 0}           # woken after the deadlines

    @property
    def emulated(self):
        return any(self.seconds.values())

    @contextlib.contextmanager
    def lasts(self, op, progress=None, share=1.0):
        """Run the body (the real compute), then sleep until ``op``'s device time is up,
        calling ``progress()`` every PROGRESS_S meanwhile (see the module docstring).

        ``share``: the part of a micro-batch's step this is (a stage of v model chunks
        runs 1/v of its layers per step), so a stage's work per micro-batch stays the same.
        """
        start = time.perf_counter()
        seconds = share * sum(self.seconds[o] for o in op.split("+"))
        yield
        real = time.perf_counter() - start
        first = op.split("+")[0]                             # a whole backward: "backward"
        self.slowest[first] = max(self.slowest[first], real)
        if real < seconds:
            deadline = start + seconds
            while (left := deadline - time.perf_counter()) > 0:
                time.sleep(min(left, PROGRESS_S) if progress else left)   # without a core
                if progress:
                    progress()
            self.late["seconds"] += time.perf_counter() - deadline
            self.late["sleeps"] += 1

    def __repr__(self):
        return (f"DeviceTime(forward={self.seconds['forward']}, "
                f"backward={self.seconds['backward']}, weight={self.seconds['weight']})")


def as_device_time(value):
    """A DeviceTime from None (no emulation), (t_forward, t_backward[, t_weight]) or one."""
    if value is None:
        return DeviceTime()
    if isinstance(value, DeviceTime):
        return value
    if isinstance(value, (tuple, list)) and len(value) in (2, 3):
        return DeviceTime(*value)
    raise ValueError(f"device_time must be None, (t_forward, t_backward[, t_weight]) in "
                     f"seconds or a DeviceTime; got {value!r}")
