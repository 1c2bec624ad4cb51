"""Runs on every rank (via tests/mpi_harness.run_mpi): zero-bubble schedules on real ranks.

``run``: zb-h1, zb-h2 and zbv against one process (several M, float64 and float32,
with and without recomputation), what one traced step does (F, B and W spans per
chunk, sends, the peak held), mutants that must not pass (a W skipped by the
schedule, a W before its B, W halves never run), and on 4 ranks Trainer3D: DDP
over two pipelines, and pipelines of tensor-parallel stages (sequence parallel too).
"""
from dataclasses import replace

from minimegatron import comm
from minimegatron.comm import trace
from minimegatron.checks.pipeline import build, check_pipeline
from minimegatron.checks.threed import check_3d
from minimegatron.data.demo import VERIFY_CONFIG, batch
from minimegatron.parallel.pipeline_parallel import schedules
from minimegatron.autodiff.split_backward import WeightGradients
from minimegatron.checks.verify import tolerance

SCHEDULES = ("zb-h1", "zb-h2", "zbv")


def least(name, K):
    return K if name == "zb-h1" else 2 * K - 1


def _attempt(make):
    """make()'s diffs, or the error it raised on this rank (as text)."""
    try:
        return make()
    except Exception as error:  # noqa: BLE001 - a mutant may fail in any way but passing
        return {"error": f"{type(error).__name__}: {error}"}


def _mutant(name, change):
    """Run check_pipeline with schedule ``name`` rewritten by ``change`` on every stage."""
    original = schedules.SCHEDULES[name]
    schedules.SCHEDULES[name] = lambda K, M, stage: change(original(K, M, stage))
    m = least(name, comm.world().size)
    try:
        return _attempt(lambda: check_pipeline(comm.world(), name, m, steps=1, batch_size=m))
    finally:
        schedules.SCHEDULES[name] = original


def drop_last_weight(actions):
    last = max(n for n, a in enumerate(actions) if a.op == "weight")
    return actions[:last] + actions[last + 1:]


def weight_first(actions):
    first = next(a for a in actions if a.op == "weight")
    return [first] + [a for a in actions if a != first]


def run():
    group = comm.world()
    K = group.size
    out = {"equivalence": {}, "steps": {}, "mutants": {}}
    for name in SCHEDULES:
        for m in (least(name, K), least(name, K) + 3):
            for dtype, ckpt in (("float64", False), ("float64", True), ("float32", False)):
                config = replace(VERIFY_CONFIG, dtype=dtype)
                steps = 2 if dtype == "float64" else 1     # float32: AdamW amplifies drift
                diffs = check_pipeline(group, name, m, ckpt, config=config, steps=steps,
                                       batch_size=m)
                if dtype == "float32":                 # verify's: 100 x one process's drift
                    diffs["tolerance"] = tolerance(config, steps, m)
                out["equivalence"][f"{name}/M={m}/{dtype}/ckpt={int(ckpt)}"] = diffs
        m = least(name, K)
        stage, engine = build(group, VERIFY_CONFIG, name, m, False)
        comm.barrier(group)
        trace.reset()
        engine.train_step(*batch(VERIFY_CONFIG, m, 0))
        counts = {}
        for span in trace.spans():
            if span["kind"] == "compute" or span["op"] == "send":
                counts[span["op"]] = counts.get(span["op"], 0) + 1
        out["steps"][name] = dict(counts, peak=engine.stats["peak_in_flight"], M=m,
                                  layers=stage.layers)
    for name in SCHEDULES:
        out["mutants"][f"{name}/drop_last_weight"] = _mutant(name, drop_last_weight)
        out["mutants"][f"{name}/weight_first"] = _mutant(name, weight_first)
    real = WeightGradients.__call__
    WeightGradients.__call__ = lambda self: None    # W "runs" but adds nothing: .grad None
    try:
        out["mutants"]["zb-h1/w_does_nothing"] = _attempt(
            lambda: check_pipeline(group, "zb-h1", K, steps=1, batch_size=K))
    finally:
        WeightGradients.__call__ = real
    if K == 4:              # DDP over 2 pipelines of 2; pipelines of 2 tensor-parallel ranks
        out["grids"] = {f"{name} {dims} sp={int(sp)}": check_3d(
            dims, steps=2, schedule=name, micro_batches=4, batch_size=8, sequence_parallel=sp)
            for name in SCHEDULES for dims, sp in [((2, 2, 1), False), ((1, 2, 2), False),
                                                   ((1, 2, 2), True)]}
    comm.barrier(group)
    return out



def emulated(times, micro_batches):
    """Rank 0: {schedule: emulated_run(...)} for 1f1b, zb-h1 and zbv (checks/zero_bubble.py)."""
    from minimegatron.checks.zero_bubble import emulated_run
    group = comm.world()
    runs = {name: emulated_run(group, name, micro_batches, times)
            for name in ("1f1b", "zb-h1", "zbv")}
    return runs if group.rank == 0 else None
