"""The pipeline simulator: time a schedule's action lists against a clock, without MPI.

Each stage runs its list (schedules.py, zero_bubble.py) in order. A send is
posted at once (nonblocking Isend) and a receive waits until its matching send
is posted, so forward i on stage s starts after forward i on stage s-1 and
backward i after backward i on stage s+1; communication is free. A stage
computes one step at a time. The result, a ``Simulation``, holds each stage's
busy ``Slot``s; from them come the makespan, the idle gaps and the bubble:

    bubble_fraction = idle / (K * makespan)          GPipe, 1F1B: (K-1)/(M+K-1)
    bubble_ratio    = idle / busy                    interleaved: (1/v)(K-1)/M
    bubble          = most idle time inside one stage's span (the zero-bubble paper's)

A deadlocked schedule (a receive whose send never comes) raises RuntimeError,
so the tests and the grader check a schedule here before it runs on ranks.
``minimegatron.tools.timeline`` draws a Simulation.

    minimegatron timeline --schedule 1f1b --stages 4 --micro-batches 8
"""
from dataclasses import dataclass
from functools import partial

from minimegatron.parallel.pipeline_parallel.actions import OPS, chunk_suffix
from minimegatron.parallel.pipeline_parallel.schedules import (FIXED_CHUNKS, SCHEDULES,
                                                               chunk_share, get_schedule,
                                                               placement)


def _resolve(schedule, num_chunks=1):
    """(function of (K, M, stage), name) from a name or a schedule function."""
    if isinstance(schedule, str):
        return get_schedule(schedule, num_chunks), schedule
    names = [name for name, fn in SCHEDULES.items() if fn is schedule]
    name = names[0] if names else schedule.__name__
    if num_chunks == 1 and name != "interleaved" or name in FIXED_CHUNKS:
        return schedule, name
    return partial(schedule, num_chunks=num_chunks), name


@dataclass(frozen=True)
class Slot:
    """A timed compute step: op "F", "B" or "W" on micro_batch (and chunk) from start to end."""
    start: float
    end: float
    op: str
    micro_batch: int
    chunk: int = None

    def __str__(self):
        return f"{self.op}{self.micro_batch}" + chunk_suffix(self.chunk)


@dataclass(frozen=True)
class Simulation:
    """Timed schedule: ``slots[stage]`` is that stage's busy Slots in time order."""
    schedule: str
    num_stages: int
    num_micro_batches: int
    slots: list
    makespan: float

    def busy(self, stage):
        return sum(slot.end - slot.start for slot in self.slots[stage])

    def idle(self, stage):
        return self.makespan - self.busy(stage)

    def stage_bubble(self, stage):
        """Idle time between the start of the stage's first step and the end of its last."""
        row = self.slots[stage]
        return row[-1].end - row[0].start - self.busy(stage)

    @property
    def bubble(self):
        """The zero-bubble paper's bubble: the largest ``stage_bubble`` over the stages."""
        return max(self.stage_bubble(stage) for stage in range(self.num_stages))

    def idle_slots(self, stage):
        """The idle gaps of a stage as (start, end) pairs, up to the makespan."""
        gaps, now = [], self.makespan * 0
        for slot in self.slots[stage] + [Slot(self.makespan, self.makespan, "", -1)]:
            if slot.start > now:
                gaps.append((now, slot.start))
            now = slot.end
        return gaps

    @property
    def bubble_fraction(self):
        """idle / (num_stages * makespan)"""
        idle = sum(self.idle(stage) for stage in range(self.num_stages))
        return idle / (self.num_stages * self.makespan)

    @property
    def bubble_ratio(self):
        """idle / busy: the Megatron paper's t_pb / t_id, (1/v)(K-1)/M for interleaved."""
        busy = sum(self.busy(stage) for stage in range(self.num_stages))
        return (self.num_stages * self.makespan - busy) / busy


