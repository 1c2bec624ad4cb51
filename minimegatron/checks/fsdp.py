"""FSDP2 and HSDP next to one process (verify's rows ``fsdp2`` and ``hsdp``).

``check_fsdp2(group, replicate)``: a GPT whose every parameter is sharded on dim 0 over
the shard group (parallel/data_parallel/fsdp2.py; HSDP: ``group`` cut into ``replicate``
x shard), trained on the same global batches as one process; each rank compares its
rows of one process's gradient after backward and of its weights after the step, and the
loss. float16: mixed precision with SGD on the shards (checks/precision.py). Also
returns the bytes each rank sent per step and the calculator's (tools/memory_fsdp.py).
"""
from minimegatron.checks.common import max_abs_diff, serial_reference
from minimegatron.checks.data import STEPS, BATCH, global_loss, traffic
from minimegatron.checks.precision import backward, check_optimizer, unscaled
from minimegatron.comm import trace
from minimegatron.data.demo import SMALL_CONFIG, batch
from minimegatron.nn import GPT
from minimegatron.parallel.data_parallel.fsdp2 import fully_shard, hsdp_groups, shard_rows
from minimegatron.parallel.split import shard_batch
from minimegatron.tools.memory_fsdp import fsdp2_bytes, units_of


def check_fsdp2(group, replicate=1, config=SMALL_CONFIG, steps=STEPS, batch_size=BATCH):
    """{"loss", "grad", "weight", "sent", "formula"}: max |this rank - one process|."""
    ref = serial_reference(config, steps, batch_size)
    shard, rep = hsdp_groups(group, group.size // replicate) if replicate > 1 else (group, None)
    model = GPT(config)
    units = units_of(model)
    fully_shard(model, shard, rep)
    opt = check_optimizer(model.parameters(), config, group)
    out = {"loss": 0.0, "grad": 0.0, "weight": 0.0}
    trace.reset()
    for step in range(steps):
        x, y = batch(config, batch_size, step)
        x, y = shard_batch(x, group), shard_batch(y, group)              # (B/dp, T)
        opt.zero_grad()
        loss = model.loss(x, y)
        backward(loss, opt)                       # all-gathers, recomputes, reduce-scatters
        out["loss"] = max(out["loss"], abs(global_loss(loss.item(), group)
                                           - ref["loss"][step]))
        for name, p in model.named_parameters():
            want = shard_rows(ref["grads"][step][name], shard.rank, shard.size)
            out["grad"] = max(out["grad"], max_abs_diff(unscaled(p.grad, opt), want))
        opt.step()
        for name, p in model.named_parameters():
            want = shard_rows(ref["weights"][step][name], shard.rank, shard.size)
            out["weight"] = max(out["weight"], max_abs_diff(p.data, want))
    fsdp = [s for s in trace.spans() if (s["label"] or "").startswith("fsdp.")]
    out["sent"] = sum(s["bytes_sent"] for s in fsdp) / steps
    out["formula"] = fsdp2_bytes(units, shard.size, replicate)["sent"]
    out["traffic"] = traffic(steps)
    return out
