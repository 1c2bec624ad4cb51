"""English texts of every exercise's lesson points (exercise_checks/lesson.py).

For each point NAME of exercise ID: ``point.ID.NAME`` says what it teaches, in
the words of exercises/ID.md, and ``point.ID.NAME.hint`` what to do when it is
missed; the other keys are the judges' messages, by exercise group. Same keys and
{fields} in en_lessons.py and ko_lessons.py (tests/test_i18n.py).
"""

MESSAGES = {
    # 1.x autodiff (exercise_checks/autodiff.py)
    "point.1.1.transpose": "for Z = X @ A: dL/dX = dL/dZ @ A^T and dL/dA = X^T @ dL/dZ, each "
                           "with its input's shape and dtype (float32 stays float32)",
    "point.1.1.transpose.hint": "check the shapes: (n, m)(m, k) = (n, k) for dL/dX and "
                                "(k, n)(n, m) = (k, m) for dL/dA",
    "point.1.1.batched": "with batches the transpose swaps the last two axes only, and a batch "
                         "axis that was broadcast is summed away in BOTH gradients (unbroadcast)",
    "point.1.1.batched.hint": "xp.swapaxes(a2, -1, -2), not .T (which reverses every axis); "
                              "then unbroadcast(..., x2.shape) and unbroadcast(..., a2.shape)",
    "point.1.1.vectors": "a vector X or A (1-D) gets a 1-D gradient back: x.shape and a.shape, "
                         "not the matrices x2, a2 it was computed with",
    "point.1.1.vectors.hint": "reshape each result to x.shape and a.shape at the end",
    "point.1.1.needed": "only the gradients that are needed are computed: None for an input "
                        "whose ctx.needs_input_grad is False",
    "point.1.1.needed.hint": "compute gx only if ctx.needs_input_grad[0] and ga only if "
                             "ctx.needs_input_grad[1]; leave the other None",
    "point.1.2.chain": "dL/dx = dL/dz * z: grad_out times the output the forward saved, for any "
                       "grad_out (not only ones)",
    "point.1.2.chain.hint": "return grad_out * ctx.saved[0]",
    "point.1.2.float32": "a float32 input gets a float32 gradient with the same values",
    "point.1.2.float32.hint": "compute with grad_out and ctx.saved[0] only: no float64 arrays "
                              "or casts",
    "point.1.2.no_overwrite": "backward returns a new array and leaves grad_out and the saved "
                              "output as they were (the saved z IS the forward's result)",
    "point.1.2.no_overwrite.hint": "no *=, += or out= on grad_out or ctx.saved[0]: "
                                   "return grad_out * ctx.saved[0]",
    "point.1.3.derivative": "dL/dx = dL/dz * (1 - z^2), with z = tanh(x) the output the forward "
                            "saved",
    "point.1.3.derivative.hint": "z = ctx.saved[0]; return grad_out * (1 - z ** 2)",
    "point.1.3.float32": "a float32 input gets a float32 gradient with the same values",
    "point.1.3.float32.hint": "xp.ones(shape) is float64: write 1 - z ** 2, which keeps z's "
                              "dtype",
    "point.1.3.no_overwrite": "backward returns a new array and leaves grad_out and the saved "
                              "output as they were (the saved z IS the forward's result)",
    "point.1.3.no_overwrite.hint": "no *=, += or out= on grad_out or ctx.saved[0]: build "
                                   "1 - z ** 2 as a new array",
    "point.1.4.route": "the gradient of z = max x goes to the entry that was the maximum, times "
                       "grad_out; every other entry gets 0",
    "point.1.4.route.hint": "multiply the saved weights ctx.saved[0] by grad_out given back the "
                            "reduced axes",
    "point.1.4.ties": "when k entries tie for the maximum, each gets 1/k of the gradient",
    "point.1.4.ties.hint": "ctx.saved[0] already holds 1/k at each tied maximum: use it as it is, "
                           "not (ctx.saved[0] > 0)",
    "point.1.4.axes": "grad_out gets back the axes the max removed, for every axis (None, int, "
                      "negative, tuple) and keepdims, before it meets x's shape",
    "point.1.4.axes.hint": "_expand_reduced(grad_out, *ctx.args) handles every form",
    "point.1.5.leading": "the axes broadcasting put in front are summed away, all of them: "
                         "grad (2, 3, 4) to shape (4,) sums axes 0 and 1",
    "point.1.5.leading.hint": "grad.ndim - len(shape) leading axes: sum over every one",
    "point.1.5.stretched": "an axis where shape has size 1 but grad does not is summed and kept "
                           "with size 1 (keepdims=True)",
    "point.1.5.stretched.hint": "grad.sum(axis=..., keepdims=True) over those axes, so the result "
                                "has exactly shape",
    "point.1.5.mixed": "when both happened (grad (2, 3, 4) to shape (3, 1)) both are undone, "
                       "also for b in a + b during training",
    "point.1.5.mixed.hint": "sum the leading axes AND the stretched ones; after the leading axes "
                            "are gone, shape's axis i is grad's axis i",
    "point.1.5.float32": "a float32 gradient is summed down to a float32 result",
    "point.1.5.float32.hint": "sum in grad's own dtype (no dtype=xp.float64, no float64 "
                              "zeros to add into)",
    "point.1.6.spread": "dL/dx_i is the dL/dz of the output entry x_i was summed into: "
                        "grad_out spread back over x's shape",
    "point.1.6.spread.hint": "give grad_out back the reduced axes, then broadcast it to x's "
                             "shape: _expand_reduced(grad_out, *ctx.args)",
    "point.1.6.axes": "every axis (None, int, negative, tuple) with or without keepdims gives "
                      "x's shape, each entry from its own output entry",
    "point.1.6.axes.hint": "put the removed axes back (all of them, only when keepdims is "
                           "False), then xp.broadcast_to(grad, shape)",
    "point.1.6.float32": "a float32 input gets a float32 gradient",
    "point.1.6.float32.hint": "broadcast grad_out itself: xp.ones(shape) * grad is float64",
    "ad.case_count": "the check recorded {got} case(s), expected {want}",
    "ad.raised": "{case}: your backward raised {error}",
    "ad.count": "{case}: your backward returned {got} gradient(s), expected {want}",
    "ad.none": "{case}: {name} is None, but that input needs a gradient",
    "ad.dtype": "{what}: dtype {got}, expected {want} (the input's dtype)",
    "ad.not_needed": "{case}: {name} was computed, but ctx.needs_input_grad says that input "
                     "needs none (return None for it)",
    "ad.grad_out_changed": "{case}: after your backward grad_out holds other values: it was "
                           "changed in place",
    "ad.saved_changed": "{case}: after your backward the saved output (the forward's result) "
                        "holds other values: it was changed in place",
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
