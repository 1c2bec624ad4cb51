"""Which parallel axes and features compose: each combination trained next to one process.

Elements: the five axes {tp, cp, ep, dp, pp} and the features {ZeRO-1, ZeRO-2,
SP (sequence parallelism), interleaved 1F1B, ZB (zero-bubble ZB-H1), float16
(mixed precision), bf16 (float32 masters, no loss scale), fp8 (bf16 with scaled fp8
matmuls), recompute (activation recomputation), FSDP2 (every weight sharded on dim 0),
HSDP (FSDP2 over 2 shards x 2 replicas), DualPipe, DualPipeV, balanced (the MoE router's
expert bias in place of the aux loss)}. ``plan(elements)``
turns a set of them into one run: every named axis of size 2, and what a
feature needs (SP: tp = 2; interleaved / ZB: pp = 2, M = 2; DualPipe(V): pp = 2, M = 2pp
= 4; ZeRO, FSDP2: dp x cp >= 2; HSDP: dp x cp = 4;
ep: MoE with ep = 2 folded over dp x cp, with ZeRO dp x cp = 4 so that the
experts are sharded over an edp group of 2; balanced: ep's MoE, dropless, gamma 0.05).
With ep the model is an MoEGPT
(checks/moe.check_moe, MoETrainer), else the dense GPT (checks/threed.check_3d,
Trainer3D; FSDP2: ``fsdp``, the weights of each tp rank sharded over its dp x cp group);
both return max |difference| from one process of the loss, every
gradient and every weight (and every expert bias) after each step.

What cannot compose is refused by ``plan`` (or by the trainers' own checks,
called here without a message: ``refusal``) with the reason, the same on every
rank before any collective. Refused by construction: one ZeRO stage per run, one
pipeline schedule per run (interleaved 1F1B, zero-bubble, DualPipe or DualPipeV: zbv is
zero-bubble's own two-chunk V), one precision per run (float16, bf16 or fp8; fp8 with SP
gathers the e4m3 bytes, with ep the experts run a grouped fp8 matmul), fp8 with the
balanced router (one token routed differently flips a bias by a whole gamma), FSDP2 or
HSDP (one of the two) with ep (MoETrainer's experts sync over edp); by Trainer3D
(threed.check_fsdp): FSDP2 with ZeRO (one sharding) or with a pipeline. A bf16 or fp8
row holds checks/verify.py's contract with one process (its tolerance), not float64's
1e-10.

``matrix()``: the axes x features table (PASS: runs and is trained against one
process by tests/test_composition.py; refused: the reason), the text that
``minimegatron verify --matrix`` prints and docs/verification.md holds; on a world of
4k ranks the command also trains every cell (``train_matrix``) and prints what it measured.
``pairs()``: every pair of elements; ``WIDEST``: the widest grids that fit 8
ranks (five, as ZeRO-1/2, the schedules and FSDP2 / pipelines exclude each other).
``run_rows(rows, world)`` trains many rows in ONE launch: rows are packed into
rounds of disjoint blocks of ranks (``pack``), each block a sub-communicator.
(Checkpoints of each combination: tools/checkpoint*.py's own tests save one grid
and load another; ``plan`` is the place a checkpoint test would take its grids.)
"""
import dataclasses
import functools
import itertools
import traceback

from minimegatron import comm, i18n
from minimegatron.i18n import book_errors
from minimegatron.data.demo import GPTConfig
from minimegatron.parallel.split import padded

AXES = ("tp", "cp", "ep", "dp", "pp")
FEATURES = ("zero1", "zero2", "sp", "interleaved", "zb", "float16", "bf16", "fp8", "recompute",
            "fsdp2", "hsdp", "dualpipe", "dualpipev", "balanced")
ELEMENTS = AXES + FEATURES
LABELS = {"zero1": "ZeRO-1", "zero2": "ZeRO-2", "sp": "SP", "interleaved": "interleaved",
          "zb": "ZB", "float16": "float16", "bf16": "bf16", "fp8": "fp8",
          "recompute": "recompute", "fsdp2": "FSDP2", "hsdp": "HSDP", "dualpipe": "DualPipe",
          "dualpipev": "DualPipeV", "balanced": "balanced"}
PRECISIONS = {"float16": "float16", "bf16": "bfloat16", "fp8": "fp8"}   # element -> dtype
SCHEDULES = {"interleaved": "interleaved", "zb": "zb-h1", "dualpipe": "dualpipe",
             "dualpipev": "dualpipev"}                                  # element -> schedule
