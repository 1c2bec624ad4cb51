"""튜토리얼 08, 12, 14의 차원별 바이트 표 (en_agree.py와 같은 키와 필드)."""

MESSAGES = {
    "t12.by_dimension": "그 스텝들에서 각 랭크가 차원별로 보낸 바이트 "
                        "(trace.comm_by_dimension)와 공식:",
    "t12.by_dimension_off": "모든 랭크: 최대 |trace - 공식| {off:g}",
    "t14.by_dimension": "같은 스텝에서 이 랭크가 차원별로 보낸 바이트 "
                        "(trace.comm_by_dimension)와 공식:",
    "t14.by_dimension_off": "모든 랭크: 최대 |trace - 공식| {off:g}",
}
