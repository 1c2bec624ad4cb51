"""튜토리얼 08, 12, 14의 차원별 바이트 표 (en_agree.py와 같은 키와 필드)."""

MESSAGES = {
    "t08.yes": "예",
    "t08.no": "아니요",
    "t08.other_dimensions": "다른 차원 (trace.comm_by_dimension: cp, ep, dp x cp, edp): 한 "
                            "rank에서 최대 {others:,d} B, 공식 0 (cp, ep 축 없음), 각 rank가 "
                            "보낸 모든 바이트가 어느 차원에 들어감: {counted}",
    "t12.by_dimension": "그 스텝들에서 각 rank가 차원별로 보낸 바이트 "
                        "(trace.comm_by_dimension)와 공식:",
    "t12.by_dimension_off": "모든 rank: 최대 |trace - 공식| {off:g}",
    "t14.by_dimension": "같은 스텝에서 이 rank가 차원별로 보낸 바이트 "
                        "(trace.comm_by_dimension)와 공식:",
    "t14.by_dimension_off": "모든 rank: 최대 |trace - 공식| {off:g}",
    "t12.dim_head": "차원           보냄 (trace)      공식  근거",
    "t14.dim_head": "차원           보냄 (trace)      공식  근거",
    "t12.dim_none": "여기에는 없는 축: 0",
    "t14.dim_none": "여기에는 없는 축: 0",
    "t12.how_cp": "{steps} 스텝 x {layers} 층 x (3cp-2) hop x {hop:,d} B",
    "t12.how_dp_cp": "{steps} x 2(N-1)/N x 8 x (값 {values:,d}개 + loss 1개), N = {n}",
    "t14.how_ep": "all-to-all {calls}번 x MoE block {blocks}개 x {each:,d} B",
    "t14.how_dp_cp": "2(N-1)/N x 8 x (dense {dense:,d}개 + loss 1개), N = {n}",
    "t14.how_edp": "2(n-1)/n x 8 x expert 값 {experts:,d}개, n = {n}",
}
