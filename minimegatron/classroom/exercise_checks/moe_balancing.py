"""Exercise 10.3, auxiliary-loss-free balancing: the expert bias, nudged by a sign.

The student's block is ``nn/moe/balancing.bias_update(bias, load, rate)``: one MoE layer's
bias (E,) after a step whose load (E,) was counted, b + gamma sign(mean(load) - load). The
student side (one process) calls it on problems drawn from the grading seed (random
biases, gamma of 1e-3 to 0.4, E = 4 to 16) and runs an MoE layer with a skewed router
for STEPS steps, its bias updated through the block after each; the judge draws the same
problems and computes what it expects itself:

    direction  an expert above the mean is made LESS attractive (its bias goes down), one
               below it more (up): the sign of mean - load, not of load - mean; the old
               bias is kept (b + step, not the step alone)
    sign_only  the step is exactly gamma whatever the size of the deviation (loads from 1
               to 10^7 tokens, deviations of 1 and of millions): the sign, not the
               magnitude, and not the magnitude relative to the mean
    at_mean    an expert whose load is exactly the mean keeps its bias (and a perfectly
               balanced step moves no bias): sign(0) = 0, not a step up or down
    balances   in an MoE layer whose router sends most tokens to a few experts, each
               step's bias is the judge's replay of the rule on the loads the layer
               counted, and the loads even out: the spread (max - min) of the last
               steps' loads is under half of the first step's
"""
import numpy as np

from minimegatron.classroom.exercise_checks.common import CheckFailed, show
from minimegatron.classroom.exercise_checks.lesson import Lesson, Point
from minimegatron.i18n import text

RATES = (1e-3, 0.05, 0.37)
STEPS, LAST = 40, 10                 # the layer's steps; the last ones whose spread is read
LAYER_E, LAYER_K, WIDTH, LAYER_B, LAYER_T, LAYER_RATE = 8, 2, 8, 4, 16, 0.02


def _rng(seed, *tag):
    return np.random.default_rng([seed, 103, *tag])


def off_mean_cases(seed):
    """[(bias, load, rate)]: integer loads none of which is the mean (E = 4, 8, 16)."""
    rng, cases = _rng(seed, 1), []
    for experts in (4, 8, 16):
        for rate in RATES:
            load = rng.integers(0, 50, size=experts).astype(np.float64)
            while (load == load.mean()).any():                      # none at the mean
                load = rng.integers(0, 50, size=experts).astype(np.float64)
            cases.append((rng.normal(0, 0.3, experts), load, rate))
    return cases


def scale_cases(seed):
    """[(bias, load, rate)]: deviations of 1 token next to millions, loads up to 10^7."""
    rng = _rng(seed, 2)
    big = float(rng.integers(10 ** 6, 10 ** 7))
    loads = ([big, big + 1.0, big - 3.0, big + 2.0],               # deviations of a few
             [0.0, 1.0, big, 3.0 * big],                           # of millions
             [1.0, 2.0, 4.0, 9.0, 16.0, 1.0e5, 7.0, 3.0])
    return [(rng.normal(0, 0.3, len(load)), np.asarray(load), rate)
            for load in loads for rate in (RATES[0], RATES[2])]


def at_mean_cases(seed):
    """[(bias, load, rate)]: some experts exactly at the mean; a perfectly balanced step."""
    rng = _rng(seed, 3)
    loads = ([2.0, 4.0, 6.0, 4.0], [0.0, 8.0, 4.0, 4.0, 4.0, 4.0, 4.0, 4.0],
             [5.0] * 8, [10.0, 30.0, 20.0, 20.0, 20.0, 20.0])
    return [(rng.normal(0, 0.3, len(load)), np.asarray(load), rate)
            for load in loads for rate in RATES[1:]]


def _update(bias, load, rate):
    """The student's new bias as a float64 list, or the error the block raised."""
    from minimegatron.backend import asarray, to_numpy
    from minimegatron.nn.moe.balancing import bias_update
    try:
        new = bias_update(asarray(bias.copy()), asarray(load.copy()), rate)
        return np.asarray(to_numpy(new), dtype=np.float64).reshape(-1).tolist()
    except NotImplementedError:
        raise
    except Exception as err:   # noqa: BLE001 -- a wrong answer may raise: that is evidence
        return f"{type(err).__name__}: {err}"


def layer_problem(seed):
    """x (b, T, D) and a router weight (D, E) whose scores favour experts 0 and 1."""
    rng = _rng(seed, 4)
    weight = rng.normal(0, 0.3, (WIDTH, LAYER_E))
    weight[:, :2] += 0.8                                    # most tokens pick 0 and 1
    x = np.abs(rng.normal(size=(LAYER_B, LAYER_T, WIDTH)))  # positive: the skew holds
    return x, weight


