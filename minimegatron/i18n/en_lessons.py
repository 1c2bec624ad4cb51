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
    "point.4.1.one_per_bucket": "each bucket is ONE all-reduce per step, over the dp group, of "
                                "its own slice of the flat gradient buffer (bucket.reduce: the "
                                "bucket's bytes, not the whole buffer's)",
    "point.4.1.one_per_bucket.hint": "call comm.iall_reduce once in _launch, on bucket.reduce "
                                     "(not the whole buffer, not bucket.grads), over self.group",
    "point.4.1.overlap": "the all-reduce is nonblocking: it is still in flight when _launch "
                         "returns, so backward goes on while it runs, and finish() waits for it",
    "point.4.1.overlap.hint": "keep the handle in bucket.handle and do not wait on it in _launch: "
                              "finish() waits",
    "point.4.1.mean_in_place": "after finish() every p.grad, still a view of the flat buffer, "
                               "holds the MEAN of the group's gradients: one process's gradient "
                               "on the whole batch (float64, float32, float16, groups of 2 and 4)",
    "point.4.1.mean_in_place.hint": "op=\"mean\" and inplace=True: the result must land in "
                                    "bucket.reduce itself, not in a new array, with no hard-coded "
                                    "group size",
    "point.4.1.same_update": "so every replica takes the same AdamW step: the loss and the "
                             "weights after each step equal one process's",
    "point.4.1.same_update.hint": "every rank must end backward with the same averaged "
                                  "p.grad, in the model's dtype: see the points above",
    "point.5.1.reduce_scatter": "the gradients travel as ONE reduce-scatter per step, over the "
                                "dp group, of the padded flat gradients (not an all-reduce: "
                                "twice the bytes)",
    "point.5.1.reduce_scatter.hint": "comm.reduce_scatter(flat.flat_grads(), self.group, "
                                     "op=\"mean\"), once",
    "point.5.1.own_slice": "self.grad_shard is this rank's slice r of the MEAN gradient of one "
                           "process on the whole batch, in the padded flat layout",
    "point.5.1.own_slice.hint": "op=\"mean\" over self.group; rank r keeps chunk r of the padded "
                                "flat gradients, nothing else",
    "point.5.1.freed": "then every full p.grad is freed (None) and the gradients hold only the "
                       "slice's bytes: that is the memory stage 2 saves",
    "point.5.1.freed.hint": "set p.grad = None for every p in flat.params, and keep no view of a "
                            "full-size gradient buffer in self.grad_shard",
    "point.5.2.own_update": "the optimizer's rule runs once per step on this rank's slice only: "
                            "update(self.shard, self.grad_shard, flat.state, self.step_count), "
                            "its state (AdamW's m and v) slice-sized",
    "point.5.2.own_update.hint": "call self.optimizer.update once, on self.shard itself (not a "
                                 "copy, not the full weights), with flat.state and "
                                 "self.step_count",
    "point.5.2.all_gather": "the updated slices travel as ONE all-gather per step over the dp "
                            "group, of this rank's slice (not an all-reduce of a zero-padded full "
                            "buffer: twice the bytes)",
    "point.5.2.all_gather.hint": "full = comm.all_gather(self.shard, self.group), once",
    "point.5.2.weights": "after every step every rank holds the full weights of one process "
                         "(ZeRO stages 1 and 2, float64 and float32, groups of 2 and 4)",
    "point.5.2.weights.hint": "update self.shard first, then all-gather that updated slice, in "
                              "the model's dtype, into full",
    "dp.raised": "rank {rank}, {run} on the group {group}: your code raised {error}",
    "dp.missing": "rank {rank}, {run}, step {step}: {what} is missing (None)",
    "dp.shape": "rank {rank}, {run}, step {step}: {what} has shape {got}, expected {want}",
    "dp.dtype": "rank {rank}, {run}, step {step}: {what} is {got}, expected {want}",
    "dp.differs": "rank {rank}, {run}, step {step}: {what} differs from one process by up to "
                  "{diff:.3g} (tolerance {tol:.0e}); at index {index} got {got:.6g}, expected "
                  "{want:.6g} (got / expected ~ {ratio:.3g} overall)",
    "dp.loss_differs": "{run} on the group {group}, step {step}: the mean loss is {got:.10g}, one "
                       "process {want:.10g} (tolerance {tol:.0e})",
    "dp.bucket_calls": "rank {rank}, {run}, step {step}: the buckets made {got}; expected "
                       "{count} all_reduce on the group {group}, one per bucket, of {want} "
                       "bytes",
    "dp.not_in_flight": "rank {rank}, {run}, step {step}: {done} of {count} bucket all-reduces "
                        "had already finished when _launch returned (it waited)",
    "dp.grad_copies": "rank {rank}, {run}: after finish() p.grad of {names} is not a view of "
                      "the flat gradient buffer (a copy)",
    "dp.grad_calls": "rank {rank}, {run}, step {step}: reduce_gradients made {got}; expected ONE "
                     "reduce_scatter on the group {group} of {nbytes} bytes",
    "dp.grad_shard": "self.grad_shard (values {start} .. {end} of the {padded} padded ones)",
    "dp.grads_alive": "rank {rank}, {run}, step {step}: {count} p.grad still held after "
                      "reduce_gradients ({names} ...)",
    "dp.grad_memory": "rank {rank}, {run}, step {step}: the gradients hold {got} bytes after "
                      "reduce_gradients; the slice alone is {want} bytes (a view keeps its whole "
                      "buffer alive)",
    "dp.update_count": "rank {rank}, {run}, step {step}: self.optimizer.update ran {count} "
                       "time(s); expected once",
    "dp.update_args": "rank {rank}, {run}, step {step}: update got param is self.shard {param} "
                      "(shape {shape}, expected [{length}]), grad is self.grad_shard {grad}, "
                      "state is flat.state {state}, step {got} (expected {want})",
    "dp.state_shape": "rank {rank}, {run}: the optimizer state has shapes {got}; expected "
                      "[{length}] each (this rank's slice)",
    "dp.gather_calls": "rank {rank}, {run}, step {step}: the update made {got}; expected ONE "
                       "all_gather on the group {group} of {nbytes} bytes",
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
