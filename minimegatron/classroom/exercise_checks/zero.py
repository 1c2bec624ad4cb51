"""Exercises 5.1 and 5.2 (ZeRO): what each teaches, and the evidence of each point.

The problem (a small GPT per dp group, then the world; P = 515, padded to 516)
and the judge's own one-process run are in ``dp_problem.py``. The student side
trains ShardedOptimizer with the student's blocks and records, per step, the
collectives from the trace, which ``p.grad`` are still alive and how many bytes
the gradients hold (counting arrays kept in attributes the student's code
added), what ``optimizer.update`` was given, and the gradient slice and weights.

    5.1  reduce_scatter  ONE reduce_scatter over the group of the padded flat gradients
         own_slice       self.grad_shard = slice r of one process's mean gradient
         freed           every p.grad is None; the gradients hold the slice's bytes only
                         (counting arrays kept in attributes the student's code added), and
                         over the whole process (tracemalloc, weak references): the old
                         gradients are gone, reduce_gradients leaves the slice behind only
    5.2  own_update      optimizer.update once per step on (self.shard, self.grad_shard,
                         flat.state, self.step_count); its state is slice-sized
         all_gather      ONE all_gather over the group of this rank's slice
         weights         every rank's full weights after each step = one process's
                         (stages 1 and 2, float64 and float32, 4 ranks), held once: the
                         old weights are gone and a step leaves one full buffer behind
                         (whole process, as for 5.1)
"""
import weakref

import numpy as np

from minimegatron.classroom.exercise_checks.common import CheckFailed
from minimegatron.classroom.exercise_checks.dp_problem import (
    BATCH, TOL, ZERO2_RUNS, ZERO_RUNS, compare, config_for, describe, error_text, flat_slice,
    group_of, layout, rank_in, runs, same_weights, serial, steps_of)
from minimegatron.classroom.exercise_checks.lesson import Lesson, Point, comm_log
from minimegatron.classroom.exercise_checks.memory_watch import NewArrays, arrays_in, owner
from minimegatron.i18n import text


def _gradient_bytes(grads, known, weights):
    """Bytes the gradients hold: the memory owning ``grads`` (p.grad and the slice), and
    what attributes added by the student's code to the ShardedOptimizer or its FlatShard
    keep alive (``self.flat_grads = ...``: never freed), each owner counted once and the
    weights' and optimizer state's memory left out. ``known``: [(object, the names of its
    attributes when it was built)]; ``weights``: the parameters' arrays."""
    owned, aside = {id(owner(w)) for w in weights}, []
    for obj, names in known:
        for name, value in vars(obj).items():
            if name not in names:
                aside += arrays_in(value)
            elif name != "grad_shard":
                owned.update(id(owner(a)) for a in arrays_in(value))
    owners = {}
    for a in [g for g in grads if g is not None] + aside:
        base = owner(a)
        if id(base) not in owned:
            owners[id(base)] = int(base.nbytes)
    return sum(owners.values())


def _same(a, b):
    """Does a hold the same values as b (a copy of the gradient slice is as good)?"""
    from minimegatron.backend import to_numpy
    if a is None or b is None or getattr(a, "shape", None) != getattr(b, "shape", None):
        return False
    return bool(np.array_equal(np.asarray(to_numpy(a)), np.asarray(to_numpy(b))))