def _layer_run(seed):
    """{"loads": [(E,) per step], "biases": [(E,) after each step]} of an MoE layer trained
    STEPS forwards with the bias updated through the student's block after each."""
    from minimegatron.autodiff.function import no_grad
    from minimegatron.autodiff.tensor import Tensor
    from minimegatron.backend import asarray, to_numpy
    from minimegatron.nn.moe import MoE, MoEConfig, take_load, update_expert_bias
    x, weight = layer_problem(seed)
    moe = MoEConfig(LAYER_E, LAYER_K, None, aux_loss_coeff=0.0, z_loss_coeff=0.0,
                    bias_update_rate=LAYER_RATE)
    layer = MoE(WIDTH, moe)
    layer.router.weight.data = asarray(weight.copy())
    loads, biases = [], []
    try:
        for _ in range(STEPS):
            with no_grad():
                layer(Tensor(asarray(x)))
            load = take_load([layer])                                  # (1, E)
            loads.append(to_numpy(load)[0].tolist())
            update_expert_bias([layer], load)
            biases.append(np.asarray(to_numpy(layer.expert_bias), np.float64).tolist())
    except NotImplementedError:
        raise
    except Exception as err:   # noqa: BLE001 -- evidence
        return {"loads": loads, "biases": f"{type(err).__name__}: {err}"}
    return {"loads": loads, "biases": biases}


def collect_balancing(group, seed):
    """The student's update on every case, and the layer's loads and biases over STEPS."""
    return {"off_mean": [_update(*c) for c in off_mean_cases(seed)],
            "scale": [_update(*c) for c in scale_cases(seed)],
            "at_mean": [_update(*c) for c in at_mean_cases(seed)],
            "layer": _layer_run(seed)}


# --- the judge ---------------------------------------------------------------------------

def judge_rule(bias, load, rate):
    """The judge's own: b + gamma sign(mean - load)."""
    return bias + rate * np.sign(load.mean() - load)


def _steps(ev, key, cases):
    """(what, bias, load, rate, the student's step new - old) of each case."""
    for (bias, load, rate), got in zip(cases, ev[key]):
        what = text("balance.case", load=show(load), rate=rate)
        if isinstance(got, str):
            raise CheckFailed(text("balance.raised", what=what, error=got))
        got = np.asarray(got, dtype=np.float64)
        if got.shape != bias.shape:
            raise CheckFailed(text("balance.bad_shape", what=what, shape=got.shape,
                                   want=bias.shape))
        yield what, bias, load, rate, got - bias


def _direction_steps(ev, seed):
    yield from _steps(ev, "off_mean", off_mean_cases(seed))
    yield from _steps(ev, "scale", scale_cases(seed))


def judge_direction(ev, seed):
    for what, bias, load, rate, step in _direction_steps(ev, seed):
        off = load != load.mean()
        want = np.sign(load.mean() - load)
        bad = off & (np.sign(step) != want)
        if bad.any():
            e = int(np.argmax(bad))
            raise CheckFailed(text("balance.direction", what=what, e=e, load=load[e],
                                   mean=load.mean(), got=step[e], want=want[e] * rate))


def judge_sign_only(ev, seed):
    for what, bias, load, rate, step in _direction_steps(ev, seed):
        off = load != load.mean()
        bad = off & ~np.isclose(np.abs(step), rate, rtol=1e-9, atol=1e-12)
        if bad.any():
            e = int(np.argmax(bad))
            raise CheckFailed(text("balance.magnitude", what=what, e=e, load=load[e],
                                   mean=load.mean(), got=abs(step[e]), rate=rate))


def judge_at_mean(ev, seed):
    for what, bias, load, rate, step in _steps(ev, "at_mean", at_mean_cases(seed)):
        at = load == load.mean()
        bad = at & (np.abs(step) > 1e-15)
        if bad.any():
            e = int(np.argmax(bad))
            raise CheckFailed(text("balance.at_mean", what=what, e=e, mean=load.mean(),
                                   got=step[e]))


def judge_balances(ev, seed):
    run = ev["layer"]
    if isinstance(run["biases"], str):
        raise CheckFailed(text("balance.raised", what=text("balance.layer"),
                               error=run["biases"]))
    loads, biases = np.asarray(run["loads"]), np.asarray(run["biases"])
    if loads.shape != (STEPS, LAYER_E) or biases.shape != (STEPS, LAYER_E):
        raise CheckFailed(text("balance.bad_shape", what=text("balance.layer"),
                               shape=biases.shape, want=(STEPS, LAYER_E)))
    bias = np.zeros(LAYER_E)
    for step, (load, got) in enumerate(zip(loads, biases)):
        bias = judge_rule(bias, load, LAYER_RATE)                 # the replay
        if not np.allclose(got, bias, rtol=0, atol=1e-12):
            raise CheckFailed(text("balance.replay", step=step, load=show(load),
                                   got=show(got), want=show(bias)))
    first, last = np.ptp(loads[0]), np.ptp(loads[-LAST:].mean(axis=0))
    if not last < first / 2:
        raise CheckFailed(text("balance.spread", first=first, last=last, steps=STEPS))


LESSONS = {"10.3": Lesson(collect_balancing, (Point("direction", judge_direction),
                                            Point("sign_only", judge_sign_only),
                                            Point("at_mean", judge_at_mean),
                                            Point("balances", judge_balances)))}
