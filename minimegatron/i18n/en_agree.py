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
}
