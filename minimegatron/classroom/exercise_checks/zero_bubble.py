"""Exercises 9.1 and 9.2, zero-bubble pipelines: what each teaches, and its evidence.

9.1, the backward split into B and W (``WeightGradients.input_half`` in
autodiff/split_backward.py). The student side builds two Linears with a tanh
between them, y = tanh(x W1 + b1) W2 + b2, loss sum(y * G), from the grading
seed, in float64 and float32, and runs two micro-batches the way a zero-bubble
stage does: B0, B1 (``loss.backward(defer_weight_grads=True)``), then W1, W0.
It records x.grad and every weight's grad after the B's and after the W's,
every call of MatMul's and Add's backward with the ``needs_input_grad`` it was
asked with (so which products each half computed), the W steps recorded, and
the whole backward of the same graphs. The judge computes every gradient
itself with NumPy, in float64:

    input_now    after B, before any W, dL/dx = dY W^T ... is complete and right
    b_no_weight  B computes no X^T dY: every weight's grad untouched, each Linear
                 asked for its input's gradient only (one product per Linear)
    w_no_input   W computes X^T dY only: one product per Linear, only the ops with a
                 weight recorded, x.grad as B left it
    values       B then W equals the whole backward bit for bit and the judge's
                 gradients (float64, float32, and central differences)

9.2, the W steps of ZB-H1 (``_split_backward`` in
parallel/pipeline_parallel/zero_bubble.py). The student side returns every
stage's list of ``zb_h1`` for (K, M) settings drawn from the seed, and of
``zb_h2`` (the same code, other warm-up and cap). The judge reads them as data
(it never calls a schedule) and simulates them itself:

    once      every micro-batch's W exactly once on every stage, and without the W's
              the list is 1F1B's (same F, B and messages)
    after_b   each W after its own B
    memory    at most K micro-batches held (F done, W not): 1F1B's peak
    bubble    simulated bubble at most (K-1)(T_F+T_B-T_W), below 1F1B's
              (K-1)(T_F+T_B+T_W), at T_W = T_F and T_W = T_F/2
    h2        the same code under ZB-H2's warm-up and cap: W's once and after their B,
              at most 2K-1 held, bubble at most (K-1)(T_F+T_B-2T_W)
"""
from fractions import Fraction

import numpy as np

from minimegatron.classroom.exercise_checks.common import CheckFailed, expect_close
from minimegatron.classroom.exercise_checks.lesson import Lesson, Point
from minimegatron.i18n import text

DTYPES = ("float64", "float32")
TOL = {"float64": 1e-10, "float32": 1e-4}
PARAMS = ("w1", "b1", "w2", "b2")
SHOWN = 24


def _rng(seed, *tag):
    return np.random.default_rng([seed, 9, *tag])


# ---- 9.1: the problem (both halves) -----------------------------------------------------
def split_problem(seed):
    """{"x": [x0, x1], "g": [G0, G1], "w1", "b1", "w2", "b2"} in float64, sizes from seed."""
    rng = _rng(seed, 1)
    batch, steps = int(rng.integers(1, 3)), int(rng.integers(2, 4))
    d_in, hidden, d_out = (int(v) for v in rng.integers(2, 6, size=3))
    out = {"x": [rng.standard_normal((batch, steps, d_in)) for _ in range(2)],
           "g": [rng.standard_normal((batch, steps, d_out)) for _ in range(2)]}
    out.update(w1=rng.standard_normal((d_in, hidden)) / 2, b1=rng.standard_normal(hidden),
               w2=rng.standard_normal((hidden, d_out)) / 2, b2=rng.standard_normal(d_out))
    return out


def _forward_np(p, x):
    h = np.tanh(x @ p["w1"] + p["b1"])                   # (B, T, hidden)
    return h, h @ p["w2"] + p["b2"]                      # (B, T, d_out)


