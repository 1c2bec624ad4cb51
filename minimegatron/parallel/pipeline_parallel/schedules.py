"""Pipeline schedules as data: naive, GPipe and 1F1B (zero-bubble ZB-H1, ZB-H2: zero_bubble.py).

The idea. A model cut into K stages (consecutive layers on K ranks) sends
activations forward and gradients backward between neighbouring stages. Stage
k must wait for stage k-1, so with the whole batch at once only one stage
works at a time and the others sit idle: the *bubble*. GPipe cuts the batch
into M micro-batches so different stages work on different micro-batches.

The math (forward and backward take equal time, communication is free). Each
stage is busy for M forward and M backward slots out of 2 (M + K - 1):

    bubble = (K - 1) / (M + K - 1)        naive (M = 1): (K - 1) / K

so the bubble becomes small once M >= 4K. 1F1B (PipeDream-Flush, Megatron's
default) has the same bubble but starts backwards early: stage k runs
min(K - k - 1, M) warm-up forwards, then alternates one forward and one
backward, then drains the remaining backwards. It therefore holds the
activations of at most min(M, K - k) micro-batches; GPipe holds all M.

Schedules are data. A schedule is a pure function
``(num_stages, num_micro_batches, stage) -> list[Action]`` listing what the
stage does, in order. The pipeline executor runs the list, simulator.py times
it, ``minimegatron.tools.timeline`` draws it and the tests check it, all
without MPI. Per micro-batch and stage boundary there is one activation
send (forward) and one gradient send (backward), each micro_batch*seq*hidden
values. Sends must be posted nonblocking (Isend, waited later) and receives
block: with blocking sends 1F1B deadlocks (two neighbours both sending).

    minimegatron timeline --schedule 1f1b --stages 4 --micro-batches 8
    minimegatron run -n 4 tutorials/07_pipeline.py
"""
from fractions import Fraction
from functools import partial

from minimegatron.parallel.pipeline_parallel import dualpipe, zero_bubble
from minimegatron.parallel.pipeline_parallel.actions import (backward_actions, check_stage,
                                                             forward_actions)

def gpipe(num_stages, num_micro_batches, stage):
    """All M forwards, then all M backwards in the same order 0..M-1 (as Megatron)."""
    check_stage(num_stages, num_micro_batches, stage)
    actions = []
    # EXERCISE 2.1 begin
    for i in range(num_micro_batches):
        actions += forward_actions(num_stages, stage, i)
    for i in range(num_micro_batches):
        actions += backward_actions(num_stages, stage, i)
    # EXERCISE 2.1 end
    return actions


def naive(num_stages, num_micro_batches, stage):
    """The whole batch as one micro-batch: gpipe with M = 1 (num_micro_batches unused).

    The executor passes the whole batch as micro-batch 0.
    """
    check_stage(num_stages, num_micro_batches, stage)
    return gpipe(num_stages, 1, stage)


def one_f_one_b(num_stages, num_micro_batches, stage):
    """Warm-up min(K-k-1, M) forwards, then forward/backward pairs, then the backwards left."""
    check_stage(num_stages, num_micro_batches, stage)
    actions = []
    # EXERCISE 2.2 begin
    warmup = min(num_stages - stage - 1, num_micro_batches)
    for i in range(warmup):
        actions += forward_actions(num_stages, stage, i)
    for i in range(num_micro_batches - warmup):
        actions += forward_actions(num_stages, stage, warmup + i)
        actions += backward_actions(num_stages, stage, i)
    for i in range(num_micro_batches - warmup, num_micro_batches):
        actions += backward_actions(num_stages, stage, i)
    # EXERCISE 2.2 end
    return actions


def interleaved(num_stages, num_micro_batches, stage, num_chunks):
    """Megatron's interleaved 1F1B: stage k holds v chunks, virtual stages k, k+K, .., k+(v-1)K.

    Forward step j (of M*v) runs micro-batch (j // Kv) * K + j % K on chunk
    (j % Kv) // K: micro-batches go through the chunks in groups of K.
    Backward step j runs the same micro-batch on chunk v-1-(j % Kv) // K.
    Warm-up min(2(K-k-1) + (v-1)K, Mv) forwards, then F/B pairs, then the rest.
    """
    check_stage(num_stages, num_micro_batches, stage)
    check_interleaved(num_stages, num_micro_batches, num_chunks)
    K, v, total = num_stages, num_chunks, num_micro_batches * num_chunks

    def step(j, forward):
        group, position = divmod(j, K * v)          # which K micro-batches, where in them
        chunk = position // K if forward else v - 1 - position // K
        make = forward_actions if forward else backward_actions
        return make(K * v, chunk * K + stage, group * K + position % K, chunk)
    # EXERCISE 6.1 begin
    warmup = min((K - stage - 1) * 2 + (v - 1) * K, total)
    # EXERCISE 6.1 end
    actions = []
    for j in range(warmup):
        actions += step(j, True)
    for j in range(total - warmup):
        actions += step(warmup + j, True) + step(j, False)
    for j in range(total - warmup, total):
        actions += step(j, False)
    return actions


