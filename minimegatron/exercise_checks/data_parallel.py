"""Exercises 4.1 (DDP) and 5.1, 5.2 (ZeRO): what each teaches, and the evidence of each point.

The grader runs these on 4 ranks, on the dp groups [0, 2] and [1, 3], then once
more on the world [0, 1, 2, 3] (a group of 4: a hard-coded 2 fails there). Each
group trains its OWN small GPT on its own batches, both drawn from the grading
seed, so a collective over the world instead of the group mixes two problems.
The GPT has d_model 5: P = 515 parameters, an odd count, so ZeRO's flat buffer
is padded (to 516) and a rank's slice is not half of the parameters.

The student side (``collect_*``) trains and records, per step, the collectives
from the trace (which op, which group's world ranks, how many bytes), what the
student's code left behind (is each all-reduce still in flight when ``_launch``
returns, is every ``p.grad`` a view of the flat buffer or freed, how many bytes
the gradients hold, what ``optimizer.update`` was given) and the raw values
(loss, gradients, gradient slice, weights). The judge computes everything it
compares with itself, in the grader's process: one process trained on the whole
batch (``serial``), the bucket layout, the padded sizes and the slices.

    4.1  one_per_bucket  ONE all_reduce per bucket, over the group, of the bucket's own
                         bytes (bucket.reduce: float32 for a float16 model)
         overlap         the all-reduce is still in flight when _launch returns
         mean_in_place   after finish() every p.grad, a view of the flat buffer, holds the
                         mean gradient = one process's (float64, float32, float16, 4 ranks);
                         MPI reads and writes bucket.reduce itself (no copy sent, put back)
         same_update     loss and weights after each AdamW step = one process's
    5.1  reduce_scatter  ONE reduce_scatter over the group of the padded flat gradients
         own_slice       self.grad_shard = slice r of one process's mean gradient
         freed           every p.grad is None; the gradients hold the slice's bytes only
                         (counting arrays kept in attributes the student's code added)
    5.2  own_update      optimizer.update once per step on (self.shard, self.grad_shard,
                         flat.state, self.step_count); its state is slice-sized
         all_gather      ONE all_gather over the group of this rank's slice
         weights         every rank's full weights after each step = one process's
                         (stages 1 and 2, float64 and float32, 4 ranks)
"""
import dataclasses
import functools

import numpy as np

from minimegatron.exercise_checks.common import CheckFailed
from minimegatron.exercise_checks.lesson import Lesson, Point, comm_log
from minimegatron.i18n import text

BATCH = 8
BUCKET_BYTES = 600           # buckets of the 515 values: 4 in float64, 3 in float32, 2 in float16
TOL = {"float64": 1e-10, "float32": 2e-5}          # loss and gradients
WEIGHT_TOL = {"float64": 1e-10, "float32": 1e-4}   # AdamW turns float32 noise of a gradient
#   that is 0 in exact arithmetic (a key bias) into steps of up to ~6e-7 (seen): 1e-4 is
#   still 100 times below a step of lr = 1e-2
HALF_TOL = 0.01              # float16 gradients: within 1% of the largest one (float32 mean)
# (name, dtype, world: the group of 4 instead of the dp group, AdamW steps; 0: one backward)
DDP_RUNS = (("float64", "float64", False, 3), ("float32", "float32", False, 2),
            ("float16", "float16", False, 0), ("float64 N=4", "float64", True, 1))
# (name, dtype, ZeRO stage, world, AdamW steps)
ZERO2_RUNS = (("float64", "float64", 2, False, 3), ("float32", "float32", 2, False, 2),
              ("float64 N=4", "float64", 2, True, 2))
ZERO_RUNS = ZERO2_RUNS[:1] + (("float64 stage=1", "float64", 1, False, 2),) + ZERO2_RUNS[1:]


def config_for(seed, ranks, dtype):
    """The problem of one group: a small GPT (P = 515, odd) seeded by the grading seed."""
    from minimegatron.nn.gpt import GPTConfig
    model_seed = int(np.random.default_rng([int(seed), *ranks]).integers(2 ** 31))
    return GPTConfig(vocab_size=11, seq_len=6, n_layer=1, n_head=1, d_model=5,
                     seed=model_seed, dtype=dtype)


# ---- student side --------------------------------------------------------------------------

def _group_of(group, world):
    from minimegatron.comm import world as world_group
    return world_group() if world else group


def _error(err):
    if isinstance(err, NotImplementedError):
        raise err                                    # a blank block: "not done yet"
    return f"{type(err).__name__}: {err}"


