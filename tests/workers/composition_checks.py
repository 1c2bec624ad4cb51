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


def _mutate():
    """Three wrong implementations at once (each row below exercises one of them)."""
    import importlib
    from minimegatron.parallel.expert_parallel import layer, zero
    recompute = importlib.import_module("minimegatron.parallel.pipeline_parallel.recompute")
    from minimegatron.parallel.tensor_parallel.sequence import gather_from_sequence
    init = zero.ExpertShardedOptimizer.__init__

    def not_divided(self, *args, **kwargs):          # expert gradients: mean over edp only
        init(self, *args, **kwargs)
        self.ep_size = 1
    zero.ExpertShardedOptimizer.__init__ = not_divided
    layer.gather_to_replicated = gather_from_sequence  # SP: backward sums the tp copies
    recompute._logs = lambda fn: []                    # the aux loss logged twice


MUTANT_ROWS = [("ep", "zero2"), ("ep", "sp"), ("ep", "recompute")]


def train_with_mutants(rows):
    """train_rows(rows), then the MUTANT_ROWS with the wrong implementations (rank 0)."""
    right = composition.run_rows([tuple(r) for r in rows])
    _mutate()
    wrong = composition.run_rows(MUTANT_ROWS)
    return {"right": right, "wrong": wrong} if comm.world().rank == 0 else None
