"""Mixed precision on real ranks: an overflow on one rank, every scheme (tests/test_mixed_precision.py)."""
from minimegatron import comm
from minimegatron.checks.mixed import check_mixed


def overflow_on_one_rank(steps=5, growth_interval=2):
    """Every data-parallel scheme, inf on rank 1 at step 1; records per scheme."""
    world = comm.world()
    return {scheme: check_mixed(world, scheme, steps, overflow=(1, 1),
                                growth_interval=growth_interval)
            for scheme in ("ddp", "zero1", "zero2", "zero3")}