def _zero_run(group, seed, dtype, stage, steps):
    from minimegatron import comm
    from minimegatron.comm import trace
    from minimegatron.data.demo import batch, make_optimizer
    from minimegatron.nn import GPT
    from minimegatron.parallel.data_parallel.zero import ShardedOptimizer
    from minimegatron.parallel.split import shard_batch
    run = {"group": list(group.ranks), "dtype": dtype, "stage": stage, "steps": []}
    try:
        config = config_for(seed, group.ranks, dtype)
        model = GPT(config)
        zero = ShardedOptimizer(model, group, stage, make_optimizer(model.parameters()))
        updates, rule = [], zero.optimizer.update

        def watched(param, grad, state, step):
            updates.append({"shape": list(getattr(param, "shape", ())),
                            "param": param is zero.shard,
                            "grad": grad is zero.grad_shard or _same(grad, zero.grad_shard),
                            "state": state is zero.flat.state, "step": repr(step)})
            return rule(param, grad, state, step)
        zero.optimizer.update = watched
        known = [(obj, set(vars(obj))) for obj in (zero, zero.flat)]
        for step in range(steps):
            record = {}
            run["steps"].append(record)
            x, y = batch(config, BATCH, step)
            x, y = shard_batch(x, group), shard_batch(y, group)            # (B/N, T)
            zero.zero_grad()
            loss = model.loss(x, y)
            loss.backward()
            record["loss"] = float(loss.item())
            loss = None                                     # the graph goes, and what it holds
            grads = [weakref.ref(owner(p.grad)) for p in zero.flat.params if p.grad is not None]
            trace.reset()
            with NewArrays() as new:
                zero.reduce_gradients()
            record["grad_calls"] = comm_log(trace.spans(), [group, comm.world()])
            slice_bytes = zero.flat.padded // group.size * np.dtype(dtype).itemsize
            record["grad_memory"] = new.settle(slice_bytes, grads)
            del grads
            named = list(model.named_parameters())
            shard = zero.grad_shard
            record["alive"] = [n for n, p in named if p.grad is not None]
            record["grad_bytes"] = _gradient_bytes([p.grad for n, p in named] + [shard],
                                                   known, [p.data for n, p in named])
            record["grad_shard"] = None if shard is None else np.array(shard, copy=True)
            updates.clear()
            weights = [weakref.ref(owner(zero.flat.params[0].data))]
            state = dict(zero.flat.state)
            trace.reset()
            with NewArrays() as new:
                zero.step()
            record["step_calls"] = comm_log(trace.spans(), [group, comm.world()])
            fresh = sum(int(owner(v).nbytes) for k, v in zero.flat.state.items()
                        if state.get(k) is not v)           # AdamW's m and v, first step
            full_bytes = zero.flat.padded * np.dtype(dtype).itemsize
            memory = new.settle(full_bytes + fresh, weights)
            record["step_memory"] = {"new": memory["new"] - fresh,
                                     "old_alive": memory["old_alive"]}
            del weights, state
            record["updates"] = list(updates)
            record["state"] = {k: list(v.shape) for k, v in zero.flat.state.items()}
            record["weights"] = {n: p.data.copy() for n, p in named}
    except Exception as err:   # noqa: BLE001 -- the student's code raised: evidence so far
        run["error"] = error_text(err)
    return run


def _collect_zero(group, seed, runs_spec):
    runs = {}
    for name, dtype, stage, world, steps in runs_spec:
        runs[name] = _zero_run(group_of(group, world), seed, dtype, stage, steps)
        if "error" in runs[name]:
            break
    return {"runs": runs}


def collect_zero2(group, seed):
    return _collect_zero(group, seed, ZERO2_RUNS)


def collect_zero(group, seed):
    return _collect_zero(group, seed, ZERO_RUNS)


def _itemsize(run):
    return np.dtype(run["dtype"]).itemsize


def judge_reduce_scatter(ranks, seed):
    for me, name, run, step, record in runs(ranks, ZERO2_RUNS, "grad_calls"):
        calls = record["grad_calls"]
        _, padded, _ = layout(run["dtype"], len(run["group"]))
        nbytes = padded * _itemsize(run)
        got = [(c["op"], c["group"], c["nbytes"]) for c in calls]
        if got != [("reduce_scatter", run["group"], nbytes)]:
            raise CheckFailed(text("dp.grad_calls", rank=me, run=name, step=step,
                                   got=describe(calls), group=run["group"], nbytes=nbytes))


