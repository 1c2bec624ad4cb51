"""Exercises 8.1 and 8.2, context parallelism: what they teach, and the evidence of each point.

The grader runs both on 4 ranks: ``group`` is a dp group ([0, 2] or [1, 3]), a
cp group of 2, and the world a cp group of 4. The problems (shapes, values, where
the keys are cut) are drawn from the grading seed; the judge computes every
expected value itself with NumPy from the evidence's inputs.

8.1, the online-softmax merge (``blockwise.merge``) of two partial attention
results (O_1, lse_1), (O_2, lse_2) over disjoint keys:

    union    the merge of two pieces is attention over all their keys: O and lse; in
             float32 too, computed in float32 all the way (watched.py sees a float64
             step even when the result is cast back)
    stable   lse values of +-1000 (and pieces 1000 apart) give finite, right results:
             the shift is the larger lse of each row (log(e^a + e^b) overflows)
    chain    folding 4 pieces one at a time, in two orders, gives the same attention
             over all keys (the merged lse merges again; the pieces are not changed)
    ring     ring attention (contiguous split, so rank i merges i times) on the cp
             groups of 2 and of 4 equals one process's causal attention, forward and
             dQ, dK, dV (backward uses the merged lse)

8.2, the zigzag assignment (``zigzag.positions``): rank i of cp holds chunk i and
chunk 2cp-1-i of 2cp chunks of c = S/(2cp) tokens, in that order:

    mirror     rank i's positions are chunk i then chunk 2cp-1-i, ascending, for
               cp = 2, 3 and 4 and several chunk sizes; and for a long sequence
               (S = 80000), integers that hold every position (no int8 or int16)
    partition  the ranks' positions together are 0..S-1, each token once, S/cp each
    balance    every rank computes the same number of causal (query, key) pairs
    attention  all-gather attention with the zigzag split on the cp groups of 2 and 4
               equals one process's causal attention, forward and dQ, dK, dV
    callers    two callers share nothing: each call returns an array of its own
               (``zigzag_callers.py``)
"""
import numpy as np

from minimegatron.classroom.exercise_checks.common import CheckFailed, expect_close
from minimegatron.classroom.exercise_checks.lesson import Lesson, Point
from minimegatron.classroom.exercise_checks.zigzag_callers import collect_callers, judge_callers
from minimegatron.i18n import text

B, H, HD = 1, 2, 4                                 # the merge problems: (B, H, T, hd)
RING_HEADS, RING_HD = 2, 4


def _rng(seed, *tag):
    return np.random.default_rng([seed, 8, *tag])


def _attention(q, k, v):
    """(O, lse) of q (B, H, Tq, hd) over every key of k, v (B, H, Tk, hd): the judge's own."""
    scores = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])
    top = scores.max(axis=-1, keepdims=True)
    weights = np.exp(scores - top)
    total = weights.sum(axis=-1, keepdims=True)
    return weights / total @ v, (top + np.log(total))[..., 0]


def _merged(o1, l1, o2, l2):
    """The judge's own merge (stable): the reference every 8.1 answer is compared with."""
    new = np.logaddexp(l1, l2)
    return np.exp(l1 - new)[..., None] * o1 + np.exp(l2 - new)[..., None] * o2, new


def merge_problem(seed):
    """q, k, v of one head group and the key cuts: 2 pieces (union) and 4 (chain)."""
    rng = _rng(seed, 1)
    tq, tk = int(rng.integers(3, 7)), int(rng.integers(8, 13))
    q, k, v = (rng.standard_normal((B, H, t, HD)) for t in (tq, tk, tk))
    cut = int(rng.integers(1, tk))
    cuts = sorted(rng.choice(np.arange(1, tk), size=3, replace=False).tolist())
    return q, k, v, cut, cuts


def stable_problem(seed):
    """Two pieces' outputs and lse rows far apart: +-1000, and pieces 1000 apart."""
    rng = _rng(seed, 2)
    rows = 6
    o1, o2 = (rng.standard_normal((B, H, rows, HD)) for _ in range(2))
    base = np.array([1000.0, -1000.0, 3.0, 800.0, -700.0, 0.5])
    gap = np.array([2.0, -3.0, 1000.0, -1000.0, 0.25, 30.0])
    l1 = base + rng.uniform(-1, 1, (B, H, rows))
    return o1, l1, o2, l1 + gap


