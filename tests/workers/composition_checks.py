"""Worker of tests/test_composition.py: every pair (and the widest grid) in one launch."""
from minimegatron import comm
from minimegatron.checks import composition
from minimegatron.data.demo import make_optimizer


def train_rows(rows):
    """composition.run_rows of the given element lists; rank 0 returns them (others None)."""
    out = composition.run_rows([tuple(r) for r in rows])
    return out if comm.world().rank == 0 else None


def _error(fn):
    try:
        fn()
    except ValueError as err:
        return str(err)
    return None


def refusals_before_any_message():
    """Each refused combination's ValueError on this rank (the trainers' own constructors) and
    the comm spans they caused (0): the grids are built first, then the trace is reset."""
    import dataclasses
    from minimegatron.comm import trace
    from minimegatron.checks.moe import MOE
    from minimegatron.parallel.expert_parallel.trainer import MoETrainer
    from minimegatron.parallel.grid import ProcessGrid
    from minimegatron.parallel.threed import Trainer3D
    config = composition.COMPOSE_CONFIG
    grid, sp_grid = ProcessGrid(dp=8, ep=4), ProcessGrid(dp=2, tp=4, ep=2)
    short = dataclasses.replace(config, seq_len=6)            # 6 tokens do not split over 4
    comm.barrier(comm.world())
    trace.reset()
    out = {"clip_zero": _error(lambda: MoETrainer(config, MOE, grid, zero_stage=1,
                                                  clip_grad=1.0, optimizer_fn=make_optimizer)),
           "sp_length": _error(lambda: MoETrainer(short, MOE, sp_grid,
                                                  sequence_parallel=True,
                                                      optimizer_fn=make_optimizer)),
           "zero3_pipeline": _error(lambda: MoETrainer(config, MOE, grid, zero_stage=3,
                                                       optimizer_fn=make_optimizer)),
           "dense_zero3": _error(lambda: Trainer3D(config, grid, zero_stage=3,
                                                   optimizer_fn=make_optimizer)),
           "two_stages": _error(lambda: composition.plan(("zero1", "zero2"))),
           "two_schedules": _error(lambda: composition.plan(("interleaved", "zb"))),
           "fsdp_zero": _error(lambda: Trainer3D(config, grid, zero_stage=1, fsdp=1,
                                                 optimizer_fn=make_optimizer)),
           "fsdp_pipeline": _error(lambda: Trainer3D(config, ProcessGrid(dp=4, pp=2), fsdp=1,
                                                     optimizer_fn=make_optimizer)),
           "hsdp_replicas": _error(lambda: Trainer3D(config, grid, fsdp=3,
                                                     optimizer_fn=make_optimizer))}
    out["spans"] = len([s for s in trace.spans() if s["kind"] == "comm"])
    return out


def _mutate():
    """Five wrong implementations at once (each row below exercises one of them)."""
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
    _mutate_new()


def _mutate_new():
    """Two more: DualPipe's expert loads not summed over the mirror pair (each copy of a
    layer counts only its own micro-batches); HSDP's gradients never averaged over the
    replicas (each replica steps on half the batch)."""
    from minimegatron.nn.moe.balancing import take_load, update_expert_bias
    from minimegatron.nn.moe.gpt import moe_layers
    from minimegatron.parallel.data_parallel import fsdp2
    from minimegatron.parallel.expert_parallel.trainer import MoETrainer

    def one_copy(self):
        layers = moe_layers(self.stage)
        update_expert_bias(layers, comm.all_reduce(take_load(layers), self.load_group))
    MoETrainer.balance_experts = one_copy
    shard_init = fsdp2.ShardedUnit.__init__

    def no_replicas(self, name, module, group, replicate, state):
        shard_init(self, name, module, group, None, state)
    fsdp2.ShardedUnit.__init__ = no_replicas


MUTANT_ROWS = [("ep", "zero2"), ("ep", "sp"), ("ep", "recompute"), ("dualpipe", "balanced"),
               ("tp", "hsdp")]


def train_with_mutants(rows):
    """The refusals (every rank), train_rows(rows), FSDP2's collectives under tp, then the
    MUTANT_ROWS with the wrong implementations."""
    refused = refusals_before_any_message()
    right = composition.run_rows([tuple(r) for r in rows])
    fsdp_tp = fsdp_under_tp()
    _mutate()
    wrong = composition.run_rows(MUTANT_ROWS)
    return {"right": right, "wrong": wrong, "refused": refused, "fsdp_tp": fsdp_tp}


def fsdp_under_tp():
    """One traced step of Trainer3D(fsdp=1) on a dp 2 x tp 2 grid (the world cut into blocks
    of 4, every group a strict subset): the groups the fsdp.* collectives ran on and the
    bytes they sent, next to tools/memory_fsdp's for this rank's tp-sharded units."""
    from minimegatron.comm import trace
    from minimegatron.data.demo import batch
    from minimegatron.parallel.data_parallel.fsdp2 import ShardedUnit
    from minimegatron.parallel.grid import ProcessGrid
    from minimegatron.parallel.threed import Trainer3D
    from minimegatron.tools.memory_fsdp import fsdp2_bytes
    world = comm.world()
    block = world.split(color=world.rank // 4, name="fsdp_tp")
    grid = ProcessGrid(dp=2, tp=2, comm=block.comm)
    config = composition.COMPOSE_CONFIG
    trainer = Trainer3D(config, grid, fsdp=1, optimizer_fn=make_optimizer)
    units = [[((u.rows[k],) + u._parameters[k].shape[1:], str(u._parameters[k].dtype), False)
              for k in u.keys] for _, u in trainer.stage.named_modules()
             if isinstance(u, ShardedUnit)]                       # this tp rank's shapes
    comm.barrier(world)
    trace.reset()
    trainer.forward_backward(*batch(config, 4, 0))
    spans = [s for s in trace.spans()
             if s["kind"] == "comm" and (s["label"] or "").startswith("fsdp.")]
    return {"groups": sorted({s["group"] for s in spans}), "dp": grid.dp_cp.name,
            "tp": grid.tp.name, "ops": sorted({s["op"] for s in spans}),
            "sent": sum(s["bytes_sent"] for s in spans),
            "formula": fsdp2_bytes(units, 2)["sent"],
            "shards": {name: list(p.shape) for name, p in trainer.named_parameters()}}
