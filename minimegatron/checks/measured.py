"""The bytes and the idle fraction of verify's grids, measured, beside the calculator's.

For the explorer page (docs/explorer.md): every row ``minimegatron verify`` runs on N ranks
whose configuration the page can set (``explorer_rows``) is trained here for one traced step
on the same grid, model, batch, micro-batches, schedule, ZeRO stage, sequence parallelism and
cp attention as that verify row (``verify.grids`` and ``verify.fit``, not a copy of them), with
the 3D trainer (parallel/threed.py), which composes every one of these axes. ``measure_row``
returns, for each pipeline stage:

    measured   bytes this rank sent in the step by dimension (``trace.comm_by_dimension``;
               the gradients' group dp x cp counted as dp, as the calculator does), without
               the loss bookkeeping the calculator leaves out: the 8-byte all-reduce of the
               loss over dp x cp (label "dp.loss") and the loss broadcast over pp (``loss``)
    predicted  ``tools.memory.rank_report``'s comm bytes of the same configuration

and, for a pipeline (pp > 1), the idle fraction measured on one traced step with emulated
device time (device_time.py: F, B and W last T_F each, a backward that is not split 2 T_F;
a real run's compute, then a sleep that frees the core) next to ``simulate``'s. Bytes are
exact; the idle fraction carries the OS's wake-up delays (a few hundredths when busy).

Rows the page cannot set (``unmodelled``): master-style DataParallel, ZeRO-3 (not composed with
the 3D trainer), FSDP2 / HSDP and every MoE row. DualPipe's all-reduce of the two copies'
gradients over the mirror pair is in no dimension: reported apart (``outside_the_dimensions``).

    mpiexec -n 8 python benchmarks/explorer_measured.py      (writes the page's measured.js)
"""
import json
import os

from minimegatron import comm
from minimegatron.checks import verify
from minimegatron.comm import trace
from minimegatron.data.demo import batch, make_optimizer
from minimegatron.parallel.grid import ProcessGrid
from minimegatron.parallel.pipeline_parallel.device_time import DeviceTime
from minimegatron.parallel.pipeline_parallel.simulator import simulate
from minimegatron.parallel.threed import Trainer3D
from minimegatron.tools.memory import GPTShape, rank_report
from minimegatron.tools.trace_gather import gather_timeline

T_FORWARD = 0.08          # emulated seconds of F, B and W each: the page's times 1, 1 and 1
IDLE_TOLERANCE = 0.06     # |measured - simulated| idle: wake-up delays on a busy 2-core machine
AXES = ("dp", "tp", "pp", "cp")
ZERO = {"zero1": 1, "zero2": 2}
UNMODELLED = {"dp": "master-style DataParallel: the calculator models DDP and ZeRO",
              "zero3": "ZeRO-3: the 3D trainer does not compose it (parallel/threed.py)",
              "fsdp2": "FSDP2: not on the explorer (tools/memory_fsdp.py)",
              "hsdp": "HSDP: not on the explorer (tools/memory_fsdp.py)"}


def unmodelled(scheme):
    """Why the explorer cannot set a verify row of this scheme, or None if it can."""
    kind = verify.SCHEMES[scheme].kind
    if kind in ("moe", "moe3d", "moex"):
        return ("MoE: not measured here (its trainer is checks/moe.py); the page computes its "
                "all-to-all bytes with tools/memory_moe.py")
    return UNMODELLED.get(scheme)


def explorer_rows(world_size):
    """[(scheme, dims)] of every verify row on ``world_size`` ranks the page can set and
    verify trains (a SKIP row is not run); [(scheme, dims, why not)] of the others."""
    rows, others = [], []
    for scheme in verify.SCHEMES:
        for dims in verify.grids(scheme, world_size):
            why = unmodelled(scheme) or verify.fit(scheme, dims)[1]
            if why:
                others.append((scheme, list(dims), why))
            else:
                rows.append((scheme, list(dims)))
    return rows, others


