"""English texts of the composition matrix (checks/composition.py, ``verify --matrix``):
the table's summary lines and why ``plan`` refuses a set of elements; Korean in
ko_composition.py, the same keys and fields."""

MESSAGES = {
    "compose.axis": "axis",
    "compose.needs": "needs {n} ranks",
    "compose.summary": "{passed} PASS, {failed}{bigger}{refused} refused of {cells} cells "
                       "(axis = 2 with the feature; grids: checks/composition.plan; {how}).",
    "compose.failed": "{n} FAIL, ",
    "compose.bigger": "{n} not trained (more ranks than here), ",
    "compose.how_static": "PASS: trained against one process by tests/test_composition.py and "
                          "by `minimegatron run -n 4 verify --matrix`",
    "compose.how_measured": "trained here against one process",
    "compose.pairs": "Every pair of the {n} elements: {composing} compose, {refused} refused "
                     "({pairs}).",
    "compose.widest": "Widest grid that fits 8 ranks: {grid} with {features}.",
    # why plan() refuses (the same ValueError on every rank, before any message)
    "compose.unknown": "unknown composition element(s) {unknown}; choose from {elements}",
    "compose.zero": "ZeRO-1 and ZeRO-2 are two stages of one optimizer: a run has one "
                    "zero_stage",
    "compose.and": "{left} and {right}",
    "compose.schedules": "{names} are two pipeline schedules: a run has one (zbv is "
                         "zero-bubble's own two-chunk V, DualPipeV DualPipe's V-shaped half)",
    "compose.precisions": "float16, bf16 and fp8 are three precisions: a run has one dtype",
    "compose.fp8_balanced": "fp8 with the balanced router: one token routed differently in fp8 "
                            "flips the sign of an expert's load deviation and moves its bias "
                            "by a whole gamma, so the biases do not follow one process within "
                            "fp8's tolerance (verify's fp8 moe-balanced row leaves them out)",
    "compose.fsdp_hsdp": "HSDP is FSDP2 over (replicate, shard) groups: a run shards its "
                         "weights one way, name one of the two",
    "compose.fsdp_ep": "FSDP2 shards the dense GPT of Trainer3D; MoETrainer's experts live on "
                       "ep ranks and sync over edp (DDP or ZeRO-1/2): FSDP2 and HSDP do not "
                       "compose with ep (nor the balanced MoE router) here",
}
