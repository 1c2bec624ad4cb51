"""Runs on every rank (tests/mpi_harness.run_mpi): every data parallel check of one rank count.

``check_all()`` returns {name: the check's dict} for DataParallel, DDP in
several configurations, and the error messages of the bad configurations;
``check_zero_all()`` the same for ZeRO stages 1-3 (and DDP as stage 0).
"""
from minimegatron import comm
from minimegatron.autodiff import functional as F
from minimegatron.checks.data import check_data_parallel, check_ddp, check_zero
from minimegatron.data.demo import SMALL_CONFIG, batch, make_optimizer
from minimegatron.nn import GPT, GPTConfig
from minimegatron.parallel.data_parallel import (DataParallel, DistributedDataParallel,
                                                 zero_optimizer)
from minimegatron.parallel.split import shard_batch

# d_model 12: layer sizes such as 468 (qkv) that 8 does not divide, so ZeRO pads
ODD_CONFIG = GPTConfig(vocab_size=11, seq_len=8, n_layer=1, n_head=3, d_model=12, seed=0)
DDP_CONFIGS = {
    "ddp_overlap": dict(bucket_bytes=2 ** 20, overlap=True),
    "ddp_tiny_buckets": dict(bucket_bytes=1, overlap=True),
    "ddp_4k_buckets": dict(bucket_bytes=4096, overlap=True),
    "ddp_4k_no_overlap": dict(bucket_bytes=4096, overlap=False),
    # 16 rows: 2 micro-batches per rank even on 8 ranks
    "ddp_no_sync_accumulate": dict(bucket_bytes=4096, overlap=True, accumulate=2,
                                   batch_size=16),
}


def error_of(fn):
    """The ValueError message fn raises, or "no error"."""
    try:
        fn()
    except ValueError as error:
        return str(error)
    return "no error"


def stage_errors(group):
    model = GPT(SMALL_CONFIG)
    opt = make_optimizer(model.parameters())
    return {f"bad_stage_{stage}": error_of(lambda: zero_optimizer(model, group, stage, opt))
            for stage in (0, 4, "2")}


def errors(group):
    out = {}
    model = GPT(SMALL_CONFIG)
    opt = make_optimizer(model.parameters())
    if group.size == 1:
        return out
    x, y = batch(SMALL_CONFIG, group.size + 1, 0)                      # N + 1 rows
    out["uneven_shard"] = error_of(lambda: shard_batch(x, group))
    dp = DataParallel(model, group)
    root = group.rank == 0
    out["uneven_dp"] = error_of(lambda: dp.step(x if root else None, y if root else None,
                                                 F.cross_entropy, opt))
    other = GPT(SMALL_CONFIG)
    if group.rank == 1:
        other.blocks[0].mlp.fc1.weight.data[0, 0] += 1e-3
    out["mismatch"] = error_of(lambda: DistributedDataParallel(other, group))
    comm.barrier(group)
    return out


def check_all():
    group = comm.world()
    out = {"data_parallel": check_data_parallel(group)}
    for name, kwargs in DDP_CONFIGS.items():
        out[name] = check_ddp(group, **kwargs)
    out["errors"] = errors(group)
    return out


def check_zero_all():
    group = comm.world()
    out = {"stage0": check_ddp(group, bucket_bytes=2 ** 20, overlap=True)}
    for stage in (1, 2, 3):
        out[f"stage{stage}"] = check_zero(group, stage)
        out[f"odd_stage{stage}"] = check_zero(group, stage, config=ODD_CONFIG)
    out["params"] = GPT(SMALL_CONFIG).num_parameters()
    out["odd_params"] = GPT(ODD_CONFIG).num_parameters()
    out["errors"] = stage_errors(group)
    return out
