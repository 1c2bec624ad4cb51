"""Exercise 10.2, expert parallelism, the dispatch layout: what it teaches, and the evidence.

The student's block is ``parallel/expert_parallel/dispatch.dispatch_padded(rows, group,
local_experts)``: expert-major rows (E*b*C, h) in, the rows of MY E/ep experts out,
(E/ep * ep * b*C, h). The grader runs it on 4 ranks: ``group`` is a dp group ([0, 2] or
[1, 3]), an ep group of 2 that is a strict subset of the world, and the world is an ep
group of 4; float64 and float32, sizes drawn from the seed (at least 2 experts per rank,
so a missing transpose shows).

    all_to_all  the dispatch is ONE all_to_all (from the trace), over the ep group, and
                each rank sends (ep-1) x E/ep x C x h x b x itemsize bytes: the padded
                buffer, whatever the router chose
    layout      rows coded (source rank, expert, slot): what rank r returns is
                [my expert i][source rank q][slot], q's b*C rows for expert r*E/ep + i
    layer       the given combine (the inverse way) brings every coded row back to its
                rank and place, and ExpertParallelMoE equals one process's MoE on the same
                tokens: the output, dx and the expert weights' gradients (the all-to-all's
                backward brings every gradient home)
"""
import numpy as np

from minimegatron.classroom.exercise_checks.common import CheckFailed, expect_close, show
from minimegatron.classroom.exercise_checks.lesson import Lesson, Point, comm_log
from minimegatron.i18n import text

DTYPES = ("float64", "float32")
CODES = 3                                           # a row: (source rank, expert, slot)
WIDTH, STEPS, SEQUENCES, TOP_K = 4, 8, 2, 2
TOLERANCE = {"float64": 1e-10, "float32": 1e-4}


def _rng(seed, *tag):
    return np.random.default_rng([seed, 10, 2, *tag])


def layout_sizes(seed, ep):
    """(E/ep, b, C) of the layout problem on an ep group of ``ep`` ranks."""
    rng = _rng(seed, 1, ep)
    return int(rng.integers(2, 4)), int(rng.integers(1, 3)), int(rng.integers(1, 4))


def coded_rows(rank, ep, local, b, cap):
    """The rows rank ``rank`` sends, expert-major (E, b*C): row (e, j) = (rank, e, j)."""
    experts, block = ep * local, b * cap
    e, j = np.meshgrid(np.arange(experts), np.arange(block), indexing="ij")
    return np.stack([np.full(e.shape, rank), e, j], axis=-1).reshape(experts * block, CODES)


def expected_layout(rank, ep, local, b, cap):
    """The judge's own: [my expert i][source q][slot j] = (q, rank*E/ep + i, j)."""
    block = b * cap
    i, q, j = np.meshgrid(np.arange(local), np.arange(ep), np.arange(block), indexing="ij")
    rows = np.stack([q, rank * local + i, j], axis=-1)
    return rows.reshape(local * ep * block, CODES).astype(np.float64)


def _dispatch(group, seed, dtype):
    """{"out", "log", "back"}: the student's dispatch of coded rows, the collectives it ran,
    and the given combine of what it returned (each row back on its rank, in its place)."""
    from minimegatron import comm
    from minimegatron.autodiff.tensor import Tensor
    from minimegatron.backend import asarray, to_numpy
    from minimegatron.comm import trace
    from minimegatron.parallel.expert_parallel.dispatch import combine_padded, dispatch_padded
    local, b, cap = layout_sizes(seed, group.size)
    rows = coded_rows(group.rank, group.size, local, b, cap).astype(dtype)
    comm.barrier(group)
    trace.reset()
    try:
        mine = dispatch_padded(Tensor(asarray(rows)), group, local)
    except NotImplementedError:
        raise
    except Exception as err:   # noqa: BLE001 -- a wrong answer may raise: that is evidence
        mine = f"{type(err).__name__}: {err}"
    log = comm_log(trace.spans(), [group, comm.world()])
    if isinstance(mine, str):
        return {"out": mine, "log": log, "back": mine}
    try:
        back = to_numpy(combine_padded(mine, group, local).data)
    except Exception as err:   # noqa: BLE001 -- a wrong shape breaks the combine: evidence
        back = f"{type(err).__name__}: {err}"
    return {"out": to_numpy(mine.data), "log": log, "back": back}


def _moe_config(ep):
    from minimegatron.nn.moe import MoEConfig
    return MoEConfig(2 * ep, TOP_K, 1.0, aux_loss_coeff=0.0, z_loss_coeff=0.0)