def _against_serial(group, seed, tag, split, variant):
    """{"y", "dq", "dk", "dv"}: [got, want] on this rank's tokens of one process's causal
    attention, loss sum(Y * W); ``variant(q, k, v)`` is the cp attention under test."""
    from minimegatron.backend import asarray, to_numpy
    from minimegatron.nn.gpt import causal_attention
    from minimegatron.parallel.context_parallel import split_sequence
    from minimegatron.autodiff.tensor import Tensor
    rng = _rng(seed, tag, group.size)
    steps = 8 * group.size if split == "zigzag" else 4 * group.size * int(rng.integers(1, 3))
    full = [asarray(rng.standard_normal((2, steps, RING_HEADS * RING_HD))) for _ in range(4)]
    serial = [Tensor(a, requires_grad=True) for a in full[:3]]
    y_serial = causal_attention(*serial, RING_HEADS)
    (y_serial * Tensor(full[3])).sum().backward()

    def mine(a):
        return to_numpy(split_sequence(a, group.rank, group.size, split))
    qkv = [Tensor(asarray(mine(a)), requires_grad=True) for a in full[:3]]
    y = variant(*qkv)
    (y * Tensor(asarray(mine(full[3])))).sum().backward()
    out = {"y": [to_numpy(y.data), mine(y_serial.data)]}
    for letter, got, want in zip("qkv", qkv, serial):
        out[f"d{letter}"] = [to_numpy(got.grad), mine(want.grad)]
    return out


def collect_merge(group, seed):
    """The student's merge on two pieces, on far-apart lse rows, folded over 4 pieces in two
    orders; then ring attention on the group (cp = 2) and the world (cp = 4)."""
    from minimegatron.comm import world
    from minimegatron.parallel.context_parallel.blockwise import block_forward, merge
    q, k, v, cut, cuts = merge_problem(seed)

    def piece(lo, hi):
        keys = slice(lo, hi)
        mask = np.ones((q.shape[2], hi - lo), dtype=bool)
        return block_forward(q, k[:, :, keys], v[:, :, keys], mask)
    union = merge(*piece(0, cut), *piece(cut, k.shape[2]))
    single = _merge_float32(q, k, v, cut)
    stable = merge(*stable_problem(seed))
    bounds = [0] + cuts + [k.shape[2]]
    pieces = [piece(lo, hi) for lo, hi in zip(bounds, bounds[1:])]
    handed = [(o.copy(), lse.copy()) for o, lse in pieces]
    folds = []
    for order in ((0, 1, 2, 3), (2, 0, 3, 1)):
        out, lse = None, None
        for i in order:
            out, lse = merge(out, lse, *pieces[i])
        folds.append([out, lse])
    unchanged = all(np.array_equal(o, a) and np.array_equal(lse, b)
                    for (o, lse), (a, b) in zip(pieces, handed))
    from minimegatron.parallel.context_parallel import ring_attention
    ring = {str(g.size): _against_serial(g, seed, 3, "contiguous",
                                         lambda q, k, v, g=g: ring_attention(
                                             q, k, v, g, RING_HEADS, "contiguous"))
            for g in (group, world())}
    return {"union": list(union), "single": single, "stable": list(stable), "folds": folds,
            "unchanged": unchanged, "ring": ring}


def _merge_float32(q, k, v, cut):
    """The two pieces' merge in float32, on Watched arrays: the result's dtypes and whether
    any step went through float64 (``watched.py``)."""
    from minimegatron.backend import to_numpy
    from minimegatron.classroom.exercise_checks.watched import new_log, plain, watch
    from minimegatron.parallel.context_parallel.blockwise import block_forward, merge
    q, k, v = (a.astype(np.float32) for a in (q, k, v))
    log = new_log()
    pieces = []
    for keys in (slice(0, cut), slice(cut, k.shape[2])):
        mask = np.ones((q.shape[2], keys.stop - keys.start), dtype=bool)
        pieces += [watch(np.asarray(to_numpy(a)), log)
                   for a in block_forward(q, k[:, :, keys], v[:, :, keys], mask)]
    out, lse = (np.asarray(to_numpy(plain(a))) for a in merge(*pieces))
    return {"out": out, "lse": lse, "dtypes": [str(out.dtype), str(lse.dtype)],
            "widened": log["widened"]}


