"""Runs on every rank (via tests/mpi_harness.run_mpi): the interleaved schedule on real ranks.

``run``: each (v, M, checkpoint) case against one process, the peak chunk
activations and the sends of one traced step, and the error for M not a
multiple of K. ``grids_3d``: Trainer3D with schedule "interleaved" on
dp x pp x tp grids of the world against one process.
"""
from minimegatron import comm
from minimegatron.comm import trace
from minimegatron.checks.pipeline import build, check_errors, check_pipeline
from minimegatron.checks.threed import check_3d
from minimegatron.data.demo import VERIFY_CONFIG, batch


def run(cases):
    group = comm.world()
    out = {"equivalence": {}, "stats": {}, "sends": {}}
    for v, m, ckpt in cases:
        name = f"v={v}/M={m}/ckpt={ckpt}"
        out["equivalence"][name] = check_pipeline(group, "interleaved", m, bool(ckpt),
                                                  chunks=v, steps=2)
        stage, engine = build(group, VERIFY_CONFIG, "interleaved", m, bool(ckpt), chunks=v)
        comm.barrier(group)
        trace.reset()
        engine.train_step(*batch(VERIFY_CONFIG, 2 * m, 0))
        sends = [s for s in trace.spans() if s["op"] == "send"]
        out["stats"][name] = dict(engine.stats, layers=stage.layers,
                                  chunk_layers=[c.layers for c in stage.chunks])
        out["sends"][name] = {"count": len(sends), "bytes": sum(s["nbytes"] for s in sends)}
    out["errors"] = check_errors(group)
    return out


def grids_3d(grids):
    """{"dpxppxtp v=.. M=..": check_3d diffs} with schedule "interleaved"."""
    out = {}
    for dims, v, m in grids:
        diffs = check_3d(tuple(dims), steps=2, schedule="interleaved", micro_batches=m,
                         batch_size=8, chunks=v)
        out["x".join(map(str, dims)) + f" v={v} M={m}"] = diffs
    comm.barrier(comm.world())
    return out
