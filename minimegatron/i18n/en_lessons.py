"""English texts of every exercise's lesson points (exercise_checks/lesson.py).

For each point NAME of exercise ID: ``point.ID.NAME`` says what it teaches, in
the words of exercises/ID.md, and ``point.ID.NAME.hint`` what to do when it is
missed; the other keys are the judges' messages, by exercise group. Same keys and
{fields} in en_lessons.py and ko_lessons.py (tests/test_i18n.py).
"""

MESSAGES = {
    # 1.x autodiff (exercise_checks/autodiff.py)
    # 2.x and 6.1 schedules (exercise_checks/schedules.py)
    # 3.x tensor parallel (exercise_checks/tensor_parallel.py)
    # 6.2 sequence parallel (exercise_checks/sequence_parallel.py)
    # 4.1 and 5.x data parallel (exercise_checks/data_parallel.py)
    # 7.1 mixed precision (exercise_checks/mixed_precision.py)
    "point.7.1.group_flag": "the overflow flag is ONE all-reduce (op max) of a one-element "
                            "flag per update, over the group that holds the gradients",
    "point.7.1.group_flag.hint": "all-reduce `local` with op=\"max\" over `group` (not the "
                                 "world, not a gather), once per update, before you decide",
    "point.7.1.together": "an inf on ANY rank of the group makes EVERY rank of it skip the "
                          "step, and only that group",
    "point.7.1.together.hint": "decide found_inf from the reduced flag, not from this rank's "
                               "own gradients",
    "point.7.1.backoff": "on an overflow the scale becomes max(scale * backoff_factor, "
                         "min_scale): the settings, never a constant",
    "point.7.1.backoff.hint": "use self.backoff_factor and self.min_scale (not 0.5 and 1), and "
                              "reset clean_steps to 0",
    "point.7.1.growth": "after growth_interval clean steps IN A ROW the scale is multiplied by "
                        "growth_factor, and the count starts again after a growth and after "
                        "an overflow",
    "point.7.1.growth.hint": "count clean steps in self.clean_steps; when it reaches "
                             "self.growth_interval multiply by self.growth_factor and set it "
                             "back to 0; an overflow sets it to 0 too",
    "point.7.1.zero_skip": "in training (ZeRO-2, float16) a skipped step leaves every weight "
                           "bitwise unchanged on every rank",
    "point.7.1.zero_skip.hint": "update() must return True on every rank when any rank "
                                "overflowed, so that no rank steps",
    "mp.flag_calls": "rank {rank}: {steps} updates made {count} collective(s) ({got}); "
                     "expected {steps} all_reduce on the group {group}",
    "mp.flag_bytes": "the flag all-reduce moved {nbytes} bytes: one number is enough",
    "mp.skip_step": "rank {rank} (group {group}), step {step}: skipped {got}, expected {want}",
    "mp.backoff_wrong": "after the overflow at step {step} (scale {before}) the scale is {got}, "
                        "expected {want} with {settings}",
    "mp.scale_wrong": "step {step}: scale {got}, expected {want} with {settings}",
    "mp.zero_skip_wrong": "rank {rank}: ZeRO-2 in float16, an inf on one rank at step 1: "
                          "skipped per step {got} (expected [False, True, False, False]); "
                          "weights unchanged at step 1: {unchanged}",
    "mp.zero_scales": "ZeRO-2 in float16: the loss scale per step {got}, expected "
                      "[256.0, 256.0, 128.0, 128.0]",
}
