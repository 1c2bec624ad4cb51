"""Exercise 4.1 (DDP): what it teaches, and the evidence of each point.

The problem (a small GPT per dp group, then the world) and the judge's own
one-process run are in ``dp_problem.py``. The student side (``collect_ddp``)
trains with the student's ``_launch`` and records, per step, the collectives
from the trace (op, group's world ranks, bytes), whether each all-reduce is
still in flight when ``_launch`` returns and reads and writes ``bucket.reduce``
itself, whether every ``p.grad`` is a view of the flat buffer, and the loss,
gradients and weights.

    4.1  one_per_bucket  ONE all_reduce per bucket, over the group, of the bucket's own
                         bytes (bucket.reduce: float32 for a float16 model)
         overlap         the all-reduce is still in flight when _launch returns, and
                         _launch finished no earlier bucket's (several buckets in flight
                         at once, not one at a time)
         mean_in_place   after finish() every p.grad, a view of the flat buffer, holds the
                         mean gradient = one process's (float64, float32, float16, 4 ranks);
                         MPI reads and writes bucket.reduce itself (no copy sent, put back)
         same_update     loss and weights after each AdamW step = one process's
         freed           after finish() no handle of the step is alive (weak references), and
                         a step after the first leaves no new array memory (tracemalloc)
"""
import weakref

import numpy as np

from minimegatron.classroom.exercise_checks.common import CheckFailed
from minimegatron.classroom.exercise_checks.dp_problem import (
    BATCH, BUCKET_BYTES, DDP_RUNS, bucket_bytes, compare, config_for, describe, error_text,
    group_of, runs, same_weights, serial, shapes, steps_of, tolerance)
from minimegatron.classroom.exercise_checks.lesson import Lesson, Point, comm_log
from minimegatron.classroom.exercise_checks.memory_watch import (
    NewArrays, alive, alive_after_pauses, within)
from minimegatron.i18n import text


def _in_flight(handle):
    """Is a started all-reduce still running: a comm.Handle not done whose MPI requests
    were started, or bound.py's?"""
    done = getattr(handle, "done", None)
    if done is None:
        return bool(getattr(handle, "active", False))
    return not done and bool(getattr(handle, "requests", None))


def _reads_and_writes(handle, buffer):
    """Does the started all-reduce read and write ``buffer`` itself (in place)? False when
    MPI works on another array (a copy sent, the result put back with ``out=``); None when
    it cannot be told (not a comm.Handle, or a GPU array staged through the host)."""
    keep = getattr(handle, "keep", None)
    if not keep or not isinstance(buffer, np.ndarray) or not buffer.flags.c_contiguous:
        return None
    return all(isinstance(b, np.ndarray) and np.shares_memory(b, buffer) for b in keep)


def _weak(handle):
    """A weak reference to a started all-reduce's handle (None when it takes none)."""
    try:
        return weakref.ref(handle)
    except TypeError:
        return None


def _still_alive(refs):
    """[1 if the handle is still alive, else 0; None for one never weakly referenced], after
    the garbage collector and a pause when any is (a reference cycle freed late, or a frame
    the hang watchdog held a moment, is not a handle kept)."""
    alive_after_pauses([ref for ref in refs if ref is not None])
    return [None if ref is None else alive([ref]) for ref in refs]


def _ddp_run(group, seed, dtype, steps):
    """One DDP training run; fills and returns its evidence (even when the code raises)."""
    from minimegatron import comm
    from minimegatron.comm import trace
    from minimegatron.data.demo import batch, make_optimizer
    from minimegatron.nn import GPT
    from minimegatron.parallel.data_parallel.ddp import DistributedDataParallel
    from minimegatron.parallel.split import shard_batch
    run = {"group": list(group.ranks), "dtype": dtype, "steps": []}
    try:
        config = config_for(seed, group.ranks, dtype)
        model = GPT(config)
        ddp = DistributedDataParallel(model, group, bucket_bytes=BUCKET_BYTES)
        opt = make_optimizer(model.parameters()) if steps else None
        launched, in_place, waited, launch = [], [], [], ddp._launch
        handles = []

        def watched(bucket):
            started = [b for b in ddp.buckets if b is not bucket and _in_flight(b.handle)]
            launch(bucket)
            handles.append(_weak(bucket.handle))
            launched.append(_in_flight(bucket.handle))
            in_place.append(_reads_and_writes(bucket.handle, bucket.reduce))
            waited.append(sum(not _in_flight(b.handle) for b in started))
        ddp._launch = watched
        buffer = ddp.grad_buffer.data
        for step in range(max(steps, 1)):
            record = {}
            run["steps"].append(record)
            x, y = batch(config, BATCH, step)
            x, y = shard_batch(x, group), shard_batch(y, group)            # (B/N, T)
            if opt is not None:
                opt.zero_grad()
            for watch in (launched, in_place, waited, handles):
                watch.clear()
            trace.reset()
            with NewArrays() as new:
                loss = model.loss(x, y)
                loss.backward()
                ddp.finish()
            if step:                                # step 0 makes AdamW's state
                record["memory"] = new.settle(0, [])["new"]
            else:
                new.settle(1 << 62, [])
            record["calls"] = comm_log(trace.spans(), [group, comm.world()])
            record["handles"] = _still_alive(handles)
            record["in_flight"] = list(launched)
            record["in_place"] = list(in_place)
            record["waited"] = list(waited)
            record["loss"] = float(loss.item())
            named = list(model.named_parameters())
            record["copies"] = [n for n, p in named if p.grad is None
                                or not np.shares_memory(p.grad, buffer)]
            record["grads"] = {n: p.grad.copy() for n, p in named if p.grad is not None}
            if opt is not None:
                opt.step()
                record["weights"] = {n: p.data.copy() for n, p in named}
    except Exception as err:   # noqa: BLE001 -- the student's code raised: evidence so far
        run["error"] = error_text(err)
    return run


