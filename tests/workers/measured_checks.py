"""Verify rows measured again (checks/measured.py), on a world smaller than the file's: a row of
d ranks runs on sub-communicators of d, as verify runs it on a larger world."""
from minimegatron import comm
from minimegatron.checks.measured import measure_row
from minimegatron.comm import comm_check


def measure(rows):
    """[measure_row of each (scheme, dims)] on rank 0, None elsewhere."""
    comm_check.disable()
    world, cache = comm.world(), {}
    out = [measure_row(scheme, dims, world, cache) for scheme, dims in rows]
    return out if world.rank == 0 else None