def simulate(schedule, num_stages, num_micro_batches, t_forward=1.0, t_backward=1.0,
             num_chunks=1, t_weight=0, virtual=None):
    """Run every stage's action list in order against a clock; communication is free.

    A send is posted at once (nonblocking) and a receive waits until its
    matching send is posted, so forward i on stage s starts after forward i on
    s-1, and backward i after backward i on s+1. A stage computes one step at a
    time, in list order. Raises RuntimeError if the schedule deadlocks. Exact
    times come out if t_forward and t_backward are Fractions. With v =
    ``num_chunks`` model chunks per stage (interleaved; zbv always 2), chunk c of
    stage s is virtual stage c*K + s of K*v (zbv: ``placement``, a V; ``virtual``:
    another (K, stage, chunk) -> virtual stage, for a schedule function), and one
    chunk's step takes t_forward / v
    (or t_backward / v): a stage's work per micro-batch stays t_forward + t_backward.
    DualPipe's chunks are whole stages held twice (dualpipe.py): each step takes
    t_forward (or t_backward), and each chunk runs half the micro-batches.

    ``t_weight``: the weight gradient's time T_W. A schedule with W actions
    (zero_bubble.py) runs B in t_backward and W in t_weight (> 0); in one without,
    the backward computes both and takes t_backward + t_weight, so 1F1B with
    t_weight = 0 is unchanged and with T_W > 0 compares with ZB-H1 at equal work.
    """
    if not (t_forward > 0 and t_backward > 0 and t_weight >= 0):
        raise ValueError(f"need positive step times; got t_forward={t_forward}, "
                         f"t_backward={t_backward}, t_weight={t_weight}")
    fn, name = _resolve(schedule, num_chunks)
    share, virtual = chunk_share(name, num_chunks), virtual or placement(name)
    programs = [fn(num_stages, num_micro_batches, s) for s in range(num_stages)]
    split = any(action.op == "weight" for program in programs for action in program)
    if split and not t_weight > 0:
        raise ValueError(f"schedule {name!r} runs W on its own: need t_weight > 0, "
                         f"got t_weight={t_weight}")
    duration = {"forward": t_forward * share, "weight": t_weight * share,
                "backward": (t_backward + (0 if split else t_weight)) * share}
    clock, pc = [duration["forward"] * 0] * num_stages, [0] * num_stages
    posted = {}  # (from_stage, to_stage, micro_batch) -> time the send was posted
    slots = [[] for _ in range(num_stages)]
    progress = True
    while progress:
        progress = False
        for s, program in enumerate(programs):
            while pc[s] < len(program):
                action = program[pc[s]]
                here = virtual(num_stages, s, action.chunk or 0)   # the virtual stage
                step = -1 if action.op in ("recv_act", "send_grad") else 1
                if action.op.startswith("recv"):
                    key = (here + step, here, action.micro_batch)
                    if key not in posted:
                        break
                    clock[s] = max(clock[s], posted.pop(key))
                elif action.op.startswith("send"):
                    posted[(here, here + step, action.micro_batch)] = clock[s]
                else:
                    step_time = duration[action.op]
                    slots[s].append(Slot(clock[s], clock[s] + step_time,
                                         OPS[action.op], action.micro_batch, action.chunk))
                    clock[s] += step_time
                pc[s] += 1
                progress = True
    stuck = [f"stage {s} at {p[pc[s]]}" for s, p in enumerate(programs) if pc[s] < len(p)]
    if stuck or posted:
        raise RuntimeError(f"schedule {name!r} deadlocks: waiting {', '.join(stuck)}; "
                           f"unreceived sends (from, to, micro-batch): {sorted(posted)}")
    return Simulation(name, num_stages, num_micro_batches, slots, max(clock))


def bubble_fraction(schedule, num_stages, num_micro_batches, t_forward=1.0, t_backward=1.0,
                    num_chunks=1, t_weight=0):
    """Simulated idle / (num_stages * makespan) of a schedule."""
    return simulate(schedule, num_stages, num_micro_batches,
                    t_forward, t_backward, num_chunks, t_weight).bubble_fraction
