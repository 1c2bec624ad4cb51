"""Exercise 7.2, an fp8 matmul with per-tensor scales: what it teaches, and the evidence.

The student's block is the forward of ``autodiff/fp8.Fp8Matmul``: from X (N, k) and a
weight W (k, m), both bf16, it sets ``sx, sw`` (each tensor's scale, ``scale_for`` with
the amax agreement ``agree``), ``qx, qw`` (the e4m3 casts backward keeps) and ``y`` (the
unscaled float32 product), which the lines after the block save and return in X's dtype.
The student side (one process) runs Fp8Matmul on problems drawn from the grading seed:
X with |values| up to ~1000 (past e4m3's 448: unscaled it is NaN), W ~1e-3 (unscaled,
below e4m3's smallest values: 0), once alone and once with an ``agree`` that stands for
the other tp ranks' larger amax. The judge redoes every step itself with NumPy and
ml_dtypes, not with the copy's code:

    own_scale  s = 2^floor(log2(448 / amax)) of EACH tensor's own amax (ctx.scales), and
               q = e4m3(s x) element for element (a scale from the other tensor, or none,
               misses)
    one_byte   what backward keeps is e4m3 (float8_e4m3fn: 3 mantissa bits for forward
               values), one byte per element: a quarter of float32 (bf16 kept, or e5m2,
               misses)
    float32    y = (q_X @ q_W in float32) / (s_X s_W), rounded once to X's dtype: within a
               bf16 rounding of the judge's (no unscale, half an unscale, or products
               accumulated in fp8, misses)
    agree      with ``agree`` the scales come from the agreed amax (the whole tensor's, over
               the tp ranks), not from this rank's piece
"""
import ml_dtypes
import numpy as np

from minimegatron.classroom.exercise_checks.common import CheckFailed
from minimegatron.classroom.exercise_checks.lesson import Lesson, Point
from minimegatron.i18n import text

E4M3 = np.dtype(ml_dtypes.float8_e4m3fn)
BF16 = np.dtype(ml_dtypes.bfloat16)
FMAX = 448.0                      # e4m3fn's largest value
OTHER_RANKS = 5.3                 # the agreed amax: the other tp ranks' piece is larger
CASES = ("alone", "agreed")


def problem(seed):
    """(X (2, 3, 16), W (16, 8)) in bf16: X's largest |value| past 448 (and negative), W ~1e-3."""
    rng = np.random.default_rng([seed, 72])
    x = rng.normal(size=(2, 3, 16)) * 300.0
    x.flat[int(rng.integers(x.size))] = -float(np.abs(x).max()) * 1.5   # the largest is < 0
    w = rng.normal(size=(16, 8)) * float(rng.uniform(1e-3, 3e-3))
    return x.astype(BF16), w.astype(BF16)


def agree_of(case):
    """The amax agreement of a case: None, or this rank's amax times OTHER_RANKS."""
    return None if case == "alone" else (lambda amax: amax * np.float32(OTHER_RANKS))


def _run(seed, case):
    from minimegatron.autodiff.fp8 import Fp8Matmul
    from minimegatron.autodiff.tensor import Tensor
    x, w = problem(seed)
    try:
        y = Fp8Matmul.apply(Tensor(x, requires_grad=True), Tensor(w, requires_grad=True),
                            agree_of(case))
    except NotImplementedError:
        raise
    except Exception as err:   # noqa: BLE001 -- a wrong forward may raise: evidence
        return {"error": f"{type(err).__name__}: {err}"}
    saved = y._node.ctx.saved
    return {"dtypes": [str(a.dtype) for a in saved],
            "nbytes": [int(a.nbytes) for a in saved], "sizes": [int(a.size) for a in saved],
            "saved": [np.asarray(a).astype(np.float32) for a in saved],
            "scales": [float(s) for s in y._node.ctx.scales],
            "y": np.asarray(y.data).astype(np.float32), "y_dtype": str(y.dtype)}


def collect(group, seed):
    """Fp8Matmul's forward on this seed's problem, alone and with an amax agreement."""
    return {case: _run(seed, case) for case in CASES}


