"""English texts of the byte tables per dimension (tutorials 08, 12 and 14); Korean in
ko_agree.py, the same keys and fields."""

MESSAGES = {
    "t08.yes": "yes",
    "t08.no": "NO",
    "t08.other_dimensions": "the other dimensions (trace.comm_by_dimension: cp, ep, dp x cp, "
                            "edp): at most {others:,d} B on a rank, formula 0 (no cp or ep "
                            "axis here); every byte each rank sent is in a dimension: {counted}",
    "t12.by_dimension": "the bytes each rank sent per dimension in those steps "
                        "(trace.comm_by_dimension), beside the formulas:",
    "t12.by_dimension_off": "every rank: max |trace - formula| {off:g}",
    "t14.by_dimension": "the same step's bytes sent by this rank per dimension "
                        "(trace.comm_by_dimension), beside the formulas:",
    "t14.by_dimension_off": "every rank: max |trace - formula| {off:g}",
    "t12.dim_head": "dimension     sent (trace)   formula  from",
    "t14.dim_head": "dimension     sent (trace)   formula  from",
    "t12.dim_none": "no such axis here: 0",
    "t14.dim_none": "no such axis here: 0",
    "t12.how_cp": "{steps} steps x {layers} layers x (3cp-2) hops x {hop:,d} B",
    "t12.how_dp_cp": "{steps} x 2(N-1)/N x 8 x ({values:,d} values + 1 loss), N = {n}",
    "t14.how_ep": "{calls} all-to-alls x {blocks} MoE blocks x {each:,d} B",
    "t14.how_dp_cp": "2(N-1)/N x 8 x ({dense:,d} dense + 1 loss), N = {n}",
    "t14.how_edp": "2(n-1)/n x 8 x {experts:,d} expert values, n = {n}",
}
