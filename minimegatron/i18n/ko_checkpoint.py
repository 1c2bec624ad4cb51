"""checkpoint 메시지 (모든 축, tools/checkpoint*.py): 키 -> 템플릿."""

MESSAGES = {
    "ckpt.optimizer": "checkpoint: optimizer {cls}는 지원하지 않습니다. parameter별 optimizer "
                      "(AdamW, SGD, MixedPrecisionOptimizer)와 ZeRO-1/2 (ShardedOptimizer)만 "
                      "저장할 수 있습니다 (ZeRO-3는 weight를 shard로 나눠 둡니다: weight를 모으거나 "
                      "ZeRO-3 없이 checkpoint하세요)",
    "ckpt.ep_group": "checkpoint: {name}은 전문가를 {size}개 rank에 나눕니다 (rank "
                     "{rank}), 그리드의 ep는 {ep}개 (rank {ep_rank}): 저장하거나 불러오려면 "
                     "모델을 그리드의 ep group으로 만드세요 (expert_parallel_gpt)",
    "ckpt.kind_ranks": "checkpoint: rank마다 optimizer가 다릅니다 ({kinds})",
    "ckpt.moe_ranks": "checkpoint: rank마다 모델의 MoE 설정이 다릅니다",
    "ckpt.moe_config": "checkpoint {path!r}는 다른 MoE 설정으로 저장되었습니다: {differ}",
    "ckpt.moe_kind": "파일 {saved!r}, 모델 {ours!r}",
    "ckpt.writers": "checkpoint: {name}이 rank {ranks}에 의해 조각 {have}로 저장될 "
                    "것이지만, {need}의 각 조각이 정확히 한 번씩 필요합니다 (이 checkpoint가 "
                    "복제본을 모르는 그리드)",
    "ckpt.state_dtypes": "checkpoint: rank마다 optimizer 상태 {key!r}의 dtype이 다릅니다 "
                         "({first}, {other})",
}