def expected_grads(p):
    """The judge's own gradients, float64: {"x": [dL/dx0, dL/dx1], "w1": .., "b2": ..}."""
    want = {"x": [], **{name: 0.0 for name in PARAMS}}
    for x, g in zip(p["x"], p["g"]):
        h, _ = _forward_np(p, x)
        dz = (g @ p["w2"].T) * (1 - h ** 2)              # (B, T, hidden)
        want["x"].append(dz @ p["w1"].T)                 # B of Linear 1: dY W^T
        want["w2"] = want["w2"] + h.reshape(-1, h.shape[-1]).T @ g.reshape(-1, g.shape[-1])
        want["b2"] = want["b2"] + g.reshape(-1, g.shape[-1]).sum(axis=0)
        want["w1"] = want["w1"] + x.reshape(-1, x.shape[-1]).T @ dz.reshape(-1, dz.shape[-1])
        want["b1"] = want["b1"] + dz.reshape(-1, dz.shape[-1]).sum(axis=0)
    return want


def central_differences(p, name, eps=1e-6):
    """d(sum over micro-batches of sum(y * G)) / d p[name], by central differences."""
    grad = np.zeros_like(p[name])
    for j in np.ndindex(*p[name].shape):
        total = 0.0
        for sign in (1, -1):
            q = {**p, name: p[name].copy()}
            q[name][j] += sign * eps
            total += sign * sum(float((_forward_np(q, x)[1] * g).sum())
                                for x, g in zip(p["x"], p["g"]))
        grad[j] = total / (2 * eps)
    return grad


# ---- 9.1: the student side -------------------------------------------------------------
class _Calls:
    """Wraps MatMul's and Add's backward: records (phase, op, needs_input_grad) per call."""

    def __init__(self):
        from minimegatron.autodiff import ops
        self.ops, self.phase, self.log = ops, None, []
        self.saved = {name: getattr(ops, name).__dict__["backward"] for name in ("MatMul", "Add")}

    def __enter__(self):
        for name, original in self.saved.items():
            def backward(ctx, *grads, name=name, original=original):
                self.log.append([self.phase, name, [bool(n) for n in ctx.needs_input_grad]])
                return original.__func__(ctx, *grads)
            setattr(getattr(self.ops, name), "backward", staticmethod(backward))
        return self

    def __exit__(self, *exc):
        for name, original in self.saved.items():
            setattr(getattr(self.ops, name), "backward", original)


def _model(p, dtype):
    from minimegatron.backend import xp
    from minimegatron.nn import Parameter
    return {name: Parameter(xp.asarray(p[name].astype(dtype))) for name in PARAMS}


def _loss(model, x, g):
    """sum(y * G), y = tanh(x W1 + b1) W2 + b2: two Linears."""
    h = (x @ model["w1"] + model["b1"]).tanh()
    return ((h @ model["w2"] + model["b2"]) * g).sum()


def _grads(xs, model):
    from minimegatron.backend import to_numpy
    return {"x": [None if x.grad is None else to_numpy(x.grad).copy() for x in xs],
            **{name: None if t.grad is None else to_numpy(t.grad).copy()
               for name, t in model.items()}}


def _error(err):
    from minimegatron.classroom.exercise_checks.autodiff import _raised
    return _raised(err)


def _split_run(p, dtype):
    """B0, B1, then W1, W0, recorded; and the whole backward of the same graphs."""
    from minimegatron.autodiff.tensor import Tensor
    from minimegatron.backend import xp
    model = _model(p, dtype)
    xs = [Tensor(xp.asarray(x.astype(dtype)), requires_grad=True) for x in p["x"]]
    gs = [Tensor(xp.asarray(g.astype(dtype))) for g in p["g"]]
    run = {"dtype": dtype, "b": None, "w": None, "steps": None, "error": None}
    with _Calls() as calls:
        try:
            losses = [_loss(model, x, g) for x, g in zip(xs, gs)]
            calls.phase = "B"
            halves = [loss.backward(defer_weight_grads=True) for loss in losses]
            run["b"] = _grads(xs, model)
            run["steps"] = [len(half) for half in halves]
            calls.phase = "W"
            for half in reversed(halves):
                half()
            run["w"] = _grads(xs, model)
        except NotImplementedError:
            raise
        except Exception as err:   # noqa: BLE001 -- a student's bug is evidence, judged below
            run["error"] = f"{calls.phase}: {_error(err)}"
    run["calls"] = calls.log
    whole = _model(p, dtype)
    xs = [Tensor(xp.asarray(x.astype(dtype)), requires_grad=True) for x in p["x"]]
    for x, g in zip(xs, gs):
        _loss(whole, x, g).backward()
    run["whole"] = _grads(xs, whole)
    return run