def _expect_pair(what, got, want, atol=1e-10):
    out, lse = (np.asarray(a, dtype=np.float64) for a in got)
    if not (np.isfinite(out).all() and np.isfinite(lse).all()):
        raise CheckFailed(text("cp.not_finite", what=what))
    expect_close(f"{what}: O", out, want[0], atol)
    expect_close(f"{what}: lse", lse, want[1], atol)


def judge_union(ranks, seed):
    q, k, v, _, _ = merge_problem(seed)
    for ev in ranks:
        _expect_pair(text("cp.two_pieces"), ev["union"], _attention(q, k, v))
        single = ev["single"]
        if single["dtypes"] != ["float32", "float32"] or single["widened"]:
            raise CheckFailed(text("cp.float32_merge", dtypes=single["dtypes"]))
        _expect_pair(text("cp.two_pieces") + " (float32)", (single["out"], single["lse"]),
                     _attention(q, k, v), atol=1e-5)


def judge_stable(ranks, seed):
    o1, l1, o2, l2 = stable_problem(seed)
    for ev in ranks:
        _expect_pair(text("cp.far_apart", lse=[1000, -1000]), ev["stable"],
                     _merged(o1, l1, o2, l2), atol=1e-9)


def judge_chain(ranks, seed):
    q, k, v, _, cuts = merge_problem(seed)
    want = _attention(q, k, v)
    for ev in ranks:
        for fold, order in zip(ev["folds"], ("0, 1, 2, 3", "2, 0, 3, 1")):
            _expect_pair(text("cp.four_pieces", order=order, cuts=cuts), fold, want)
        if not ev["unchanged"]:
            raise CheckFailed(text("cp.pieces_changed"))


def _judge_against_serial(ranks, key):
    for ev in ranks:
        for cp, values in sorted(ev[key].items()):
            if "skipped" in values:
                raise CheckFailed(text("cp.not_run", cp=cp))
            for what, (got, want) in values.items():
                expect_close(text("cp.against_serial", what=what, cp=cp), got, want, 1e-10,
                             rank=ev["group"][ev["rank"]] if cp != "4" else None)


def judge_ring(ranks, seed):
    _judge_against_serial(ranks, "ring")


# 8.2 -------------------------------------------------------------------------------------

def zigzag_cases(seed):
    """[(S, cp)]: cp = 2, 3, 4 with chunk sizes 1, 2 and one drawn from the seed."""
    drawn = int(_rng(seed, 4).integers(3, 6))
    return [(2 * cp * c, cp) for cp in (2, 3, 4) for c in (1, 2, drawn)]


def zigzag(steps, rank, cp):
    """The judge's own zigzag positions of rank ``rank``."""
    c = steps // (2 * cp)
    late = 2 * cp - 1 - rank
    return list(range(rank * c, (rank + 1) * c)) + list(range(late * c, (late + 1) * c))


def _partition(lists, steps):
    every = sorted(p for got in lists for p in got)
    return every == list(range(steps)) and len({len(got) for got in lists}) == 1


def _positions(steps, rank, cp):
    """The student's zigzag positions as a list, or the error they raised (as evidence)."""
    from minimegatron.backend import to_numpy
    from minimegatron.parallel.context_parallel.zigzag import positions
    try:
        return [int(p) for p in to_numpy(positions(steps, rank, cp, "zigzag")).ravel()]
    except NotImplementedError:
        raise
    except Exception as err:   # noqa: BLE001 -- a wrong answer may raise: that is evidence
        return f"{type(err).__name__}: {err}"


LONG = (80000, 2)          # (S, cp): positions past int8's and int16's range


def _digest(values):
    import hashlib
    return hashlib.sha256(np.asarray(values, dtype=np.int64).tobytes()).hexdigest()