def page_config(scheme, dims):
    """The explorer's form for a verify row: the calculator's configuration, float64."""
    dp, pp, tp, m, cp = verify._unpack(dims)
    config = verify.common_config(scheme)
    size = verify.fit(scheme, dims)[0]
    kind = verify.SCHEMES[scheme].kind
    schedule = scheme[3:] if kind in ("pipe", "zb", "dual") else "1f1b"
    return dict(layers=config.n_layer, hidden=config.d_model, heads=config.n_head,
                vocab=config.vocab_size, seq=config.seq_len, micro_batch=size // (dp * m),
                micro_batches=m, dp=dp, tp=tp, pp=pp, cp=cp, zero=ZERO.get(scheme, 0),
                schedule="gpipe" if schedule == "naive" else schedule, checkpoint=False,
                precision="float64", sequence_parallel=scheme in ("tp-sp", "4d-sp"),
                attention=verify._attention(scheme) if kind in ("cp", "4d") else "ring",
                t_forward=1, t_backward=1, t_weight=1)      # B + W = 2 where they run as one


def _shape(c):
    return GPTShape(c["vocab"], c["seq"], c["layers"], c["hidden"], c["heads"])


def predicted(c):
    """[{dp, tp, pp, cp}] per stage: rank_report's bytes sent per step, and the simulator's
    idle fraction (None without a pipeline)."""
    stages = []
    for stage in range(c["pp"]):
        r = rank_report(_shape(c), c["micro_batch"], c["micro_batches"], c["dp"], c["pp"],
                        c["tp"], stage, c["zero"], c["schedule"], c["checkpoint"],
                        c["precision"], c["sequence_parallel"], c["cp"], c["attention"])
        stages.append({axis: r["comm"][axis] for axis in AXES})
    chunks = 2 if c["schedule"] == "interleaved" else 1
    idle = simulate(c["schedule"], c["pp"], c["micro_batches"], float(c["t_forward"]),
                    float(c["t_backward"]), chunks, float(c["t_weight"])).bubble_fraction \
        if c["pp"] > 1 else None
    return stages, idle


def sent_by_axis(spans):
    """({dp, tp, pp, cp} bytes sent, loss bookkeeping bytes, bytes in no dimension: DualPipe's
    mirror all-reduce) of this rank's traced spans."""
    sent, loss, other = dict.fromkeys(AXES, 0), 0, 0
    for s in spans:
        axis = trace.dimension_of(s.get("group"))
        if s["kind"] != "comm":
            continue
        if axis is None:
            other += s["bytes_sent"]
            continue
        if s["label"] == "dp.loss" or (axis == "pp" and s["nbytes"] == 8 and
                                       s["op"] in ("broadcast", "all_reduce")):
            loss += s["bytes_sent"]                       # the step's loss, 8 bytes
            continue
        sent["dp" if axis == "dp_cp" else axis] += s["bytes_sent"]
    return sent, loss, other


def pipeline_idle(group):
    """On the pipeline's first stage: 1 - compute / (K x makespan) of the traced step, the
    makespan from the first compute's start to the last one's end; None elsewhere."""
    spans = gather_timeline(group, ops=("forward", "backward", "weight"))
    if spans is None:
        return None
    busy = sum(s["end"] - s["start"] for s in spans)
    makespan = max(s["end"] for s in spans) - min(s["start"] for s in spans)
    return 1 - busy / (group.size * makespan)


def measure_row(scheme, dims, world, split_cache):
    """On world rank 0 {"scheme", "dims", "config", "measured", "predicted"} of one verify
    row (module docstring); None on the other ranks. Every rank of the world takes part."""
    dp, pp, tp, m, cp = verify._unpack(dims)
    size = dp * pp * tp * cp
    if size not in split_cache:
        split_cache[size] = world.split(color=world.rank // size, name=f"measured{size}")
    c = page_config(scheme, dims)
    config = verify.common_config(scheme)
    batch_size = verify.fit(scheme, dims)[0]
    grid = ProcessGrid(dp, pp, tp, comm=split_cache[size].comm, cp=cp)
    trainer = Trainer3D(config, grid, schedule=scheme[3:] if scheme.startswith("pp-") else
                        "1f1b", micro_batches=m, zero_stage=c["zero"],
                        sequence_parallel=c["sequence_parallel"], attention=c["attention"],
                        chunks=verify.INTERLEAVED_CHUNKS if c["schedule"] == "interleaved"
                        else 1, optimizer_fn=make_optimizer)
    trainer.train_step(*batch(config, batch_size, 0))     # the optimizer state now exists
    if pp > 1:                        # B and W one T_FORWARD each; as one backward: 2 T_FORWARD
        trainer.engine.device_time = DeviceTime(T_FORWARD, T_FORWARD, T_FORWARD)
    comm.barrier(world)
    trace.enable()
    trace.reset()
    trainer.forward_backward(*batch(config, batch_size, 1))   # the step that is measured
    trainer.step()
    sent, loss, other = sent_by_axis(trace.spans())
    idle = pipeline_idle(grid.pp) if pp > 1 else None
    every = comm.gather_object((grid.pp_rank, sent, (loss, other), idle), world)
    if every is None:
        return None
    stages, idle_predicted = predicted(c)
    measured = []
    for stage in range(pp):
        seen = [s for k, s, _, _ in every if k == stage]
        measured.append(dict(max(seen, key=lambda s: sorted(s.items())),
                             same_on_every_rank=all(s == seen[0] for s in seen)))
    idles = [i for _, _, _, i in every if i is not None]
    return {"scheme": scheme, "label": verify.SCHEMES[scheme].label, "dims": list(dims),
            "config": c,
            "measured": {"stages": measured, "loss_bytes": max(b[0] for _, _, b, _ in every),
                         "outside_the_dimensions": max(b[1] for _, _, b, _ in every),
                         "idle": sum(idles) / len(idles) if idles else None},
            "predicted": {"stages": stages, "idle": idle_predicted}}


# ------------------------------------------------------------- the page's file (measured.js)

OUT = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                   "docs", "assets", "explorer", "measured.js")
PREFIX = ("// Generated by benchmarks/explorer_measured.py from real runs; do not edit.\n"
          "var MMMeasured = ")


