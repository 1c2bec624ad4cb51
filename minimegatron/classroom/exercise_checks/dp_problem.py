"""The problem exercises 4.1 (DDP) and 5.1, 5.2 (ZeRO) are graded on, and how the judge reads it.

The grader runs these on 4 ranks, on the dp groups [0, 2] and [1, 3], then once
more on the world [0, 1, 2, 3] (a group of 4: a hard-coded 2 fails there). Each
group trains its OWN small GPT on its own batches, both drawn from the grading
seed, so a collective over the world instead of the group mixes two problems.
The GPT has d_model 5: P = 515 parameters, an odd count, so ZeRO's flat buffer
is padded (to 516) and a rank's slice is not half of the parameters.

The judge computes everything it compares with itself, in the grader's process:
one process trained on the whole batch (``serial``), the bucket layout, the
padded sizes and the slices (``layout``, ``flat_slice``). ``runs`` walks every
rank's recorded steps; ``compare`` and ``same_weights`` say what differs, where.
The lessons themselves: ``data_parallel.py`` (4.1) and ``zero.py`` (5.1, 5.2).
"""
import dataclasses
import functools

import numpy as np

from minimegatron.classroom.exercise_checks.common import CheckFailed
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


# ---- student side: shared -----------------------------------------------------------------

def group_of(group, world):
    from minimegatron.comm import world as world_group
    return world_group() if world else group


def error_text(err):
    if isinstance(err, NotImplementedError):
        raise err                                    # a blank block: "not done yet"
    return f"{type(err).__name__}: {err}"


# ---- judge side: what one process computes, and the layout ----------------------------------

@functools.lru_cache(maxsize=None)
def serial(config, steps):
    """{"loss", "grads", "weights"} per step of one process on the whole batch (AdamW).

    ``steps`` 0: the gradients of one backward only. A float16 config: the gradient of a
    float32 model holding the float16 initial weights (DDP averages float16 gradients in
    float32)."""
    from minimegatron.data.demo import batch, make_optimizer
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

def runs(ranks, spec, *keys):
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
                raised(ev, name, run)


def raised(ev, name, run):
    """CheckFailed: this run raised (or never ran: an earlier one raised)."""
    me = ev["group"][ev["rank"]]
    if run is None:
        name, run = next(((n, r) for n, r in ev["runs"].items() if "error" in r),
                         (name, {"group": "-", "error": "-"}))
    raise CheckFailed(text("dp.raised", rank=me, run=name, group=run["group"],
                           error=run["error"]))


def steps_of(spec, name):
    """The AdamW steps of run ``name`` of a spec (0: one backward, no step)."""
    return next(row[-1] for row in spec if row[0] == name)


def describe(calls):
    return ", ".join(f"{c['op']} on {c['group']} ({c['nbytes']} B)" for c in calls) or "-"


def rank_in(run, me):
    return run["group"].index(me)


def compare(what, got, want, tol, me, name, step, dtype):
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


def tolerance(dtype, want_arrays):
    if dtype == "float16":
        return HALF_TOL * max(float(np.abs(a).max()) for a in want_arrays)
    return TOL[dtype]


def same_weights(ranks, seed, spec):
    """Loss (mean over the group's ranks) and weights after every step = one process."""
    losses = {}
    for me, name, run, step, record in runs(ranks, spec, "loss"):
        losses.setdefault((name, tuple(run["group"]), step), []).append(record["loss"])
    for me, name, run, step, record in runs(ranks, spec, "weights"):
        if not steps_of(spec, name):
            continue                                 # one backward, no AdamW step
        want = serial(config_for(seed, run["group"], run["dtype"]), steps_of(spec, name))
        mean = float(np.mean(losses[(name, tuple(run["group"]), step)]))
        tol = TOL[run["dtype"]]
        if not abs(mean - want["loss"][step]) <= tol:
            raise CheckFailed(text("dp.loss_differs", run=name, group=run["group"], step=step,
                                   got=mean, want=want["loss"][step], tol=tol))
        for param, _ in shapes(run["dtype"]):
            compare(param, record["weights"].get(param), want["weights"][step][param],
                     WEIGHT_TOL[run["dtype"]], me, name, step, run["dtype"])
