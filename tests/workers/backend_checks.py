"""Runs on every rank with MINIMEGATRON_BACKEND=cupy (only where a GPU is present)."""
import numpy as np

from minimegatron import backend, comm
from minimegatron.backend import to_numpy, xp
from minimegatron.checks.worked_example import worked_example


def cupy_checks():
    world = comm.world()
    x = xp.arange(6, dtype="float64") * (world.rank + 1)           # a CuPy array
    total = comm.all_reduce(x, world)
    expected = np.arange(6.0) * sum(r + 1 for r in range(world.size))
    out = worked_example(world)
    from minimegatron.checks import verify
    rows = verify.run_rows(schemes=["ddp", "tp"], dtype="float64", steps=2)
    return {
        "backend": backend.backend_name(),
        "all_reduce_ok": bool(np.allclose(to_numpy(total), expected)),
        "worked_example_Y": to_numpy(out["column"]["Y"]).tolist(),
        "verify_failures": [r for r in rows if r.get("status") not in ("PASS", "SKIP")],
    }
