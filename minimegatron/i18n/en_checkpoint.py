"""English messages of checkpoints across every axis (tools/checkpoint*.py): key -> template."""

MESSAGES = {
    "ckpt.optimizer": "checkpoint: optimizer {cls} is not supported; only per-parameter "
                      "optimizers (AdamW, SGD, MixedPrecisionOptimizer) and ZeRO-1/2 "
                      "(ShardedOptimizer) can be saved (ZeRO-3 keeps its weights sharded: "
                      "gather them or checkpoint without it)",
    "ckpt.ep_group": "checkpoint: {name} splits its experts over {size} ranks (it is rank "
                     "{rank}), the grid's ep over {ep} (rank {ep_rank}): build the model on "
                     "the grid's ep group (expert_parallel_gpt) to save or load it",
    "ckpt.kind_ranks": "checkpoint: the ranks' optimizers differ ({kinds})",
    "ckpt.moe_ranks": "checkpoint: the ranks' models have different MoE configs",
    "ckpt.moe_config": "checkpoint {path!r} was saved for a different MoE config: {differ}",
    "ckpt.moe_kind": "file {saved!r} vs model {ours!r}",
    "ckpt.writers": "checkpoint: {name} would be written as pieces {have} by ranks {ranks}, "
                    "but it needs each of {need} exactly once (a grid whose replicas this "
                    "checkpoint does not know)",
    "ckpt.state_dtypes": "checkpoint: the ranks keep optimizer state {key!r} in different "
                         "dtypes ({first} and {other})",
}