def check_interleaved(num_stages, num_micro_batches, num_chunks):
    """ValueError unless v >= 1 and M is a multiple of K (micro-batches go in groups of K)."""
    if not isinstance(num_chunks, int) or num_chunks < 1:
        raise ValueError(f"num_chunks must be an int >= 1, got {num_chunks!r}")
    if num_micro_batches % num_stages:
        raise ValueError(f"the interleaved schedule needs the number of micro-batches to be "
                         f"a multiple of the pipeline stages: M={num_micro_batches}, "
                         f"K={num_stages}")


def loop_placement(num_stages, stage, chunk):
    """Virtual stage of chunk ``chunk`` on stage ``stage``: c*K + k (interleaved's loop)."""
    return chunk * num_stages + stage


# ZB-H1, ZB-H2 and ZBV (zero_bubble.py), DualPipe and DualPipeV (dualpipe.py) split the
# backward into B and W.
SCHEDULES = {"naive": naive, "gpipe": gpipe, "1f1b": one_f_one_b, "interleaved": interleaved,
             **zero_bubble.ZERO_BUBBLE, **dualpipe.DUALPIPE}
SPLIT = {*zero_bubble.ZERO_BUBBLE, *dualpipe.DUALPIPE}        # schedules with W actions
FIXED_CHUNKS = {**zero_bubble.FIXED_CHUNKS, **dualpipe.FIXED_CHUNKS}   # always this many
PLACEMENTS = {**zero_bubble.PLACEMENTS, **dualpipe.PLACEMENTS}   # chunks not in a loop (V)


def get_schedule(name, num_chunks=1):
    """The schedule function called ``name`` (interleaved: with ``num_chunks`` bound).

    ValueError listing valid names otherwise, or for chunks > 1 on a plain schedule.
    A schedule in FIXED_CHUNKS (zbv: 2) takes its own count or 1 (its default).
    """
    if name not in SCHEDULES:
        raise ValueError(f"unknown schedule {name!r}; valid: {', '.join(SCHEDULES)}")
    if name == "interleaved":
        return partial(interleaved, num_chunks=num_chunks)
    if num_chunks not in (1, FIXED_CHUNKS.get(name, 1)):
        raise ValueError(f"schedule {name!r} runs {FIXED_CHUNKS.get(name, 1)} model chunk(s) "
                         f"per stage; only 'interleaved' takes num_chunks={num_chunks}")
    return SCHEDULES[name]


def chunks_per_stage(name, num_chunks=1):
    """How many model chunks a stage holds under schedule ``name``."""
    return FIXED_CHUNKS.get(name, num_chunks)


def chunk_share(name, num_chunks=1):
    """The part of a stage's layers one chunk holds: 1/v, or 1 for dualpipe (two copies)."""
    return Fraction(dualpipe.COPIES.get(name, 1), chunks_per_stage(name, num_chunks))


def placement(name):
    """(num_stages, stage, chunk) -> virtual stage, for schedule ``name`` (a loop or a V)."""
    return PLACEMENTS.get(name, loop_placement)


# schedules that run two chunks placed other than in a loop, and the placement they need
NEEDS_PLACEMENT = {"zbv": "v", "dualpipev": "v", "dualpipe": "mirror"}


def check_chunks(schedule, stage_module):
    """ValueError unless the stage holds what the schedule runs: for zbv and dualpipev two
    chunks in a V, for dualpipe two mirrored stages (zero_bubble.py, dualpipe.py)."""
    chunks = len(getattr(stage_module, "chunks", [stage_module]))
    placed = getattr(stage_module, "placement", None)
    needed = NEEDS_PLACEMENT.get(schedule)
    if needed and not (chunks == 2 and placed == needed):
        raise ValueError(f"schedule {schedule!r} runs two model chunks per stage placed "
                         f"{'in a V' if needed == 'v' else 'as mirrored stages'}: build the "
                         f"stage as ChunkedStage(model, stage, K, 2, placement={needed!r})")
    if needed is None and placed in ("v", "mirror"):
        runs = " or ".join(repr(name) for name, p in NEEDS_PLACEMENT.items() if p == placed)
        raise ValueError(f"a stage placed {'in a V' if placed == 'v' else 'as mirrored stages'}"
                         f" runs the schedule {runs}, not {schedule!r}")


def peak_in_flight(actions):
    """Most micro-batches whose forward is done and backward is not (activations held).

    In a list with W actions (backward split), a micro-batch is held until its W.
    """
    release = "weight" if any(action.op == "weight" for action in actions) else "backward"
    held = peak = 0
    for action in actions:
        if action.op == "forward":
            held += 1
            peak = max(peak, held)
        elif action.op == release:
            held -= 1
    return peak


def bubble_formula(num_stages, num_micro_batches, num_chunks=1):
    """GPipe's bubble (K-1)/(M+K-1) as an exact Fraction; with v chunks (K-1)/(vM+K-1).

    Idle / (idle + busy). The Megatron paper states idle / busy, t_pb / t_id =
    (1/v)(K-1)/M (``Simulation.bubble_ratio``, simulator.py): the same bubble,
    another denominator.
    """
    return Fraction(num_stages - 1, num_chunks * num_micro_batches + num_stages - 1)