FSDP = {"fsdp2": 1, "hsdp": 2}                       # element -> replicas (Trainer3D's fsdp)
# CONTEXT_CONFIG with 4 layers: 16 tokens (zigzag over cp = 2, then over tp = 2 with SP),
# 2 stages x 2 chunks of the interleaved schedule.
COMPOSE_CONFIG = GPTConfig(vocab_size=16, seq_len=16, n_layer=4, n_head=4, d_model=16, seed=0)
# The widest grids of 8 ranks, tp2 x cp2 x pp2 with ep = 2 over dp x cp, every feature in one;
# and FSDP2's (no pipeline): HSDP over dp x cp = 2 x 2 of each tp rank, tp2 x dp2 x cp2:
WIDEST = (("tp", "cp", "pp", "ep", "zero2", "sp", "interleaved", "recompute"),
          ("tp", "cp", "pp", "ep", "zero1", "sp", "zb", "float16", "recompute"),
          ("tp", "cp", "pp", "ep", "zero2", "sp", "dualpipev", "balanced", "recompute"),
          ("tp", "cp", "pp", "ep", "zero1", "sp", "dualpipe", "bf16", "recompute"),
          ("tp", "cp", "dp", "hsdp", "sp", "bf16", "recompute"))
STEPS, BATCH = 2, 4
ABS_TOL = {"float64": 1e-10}   # float16, bf16, fp8: verify.tolerance (its stated contract)


@dataclasses.dataclass(frozen=True)
class Plan:
    """One run: the grid (dp, pp, tp, cp, ep), the trainer's options, the batch."""
    dp: int
    pp: int
    tp: int
    cp: int
    ep: int
    zero_stage: int
    sequence_parallel: bool
    schedule: str
    chunks: int
    micro_batches: int
    dtype: str
    recompute: bool
    batch_size: int
    fsdp: int = 0                 # 0: DDP / ZeRO; 1: FSDP2; 2: HSDP (2 replicas)
    balanced: bool = False        # the MoE router's expert bias, no aux loss

    @property
    def size(self):
        return self.dp * self.pp * self.tp * self.cp

    def grid(self):
        return (f"dp{self.dp} pp{self.pp} tp{self.tp} cp{self.cp}"
                + (f" ep{self.ep}" if self.ep > 1 else ""))


