"""English texts of the byte tables per dimension (tutorials 08, 12 and 14); Korean in
ko_agree.py, the same keys and fields."""

MESSAGES = {
    "t12.by_dimension": "the bytes each rank sent per dimension in those steps "
                        "(trace.comm_by_dimension), beside the formulas:",
    "t12.by_dimension_off": "every rank: max |trace - formula| {off:g}",
    "t14.by_dimension": "the same step's bytes sent by this rank per dimension "
                        "(trace.comm_by_dimension), beside the formulas:",
    "t14.by_dimension_off": "every rank: max |trace - formula| {off:g}",
}