def collect_split(group, seed):
    """Both dtypes' runs of the student's split backward on the seed's problem."""
    p = split_problem(seed)
    return {"runs": [_split_run(p, dtype) for dtype in DTYPES]}


# ---- 9.1: the judge --------------------------------------------------------------------
def _runs(evidence):
    runs = evidence["runs"]
    if [run["dtype"] for run in runs] != list(DTYPES):
        raise CheckFailed(text("zb.dtypes", got=[run["dtype"] for run in runs]))
    return runs


def _close(what, got, want, dtype):
    if got is None:
        raise CheckFailed(text("zb.none", what=what))
    if str(np.asarray(got).dtype) != dtype:
        raise CheckFailed(text("zb.dtype", what=what, got=np.asarray(got).dtype, want=dtype))
    scale = max(1.0, float(np.abs(want).max()))
    expect_close(what, np.asarray(got, dtype=np.float64), want, TOL[dtype] * scale)


def _raised_in(run, phases):
    """CheckFailed if the run raised in one of ``phases`` ("B", "W") or before B began."""
    if run["error"] and run["error"].split(":")[0] in phases + ("None",):
        raise CheckFailed(text("zb.raised", dtype=run["dtype"], error=run["error"]))


def judge_input_now(evidence, seed):
    want = expected_grads(split_problem(seed))
    for run in _runs(evidence):
        _raised_in(run, ("B",))
        for i, (got, dx) in enumerate(zip(run["b"]["x"], want["x"])):
            _close(text("zb.after_b", what=f"dL/dx{i}", dtype=run["dtype"]), got, dx,
                   run["dtype"])


def _calls(run, phase, op):
    return [needs for when, name, needs in run["calls"] if when == phase and name == op]


def judge_b_no_weight(evidence, seed):
    for run in _runs(evidence):
        _raised_in(run, ("B",))
        early = [name for name in PARAMS if run["b"][name] is not None]
        if early:
            raise CheckFailed(text("zb.weights_in_b", dtype=run["dtype"], names=early))
        for op in ("MatMul", "Add"):
            asked = _calls(run, "B", op)
            if asked != [[True, False]] * 4:
                raise CheckFailed(text("zb.b_calls", dtype=run["dtype"], op=op, got=asked))


def judge_w_no_input(evidence, seed):
    for run in _runs(evidence):
        _raised_in(run, ("B", "W"))
        if run["steps"] != [4, 4]:
            raise CheckFailed(text("zb.steps", dtype=run["dtype"], got=run["steps"]))
        for op in ("MatMul", "Add"):
            asked = _calls(run, "W", op)
            if asked != [[False, True]] * 4:
                raise CheckFailed(text("zb.w_calls", dtype=run["dtype"], op=op, got=asked))
        for i, (before, after) in enumerate(zip(run["b"]["x"], run["w"]["x"])):
            if before is None or after is None or not np.array_equal(before, after):
                raise CheckFailed(text("zb.x_changed", dtype=run["dtype"], i=i))


def judge_values(evidence, seed):
    p = split_problem(seed)
    want = expected_grads(p)
    for run in _runs(evidence):
        _raised_in(run, ("B", "W"))
        for name in PARAMS:
            what = text("zb.after_w", what=f"dL/d{name}", dtype=run["dtype"])
            _close(what, run["w"][name], want[name], run["dtype"])
            if not np.array_equal(run["w"][name], run["whole"][name]):
                raise CheckFailed(text("zb.not_whole", what=what))
            if run["dtype"] == "float64":
                expect_close(text("zb.numeric", what=what), run["w"][name],
                             central_differences(p, name), 1e-6)