def render(world_size, rows, others):
    """The file's text: one script that sets MMMeasured (the page loads it offline)."""
    data = {"ranks": world_size, "rows": rows,
            "not_on_the_page": [{"scheme": s, "dims": d, "why": why} for s, d, why in others]}
    return PREFIX + json.dumps(data, indent=1, sort_keys=True) + ";\n"


def read(path=OUT):
    """MMMeasured of a measured.js file, as Python."""
    with open(path, encoding="utf-8") as file:
        text = file.read()
    if not text.startswith(PREFIX):
        raise ValueError(f"{path} was not written by benchmarks/explorer_measured.py")
    return json.loads(text[len(PREFIX):].rstrip().rstrip(";"))


def loss_bytes(c):
    """The loss bookkeeping of the rank that sends most: an 8-byte all-reduce over dp x cp
    (2(N-1)/N x 8) and, on the last stage, the broadcast to the other K - 1 stages (DualPipe,
    whose two ends hold losses: an all-reduce over pp)."""
    n, k = c["dp"] * c["cp"], c["pp"]
    over_pp = 2 * (k - 1) / k * 8 if c["schedule"] == "dualpipe" else 8 * (k - 1)
    return 2 * (n - 1) / n * 8 + over_pp


def problems(data):
    """[what is wrong] with a measured.js's data against the code as it is now: the rows are
    verify's (explorer_rows), each configuration and prediction what page_config and the
    calculator give now, every measured byte equal to its prediction on every rank, the loss
    bookkeeping what it should be, the idle fraction within IDLE_TOLERANCE."""
    rows, others = explorer_rows(data["ranks"])
    found = []
    if [(r["scheme"], r["dims"]) for r in data["rows"]] != [(s, d) for s, d in rows]:
        found.append("the rows are not verify's rows on this many ranks")
    if data["not_on_the_page"] != [{"scheme": s, "dims": d, "why": w} for s, d, w in others]:
        found.append("the rows not on the page are not verify's others")
    for row in data["rows"]:
        name = f"{row['scheme']} {row['dims']}"
        c = page_config(row["scheme"], row["dims"])
        stages, idle = predicted(c)
        if row["config"] != c or row["predicted"] != {"stages": stages, "idle": idle}:
            found.append(f"{name}: the configuration or prediction is not the code's now")
        for k, (got, want) in enumerate(zip(row["measured"]["stages"], stages)):
            bad = [(a, got[a], want[a]) for a in AXES if got[a] != want[a]]
            if bad or not got["same_on_every_rank"]:
                found.append(f"{name} stage {k}: measured != predicted {bad} "
                             f"(same on every rank: {got['same_on_every_rank']})")
        if len(row["measured"]["stages"]) != c["pp"]:
            found.append(f"{name}: {len(row['measured']['stages'])} stages measured")
        if row["measured"]["loss_bytes"] != loss_bytes(c):
            found.append(f"{name}: loss bytes {row['measured']['loss_bytes']}")
        got = row["measured"]["idle"]
        if (got is None) != (idle is None) or idle is not None and \
                abs(got - idle) > IDLE_TOLERANCE:
            found.append(f"{name}: idle measured {got}, simulated {idle}")
    return found