def _layer(group, seed, dtype):
    """{"y", "dx", "dfc1", "dfc2"}: [this rank's, one process's] on this rank's tokens."""
    from minimegatron.autodiff.tensor import Tensor
    from minimegatron.backend import asarray, to_numpy
    from minimegatron.nn.moe import MoE
    from minimegatron.parallel.expert_parallel import ExpertParallelMoE
    from minimegatron.parallel.split import rows_of
    ep, rank, moe = group.size, group.rank, _moe_config(group.size)
    rng = _rng(seed, 2, ep, DTYPES.index(dtype))
    serial = MoE(WIDTH, moe, dtype)
    weights = {n: rng.normal(0, 0.5, p.shape).astype(dtype) for n, p in serial.named_parameters()}
    full = rng.normal(size=(ep * SEQUENCES, STEPS, WIDTH)).astype(dtype)
    grad = rng.normal(size=full.shape).astype(dtype)
    for name, p in serial.named_parameters():
        p.data = asarray(weights[name].copy())
    xs = Tensor(asarray(full), requires_grad=True)
    (serial(xs) * Tensor(asarray(grad))).sum().backward()
    layer = ExpertParallelMoE(WIDTH, moe, group, dtype)
    for name, p in layer.named_parameters():
        w = weights[name]
        p.data = asarray((rows_of(w, rank, ep) if ".experts." in f".{name}" else w).copy())
    mine = slice(rank * SEQUENCES, (rank + 1) * SEQUENCES)
    x = Tensor(asarray(full[mine].copy()), requires_grad=True)
    y = layer(x)
    (y * Tensor(asarray(grad[mine].copy()))).sum().backward()
    y_serial = serial(Tensor(asarray(full))).data[mine]
    out = {"y": [to_numpy(y.data), to_numpy(y_serial)],
           "dx": [to_numpy(x.grad), to_numpy(xs.grad[mine])]}
    for short, name in (("dfc1", "experts.fc1.weight"), ("dfc2", "experts.fc2.weight")):
        got = dict(layer.named_parameters())[name].grad
        want = rows_of(dict(serial.named_parameters())[name].grad, rank, ep)
        out[short] = [to_numpy(got), to_numpy(want)]
    return out


def collect_dispatch(group, seed):
    """The dispatch of coded rows and the layer next to one process, on the ep group of 2
    (``group``) and of 4 (the world), float64 and float32."""
    from minimegatron.comm import world
    out = {}
    for g in (group, world()):
        for dtype in DTYPES:
            out[f"{g.size},{dtype}"] = {"dispatch": _dispatch(g, seed, dtype),
                                        "layer": _layer(g, seed, dtype),
                                        "rank": g.rank, "ranks": list(g.ranks)}
    return out


def _cases(ranks):
    for ev in ranks:
        for ep in (2, 4):
            for dtype in DTYPES:
                yield ev, ep, dtype, ev[f"{ep},{dtype}"]


def judge_all_to_all(ranks, seed):
    for ev, ep, dtype, case in _cases(ranks):
        local, b, cap = layout_sizes(seed, ep)
        who = case["ranks"][case["rank"]]
        want = (ep - 1) * local * cap * CODES * b * np.dtype(dtype).itemsize
        log = case["dispatch"]["log"]
        ops = [entry["op"] for entry in log]
        if ops != ["all_to_all"]:
            raise CheckFailed(text("moe.ops", rank=who, ep=ep, dtype=dtype, ops=ops))
        if log[0]["group"] != case["ranks"]:
            raise CheckFailed(text("moe.group", rank=who, ep=ep, got=log[0]["group"],
                                   want=case["ranks"]))
        if log[0]["bytes_sent"] != want:
            raise CheckFailed(text("moe.bytes", rank=who, ep=ep, dtype=dtype,
                                   got=log[0]["bytes_sent"], want=want, local=local, cap=cap,
                                   b=b, h=CODES, item=np.dtype(dtype).itemsize))


def judge_layout(ranks, seed):
    for ev, ep, dtype, case in _cases(ranks):
        local, b, cap = layout_sizes(seed, ep)
        who, rank = case["ranks"][case["rank"]], case["rank"]
        got = case["dispatch"]["out"]
        if isinstance(got, str):
            raise CheckFailed(text("moe.dispatch_raised", rank=who, ep=ep, error=got))
        want = expected_layout(rank, ep, local, b, cap)
        got = np.asarray(got, dtype=np.float64)
        if got.shape != want.shape:
            raise CheckFailed(text("check.wrong_shape", where=text("grader.rank", rank=who),
                                   what=text("moe.layout", ep=ep, dtype=dtype),
                                   got=got.shape, expected=want.shape))
        if not np.array_equal(got, want):
            row = int(np.argwhere((got != want).any(axis=-1))[0][0])
            raise CheckFailed(text("moe.layout_wrong", rank=who, ep=ep, dtype=dtype,
                                   local=local, block=b * cap, row=row, got=show(got[row]),
                                   want=show(want[row])))


def judge_layer(ranks, seed):
    for ev, ep, dtype, case in _cases(ranks):
        who = case["ranks"][case["rank"]]
        local, b, cap = layout_sizes(seed, ep)
        back = case["dispatch"]["back"]
        if isinstance(back, str):
            raise CheckFailed(text("moe.dispatch_raised", rank=who, ep=ep, error=back))
        expect_close(text("moe.round_trip", ep=ep, dtype=dtype), back,
                     coded_rows(case["rank"], ep, local, b, cap), 0.0, rank=who)
        for what, (got, want) in case["layer"].items():
            expect_close(text("moe.against_serial", what=what, ep=ep, dtype=dtype),
                         got, want, TOLERANCE[dtype], rank=who)


LESSONS = {"10.2": Lesson(collect_dispatch, (Point("all_to_all", judge_all_to_all),
                                             Point("layout", judge_layout),
                                             Point("layer", judge_layer)))}