# ---- 9.2: the schedules as data --------------------------------------------------------
def h1_settings(seed):
    """[(K, M)], M >= K: edge cases, then four drawn from the seed (two past K = 5)."""
    rng = _rng(seed, 2)
    drawn = []
    for low, high in ((2, 6), (2, 6), (6, 9), (6, 9)):
        k = int(rng.integers(low, high))
        drawn.append((k, k + int(rng.integers(0, 8))))
    return [(1, 1), (1, 3), (2, 2), (4, 4), (3, 7)] + drawn


def h2_settings(seed):
    """[(K, M)], M >= 2K - 1: edge cases, then three drawn from the seed."""
    rng = _rng(seed, 3)
    drawn = []
    for _ in range(3):
        k = int(rng.integers(2, 7))
        drawn.append((k, 2 * k - 1 + int(rng.integers(0, 6))))
    return [(1, 1), (2, 3), (3, 5), (4, 9)] + drawn


def collect_schedules(group, seed):
    """Every stage's list of the student's zb_h1 and zb_h2, for each setting."""
    from minimegatron.parallel.pipeline_parallel.zero_bubble import zb_h1, zb_h2
    out = {}
    for name, schedule, settings in (("zb-h1", zb_h1, h1_settings),
                                     ("zb-h2", zb_h2, h2_settings)):
        out[name] = [{"stages": k, "micro": m,
                      "programs": [[[a.op, a.micro_batch, a.chunk] for a in schedule(k, m, s)]
                                   for s in range(k)]} for k, m in settings(seed)]
    return out


def _where(name, run, stage):
    return text("sched.where", name=name, stages=run["stages"], micro=run["micro"], stage=stage)


def _show(actions):
    return " ".join(str(a) for a in actions[:SHOWN]) + (" ..." if len(actions) > SHOWN else "")


def _programs(name, run):
    """The grader's own Actions for every stage of one run; CheckFailed for anything else."""
    from minimegatron.parallel.pipeline_parallel.schedules import OPS, Action
    most = 60 * run["micro"] + 60
    if len(run["programs"]) != run["stages"]:
        raise CheckFailed(text("sched.stage_count", stages=run["stages"],
                               got=len(run["programs"])))
    programs = []
    for stage, raw in enumerate(run["programs"]):
        if len(raw) > most:
            raise CheckFailed(text("sched.too_long", where=_where(name, run, stage),
                                   count=len(raw), most=most))
        actions = []
        for item in raw:
            if not (isinstance(item, list) and len(item) == 3 and item[0] in OPS
                    and type(item[1]) is int and item[2] is None):
                raise CheckFailed(text("sched.bad_action", where=_where(name, run, stage),
                                       item=repr(item)))
            actions.append(Action(item[0], item[1]))
        programs.append(actions)
    return programs


def _runs_of(evidence, name, seed):
    """[(run, programs)] once the settings are the ones the judge draws from the seed."""
    want = [list(s) for s in (h1_settings if name == "zb-h1" else h2_settings)(seed)]
    got = [[run["stages"], run["micro"]] for run in evidence[name]]
    if got != want:
        raise CheckFailed(text("sched.settings", got=got, want=want))
    return [(run, _programs(name, run)) for run in evidence[name]]


def _check_once(name, run, programs):
    """Every W once, and without them the list is 1F1B's with this warm-up (messages too)."""
    from minimegatron.classroom.exercise_checks.schedules import _one_f_one_b, _wrapped
    k, m = run["stages"], run["micro"]
    for stage, actions in enumerate(programs):
        where = _where(name, run, stage)
        weights = sorted(a.micro_batch for a in actions if a.op == "weight")
        if weights != list(range(m)):
            raise CheckFailed(text("zb.w_once", where=where, got=weights, m=m,
                                   actions=_show(actions)))
        warmup = min(k - stage, m) if name == "zb-h1" else min(2 * (k - stage) - 1, m)
        want = _wrapped(k, stage, _one_f_one_b(m, max(warmup - 1, 0)))
        rest = [a for a in actions if a.op != "weight"]
        if rest != want:
            raise CheckFailed(text("zb.not_1f1b", where=where, got=_show(rest),
                                   want=_show(want)))


