"""Data parallelism: every rank a full model, a slice of the batch, the gradients averaged.

master.py   DataParallel: the master/gather style (scatter the batch, gather to rank 0, broadcast)
ddp.py      DistributedDataParallel: buckets, one all-reduce per bucket as its gradients arrive
zero.py     ShardedOptimizer: ZeRO-1 and ZeRO-2 (optimizer state / gradients split over dp)
zero3.py    Zero3: the parameters split too, all-gathered for each forward and backward
fsdp2.py    fully_shard: FSDP2, each parameter split on its dim 0 (HSDP: replicate x shard)
fsdp2_grid.py  FSDP2 / HSDP on a grid: which grids take it, its groups (Trainer3D's fsdp)

    from minimegatron.parallel.data_parallel import DistributedDataParallel, ShardedOptimizer
"""
from minimegatron.parallel.data_parallel.master import DataParallel
from minimegatron.parallel.data_parallel.ddp import Bucket, DistributedDataParallel, make_buckets
from minimegatron.parallel.data_parallel.zero import ShardedOptimizer
from minimegatron.parallel.data_parallel.zero3 import Zero3, zero_optimizer

__all__ = ["DataParallel", "DistributedDataParallel", "Bucket", "make_buckets",
           "ShardedOptimizer", "Zero3", "zero_optimizer"]
