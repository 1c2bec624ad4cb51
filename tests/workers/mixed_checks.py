"""Mixed precision on real ranks: an overflow on one rank, every scheme.

Launched by tests/test_mixed_precision.py.
"""
from minimegatron import comm
from minimegatron.checks.data import check_ddp
from minimegatron.checks.mixed import HALF_CONFIG, check_mixed, skip_together
from minimegatron.nn import GPT


def overflow_on_one_rank(steps=5, growth_interval=2):
    """Every data-parallel scheme, inf on rank 1 at step 1; records per scheme."""
    world = comm.world()
    return {scheme: check_mixed(world, scheme, steps, overflow=(1, 1),
                                growth_interval=growth_interval)
            for scheme in ("ddp", "zero1", "zero2", "zero3")}


def overflow_in_pp_tp_3d(steps=3):
    """4 ranks: pp and tp on 2-rank groups {0, 1}, {2, 3} (strict subsets), where world
    rank 1 alone plants an inf at step 1 (so {2, 3} must NOT skip); 3D dp x pp x tp on
    the world, world rank 1 plants it (so all 4 must skip)."""
    world = comm.world()
    pair = world.split(color=world.rank // 2, name="pair")      # {0, 1}, {2, 3}
    planted = (1, 1 if world.rank < 2 else -1)                  # only the first pair's rank 1
    return {"pp": skip_together("pp", pair, steps, planted),
            "tp": skip_together("tp", pair, steps, planted),
            "3d": skip_together("3d", world, steps, dims=(2, 2, 1)),
            "3d_tp": skip_together("3d", world, steps, dims=(1, 2, 2))}


def ddp_reduce_dtypes(steps=2, batch_size=8):
    """checks.data.check_ddp on a float16 GPT, on 2-rank groups of 4, reducing in float32
    (the default) and in float16: diffs vs one mixed process, bytes sent, memory held."""
    world = comm.world()
    pair = world.split(color=world.rank // 2, name="pair")
    out = {}
    for dtype in ("float32", "float16"):
        got = check_ddp(pair, HALF_CONFIG, steps, batch_size, reduce_dtype=dtype)
        out[dtype] = {k: got[k] for k in ("loss", "grad", "weight", "sent", "memory")}
    out["params"] = GPT(HALF_CONFIG).num_parameters()
    return out