def plan(elements):
    """The Plan of a set of elements, or ValueError with the reason it cannot compose."""
    s = set(elements)
    unknown = s - set(ELEMENTS)
    if unknown:
        raise ValueError(i18n.text("compose.unknown", unknown=sorted(unknown),
                                   elements=", ".join(ELEMENTS)))
    if {"zero1", "zero2"} <= s:
        raise ValueError(i18n.text("compose.zero"))
    if len(s & set(SCHEDULES)) > 1:
        names = functools.reduce(lambda left, right: i18n.text("compose.and", left=left,
                                                               right=right),
                                 [LABELS[e] for e in SCHEDULES if e in s])
        raise ValueError(i18n.text("compose.schedules", names=names))
    if len(s & set(PRECISIONS)) > 1:
        raise ValueError(i18n.text("compose.precisions"))
    if {"fp8", "balanced"} <= s:
        raise ValueError(i18n.text("compose.fp8_balanced"))
    if {"fsdp2", "hsdp"} <= s:
        raise ValueError(i18n.text("compose.fsdp_hsdp"))
    if s & set(FSDP) and s & {"ep", "balanced"}:
        raise ValueError(i18n.text("compose.fsdp_ep"))
    size = {a: 2 if a in s else 1 for a in AXES}
    if "sp" in s:
        size["tp"] = 2
    if s & set(SCHEDULES):
        size["pp"] = 2
    if "balanced" in s:                                # the expert bias is an MoE router's
        size["ep"] = 2
    zero = 1 if "zero1" in s else 2 if "zero2" in s else 0
    fsdp = next((FSDP[e] for e in FSDP if e in s), 0)
    if size["ep"] > 1:                                 # ep = 2 folds over dp x cp
        want = 4 if zero and size["cp"] == 1 else 2    # ZeRO: an edp group of 2 to shard
        size["dp"] = max(size["dp"], want // size["cp"])
    elif zero or fsdp:                                 # ZeRO, FSDP2 shard over dp x cp >= 2,
        size["dp"] = max(size["dp"], 2 * fsdp // size["cp"], 2 // size["cp"])   # HSDP 2 x 2
    schedule = next((SCHEDULES[e] for e in SCHEDULES if e in s), "1f1b")
    m = 2 * size["pp"] if schedule.startswith("dualpipe") else 2 if size["pp"] > 1 else 1
    return Plan(dp=size["dp"], pp=size["pp"], tp=size["tp"], cp=size["cp"], ep=size["ep"],
                zero_stage=zero, sequence_parallel="sp" in s, schedule=schedule,
                chunks=2 if schedule == "interleaved" else 1, micro_batches=m,
                dtype=next((PRECISIONS[e] for e in PRECISIONS if e in s), "float64"),
                recompute="recompute" in s,
                batch_size=padded(BATCH, size["dp"] * m), fsdp=fsdp,
                balanced="balanced" in s)


def config_of(p):
    """COMPOSE_CONFIG in the plan's dtype ("fp8": bf16 with fp8 matmuls)."""
    fp8 = p.dtype == "fp8"
    return dataclasses.replace(COMPOSE_CONFIG, dtype="bfloat16" if fp8 else p.dtype, fp8=fp8)


def moe_of(p):
    """The MoEConfig of an ep run: capacity 1.0 (drops), dropless when cp splits sequences;
    balanced: dropless with the expert bias (gamma 0.05) and no aux loss."""
    from minimegatron.checks.moe import BALANCED, DROPLESS, MOE
    return BALANCED if p.balanced else DROPLESS if p.cp > 1 else MOE


class _Sizes:
    """The grid sizes the construction checks read (no groups, no message)."""

    def __init__(self, p):
        self.dp_size, self.pp_size, self.tp_size, self.cp_size, self.ep_size = (
            p.dp, p.pp, p.tp, p.cp, p.ep)


def refusal(elements):
    """None if the elements compose, else the reason (the ValueError the code raises)."""
    from minimegatron.parallel.expert_parallel.gpt import check_moe_grid
    from minimegatron.parallel.expert_parallel.groups import check_expert_parallel
    from minimegatron.parallel.threed import check_3d_config
    try:
        p = plan(elements)
        config, sizes = config_of(p), _Sizes(p)
        check_3d_config(config, sizes, p.schedule, p.micro_batches, p.zero_stage, p.chunks,
                        fsdp=p.fsdp)
        if p.ep > 1:
            check_moe_grid(config, moe_of(p), sizes, p.sequence_parallel)
            check_expert_parallel(p.ep, p.dp, p.cp, moe_of(p).num_experts)
    except ValueError as err:
        return str(err)
    return None


def pairs():
    """Every pair of elements, in ELEMENTS order."""
    return list(itertools.combinations(ELEMENTS, 2))


def run_one(elements, mpi_comm):
    """{"loss", "grad", "weight"}: this rank's max |difference| from one process."""
    p = plan(elements)
    config = config_of(p)
    if p.ep > 1:
        from minimegatron.checks.moe import check_moe
        out = check_moe((p.dp, p.pp, p.tp, p.cp, p.ep), moe_of(p), steps=STEPS,
                        micro_batches=p.micro_batches, batch_size=p.batch_size, config=config,
                        mpi_comm=mpi_comm, schedule=p.schedule, zero_stage=p.zero_stage,
                        checkpoint_activations=p.recompute, chunks=p.chunks,
                        sequence_parallel=p.sequence_parallel)
        out["weight"] = max(out["weight"], out["bias"])       # the expert biases: state too
    else:
        from minimegatron.checks.threed import check_3d
        out = check_3d((p.dp, p.pp, p.tp, p.cp), steps=STEPS, schedule=p.schedule,
                       micro_batches=p.micro_batches, batch_size=p.batch_size, config=config,
                       mpi_comm=mpi_comm, zero_stage=p.zero_stage,
                       checkpoint_activations=p.recompute, chunks=p.chunks,
                       sequence_parallel=p.sequence_parallel, fsdp=p.fsdp)
    return {k: float(out[k]) for k in ("loss", "grad", "weight")}


def tolerance(elements):
    """The absolute tolerance of a row: 1e-10 in float64; float16, bf16, fp8: verify's (the
    drift, bf16's floor, fp8's flipped roundings: checks/verify.py's contract)."""
    p = plan(elements)
    if p.dtype in ABS_TOL:
        return ABS_TOL[p.dtype]
    from minimegatron.checks.verify import tolerance as drift_tolerance
    moe = moe_of(p) if p.ep > 1 else None
    return max(drift_tolerance(config_of(p), STEPS, p.batch_size, moe).values())


def pack(sizes, world_size):
    """Rounds of (row index, first rank): each round's blocks are disjoint ranks of the world.

    First fit, largest first: every size must divide the world (1, 2, 4, 8 of 8 ranks).
    """
    rounds = []
    for i in sorted(range(len(sizes)), key=lambda i: -sizes[i]):
        if world_size % sizes[i]:
            raise ValueError(f"a row of {sizes[i]} ranks does not tile {world_size} ranks")
        for used in rounds:
            start = sum(sizes[j] for j, _ in used)
            if start + sizes[i] <= world_size:
                used.append((i, start))
                break
        else:
            rounds.append([(i, 0)])
    return rounds


def run_rows(rows, world=None):
    """[{"elements", "grid", "loss", "grad", "weight", "tol", "error"}] of every row (list of
    element tuples) that composes, trained in rounds of disjoint blocks; the same list on every
    rank. A row that raises reports its last line (an ERROR, not a hang: the block is alone)."""
    world = world or comm.world()
    plans = [plan(r) for r in rows]
    results = [None] * len(rows)
    for layout in pack([p.size for p in plans], world.size):
        mine = next(((i, start) for i, start in layout
                     if start <= world.rank < start + plans[i].size), None)
        color = layout.index(mine) if mine else len(layout)
        block = world.split(color=color, name=f"compose{color}")
        if mine is None:
            continue
        i, _ = mine
        try:
            out, error = run_one(rows[i], block.comm), None
        except Exception:  # noqa: BLE001 - the block reports it as the row's error
            out, error = {}, traceback.format_exc().strip().splitlines()[-1]
        worst = comm.allgather_object((out, error), block)
        errors = [e for _, e in worst if e]
        results[i] = {"elements": list(rows[i]), "grid": plans[i].grid(),
                      "error": errors[0] if errors else None,
                      **{k: max(o.get(k, float("nan")) for o, _ in worst)
                         for k in ("loss", "grad", "weight")}}
    every = comm.allgather_object(results, world)
    merged = [next(r[i] for r in every if r[i] is not None) for i in range(len(rows))]
    for row in merged:
        row["tol"] = tolerance(row["elements"])
    return merged


def matrix():
    """{(axis, feature): None (composes) or the reason it is refused}."""
    return {(a, f): refusal((a, f)) for a in AXES for f in FEATURES}


def passed(row):
    """True if a run_rows row raised nothing and stayed within its tolerance."""
    return row["error"] is None and max(row["loss"], row["grad"], row["weight"]) <= row["tol"]


def train_matrix(world=None):
    """{(axis, feature): "PASS", "FAIL" or "needs N ranks"}: every cell that composes and fits
    this world (a multiple of 4 ranks: the cells' blocks have 2, 4 or 8) trained against one
    process; a cell of more ranks than the world (tp x HSDP: tp 2 x 2 replicas x 2 shards)
    says so."""
    world = world or comm.world()
    cells = [cell for cell, why in matrix().items() if why is None]
    fits = [cell for cell in cells if plan(cell).size <= world.size]
    out = {cell: i18n.text("compose.needs", n=plan(cell).size) for cell in cells
           if cell not in fits}
    out.update({tuple(row["elements"]): "PASS" if passed(row) else "FAIL"
                for row in run_rows(fits, world)})
    return out


def matrix_table(measured=None):
    """The axes x features table as Markdown text: PASS, or refused and why (footnotes),
    in the reader's language (a reason the book raised in English is read back by
    ``book_errors``). ``measured`` (train_matrix's): each composing cell's status as
    trained here."""
    cells, reasons = matrix(), []
    lines = [f"| {i18n.text('compose.axis')} | " + " | ".join(LABELS[f] for f in FEATURES)
             + " |",
             "|---" * (len(FEATURES) + 1) + "|"]
    for a in AXES:
        row = []
        for f in FEATURES:
            why = cells[(a, f)]
            if why is None:
                row.append("PASS" if measured is None else measured[(a, f)])
            else:
                why = book_errors.translate(why, i18n.language())
                if why not in reasons:
                    reasons.append(why)
                row.append(f"SKIP [{reasons.index(why) + 1}]")
        lines.append(f"| {a} | " + " | ".join(row) + " |")
    composing = sum(v is None for v in cells.values())
    failed = sum(v == "FAIL" for v in (measured or {}).values())
    bigger = sum(v not in ("PASS", "FAIL") for v in (measured or {}).values())
    lines.append("")
    lines.append(i18n.text(
        "compose.summary", passed=composing - failed - bigger, refused=len(cells) - composing,
        cells=len(cells), failed=i18n.text("compose.failed", n=failed) if failed else "",
        bigger=i18n.text("compose.bigger", n=bigger) if bigger else "",
        how=i18n.text("compose.how_measured" if measured is not None else "compose.how_static")))
    lines += [f"[{i}] {why}" for i, why in enumerate(reasons, 1)]
    all_pairs = pairs()
    refused = [pair for pair in all_pairs if refusal(pair) is not None]
    lines.append(i18n.text("compose.pairs", n=len(ELEMENTS),
                           composing=len(all_pairs) - len(refused), refused=len(refused),
                           pairs=", ".join(f"{a} + {b}" for a, b in refused)))
    for wide in WIDEST:
        lines.append(i18n.text("compose.widest", grid=plan(wide).grid(),
                               features=", ".join(LABELS[e] for e in wide if e in FEATURES)))
    return "\n".join(lines)
