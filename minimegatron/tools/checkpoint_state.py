"""What the optimizer keeps per weight, for a checkpoint: plain, ZeRO-1/2 slices, mixed precision.

A checkpoint stores optimizer state per weight, in the weight's full shape
(``optim/<name>/<key>``), whatever holds it on the grid:

    AdamW / SGD                 optimizer.state[i] = {key: array of p's shape}
    MixedPrecisionOptimizer     the same, in float32 (master, m, v), + the loss scaler
                                (scale, clean and skipped steps) and AdamW's t (steps taken)
    ZeRO-1/2 ShardedOptimizer   one flat (P_pad/N,) slice per key on each of the N ranks of
                                its group: all_gather -> (P_pad,) -> unflatten per weight
                                (saving); flatten, pad, own slice (loading)
    MoE ZeRO-1/2                two such flat groups (ExpertShardedOptimizer): the dense
                                weights over dp x cp, the experts over edp; each moves as above

``state_of`` / ``set_state`` move between these forms and {name: [array per key]};
``held_state`` checks that the optimizer is one of them and owns exactly the model's
parameters. ``kind_of`` names the update rule as a file records it (its class, the class it
wraps, the state fields it keeps per weight), so a load compares the rule, not only the
outer class: a float16 SGD-with-momentum file keeps (master, momentum), which an AdamW
run, keeping (master, m, v), cannot resume from. Collective only in ``state_of`` with
ZeRO: one Allgather per key and flat group (its group: dp x cp).
"""
import numpy as np

from minimegatron import comm
from minimegatron.backend import asarray
from minimegatron.i18n import text
from minimegatron.optim import Optimizer
from minimegatron.parallel.data_parallel.zero import ShardedOptimizer
from minimegatron.parallel.expert_parallel.zero import ExpertShardedOptimizer
from minimegatron.parallel.split import flatten, unflatten
from minimegatron.tools.checkpoint_format import CheckpointError


def is_sharded(optimizer):
    """ZeRO-1/2: the state lives in flat slices (``local_shards``), one or two flat groups."""
    return isinstance(optimizer, (ShardedOptimizer, ExpertShardedOptimizer))


def rule_of(optimizer):
    """The update rule: ZeRO lends its optimizer's (maybe a MixedPrecisionOptimizer)."""
    return optimizer.optimizer if is_sharded(optimizer) else optimizer


def kind_of(rule):
    """{"kind": "AdamW" or "MixedPrecisionOptimizer(SGD)", "fields": the state arrays it
    keeps per weight, sorted}: what a file's state must be to resume this rule."""
    inner = getattr(rule, "inner", None)
    base = inner if inner is not None else rule
    fields = list(base.state_names()) + (["master"] if inner is not None else [])
    kind = type(rule).__name__ + (f"({type(inner).__name__})" if inner is not None else "")
    return {"kind": kind, "fields": sorted(fields)}


def mixed_record(rule):
    """Mixed precision: the loss scaler's state and the steps taken (AdamW's t), or None."""
    if not hasattr(rule, "scaler") or not hasattr(rule, "steps_taken"):
        return None
    scaler = rule.scaler
    return {"scale": float(scaler.scale), "clean_steps": scaler.clean_steps,
            "skipped_steps": scaler.skipped_steps, "steps_taken": rule.steps_taken}


def held_state(model, optimizer):
    """([(name, param)] in model order, {state key: dtype} sorted by key, the update rule's
    class name). Mixed precision keeps float32 state (master, m, v) for half weights."""
    named = list(model.named_parameters())
    if is_sharded(optimizer):                                # ZeRO-1/2: flat state slices
        params = [p for flat, _, _ in optimizer.local_shards() for p in flat.params]
        states = [flat.state for flat, _, _ in optimizer.local_shards()]
    elif isinstance(optimizer, Optimizer) and hasattr(optimizer, "state"):
        params, states = optimizer.params, optimizer.state
    else:
        raise CheckpointError(text("ckpt.optimizer", cls=type(optimizer).__name__))
    owned = {id(p) for _, p in named}
    if any(id(p) not in owned for p in params) or len(params) != len(named):
        raise CheckpointError(text("ckpt.err.optimizer_params"))
    kinds = {k: str(a.dtype) for state in states for k, a in state.items()}
    return named, dict(sorted(kinds.items())), type(rule_of(optimizer)).__name__


def state_of(named, optimizer, kinds):
    """{name: [state array per key of ``kinds``]}, each of the parameter's local shape (zeros
    where the optimizer has none yet). ZeRO: every flat group all-gathers its slices."""
    if not is_sharded(optimizer):
        index = {id(p): i for i, p in enumerate(optimizer.params)}
        return {name: [optimizer.state[index[id(p)]].get(k, np.zeros(p.shape, dtype))
                       for k, dtype in kinds.items()] for name, p in named}
    by_id = {id(p): [] for _, p in named}
    for flat, _, _ in optimizer.local_shards():
        for k, dtype in kinds.items():
            mine = flat.state.get(k)
            if mine is None:
                mine = np.zeros(flat.owned.stop - flat.owned.start, dtype)
            full = comm.all_gather(asarray(mine), flat.group)              # (P_pad,)
            for p, part in zip(flat.params, unflatten(full, flat.shapes)):
                by_id[id(p)].append(part)
    return {name: by_id[id(p)] for name, p in named}


def set_state(named, optimizer, kinds, states, mixed):
    """Give the optimizer ``states`` ({name: [array per key of ``kinds``]}, cast to each
    key's dtype) and the mixed-precision record; ZeRO keeps its own slice of each."""
    if not is_sharded(optimizer):
        index = {id(p): i for i, p in enumerate(optimizer.params)}
        for name, p in named:
            state = optimizer.state[index[id(p)]]
            state.clear()
            state.update({k: asarray(a.astype(dtype))
                          for (k, dtype), a in zip(kinds.items(), states[name])})
    else:
        name_of = {id(p): name for name, p in named}
        for flat, _, _ in optimizer.local_shards():
            flat.state.clear()
            for j, (k, dtype) in enumerate(kinds.items()):
                whole = flat.pad(flatten([asarray(states[name_of[id(p)]][j])
                                          for p in flat.params], dtype))      # (P_pad,)
                flat.state[k] = flat.own(whole).copy()                        # (P_pad/N,)
    rule = rule_of(optimizer)
    if mixed is not None:
        rule.scaler.scale, rule.steps_taken = mixed["scale"], mixed["steps_taken"]
        rule.scaler.clean_steps = mixed["clean_steps"]
        rule.scaler.skipped_steps = mixed["skipped_steps"]
