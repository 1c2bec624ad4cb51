"""조합표 (checks/composition.py, ``verify --matrix``)의 요약 줄과 ``plan``이 원소 조합을
거절하는 이유 (en_composition.py와 같은 키와 필드)."""

MESSAGES = {
    "compose.axis": "축",
    "compose.needs": "rank {n}개 필요",
    "compose.summary": "칸 {cells}개 중 PASS {passed}개, {failed}{bigger}거절 {refused}개 "
                       "(각 칸은 그 축을 2로 두고 feature를 켠 run, grid는 "
                       "checks/composition.plan이 정함. {how}).",
    "compose.failed": "FAIL {n}개, ",
    "compose.bigger": "학습하지 않음 {n}개 (여기보다 rank가 더 필요), ",
    "compose.how_static": "PASS는 tests/test_composition.py와 "
                          "`minimegatron run -n 4 verify --matrix`가 한 프로세스와 비교하며 "
                          "학습시킨 칸",
    "compose.how_measured": "여기서 한 프로세스와 비교하며 학습시킴",
    "compose.pairs": "원소 {n}개로 만든 모든 쌍 중 조합되는 쌍 {composing}개, 거절되는 쌍 "
                     "{refused}개 ({pairs}).",
    "compose.widest": "rank 8개에 들어가는 가장 넓은 grid: {grid}, 함께 켠 것: {features}.",
    "compose.unknown": "알 수 없는 조합 원소 {unknown}입니다. 다음 중에서 고르세요: {elements}",
    "compose.zero": "ZeRO-1과 ZeRO-2는 한 optimizer의 두 stage입니다. 한 run의 zero_stage는 "
                    "하나입니다",
    "compose.and": "{left}과 {right}",
    "compose.schedules": "{names}는 서로 다른 pipeline schedule입니다. 한 run의 schedule은 "
                         "하나입니다 (zbv는 zero-bubble의 chunk 두 개짜리 V, DualPipeV는 "
                         "DualPipe의 V자 절반입니다)",
    "compose.precisions": "float16, bf16, fp8은 서로 다른 precision입니다. 한 run의 dtype은 "
                          "하나입니다",
    "compose.fp8_balanced": "fp8과 balanced router는 함께 쓸 수 없습니다. fp8에서 token 하나가 "
                            "다른 expert로 route되면 그 expert의 load deviation 부호가 바뀌고 "
                            "bias가 gamma만큼 통째로 움직이므로, bias가 fp8의 tolerance 안에서 "
                            "한 프로세스를 따라가지 못합니다 (verify의 fp8 moe-balanced 행은 "
                            "bias를 비교에서 뺍니다)",
    "compose.fsdp_hsdp": "HSDP는 (replicate, shard) group 위의 FSDP2입니다. 한 run은 weight를 "
                         "한 가지 방식으로만 shard하므로 둘 중 하나만 고르세요",
    "compose.fsdp_ep": "FSDP2는 Trainer3D의 dense GPT를 shard합니다. MoETrainer의 expert는 ep "
                       "rank에 있고 edp에서 동기화합니다 (DDP 또는 ZeRO-1/2). 그래서 여기서는 "
                       "FSDP2와 HSDP를 ep와 (balanced MoE router와도) 함께 쓸 수 없습니다",
}
