"""Worker of tests/test_composition.py: every pair (and the widest grid) in one launch."""
from minimegatron import comm
from minimegatron.checks import composition


def train_rows(rows):
    """composition.run_rows of the given element lists; rank 0 returns them (others None)."""
    out = composition.run_rows([tuple(r) for r in rows])
    return out if comm.world().rank == 0 else None


def refusals_before_any_message(rows):
    """Each refused row's ValueError from the trainers' own constructors, and the comm spans
    they caused (0): the grids are built first (their Splits), then the trace is reset."""
    from minimegatron.comm import trace
    out = {}
    for row in rows:
        try:
            composition.plan(row)
            out["+".join(row)] = None
        except ValueError as err:
            out["+".join(row)] = str(err)
    comm.barrier(comm.world())
    trace.reset()
    return {"errors": out, "spans": len([s for s in trace.spans() if s["kind"] == "comm"])}