# --- the judge's own fp8 -------------------------------------------------------------------

def judge_scale(a, agree=None):
    """2^floor(log2(448 / amax)) in float32, the amax of a (through ``agree``)."""
    amax = np.array([np.abs(a.astype(np.float32)).max()], np.float32)
    amax = float((amax if agree is None else agree(amax))[0])
    return float(np.float32(2.0 ** np.floor(np.log2(FMAX / amax))))


def expected(seed, case):
    """(sx, sw, qx as float32, qw as float32, y as float32) of the judge's own fp8 matmul."""
    x, w = problem(seed)
    rows = x.reshape(-1, x.shape[-1])                                  # (N, k)
    sx, sw = judge_scale(rows, agree_of(case)), judge_scale(w, agree_of(case))
    qx = (rows.astype(np.float32) * np.float32(sx)).astype(E4M3).astype(np.float32)
    qw = (w.astype(np.float32) * np.float32(sw)).astype(E4M3).astype(np.float32)
    y = (qx @ qw) / np.float32(sx * sw)                                # (N, m) float32
    return sx, sw, qx, qw, y.astype(BF16).astype(np.float32).reshape(x.shape[:-1] + (-1,))


def _evidence(ev, case):
    got = ev[case]
    if "error" in got:
        raise CheckFailed(text("fp8.raised", case=case, error=got["error"]))
    return got


def judge_own_scale(ev, seed):
    case = "alone"
    got = _evidence(ev, case)
    sx, sw, qx, qw, _ = expected(seed, case)
    if [float(s) for s in got["scales"]] != [sx, sw]:
        raise CheckFailed(text("fp8.scales", case=case, got=got["scales"], want=[sx, sw]))
    for name, mine, want in (("q_X", got["saved"][0], qx), ("q_W", got["saved"][1], qw)):
        mine = np.asarray(mine, np.float32)
        if mine.shape != want.shape or not np.array_equal(mine, want):  # NaN != NaN too
            wrong = int((mine != want).sum()) if mine.shape == want.shape else mine.size
            raise CheckFailed(text("fp8.cast", case=case, name=name, count=wrong,
                                   size=want.size))


def judge_one_byte(ev, seed):
    got = _evidence(ev, "alone")
    if got["dtypes"] != [E4M3.name] * 2 or got["nbytes"] != got["sizes"]:
        raise CheckFailed(text("fp8.kept", dtypes=got["dtypes"], nbytes=got["nbytes"],
                               sizes=got["sizes"]))


def judge_float32(ev, seed):
    case = "alone"
    got = _evidence(ev, case)
    want = expected(seed, case)[4]
    y = np.asarray(got["y"], np.float32)
    if got["y_dtype"] != BF16.name or y.shape != want.shape:
        raise CheckFailed(text("fp8.y_shape", dtype=got["y_dtype"], shape=list(y.shape),
                               want=list(want.shape)))
    worst = float(np.nan_to_num(np.abs(y - want), nan=np.inf).max())
    scale = float(np.abs(want).max())
    if not worst <= 2.0 ** -7 * scale:                     # a bf16 rounding of the largest
        index = np.unravel_index(int(np.nan_to_num(np.abs(y - want), nan=np.inf).argmax()),
                                 want.shape)
        raise CheckFailed(text("fp8.product", got=float(y[index]), want=float(want[index]),
                               ratio=float(y[index] / want[index]) if want[index] else 0.0))


def judge_agree(ev, seed):
    case = "agreed"
    got = _evidence(ev, case)
    sx, sw = expected(seed, case)[:2]
    if [float(s) for s in got["scales"]] != [sx, sw]:
        raise CheckFailed(text("fp8.agreed", got=got["scales"], want=[sx, sw],
                               alone=[float(s) for s in ev["alone"].get("scales", [])]))


LESSONS = {"7.2": Lesson(collect, (Point("own_scale", judge_own_scale),
                                   Point("one_byte", judge_one_byte),
                                   Point("float32", judge_float32),
                                   Point("agree", judge_agree)))}