def judge_own_slice(ranks, seed):
    for me, name, run, step, record in runs(ranks, ZERO2_RUNS, "grad_shard"):
        shard = record["grad_shard"]
        n, r = len(run["group"]), rank_in(run, me)
        _, padded, length = layout(run["dtype"], n)
        grads = serial(config_for(seed, run["group"], run["dtype"]),
                       steps_of(ZERO2_RUNS, name))["grads"]
        want = flat_slice(grads[step], run["dtype"], r, n)
        what = text("dp.grad_shard", start=r * length, end=(r + 1) * length, padded=padded)
        compare(what, shard, want, TOL[run["dtype"]], me, name, step, run["dtype"])


def judge_freed(ranks, seed):
    for me, name, run, step, record in runs(ranks, ZERO2_RUNS, "alive"):
        alive = record["alive"]
        if alive:
            raise CheckFailed(text("dp.grads_alive", rank=me, run=name, step=step,
                                   count=len(alive), names=", ".join(alive[:3])))
        _, _, length = layout(run["dtype"], len(run["group"]))
        want = length * _itemsize(run)
        if record["grad_bytes"] != want:
            raise CheckFailed(text("dp.grad_memory", rank=me, run=name, step=step,
                                   got=record["grad_bytes"], want=want))
        _process_memory(record.get("grad_memory"), want, "dp.grads_kept", me, name, step,
                        layout(run["dtype"], len(run["group"]))[1] * _itemsize(run))


def _process_memory(memory, want, kept, me, name, step, full):
    """The whole process: the arrays a phase started with are gone (``kept`` names them),
    and the array memory it left behind is ``want`` bytes, give or take half a full
    buffer (``full`` bytes)."""
    if memory is None or memory["old_alive"]:
        raise CheckFailed(text(kept, rank=me, run=name, step=step,
                               count=(memory or {}).get("old_alive", "?")))
    if memory["new"] > want + full // 2:
        raise CheckFailed(text("dp.memory_left", rank=me, run=name, step=step,
                               got=memory["new"], want=want, full=full))


def judge_own_update(ranks, seed):
    for me, name, run, step, record in runs(ranks, ZERO_RUNS, "updates"):
        updates = record["updates"]
        _, _, length = layout(run["dtype"], len(run["group"]))
        if len(updates) != 1:
            raise CheckFailed(text("dp.update_count", rank=me, run=name, step=step,
                                   count=len(updates)))
        call = updates[0]
        if not (call["param"] and call["grad"] and call["state"]
                and call["step"] == repr(step + 1) and call["shape"] == [length]):
            raise CheckFailed(text("dp.update_args", rank=me, run=name, step=step,
                                   param=call["param"], grad=call["grad"], state=call["state"],
                                   got=call["step"], want=step + 1, shape=call["shape"],
                                   length=length))
        wrong = {k: v for k, v in record["state"].items() if v != [length]}
        if wrong or not record["state"]:
            raise CheckFailed(text("dp.state_shape", rank=me, run=name, got=wrong or "{}",
                                   length=length))


def judge_all_gather(ranks, seed):
    for me, name, run, step, record in runs(ranks, ZERO_RUNS, "step_calls"):
        calls = record["step_calls"]
        _, _, length = layout(run["dtype"], len(run["group"]))
        nbytes = length * _itemsize(run)
        got = [(c["op"], c["group"], c["nbytes"]) for c in calls]
        if got != [("all_gather", run["group"], nbytes)]:
            raise CheckFailed(text("dp.gather_calls", rank=me, run=name, step=step,
                                   got=describe(calls), group=run["group"], nbytes=nbytes))


def judge_weights(ranks, seed):
    same_weights(ranks, seed, ZERO_RUNS)
    for me, name, run, step, record in runs(ranks, ZERO_RUNS, "step_memory"):
        full = layout(run["dtype"], len(run["group"]))[1] * _itemsize(run)
        _process_memory(record["step_memory"], full, "dp.weights_kept", me, name, step, full)


LESSONS = {
    "5.1": Lesson(collect_zero2, (Point("reduce_scatter", judge_reduce_scatter),
                                  Point("own_slice", judge_own_slice),
                                  Point("freed", judge_freed))),
    "5.2": Lesson(collect_zero, (Point("own_update", judge_own_update),
                                 Point("all_gather", judge_all_gather),
                                 Point("weights", judge_weights))),
}