def _in_flight(handle):
    """Is a started all-reduce still running: a comm.Handle not done whose MPI requests
    were started (``block=True`` defers a blocking call to ``wait()``), or bound.py's?"""
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


def _ddp_run(group, seed, dtype, steps):
    """One DDP training run; fills and returns its evidence (even when the code raises)."""
    from minimegatron import comm, trace
    from minimegatron.demo import batch, make_optimizer
    from minimegatron.nn import GPT
    from minimegatron.parallel.data_parallel.ddp import DistributedDataParallel
    from minimegatron.parallel.split import shard_batch
    run = {"group": list(group.ranks), "dtype": dtype, "steps": []}
    try:
        config = config_for(seed, group.ranks, dtype)
        model = GPT(config)
        ddp = DistributedDataParallel(model, group, bucket_bytes=BUCKET_BYTES)
        opt = make_optimizer(model.parameters()) if steps else None
        launched, in_place, launch = [], [], ddp._launch

        def watched(bucket):
            launch(bucket)
            launched.append(_in_flight(bucket.handle))
            in_place.append(_reads_and_writes(bucket.handle, bucket.reduce))
        ddp._launch = watched
        buffer = ddp.grad_buffer.data
        for step in range(max(steps, 1)):
            record = {}
            run["steps"].append(record)
            x, y = batch(config, BATCH, step)
            x, y = shard_batch(x, group), shard_batch(y, group)            # (B/N, T)
            if opt is not None:
                opt.zero_grad()
            launched.clear()
            in_place.clear()
            trace.reset()
            loss = model.loss(x, y)
            loss.backward()
            ddp.finish()
            record["calls"] = comm_log(trace.spans(), [group, comm.world()])
            record["in_flight"] = list(launched)
            record["in_place"] = list(in_place)
            record["loss"] = float(loss.item())
            named = list(model.named_parameters())
            record["copies"] = [n for n, p in named if p.grad is None
                                or not np.shares_memory(p.grad, buffer)]
            record["grads"] = {n: p.grad.copy() for n, p in named if p.grad is not None}
            if opt is not None:
                opt.step()
                record["weights"] = {n: p.data.copy() for n, p in named}
    except Exception as err:   # noqa: BLE001 -- the student's code raised: evidence so far
        run["error"] = _error(err)
    return run


def collect_ddp(group, seed):
    runs = {}
    for name, dtype, world, steps in DDP_RUNS:
        runs[name] = _ddp_run(_group_of(group, world), seed, dtype, steps)
        if "error" in runs[name]:
            break                                    # the ranks may no longer agree
    return {"runs": runs}


def _owner(array):
    """The array that owns this one's memory (a view keeps its base alive)."""
    while getattr(array, "base", None) is not None and hasattr(array.base, "nbytes"):
        array = array.base
    return array


def _owner_bytes(array):
    return int(_owner(array).nbytes)


def _arrays_in(value):
    """The arrays in an attribute's value: itself, or one level of a list, tuple or dict."""
    values = (value.values() if isinstance(value, dict) else
              value if isinstance(value, (list, tuple)) else [value])
    return [v for v in values if hasattr(v, "nbytes") and hasattr(v, "shape")]


def _gradient_bytes(grads, known, weights):
    """Bytes the gradients hold: the memory owning ``grads`` (p.grad and the slice), and
    what attributes added by the student's code to the ShardedOptimizer or its FlatShard
    keep alive (``self.flat_grads = ...``: never freed), each owner counted once and the
    weights' and optimizer state's memory left out. ``known``: [(object, the names of its
    attributes when it was built)]; ``weights``: the parameters' arrays."""
    owned, aside = {id(_owner(w)) for w in weights}, []
    for obj, names in known:
        for name, value in vars(obj).items():
            if name not in names:
                aside += _arrays_in(value)
            elif name != "grad_shard":
                owned.update(id(_owner(a)) for a in _arrays_in(value))
    owners = {}
    for a in [g for g in grads if g is not None] + aside:
        owner = _owner(a)
        if id(owner) not in owned:
            owners[id(owner)] = int(owner.nbytes)
    return sum(owners.values())


def _same(a, b):
    """Does a hold the same values as b (a copy of the gradient slice is as good)?"""
    from minimegatron.backend import to_numpy
    if a is None or b is None or getattr(a, "shape", None) != getattr(b, "shape", None):
        return False
    return bool(np.array_equal(np.asarray(to_numpy(a)), np.asarray(to_numpy(b))))


