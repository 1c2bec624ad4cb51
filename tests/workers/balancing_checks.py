"""Aux-loss-free balancing on 8 ranks, for tests/test_moe_balancing.py: many rows per launch."""
import dataclasses

from minimegatron.checks import moe as checks
from minimegatron.comm import trace
from minimegatron.parallel.expert_parallel.trainer import MoETrainer
from minimegatron.parallel.grid import ProcessGrid
from minimegatron.checks.precision import check_optimizer
from minimegatron.data.demo import batch


def _moe(options):
    """The MoE config of a row: the bias on (gamma 0.05, no aux loss) plus the row's fields."""
    return dataclasses.replace(checks.MOE, bias_update_rate=0.05, aux_loss_coeff=0.0,
                               **options.pop("moe", {}))


def trainer_rows(rows):
    """check_moe (with the bias compared) for every (label, dims, options) row."""
    out = {}
    for label, dims, options in rows:
        options = dict(options)
        out[label] = checks.check_moe(tuple(dims), moe=_moe(options), **options)
    return out


def load_bytes():
    """One step on dp 2 x pp 2 x tp 2 (ep 2): the 'dp.load' all-reduces this rank traced."""
    grid = ProcessGrid(2, 2, 2, ep=2)
    config = checks.MOE_CONFIG
    trainer = MoETrainer(config, _moe({}), grid, micro_batches=2,
                         optimizer_fn=lambda ps: check_optimizer(ps, config, grid.world))
    trace.reset()
    trainer.train_step(*batch(config, 8, 0))
    return [{"op": s["op"], "group": s["group"], "nbytes": s["nbytes"]}
            for s in trace.spans() if s.get("label") == "dp.load"]


def _diffs(trainer, ref, step):
    """max |weights - one process's| and max |biases - one process's| after ``step``."""
    weight = max(float(abs(p.data - checks.expected(n, ref["weights"][step][n], trainer.grid))
                       .max()) for n, p in trainer.named_parameters())
    mine = checks._biases(trainer.stage)
    bias = max(float(abs(b - ref["bias"][step][n]).max()) for n, b in mine.items())
    return weight, bias


def bias_checkpoint(directory):
    """2 steps on dp 8 x ep 4, saved; loaded on dp 2 x pp 2 x tp 2 (ep 2), 2 more steps:
    losses, weights and biases next to one process that never stopped; a load that drops
    the biases (zeroed after loading) is the mutant that must drift."""
    import os
    from minimegatron.tools.checkpoint import load_checkpoint, save_checkpoint
    moe = dataclasses.replace(checks.BALANCED)
    config = checks.MOE_CONFIG
    ref = checks.moe_reference(config, moe, 4, 8)

    def trainer(dp, pp, tp, ep):
        grid = ProcessGrid(dp, pp, tp, ep=ep)
        return MoETrainer(config, moe, grid, micro_batches=2 if pp > 1 else 1,
                          optimizer_fn=lambda ps: check_optimizer(ps, config, grid.world))
    first = trainer(8, 1, 1, 4)
    for step in range(2):
        first.train_step(*batch(config, 8, step))
    path = os.path.join(directory, "balanced.npz")
    save_checkpoint(first, first.optimizer, path, first.grid, rng_state={"next_step": 2})
    out = {}
    for key, forget in (("resumed", False), ("forgot_bias", True)):
        other = trainer(2, 2, 2, 2)
        load_checkpoint(other, other.optimizer, path, other.grid)
        out[f"loaded_{key}"] = _diffs(other, ref, 1)
        if forget:
            for layer in checks.moe_layers(other.stage):
                layer.expert_bias = layer.expert_bias * 0.0
        losses = [other.train_step(*batch(config, 8, step)) for step in (2, 3)]
        out[f"loss_{key}"] = max(abs(a - b) for a, b in zip(losses, ref["loss"][2:]))
        out[f"after_{key}"] = _diffs(other, ref, 3)
    return out