def _check_after_b(name, run, programs):
    for stage, actions in enumerate(programs):
        done = set()
        for a in actions:
            if a.op == "backward":
                done.add(a.micro_batch)
            elif a.op == "weight" and a.micro_batch not in done:
                raise CheckFailed(text("zb.w_first", where=_where(name, run, stage),
                                       step=str(a), actions=_show(actions)))


def _held(actions):
    """Most micro-batches whose F is done and W is not, at once (a W-less list: all of them)."""
    held = peak = 0
    for a in actions:
        held += (a.op == "forward") - (a.op == "weight")
        peak = max(peak, held)
    return peak


def _check_memory(name, run, programs, most):
    for stage, actions in enumerate(programs):
        held = _held(actions)
        if held > most:
            raise CheckFailed(text("zb.held", where=_where(name, run, stage), got=held,
                                   most=most, actions=_show(actions)))


TIMES = ((1, 1, 1), (2, 2, 1))          # (T_F, T_B, T_W): T_W = T_F, and T_W = T_F / 2


def _check_bubble(name, run, programs, sign):
    """Simulated bubble <= (K-1)(T_F + T_B + sign T_W), and below 1F1B's when K > 1."""
    from minimegatron.parallel.pipeline_parallel.schedules import simulate

    def listed(num_stages, num_micro_batches, stage):
        return programs[stage]
    listed.__name__ = "your schedule"
    k, m = run["stages"], run["micro"]
    for t_f, t_b, t_w in TIMES:
        try:
            sim = simulate(listed, k, m, Fraction(t_f), Fraction(t_b), t_weight=Fraction(t_w))
        except (RuntimeError, ValueError) as err:
            raise CheckFailed(text("sched.deadlock", stages=k, micro=m, chunks=1,
                                   error=err)) from None
        table = (k - 1) * (t_f + t_b + sign * t_w)
        one_f_one_b = (k - 1) * (t_f + t_b + t_w)
        if sim.bubble > table or (k > 1 and not sim.bubble < one_f_one_b):
            raise CheckFailed(text("zb.bubble", name=name, stages=k, micro=m, t_f=t_f, t_b=t_b,
                                   t_w=t_w, got=sim.bubble, table=table, plain=one_f_one_b))


def _judge(check, name="zb-h1"):
    def judge(evidence, seed):
        for run, programs in _runs_of(evidence, name, seed):
            check(name, run, programs)
    return judge


def judge_memory(evidence, seed):
    for run, programs in _runs_of(evidence, "zb-h1", seed):
        _check_memory("zb-h1", run, programs, min(run["stages"], run["micro"]))


def judge_bubble(evidence, seed):
    for run, programs in _runs_of(evidence, "zb-h1", seed):
        _check_bubble("zb-h1", run, programs, -1)


def judge_h2(evidence, seed):
    for run, programs in _runs_of(evidence, "zb-h2", seed):
        _check_once("zb-h2", run, programs)
        _check_after_b("zb-h2", run, programs)
        _check_memory("zb-h2", run, programs, 2 * run["stages"] - 1)
        _check_bubble("zb-h2", run, programs, -2)


LESSONS = {
    "9.1": Lesson(collect_split, (Point("input_now", judge_input_now),
                                  Point("b_no_weight", judge_b_no_weight),
                                  Point("w_no_input", judge_w_no_input),
                                  Point("values", judge_values))),
    "9.2": Lesson(collect_schedules, (Point("once", _judge(_check_once)),
                                      Point("after_b", _judge(_check_after_b)),
                                      Point("memory", judge_memory),
                                      Point("bubble", judge_bubble),
                                      Point("h2", judge_h2))),
}