def _zero_run(group, seed, dtype, stage, steps):
    from minimegatron import comm, trace
    from minimegatron.demo import batch, make_optimizer
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
            trace.reset()
            zero.reduce_gradients()
            record["grad_calls"] = comm_log(trace.spans(), [group, comm.world()])
            named = list(model.named_parameters())
            shard = zero.grad_shard
            record["alive"] = [n for n, p in named if p.grad is not None]
            record["grad_bytes"] = _gradient_bytes([p.grad for n, p in named] + [shard],
                                                   known, [p.data for n, p in named])
            record["grad_shard"] = None if shard is None else np.array(shard, copy=True)
            updates.clear()
            trace.reset()
            zero.step()
            record["step_calls"] = comm_log(trace.spans(), [group, comm.world()])
            record["updates"] = list(updates)
            record["state"] = {k: list(v.shape) for k, v in zero.flat.state.items()}
            record["weights"] = {n: p.data.copy() for n, p in named}
    except Exception as err:   # noqa: BLE001 -- the student's code raised: evidence so far
        run["error"] = _error(err)
    return run


def _collect_zero(group, seed, runs_spec):
    runs = {}
    for name, dtype, stage, world, steps in runs_spec:
        runs[name] = _zero_run(_group_of(group, world), seed, dtype, stage, steps)
        if "error" in runs[name]:
            break
    return {"runs": runs}


def collect_zero2(group, seed):
    return _collect_zero(group, seed, ZERO2_RUNS)


def collect_zero(group, seed):
    return _collect_zero(group, seed, ZERO_RUNS)


# ---- judge side: what one process computes, and the layout ----------------------------------

@functools.lru_cache(maxsize=None)
def serial(config, steps):
    """{"loss", "grads", "weights"} per step of one process on the whole batch (AdamW).

    ``steps`` 0: the gradients of one backward only. A float16 config: the gradient of a
    float32 model holding the float16 initial weights (DDP averages float16 gradients in
    float32)."""
    from minimegatron.demo import batch, make_optimizer
    from minimegatron.nn import GPT
    model = GPT(config)
    if config.dtype == "float16":
        half = model
        model = GPT(dataclasses.replace(config, dtype="float32"))
        for p, q in zip(model.parameters(), half.parameters()):
            p.data[...] = q.data.astype(np.float32)
    opt = make_optimizer(model.parameters())
    out = {"loss": [], "grads": [], "weights": []}
    for step in range(max(steps, 1)):
        x, y = batch(config, BATCH, step)
        opt.zero_grad()
        loss = model.loss(x, y)
        loss.backward()
        out["loss"].append(float(loss.item()))
        out["grads"].append({n: np.array(p.grad, copy=True) for n, p in model.named_parameters()})
        if steps:
            opt.step()
            out["weights"].append({n: np.array(p.data, copy=True)
                                   for n, p in model.named_parameters()})
    return out


@functools.lru_cache(maxsize=None)
def shapes(dtype):
    """[(name, shape)] of the GPT's parameters, in registration order (any seed)."""
    from minimegatron.nn import GPT
    return [(n, tuple(p.shape)) for n, p in GPT(config_for(0, [0], dtype)).named_parameters()]


def bucket_bytes(dtype):
    """Bytes each bucket all-reduces: parameters in reverse order, greedy to BUCKET_BYTES,
    in the reduce dtype (float32 for a float16 model)."""
    size = np.dtype(dtype).itemsize
    reduce_size = 4 if dtype == "float16" else size
    out, values = [], 0
    for _, shape in reversed(shapes(dtype)):
        values += int(np.prod(shape))
        if values * size >= BUCKET_BYTES:
            out.append(values * reduce_size)
            values = 0
    return out + ([values * reduce_size] if values else [])