def _long_positions(rank):
    """The student's positions of a long sequence, as (dtype, length, digest of the values)."""
    from minimegatron.backend import to_numpy
    from minimegatron.parallel.context_parallel.zigzag import positions
    steps, cp = LONG
    try:
        got = np.asarray(to_numpy(positions(steps, rank, cp, "zigzag"))).ravel()
    except NotImplementedError:
        raise
    except Exception as err:   # noqa: BLE001 -- a wrong answer may raise: that is evidence
        return f"{type(err).__name__}: {err}"
    return {"dtype": str(got.dtype), "size": int(got.size), "digest": _digest(got)}


def collect_zigzag(group, seed):
    """The student's positions for every case; then all-gather attention with the zigzag
    split on the group (cp = 2) and the world (cp = 4), when the split is a partition
    (decided alike on every rank, so a wrong split cannot hang a collective)."""
    from minimegatron.comm import world
    from minimegatron.parallel.context_parallel import allgather_attention
    cases = {f"{steps},{cp},{rank}": _positions(steps, rank, cp)
             for steps, cp in zigzag_cases(seed) for rank in range(cp)}
    attention = {}
    for g in (group, world()):
        lists = [_positions(8 * g.size, r, g.size) for r in range(g.size)]
        if not all(isinstance(x, list) for x in lists) or not _partition(lists, 8 * g.size):
            attention[str(g.size)] = {"skipped": True}
            continue
        attention[str(g.size)] = _against_serial(
            g, seed, 5, "zigzag",
            lambda q, k, v, g=g: allgather_attention(q, k, v, g, RING_HEADS, "zigzag"))
    return {"cases": cases, "attention": attention, "callers": collect_callers(),
            "long": [_long_positions(rank) for rank in range(LONG[1])]}


def _cases(ev, seed):
    for steps, cp in zigzag_cases(seed):
        yield steps, cp, [ev["cases"][f"{steps},{cp},{r}"] for r in range(cp)]


def _raised(got, steps, cp, rank):
    if isinstance(got, str):
        raise CheckFailed(text("cp.raised", steps=steps, cp=cp, rank=rank, error=got))


def judge_mirror(ranks, seed):
    ev = ranks[0]
    for steps, cp, lists in _cases(ev, seed):
        for rank, got in enumerate(lists):
            _raised(got, steps, cp, rank)
            want = zigzag(steps, rank, cp)
            if got != want:
                raise CheckFailed(text("cp.positions_wrong", steps=steps, cp=cp, rank=rank,
                                       got=got, want=want))
    judge_long(ranks)


def judge_long(ranks):
    """A long sequence (S = 80000): integer positions, every value right (no int8, int16)."""
    steps, cp = LONG
    for rank, got in enumerate(ranks[0]["long"]):
        _raised(got, steps, cp, rank)
        want = zigzag(steps, rank, cp)
        if np.dtype(got["dtype"]).kind not in "iu" or got["size"] != len(want) \
                or got["digest"] != _digest(want):
            raise CheckFailed(text("cp.long_positions", steps=steps, cp=cp, rank=rank,
                                   dtype=got["dtype"], size=got["size"], want=len(want)))


def judge_partition(ranks, seed):
    for steps, cp, lists in _cases(ranks[0], seed):
        for rank, got in enumerate(lists):
            _raised(got, steps, cp, rank)
        if not _partition(lists, steps) or len(lists[0]) != steps // cp:
            raise CheckFailed(text("cp.not_partition", steps=steps, cp=cp, got=lists))


def judge_balance(ranks, seed):
    for steps, cp, lists in _cases(ranks[0], seed):
        if any(isinstance(got, str) for got in lists):
            continue                                   # judged by partition
        pairs = [sum(p + 1 for p in got) for got in lists]   # query p sees keys 0..p
        if len(set(pairs)) != 1:
            raise CheckFailed(text("cp.unbalanced", steps=steps, cp=cp, pairs=pairs))


def judge_attention(ranks, seed):
    _judge_against_serial(ranks, "attention")


LESSONS = {"8.1": Lesson(collect_merge, (Point("union", judge_union),
                                         Point("stable", judge_stable),
                                         Point("chain", judge_chain),
                                         Point("ring", judge_ring))),
           "8.2": Lesson(collect_zigzag, (Point("mirror", judge_mirror),
                                          Point("partition", judge_partition),
                                          Point("balance", judge_balance),
                                          Point("attention", judge_attention),
                                          Point("callers", judge_callers)))}
