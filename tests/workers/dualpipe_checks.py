"""Runs on every rank (via tests/mpi_harness.run_mpi): DualPipe and DualPipeV on real ranks.

``run``: both against one process (M = 2K and 2K + 2; float64 with and without
recomputation, float32), one traced step (F, B, W spans per chunk, the sends, every
all-reduce with its group and bytes), the model state a rank holds after an AdamW step
next to tools/memory.py, each rank's weights' digest (DualPipe's mirrors hold the same
bytes), two mutants of DualPipe's mirror reduction (none at all; a mean, not a sum), and
Trainer3D with each: DDP over two pipelines of 2, pipelines of 2 tp ranks (with SP).
"""
import hashlib
from dataclasses import replace

from minimegatron import comm
from minimegatron.checks.pipeline import build, check_pipeline
from minimegatron.checks.threed import check_3d
from minimegatron.checks.verify import tolerance
from minimegatron.comm import trace
from minimegatron.data.demo import VERIFY_CONFIG, batch, make_optimizer
from minimegatron.parallel.pipeline_parallel import engine as engine_module
from minimegatron.tools import memory
from minimegatron.tools.memory_measure import formula, measure
from minimegatron.tools.trace_gather import gather_timeline

SCHEDULES = ("dualpipe", "dualpipev")


def _attempt(make):
    try:
        return make()
    except Exception as error:  # noqa: BLE001 - a mutant may fail in any way but passing
        return {"error": f"{type(error).__name__}: {error}"}


def traced_step(group, name, m):
    """One step's spans counted, the model state held after AdamW, the weights' digest."""
    stage, engine = build(group, VERIFY_CONFIG, name, m, False)
    opt = make_optimizer(stage.parameters())
    comm.barrier(group)
    trace.reset()
    engine.train_step(*batch(VERIFY_CONFIG, m, 0))
    counts, reduces = {}, []
    for span in trace.spans():
        if span["kind"] == "compute" or span["op"] == "send":
            counts[span["op"]] = counts.get(span["op"], 0) + 1
        elif span["op"] == "all_reduce":
            reduces.append([span["group"], span["nbytes"], span["bytes_sent"]])
    spans = gather_timeline(group, ops=("forward", "backward", "weight", "recv",
                                        "all_reduce"))          # rank 0: every rank's
    opt.step()
    digest = hashlib.sha256()
    for _, p in sorted(stage.named_parameters()):
        digest.update(p.data.tobytes())
    rank = group.rank
    return {"counts": counts, "all_reduces": reduces, "layers": stage.layers,
            "peak": engine.stats["peak_in_flight"],
            "in_flight": memory.in_flight(group.size, m, rank, name),
            "params": sum(p.data.size for p in stage.parameters()),
            "param_formula": memory.pipeline_param_count(VERIFY_CONFIG, group.size, 1, rank,
                                                          name),
            "state": measure(stage.parameters(), opt),
            "state_formula": formula(memory.pipeline_param_count(
                VERIFY_CONFIG, group.size, 1, rank, name), 1, 0, "float64"),
            "digest": digest.hexdigest(), "spans": spans}


def _mutant(group, m, change):
    """check_pipeline("dualpipe") with the engine's mirror reduction replaced by ``change``."""
    real = engine_module.sum_mirrored_grads
    engine_module.sum_mirrored_grads = lambda params, mirror, before: change(
        real, params, mirror, before)
    try:
        return _attempt(lambda: check_pipeline(group, "dualpipe", m, steps=1, batch_size=m))
    finally:
        engine_module.sum_mirrored_grads = real


def _none(real, params, mirror, before):
    return None


def _mean(real, params, mirror, before):
    real(params, mirror, before)
    for p in params:
        p.grad *= 0.5


def run():
    group = comm.world()
    K = group.size
    out = {"equivalence": {}, "steps": {}, "mutants": {}}
    for name in SCHEDULES:
        for m in (2 * K, 2 * K + 2):
            for dtype, ckpt in (("float64", False), ("float64", True), ("float32", False)):
                config = replace(VERIFY_CONFIG, dtype=dtype)
                steps = 3 if dtype == "float64" else 1
                diffs = check_pipeline(group, name, m, ckpt, config=config, steps=steps,
                                       batch_size=m)
                if dtype == "float32":
                    diffs["tolerance"] = tolerance(config, steps, m)
                out["equivalence"][f"{name}/M={m}/{dtype}/ckpt={int(ckpt)}"] = diffs
        out["steps"][name] = traced_step(group, name, 2 * K)
    out["errors"] = {f"{name}/M={m}": _attempt(lambda: build(group, VERIFY_CONFIG, name, m,
                                                             False))
                     for name, m in (("dualpipe", 2 * K - 2), ("dualpipe", 2 * K + 1),
                                     ("dualpipev", 2 * K - 1))}
    comm.barrier(group)                      # every rank got here: nobody waits in a collective
    if K == 4:                   # DDP over 2 pipelines of 2; pipelines of 2 tp ranks per stage
        out["grids"] = {f"{name} {dims} sp={int(sp)}": check_3d(
            dims, steps=2, schedule=name, micro_batches=4, batch_size=8, sequence_parallel=sp)
            for name in SCHEDULES for dims, sp in [((2, 2, 1), False), ((1, 2, 2), True)]}
    out["mutants"]["no_mirror_sum"] = _mutant(group, 2 * K, _none)
    out["mutants"]["mirror_mean"] = _mutant(group, 2 * K, _mean)
    comm.barrier(group)
    return out