def layout(dtype, n):
    """(P, P_pad, slice length) of the flat buffer over n ranks."""
    total = sum(int(np.prod(s)) for _, s in shapes(dtype))
    padded = -(-total // n) * n
    return total, padded, padded // n


def flat_slice(named, dtype, rank, n):
    """Slice ``rank`` of n of the parameters' values, flattened in order and padded."""
    _, padded, length = layout(dtype, n)
    flat = np.zeros(padded, np.float64)
    values = np.concatenate([np.ravel(named[name]) for name, _ in shapes(dtype)])
    flat[:values.size] = values
    return flat[rank * length:(rank + 1) * length]


# ---- judge side: reading the evidence -------------------------------------------------------

def _runs(ranks, spec, *keys):
    """(world rank, run name, run, step index, step record) over every rank, run of
    ``spec`` and step whose record holds ``keys``; then CheckFailed if a run raised or is
    missing (what a run recorded before it raised is judged first: it says more)."""
    for ev in ranks:
        me = ev["group"][ev["rank"]]
        for name, *_ in spec:
            run = ev["runs"].get(name, {"steps": []})
            for index, record in enumerate(run["steps"]):
                if all(key in record for key in keys):
                    yield me, name, run, index, record
    for ev in ranks:
        for name, *_ in spec:
            run = ev["runs"].get(name)
            if run is None or "error" in run:
                _raised(ev, name, run)


def _raised(ev, name, run):
    """CheckFailed: this run raised (or never ran: an earlier one raised)."""
    me = ev["group"][ev["rank"]]
    if run is None:
        name, run = next(((n, r) for n, r in ev["runs"].items() if "error" in r),
                         (name, {"group": "-", "error": "-"}))
    raise CheckFailed(text("dp.raised", rank=me, run=name, group=run["group"],
                           error=run["error"]))


def _steps(spec, name):
    """The AdamW steps of run ``name`` of a spec (0: one backward, no step)."""
    return next(row[-1] for row in spec if row[0] == name)


def _describe(calls):
    return ", ".join(f"{c['op']} on {c['group']} ({c['nbytes']} B)" for c in calls) or "-"


def _rank_in(run, me):
    return run["group"].index(me)


def _compare(what, got, want, tol, me, name, step, dtype):
    """CheckFailed unless got (an array of ``dtype``) matches want within tol: shape, then
    the worst entry."""
    if got is None:
        raise CheckFailed(text("dp.missing", rank=me, run=name, step=step, what=what))
    if str(np.asarray(got).dtype) != dtype:
        raise CheckFailed(text("dp.dtype", rank=me, run=name, step=step, what=what,
                               got=str(np.asarray(got).dtype), want=dtype))
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    if got.shape != want.shape:
        raise CheckFailed(text("dp.shape", rank=me, run=name, step=step, what=what,
                               got=list(got.shape), want=list(want.shape)))
    err = np.nan_to_num(np.abs(got - want), nan=np.inf)
    if err.size and err.max() > tol:
        index = int(err.argmax())
        ratio = float(got.ravel() @ want.ravel() / max(want.ravel() @ want.ravel(), 1e-300))
        raise CheckFailed(text("dp.differs", rank=me, run=name, step=step, what=what,
                               diff=float(err.max()), tol=tol, index=index,
                               got=float(got.ravel()[index]), want=float(want.ravel()[index]),
                               ratio=ratio))


def _tol(dtype, want_arrays):
    if dtype == "float16":
        return HALF_TOL * max(float(np.abs(a).max()) for a in want_arrays)
    return TOL[dtype]


# ---- 4.1 DDP --------------------------------------------------------------------------------

def judge_one_per_bucket(ranks, seed):
    for me, name, run, step, record in _runs(ranks, DDP_RUNS, "calls"):
        calls = record["calls"]
        want = bucket_bytes(run["dtype"])
        wanted = [{"op": "all_reduce", "group": run["group"], "nbytes": b,
                   "label": f"ddp.bucket{i}"} for i, b in enumerate(want)]
        got = sorted(({k: c[k] for k in ("op", "group", "nbytes", "label")} for c in calls),
                     key=lambda c: str(c["label"]))
        if got != sorted(wanted, key=lambda c: c["label"]):
            raise CheckFailed(text("dp.bucket_calls", rank=me, run=name, step=step,
                                   got=_describe(calls), count=len(want), group=run["group"],
                                   want=want))


def judge_overlap(ranks, seed):
    for me, name, run, step, record in _runs(ranks, DDP_RUNS, "in_flight"):
        flags = record["in_flight"]
        if not flags or not all(flags):
            raise CheckFailed(text("dp.not_in_flight", rank=me, run=name, step=step,
                                   done=flags.count(False), count=len(flags)))


def judge_mean_in_place(ranks, seed):
    for me, name, run, step, record in _runs(ranks, DDP_RUNS, "copies", "grads"):
        if record["copies"]:
            raise CheckFailed(text("dp.grad_copies", rank=me, run=name,
                                   names=", ".join(record["copies"][:4])))
        if False in record.get("in_place", []):
            raise CheckFailed(text("dp.not_in_place", rank=me, run=name, step=step,
                                   count=record["in_place"].count(False)))
        want = serial(config_for(seed, run["group"], run["dtype"]),
                      _steps(DDP_RUNS, name))["grads"][step]
        tol = _tol(run["dtype"], want.values())
        for param, _ in shapes(run["dtype"]):
            _compare(f"p.grad of {param}", record["grads"].get(param), want[param], tol, me,
                     name, step, run["dtype"])


def judge_same_update(ranks, seed):
    _same_weights(ranks, seed, DDP_RUNS)


def _same_weights(ranks, seed, spec):
    """Loss (mean over the group's ranks) and weights after every step = one process."""
    losses = {}
    for me, name, run, step, record in _runs(ranks, spec, "loss"):
        losses.setdefault((name, tuple(run["group"]), step), []).append(record["loss"])
    for me, name, run, step, record in _runs(ranks, spec, "weights"):
        if not _steps(spec, name):
            continue                                 # one backward, no AdamW step
        want = serial(config_for(seed, run["group"], run["dtype"]), _steps(spec, name))
        mean = float(np.mean(losses[(name, tuple(run["group"]), step)]))
        tol = TOL[run["dtype"]]
        if not abs(mean - want["loss"][step]) <= tol:
            raise CheckFailed(text("dp.loss_differs", run=name, group=run["group"], step=step,
                                   got=mean, want=want["loss"][step], tol=tol))
        for param, _ in shapes(run["dtype"]):
            _compare(param, record["weights"].get(param), want["weights"][step][param],
                     WEIGHT_TOL[run["dtype"]], me, name, step, run["dtype"])


# ---- 5.1 ZeRO-2: reduce-scatter --------------------------------------------------------------

def _itemsize(run):
    return np.dtype(run["dtype"]).itemsize


def judge_reduce_scatter(ranks, seed):
    for me, name, run, step, record in _runs(ranks, ZERO2_RUNS, "grad_calls"):
        calls = record["grad_calls"]
        _, padded, _ = layout(run["dtype"], len(run["group"]))
        nbytes = padded * _itemsize(run)
        got = [(c["op"], c["group"], c["nbytes"]) for c in calls]
        if got != [("reduce_scatter", run["group"], nbytes)]:
            raise CheckFailed(text("dp.grad_calls", rank=me, run=name, step=step,
                                   got=_describe(calls), group=run["group"], nbytes=nbytes))


def judge_own_slice(ranks, seed):
    for me, name, run, step, record in _runs(ranks, ZERO2_RUNS, "grad_shard"):
        shard = record["grad_shard"]
        n, r = len(run["group"]), _rank_in(run, me)
        _, padded, length = layout(run["dtype"], n)
        grads = serial(config_for(seed, run["group"], run["dtype"]),
                       _steps(ZERO2_RUNS, name))["grads"]
        want = flat_slice(grads[step], run["dtype"], r, n)
        what = text("dp.grad_shard", start=r * length, end=(r + 1) * length, padded=padded)
        _compare(what, shard, want, TOL[run["dtype"]], me, name, step, run["dtype"])


def judge_freed(ranks, seed):
    for me, name, run, step, record in _runs(ranks, ZERO2_RUNS, "alive"):
        alive = record["alive"]
        if alive:
            raise CheckFailed(text("dp.grads_alive", rank=me, run=name, step=step,
                                   count=len(alive), names=", ".join(alive[:3])))
        _, _, length = layout(run["dtype"], len(run["group"]))
        want = length * _itemsize(run)
        if record["grad_bytes"] != want:
            raise CheckFailed(text("dp.grad_memory", rank=me, run=name, step=step,
                                   got=record["grad_bytes"], want=want))


# ---- 5.2 ZeRO: update the shard, all-gather ---------------------------------------------------

def judge_own_update(ranks, seed):
    for me, name, run, step, record in _runs(ranks, ZERO_RUNS, "updates"):
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
    for me, name, run, step, record in _runs(ranks, ZERO_RUNS, "step_calls"):
        calls = record["step_calls"]
        _, _, length = layout(run["dtype"], len(run["group"]))
        nbytes = length * _itemsize(run)
        got = [(c["op"], c["group"], c["nbytes"]) for c in calls]
        if got != [("all_gather", run["group"], nbytes)]:
            raise CheckFailed(text("dp.gather_calls", rank=me, run=name, step=step,
                                   got=_describe(calls), group=run["group"], nbytes=nbytes))


def judge_weights(ranks, seed):
    _same_weights(ranks, seed, ZERO_RUNS)


LESSONS = {
    "4.1": Lesson(collect_ddp, (Point("one_per_bucket", judge_one_per_bucket),
                                Point("overlap", judge_overlap),
                                Point("mean_in_place", judge_mean_in_place),
                                Point("same_update", judge_same_update))),
    "5.1": Lesson(collect_zero2, (Point("reduce_scatter", judge_reduce_scatter),
                                  Point("own_slice", judge_own_slice),
                                  Point("freed", judge_freed))),
    "5.2": Lesson(collect_zero, (Point("own_update", judge_own_update),
                                 Point("all_gather", judge_all_gather),
                                 Point("weights", judge_weights))),
}