def collect_ddp(group, seed):
    runs = {}
    for name, dtype, world, steps in DDP_RUNS:
        runs[name] = _ddp_run(group_of(group, world), seed, dtype, steps)
        if "error" in runs[name]:
            break                                    # the ranks may no longer agree
    return {"runs": runs}


def judge_one_per_bucket(ranks, seed):
    for me, name, run, step, record in runs(ranks, DDP_RUNS, "calls"):
        calls = record["calls"]
        want = bucket_bytes(run["dtype"])
        wanted = [{"op": "all_reduce", "group": run["group"], "nbytes": b,
                   "label": f"ddp.bucket{i}"} for i, b in enumerate(want)]
        got = sorted(({k: c[k] for k in ("op", "group", "nbytes", "label")} for c in calls),
                     key=lambda c: str(c["label"]))
        if got != sorted(wanted, key=lambda c: c["label"]):
            raise CheckFailed(text("dp.bucket_calls", rank=me, run=name, step=step,
                                   got=describe(calls), count=len(want), group=run["group"],
                                   want=want))


def judge_overlap(ranks, seed):
    for me, name, run, step, record in runs(ranks, DDP_RUNS, "in_flight"):
        flags = record["in_flight"]
        if not flags or not all(flags):
            raise CheckFailed(text("dp.not_in_flight", rank=me, run=name, step=step,
                                   done=flags.count(False), count=len(flags)))
        if sum(record.get("waited", [1])):
            raise CheckFailed(text("dp.waited_in_launch", rank=me, run=name, step=step,
                                   count=sum(record.get("waited", [1]))))


def judge_mean_in_place(ranks, seed):
    for me, name, run, step, record in runs(ranks, DDP_RUNS, "copies", "grads"):
        if record["copies"]:
            raise CheckFailed(text("dp.grad_copies", rank=me, run=name,
                                   names=", ".join(record["copies"][:4])))
        if False in record.get("in_place", []):
            raise CheckFailed(text("dp.not_in_place", rank=me, run=name, step=step,
                                   count=record["in_place"].count(False)))
        want = serial(config_for(seed, run["group"], run["dtype"]),
                      steps_of(DDP_RUNS, name))["grads"][step]
        tol = tolerance(run["dtype"], want.values())
        for param, _ in shapes(run["dtype"]):
            compare(f"p.grad of {param}", record["grads"].get(param), want[param], tol, me,
                     name, step, run["dtype"])


def judge_freed(ranks, seed):
    """After finish() no handle of the step is alive, and a step after the first leaves no
    new array memory behind (the gradients live in the flat buffer)."""
    for me, name, run, step, record in runs(ranks, DDP_RUNS, "handles"):
        kept = [h for h in record["handles"] if h]
        if kept or None in record["handles"]:
            raise CheckFailed(text("dp.handles_kept", rank=me, run=name, step=step,
                                   count=len(kept) if kept else "?",
                                   total=len(record["handles"])))
        full = sum(bucket_bytes(run["dtype"]))
        if "memory" in record and not within(record["memory"], 0, full):
            raise CheckFailed(text("dp.step_memory", rank=me, run=name, step=step,
                                   got=record["memory"], full=full))


def judge_same_update(ranks, seed):
    same_weights(ranks, seed, DDP_RUNS)


LESSONS = {
    "4.1": Lesson(collect_ddp, (Point("one_per_bucket", judge_one_per_bucket),
                                Point("overlap", judge_overlap),
                                Point("mean_in_place", judge_mean_in_place),
                                Point("same_update", judge_same_update),
                                Point("freed", judge_freed))),
}
