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
    "point.1.1.twice": "backward can be called again on the same ctx, as the zero-bubble "
                       "W step does (B asks for dL/dX, W for dL/dA, then both): the right "
                       "gradients every time",
    "point.1.1.twice.hint": "read ctx.saved and change nothing in ctx, x or a (no x.shape = "
                            "..., no freeing ctx.saved): a second call must find them as they "
                            "were",
    "point.1.2.chain": "dL/dx = dL/dz * z: grad_out times the output the forward saved, for any "
                       "grad_out (not only ones)",
    "point.1.2.chain.hint": "the chain rule: dL/dx = dL/dz * dz/dx, and for z = e^x, dz/dx is the "
                            "output z you saved in forward",
    "point.1.2.float32": "a float32 input gets a float32 gradient with the same values",
    "point.1.2.float32.hint": "compute with grad_out and ctx.saved[0] only: no float64 arrays "
                              "or casts",
    "point.1.2.no_overwrite": "backward returns a new array and leaves grad_out and the saved "
                              "output as they were (the saved z IS the forward's result)",
    "point.1.2.no_overwrite.hint": "no *=, += or out= on grad_out or ctx.saved[0]: build the "
                                   "gradient as a new array",
    "point.1.3.derivative": "dL/dx = dL/dz * (1 - z^2), with z = tanh(x) the output the forward "
                            "saved",
    "point.1.3.derivative.hint": "d tanh(x)/dx = 1 - tanh(x)^2, and tanh(x) is the output saved in "
                                 "forward; then the chain rule with grad_out",
    "point.1.3.float32": "a float32 (or float16) input gets a gradient of its own dtype with "
                         "the same values",
    "point.1.3.float32.hint": "xp.ones(shape) is float64, and a cast names one dtype: write "
                              "1 - z ** 2, which keeps z's dtype",
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
    "point.1.6.float32": "a float32 (or float16) input gets a gradient of its own dtype",
    "point.1.6.float32.hint": "broadcast grad_out itself: xp.ones(shape) * grad is float64, "
                              "and a cast names one dtype",
    "ad.case_count": "the check recorded {got} case(s), expected {want}",
    "ad.raised": "{case}: your backward raised {error}",
    "ad.strided": ", X, A and grad_out not C-contiguous",
    "ad.twice": ", backward again on one ctx",
    "ad.call": "backward call {n}: ",
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
    "point.2.1.forwards_first": "stage k runs all M forwards, micro-batches 0..M-1, then all "
                                "M backwards in the same order, so it holds the activations "
                                "of all M micro-batches at once",
    "point.2.1.forwards_first.hint": "two loops: forward_actions for i in 0..M-1, then "
                                     "backward_actions for i in 0..M-1 (not reversed, not one "
                                     "micro-batch at a time), for any K and M",
    "point.2.1.messages": "each forward receives its activation from stage k-1 just before and "
                          "sends it to stage k+1 just after, each backward the same with its "
                          "gradient the other way: one message per micro-batch and boundary, "
                          "none past the first or last stage, and no stage waits forever",
    "point.2.1.messages.hint": "build every step with forward_actions(K, k, i) and "
                               "backward_actions(K, k, i); they add the receive and the send only "
                               "where a neighbour is",
    "point.2.1.bubble": "the simulated bubble is (K-1)/(M+K-1) of the schedule, with a "
                        "backward as long as a forward and twice as long",
    "point.2.1.bubble.hint": "no step may start before its input has arrived, and none may "
                             "wait longer: receive, compute, send, in micro-batch order",
    "point.2.2.warmup": "stage k warms up with min(K-k-1, M) forwards before it starts "
                        "alternating, so it holds at most min(M, K-k) micro-batches of "
                        "activations (GPipe holds M)",
    "point.2.2.warmup.hint": "stage k warms up with as many forwards as there are stages after it "
                             "(the last stage: none), never more than M",
    "point.2.2.alternate": "after the warm-up, one forward and then one backward while "
                           "forwards are left (the backward of the oldest micro-batch still "
                           "waiting), then the backwards left, both in order 0..M-1",
    "point.2.2.alternate.hint": "in step i run the forward of micro-batch warmup + i, THEN the "
                                "backward of micro-batch i; after the loop, the backwards "
                                "M-warmup..M-1 (the cool-down)",
    "point.2.2.messages": "each forward receives its activation from stage k-1 just before and "
                          "sends it to stage k+1 just after, each backward the same with its "
                          "gradient the other way: one message per micro-batch and boundary, "
                          "none past the first or last stage, and no stage waits forever",
    "point.2.2.messages.hint": "build every step with forward_actions(K, k, i) and "
                               "backward_actions(K, k, i), whole: a receive placed before another "
                               "step's send makes the neighbour wait",
    "point.2.2.bubble": "the simulated bubble is GPipe's, (K-1)/(M+K-1), with a backward as "
                        "long as a forward and twice as long",
    "point.2.2.bubble.hint": "a warm-up too short or a step out of order makes a stage wait: "
                             "follow warm-up, pairs, cool-down exactly",
    "point.6.1.warmup": "rank k of K with v chunks runs (K-k-1)*2 + (v-1)*K chunk forwards "
                        "before its first backward, so it holds one more chunk activation "
                        "than that at most",
    "point.6.1.warmup.hint": "(v-1)*K steps carry micro-batch 0 to the last chunk, and every rank "
                             "after k counts twice (there and back)",
    "point.6.1.capped": "the warm-up is never more than all M*v chunk forwards: with few "
                        "micro-batches every (micro-batch, chunk) pair still runs forward once "
                        "and backward once",
    "point.6.1.capped.hint": "take min(..., total): total = M*v is already set",
    "point.6.1.runs": "with this warm-up each chunk backward comes after its own forward and "
                      "every receive finds its send: the lists of all ranks run to the end "
                      "(simulated)",
    "point.6.1.runs.hint": "with another count two ranks can each wait for a message the "
                           "other sends only later: use the formula, nothing else",
    "point.6.1.bubble": "the bubble shrinks by v: the simulated idle / busy is (1/v)(K-1)/M",
    "point.6.1.bubble.hint": "a warm-up too short makes a rank wait for gradients: count it as the "
                             "warm-up point says, capped at total",
    "sched.where": "{name}(K={stages}, M={micro}) stage {stage}",
    "sched.il_where": "interleaved(K={stages}, M={micro}, v={chunks}) rank {stage}",
    "sched.too_long": "{where}: {count} actions, more than ten times what the schedule needs "
                      "({most} at most)",
    "sched.bad_action": "{where}: {item} is not an Action (op, micro-batch, chunk)",
    "sched.stage_count": "K={stages}: {got} lists of actions, one per stage expected",
    "sched.deadlock": "K={stages}, M={micro}, v={chunks}, simulated: {error}",
    "sched.order": "{where}: forwards (F) and backwards (B) in the order {got}; expected "
                   "{want}\n  actions: {actions}",
    "sched.held": "{where}: {got} micro-batches of activations held at once, expected {want}"
                  "\n  actions: {actions}",
    "sched.warmup": "{where}: {got} forwards before the first backward, expected {want} (a "
                    "warm-up of {warmup}, then the first forward of the pairs)\n  actions: "
                    "{actions}",
    "sched.messages": "{where}: action {index} is {got}, expected {want}\n  from there: "
                      "{actions}",
    "sched.message_count": "{where}: {op} for micro-batches {got}, expected {want}",
    "sched.bubble": "K={stages}, M={micro}, a backward {t_backward} times a forward: simulated "
                    "bubble {got}, expected (K-1)/(M+K-1) = {want}",
    "sched.il_bubble": "K={stages}, M={micro}, v={chunks}, a backward {t_backward} times a "
                       "forward: simulated idle / busy {got}, expected (1/v)(K-1)/M = {want}",
    "sched.il_warmup": "{where}: {got} warm-up chunk forwards before the first pair "
                       "(activations held at most: {held}), expected {want}\n  actions: "
                       "{actions}",
    "sched.il_pairs": "{where}: {count} chunk {op}s, expected {want}, each (micro-batch, chunk) "
                      "pair once; for example {example}",
    "sched.settings": "the schedule was run for the settings {got}, not the grader's {want}",
    "sched.il_backward_first": "{where}: {step} comes before its own forward\n  actions: "
                               "{actions}",
    "sched.il_capped": "{where}: the formula gives {formula}, more than all {total} chunk "
                       "forwards; got a warm-up of {got}, expected {total}",
    # 3.x tensor parallel (exercise_checks/mappings.py, linear.py, tp_problem.py)
    "point.3.1.sum": "f's backward gives every rank the SUM of the group's dL/dY (its forward is "
                     "the identity), in the dtype of x",
    "point.3.1.sum.hint": "all-reduce grad_out over ctx.group (not the world) and return it with "
                          "None for the group",
    "point.3.1.one_all_reduce": "f costs ONE all-reduce of dL/dY over the tp group in backward, "
                                "and nothing in forward",
    "point.3.1.one_all_reduce.hint": "one comm.all_reduce(grad_out, ctx.group): not an all-gather "
                                     "then a sum, not a reduce then a broadcast, no cast to "
                                     "another dtype",
    "point.3.1.grad_out_kept": "f's backward leaves the incoming gradient as it is: another "
                               "branch that shares that array keeps its own value",
    "point.3.1.grad_out_kept.hint": "return the all-reduce's new array; do not reduce in place "
                                    "(inplace=True) into grad_out, nor into a buffer kept from "
                                    "call to call (out=)",
    "point.3.2.sum": "g's forward gives every rank the SUM of the group's x, in the dtype of x "
                     "(on one rank: x itself)",
    "point.3.2.sum.hint": "all-reduce x over group (not the world), or return x when "
                          "group.size == 1",
    "point.3.2.one_all_reduce": "g costs ONE all-reduce of x over the tp group in forward, "
                                "nothing in backward, and nothing at all on a group of one rank",
    "point.3.2.one_all_reduce.hint": "one comm.all_reduce(x, group), none when group.size == 1: "
                                     "not an all-gather then a sum",
    "point.3.2.input_kept": "g returns a new array: its input, this rank's partial product "
                            "X_i A_i, keeps its value",
    "point.3.2.input_kept.hint": "do not all-reduce in place (inplace=True) into x, nor into a "
                                 "buffer kept from call to call (out=)",
    "point.3.3.columns": "rank r keeps columns r*w .. (r+1)*w of the master weight and of the "
                         "bias, w = out_features / tp, for any tp (2, 1 and 4 ranks)",
    "point.3.3.columns.hint": "w = out_features / tp: rank r of the tp group keeps columns r*w .. "
                              "(r+1)*w, from the group's rank and size, never a constant",
    "point.3.3.output": "each rank computes Y_i = X A_i + b_i, its own columns of Y, and the "
                        "gathered Y is X A + b (worked example: Y_1 = [74, 258]^T, "
                        "Y_2 = [98, 346]^T)",
    "point.3.3.output.hint": "the columns of the weight and of the bias must be the same slice, "
                             "in rank order",
    "point.3.3.memory": "a rank holds its shard only, in*out/tp numbers of the weight and "
                        "out/tp of the bias: no full master weight is kept on every rank",
    "point.3.3.memory.hint": "slice the master weight and let it go: keep no reference to weight "
                             "(or a copy of it) in self or anywhere else",
    "point.3.4.rows": "rank r keeps rows r*h .. (r+1)*h of the master weight and the whole bias, "
                      "h = in_features / tp, for any tp (2, 1 and 4 ranks)",
    "point.3.4.rows.hint": "h = in_features / tp: rank r of the tp group keeps rows r*h .. "
                           "(r+1)*h, from the group's rank and size, never a constant",
    "point.3.4.output": "rank r's rows A_i meet its columns X_i of X: the partial products "
                        "X_i A_i sum to X A (worked example: [[11, 15], [95, 131]] + "
                        "[[63, 83], [163, 215]])",
    "point.3.4.output.hint": "split the in_features axis (the rows), in rank order, as "
                            "scatter_to_tp splits X's columns",
    "point.3.5.partial": "each rank first computes its partial product X_i A_i (kept in "
                         "last_partial, no bias, not yet summed)",
    "point.3.5.partial.hint": "keep this rank's own product X_i A_i in self.last_partial, before "
                              "anything sums it",
    "point.3.5.sum": "g sums the partial products: every rank gets Y = X A + b (the bias once), "
                     "and the gradients flow back through g (worked example: "
                     "Y = [[74, 98], [258, 346]])",
    "point.3.5.sum.hint": "sum the partial products through g (the autograd function), so that "
                          "backward works; the bias is added after the block",
    "point.3.5.one_all_reduce": "the row-parallel layer costs ONE all-reduce of Y over the tp "
                                "group in forward and nothing in backward",
    "point.3.5.one_all_reduce.hint": "call reduce_from_tp once on the partial product, over "
                                     "self.tp_group (not the world, not a gather)",
    "point.3.5.every_forward": "every forward of the same layer computes its own X_i A_i "
                               "(once, kept in last_partial) and its own Y, not the first "
                               "forward's",
    "point.3.5.every_forward.hint": "compute the partial product from this call's x each time: "
                                    "cache nothing from one forward to the next",
    "point.3.5.memory": "after many forwards the layer keeps ONE partial product, the latest "
                        "(last_partial), beside its shard and the bias: not every one",
    "point.3.5.memory.hint": "replace self.last_partial on each forward; keep no list, global or "
                             "copy of the earlier partial products",
    "tp.no_collective": "no collective",
    "tp.forward": "forward",
    "tp.backward": "backward",
    "tp.alone": "on a group of one rank",
    "tp.call": "{op} over {group} of {nbytes} B ({sent} B sent)",
    "tp.calls_wrong": "rank {rank}, {phase}: the collectives were [{got}]; expected [{want}]",
    "tp.dtype_wrong": "rank {rank}: {what} is {got}, expected {want} (the dtype of the input)",
    "tp.f_forward": "f(x) ({dtype}): identity",
    "tp.f_backward": "dL/dX ({dtype}): the sum of dL/dY over the ranks {group}",
    "tp.f_shared": "the dL/dY handed to f's backward ({dtype}), still held by its caller",
    "tp.f_reused": "dL/dX of f ({dtype}), held while a second f of the same shape ran "
                   "(a buffer reused across calls is overwritten)",
    "tp.g_forward": "g(x) ({dtype}): the sum of x over the ranks {group}",
    "tp.g_backward": "dL/dx ({dtype}): g's backward is the identity",
    "tp.g_alone": "g(x) on a group of one rank: x",
    "tp.g_input": "x after g(x) ({dtype}): this rank's own x",
    "tp.g_reused": "g(x) ({dtype}), held while a second g of the same shape ran (a "
                   "buffer reused across calls is overwritten)",
    "tp.shard": "{name} (tp={tp}), rank {r} of the group: {what}",
    "tp.layer": "{name}: {what}",
    "tp.last_partial": "last_partial ({dtype}): X_i A_i",
    "tp.A_i": "A_{n} (this rank's block of A)",
    "tp.Y_i": "Y_{n} (this rank's local product)",
    "tp.Y": "Y = X A (combined)",
    "tp.dX": "dL/dX for L = sum(Y)",
    "tp.dA_i": "dL/dA_{n}",
    "tp.column": "column",
    "tp.row": "row",
    "tp.worked": "worked example, {split} split: {name}",
    # 6.2 sequence parallel (exercise_checks/sequence_parallel.py)
    "point.6.2.tokens": "g-bar gives rank r tokens r*T/t .. (r+1)*T/t of the SUM of the group's "
                        "x, shape (B, T/t, D) in x's dtype (on one rank: x itself)",
    "point.6.2.tokens.hint": "a reduce-scatter over the tp group (not the world), split along the "
                             "sequence axis SEQ (not the batch, not the hidden axis), into a new "
                             "array (no buffer kept from call to call)",
    "point.6.2.one_reduce_scatter": "g-bar costs ONE reduce-scatter of x over the tp group (an "
                                    "all-reduce then a slice moves twice the bytes), and nothing "
                                    "on a group of one rank",
    "point.6.2.one_reduce_scatter.hint": "one comm.reduce_scatter, none when group.size == 1: "
                                         "not an all-reduce followed by seq_chunk",
    "point.6.2.layer": "in a sequence-parallel RowParallelLinear rank r gets its tokens of "
                       "X A + b, and the gradients equal one process's",
    "point.6.2.layer.hint": "g-bar replaces g after the partial products: sum over the group, "
                            "then keep this rank's tokens",
    "sp.forward": "g-bar(x) ({dtype}), x of shape {shape} per rank: this rank's tokens of the "
                  "sum over the ranks {group}",
    "sp.backward": "dL/dx ({dtype}): the all-gather of the ranks' dL/dy along the sequence",
    "sp.alone": "g-bar(x) on a group of one rank: x",
    "sp.reused": "g-bar(x) ({dtype}), held while a second g-bar of the same shape ran "
                 "(a buffer reused across calls is overwritten)",
    # 4.1 and 5.x data parallel (exercise_checks/data_parallel.py, zero.py, dp_problem.py)
    "point.4.1.one_per_bucket": "each bucket is ONE all-reduce per step, over the dp group, of "
                                "its own slice of the flat gradient buffer (bucket.reduce: the "
                                "bucket's bytes, not the whole buffer's)",
    "point.4.1.one_per_bucket.hint": "call comm.iall_reduce once in _launch, on bucket.reduce "
                                     "(not the whole buffer, not bucket.grads), over self.group",
    "point.4.1.overlap": "the all-reduce is nonblocking: it is still in flight when _launch "
                         "returns, so backward goes on while it runs, and finish() waits for it",
    "point.4.1.overlap.hint": "keep the handle in bucket.handle and do not wait on it, nor on an "
                              "earlier bucket's, in _launch: finish() waits for them all",
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
    "point.4.1.freed": "after finish() nothing of the step is kept: every bucket's handle is "
                       "gone, and a step leaves no new gradient arrays behind",
    "point.4.1.freed.hint": "keep only bucket.handle (finish() waits for it and drops it): no "
                            "list of handles, no copy of the gradients kept for later",
    "point.5.1.reduce_scatter": "the gradients travel as ONE reduce-scatter per step, over the "
                                "dp group, of the padded flat gradients (not an all-reduce: "
                                "twice the bytes)",
    "point.5.1.reduce_scatter.hint": "one reduce-scatter of the flat gradients over self.group: "
                                     "each rank gets only its chunk of the mean, for half the "
                                     "traffic of an all-reduce",
    "point.5.1.own_slice": "self.grad_shard is this rank's slice r of the MEAN gradient of one "
                           "process on the whole batch, in the padded flat layout",
    "point.5.1.own_slice.hint": "op=\"mean\" over self.group; rank r keeps chunk r of the padded "
                                "flat gradients, nothing else",
    "point.5.1.freed": "then every full p.grad is freed (None) and the gradients hold only the "
                       "slice's bytes: that is the memory stage 2 saves",
    "point.5.1.freed.hint": "set p.grad = None for every p in flat.params, and keep no view of a "
                            "full-size gradient buffer in self.grad_shard, nor the full "
                            "gradients in an attribute of your own",
    "point.5.2.own_update": "the optimizer's rule runs once per step on this rank's slice only: "
                            "update(self.shard, self.grad_shard, flat.state, self.step_count), "
                            "its state (AdamW's m and v) slice-sized",
    "point.5.2.own_update.hint": "call self.optimizer.update once, on self.shard itself (not a "
                                 "copy, not the full weights), with flat.state and "
                                 "self.step_count",
    "point.5.2.all_gather": "the updated slices travel as ONE all-gather per step over the dp "
                            "group, of this rank's slice (not an all-reduce of a zero-padded full "
                            "buffer: twice the bytes)",
    "point.5.2.all_gather.hint": "one all-gather of the updated slices over self.group gives every "
                                 "rank the full flat weights",
    "point.5.2.weights": "after every step every rank holds the full weights of one process, "
                         "one copy of them (ZeRO stages 1 and 2, float64 and float32, groups "
                         "of 2 and 4)",
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
    "dp.not_in_place": "rank {rank}, {run}, step {step}: {count} bucket(s) all-reduced "
                       "another array (a copy, the result put back into bucket.reduce): the "
                       "all-reduce must read and write bucket.reduce itself (inplace=True)",
    "dp.grad_copies": "rank {rank}, {run}: after finish() p.grad of {names} is not a view of "
                      "the flat gradient buffer (a copy)",
    "dp.grad_calls": "rank {rank}, {run}, step {step}: reduce_gradients made {got}; expected ONE "
                     "reduce_scatter on the group {group} of {nbytes} bytes",
    "dp.grad_shard": "self.grad_shard (values {start} .. {end} of the {padded} padded ones)",
    "dp.grads_alive": "rank {rank}, {run}, step {step}: {count} p.grad still held after "
                      "reduce_gradients ({names} ...)",
    "dp.grad_memory": "rank {rank}, {run}, step {step}: the gradients hold {got} bytes after "
                      "reduce_gradients; the slice alone is {want} bytes (a view keeps its whole "
                      "buffer alive, and so does an attribute that keeps the full gradients)",
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
    "point.7.1.together": "an inf, -inf or NaN in any gradient on ANY rank of the group "
                          "makes EVERY rank of it skip the step, and only that group, also when "
                          "several ranks overflow at once",
    "point.7.1.together.hint": "set local from all_finite(grads) (every array; NaN counts as "
                               "much as inf), then decide found_inf from the reduced flag, not "
                               "from this rank's own gradients",
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
    "mp.skip_poison": "rank {rank} (group {group}), step {step}: not skipped, but rank "
                      "{holder} of the group had {what} in grads[{index}]",
    "mp.skip_step": "rank {rank} (group {group}), step {step}: skipped {got}, expected {want}",
    "mp.backoff_wrong": "after the overflow at step {step} (scale {before}) the scale is {got}, "
                        "expected {want} with {settings}",
    "mp.scale_wrong": "step {step}: scale {got}, expected {want} with {settings}",
    "mp.zero_skip_wrong": "rank {rank}: ZeRO-2 in float16, an inf on one rank at step 1: "
                          "skipped per step {got} (expected [False, True, False, False]); "
                          "weights unchanged at step 1: {unchanged}",
    "mp.zero_scales": "ZeRO-2 in float16: the loss scale per step {got}, expected "
                      "[256.0, 256.0, 128.0, 128.0]",
    # 8.x context parallel (exercise_checks/context_parallel.py)
    "point.8.1.union": "merging the (O, lse) of two pieces over disjoint keys gives attention "
                       "over all their keys: O and lse",
    "point.8.1.union.hint": "new_lse = log(e^lse + e^block_lse); each piece's output is "
                            "weighted by its share of the softmax mass, e^(lse - new_lse) and "
                            "e^(block_lse - new_lse): rescale the old output too",
    "point.8.1.stable": "lse rows of +-1000 and pieces 1000 apart give finite, right results: "
                        "shift by the larger lse of EACH row",
    "point.8.1.stable.hint": "log(e^a + e^b) overflows at a = 710: compute top = "
                             "xp.maximum(lse, block_lse) (per row, not of the whole array) and "
                             "new_lse = top + log(e^(lse - top) + e^(block_lse - top))",
    "point.8.1.chain": "folding 4 pieces one at a time, in any order, gives attention over all "
                       "keys, and the pieces handed in are not changed",
    "point.8.1.chain.hint": "return the MERGED lse with the merged output (the next piece "
                            "merges against it), and build new arrays instead of writing into "
                            "out or block_out",
    "point.8.1.ring": "ring attention (rank i merges i blocks) on cp groups of 2 and 4 equals "
                      "one process's causal attention, forward and dQ, dK, dV",
    "point.8.1.ring.hint": "the backward reuses the final lse of the forward: the merge must "
                           "return the lse over every key seen so far",
    "point.8.2.mirror": "rank i holds chunk i, then chunk 2cp-1-i, of 2cp chunks of S/(2cp) "
                        "tokens, each in increasing order, for any cp",
    "point.8.2.mirror.hint": "size = steps // (2 * cp); the early chunk is rank, its mirror "
                             "2 * cp - 1 - rank (not a constant that only fits cp = 2); early "
                             "chunk first",
    "point.8.2.partition": "the ranks' positions together are 0..S-1, every token exactly "
                           "once, S/cp per rank",
    "point.8.2.partition.hint": "chunk c holds positions c*size .. (c+1)*size - 1, and the "
                                "mirror of chunk i is 2*cp - 1 - i (the last chunk is 2cp-1)",
    "point.8.2.balance": "every rank computes the same number of causal (query, key) pairs",
    "point.8.2.balance.hint": "a contiguous split gives rank cp-1 the most work: pair an early "
                              "chunk with its mirror from the end",
    "point.8.2.attention": "all-gather attention with the zigzag split on cp groups of 2 and 4 "
                           "equals one process's causal attention, forward and dQ, dK, dV",
    "point.8.2.attention.hint": "positions must cut every sequence the same way on every rank: "
                                "a partition of 0..S-1 into S/cp tokens each",
    "point.8.2.callers": "two callers share nothing: each call returns an array of its own, so "
                         "a caller that shifts its positions in place, or the next call, "
                         "changes no one else's",
    "point.8.2.callers.hint": "build the positions anew on every call: no array kept in a "
                              "global or a cache and handed out again, no buffer refilled",
    "cp.not_finite": "{what}: not finite (inf or NaN)",
    "cp.two_pieces": "two pieces",
    "cp.far_apart": "lse rows near {lse}, pieces up to 1000 apart",
    "cp.four_pieces": "4 pieces (keys cut at {cuts}) merged in the order {order}",
    "cp.pieces_changed": "merge changed the arrays it was handed (out or block_out, lse or "
                         "block_lse)",
    "cp.against_serial": "{what} with cp = {cp}, against one process",
    "cp.not_run": "cp = {cp}: not run, the positions do not split the sequence into a "
                  "partition",
    "cp.raised": "positions(S={steps}, rank={rank}, cp={cp}) raised {error}",
    "cp.callers_held": "positions(S={steps}, rank={rank}, cp={cp}), held while every other "
                       "rank's was asked for: {got}; alone it gave {want} (a buffer shared by "
                       "calls)",
    "cp.callers_again": "positions(S={steps}, rank={rank}, cp={cp}), asked again after the "
                        "first caller shifted its array in place: {got}; alone it gave {want} "
                        "(one array handed to two callers)",
    "cp.positions_wrong": "positions(S={steps}, rank={rank}, cp={cp}): {got}, expected {want}",
    "cp.not_partition": "S={steps}, cp={cp}: the ranks hold {got}, not every token once",
    "cp.unbalanced": "S={steps}, cp={cp}: causal pairs per rank {pairs}, not all equal",
    # 9.x zero bubble (exercise_checks/zb_split.py, zb_schedule.py)
    "point.9.1.input_now": "after B, before any W, dL/dX (dY W^T through both Linears) is "
                           "complete and right: what the previous stage waits for",
    "point.9.1.input_now.hint": "an op with no weight input runs its whole backward in B; an "
                                "op with one computes the gradients of its OTHER inputs now "
                                "(is_weight tells which is which, not requires_grad)",
    "point.9.1.b_no_weight": "B computes no X^T dY: every weight's grad is untouched after B, "
                             "and each Linear is asked for its input's gradient only",
    "point.9.1.b_no_weight.hint": "call the backward through masked_backward with the mask "
                                  "(need and not weight), so MatMul computes dY W^T alone; "
                                  "computing both and dropping one still costs the product",
    "point.9.1.w_no_input": "W computes X^T dY only: one product per Linear, only the ops with "
                            "a weight recorded, and the input gradients left as B made them",
    "point.9.1.w_no_input.hint": "append (node.fn, node.ctx, node.inputs, grad_outs, weights) "
                                 "only for an op with a weight: the mask W runs with is "
                                 "weights, never needs_input_grad",
    "point.9.1.values": "B then W (two micro-batches, W's later and in reverse) equals the "
                        "whole backward bit for bit, in float64 and float32, and central "
                        "differences",
    "point.9.1.values.hint": "record the op, its ctx, its inputs and grad_outs for every op "
                             "with a weight, so that W has all it needs after the next "
                             "micro-batch's B",
    "point.9.1.either_order": "the weight may be either input of a product: for y = W x (the "
                              "weight FIRST) B gives dL/dx only and W gives dL/dW only, as for "
                              "y = x W",
    "point.9.1.either_order.hint": "find the weights with is_weight on every input, in whatever "
                                   "place: never assume the weight is the second input",
    "point.9.2.once": "every micro-batch's W runs exactly once on every stage, and without the "
                      "W's the list is 1F1B's: the same F, B and messages",
    "point.9.2.once.hint": "count the W's you have placed (weights); the cool-down and the "
                           "W's still pending at the end must bring it to M",
    "point.9.2.after_b": "each W comes after the B of its own micro-batch",
    "point.9.2.after_b.hint": "W frees the oldest micro-batch whose B is done: W(weights), "
                              "placed after a B, never before",
    "point.9.2.memory": "no stage holds more than K micro-batches (F done, W not): 1F1B's peak",
    "point.9.2.memory.hint": "when cap micro-batches are held, run one W before the next F "
                             "(W is what frees a micro-batch's activations)",
    "point.9.2.bubble": "the simulated bubble is at most (K-1)(T_F+T_B-T_W), below 1F1B's "
                        "(K-1)(T_F+T_B+T_W), at T_W = T_F and T_W = T_F/2",
    "point.9.2.bubble.hint": "a W right after every B is 1F1B again: defer each W until the "
                             "stage holds cap micro-batches, so it fills a gap",
    "point.9.2.h2": "the same code under ZB-H2's warm-up and cap (2K-1): W's once and after "
                    "their B, at most 2K-1 held, bubble at most (K-1)(T_F+T_B-2T_W)",
    "point.9.2.h2.hint": "compare held with cap, the argument, never with num_stages",
    "zb.dtypes": "the split was run in {got}, not float64 then float32",
    "zb.none": "{what}: None",
    "zb.dtype": "{what}: dtype {got}, expected {want}",
    "zb.raised": "{dtype}: raised {error}",
    "zb.after_b": "{what} after B, before W, {dtype}",
    "zb.after_w": "{what} after W, {dtype}",
    "zb.weights_in_b": "{dtype}: after B the weights {names} already hold a gradient (that is "
                       "W's work)",
    "zb.b_calls": "{dtype}: in B, {op}'s backward was asked for (input, weight) = {got}; "
                  "expected [True, False] for each of the 4 calls",
    "zb.w_calls": "{dtype}: in W, {op}'s backward was asked for (input, weight) = {got}; "
                  "expected [False, True] for each of the 4 calls",
    "zb.steps": "{dtype}: W recorded {got} ops per micro-batch, expected [4, 4] (2 MatMul "
                "and 2 Add, the ops with a weight)",
    "zb.x_changed": "{dtype}: W changed dL/dx{i} (W computes weight gradients only)",
    "zb.first": "y = tanh(W x), float64, after {half}: {what}",
    "zb.first_calls": "y = tanh(W x): in {half}, MatMul's backward was asked for (W, x) = {got}; "
                      "expected {want}",
    "zb.not_whole": "{what}: not equal, bit for bit, to the whole backward",
    "zb.numeric": "{what} against central differences",
    "zb.w_once": "{where}: W's for micro-batches {got}, expected each of 0..{m}-1 once\n"
                 "  actions: {actions}",
    "zb.not_1f1b": "{where}: without its W's the list is {got}\n  expected 1F1B's {want}",
    "zb.w_first": "{where}: {step} before its own B\n  actions: {actions}",
    "zb.held": "{where}: {got} micro-batches held at once (F done, W not), at most {most}\n"
               "  actions: {actions}",
    "zb.bubble": "{name}(K={stages}, M={micro}), T_F={t_f}, T_B={t_b}, T_W={t_w}: simulated "
                 "bubble {got}; the table's is {table}, 1F1B's {plain}",
    # exercises 10.1 and 10.2: mixture of experts
    "point.10.1.top_k": "each token's choice is the k experts of largest probability, largest "
                        "first, and equal probabilities go to the LOWER expert id (rows full "
                        "of ties, E up to 32, a single token, float64 and float32)",
    "point.10.1.top_k.hint": "xp.argsort(-probs, axis=-1, kind=\"stable\")[..., :k]: a stable "
                             "sort of -p keeps equal probabilities in expert order; sorting p "
                             "and reversing puts the HIGHER id first",
    "point.10.1.queue": "each sequence's k*T assignments queue slot-major, first come first "
                        "served: every token's first choice in token order, then every second "
                        "choice; slot = how many earlier ones of the same sequence chose the "
                        "same expert (also for a single token, and for more than 2048 tokens)",
    "point.10.1.queue.hint": "queue = choice.transpose(0, 2, 1).reshape(b, k * T) (not "
                             "choice.reshape(b, T * k), which is token-major); count with a "
                             "cumsum over the queue axis of each sequence, minus 1",
    "point.10.1.capacity": "kept = slot < C, C = ceil(k T f / E), at capacity factors 0.5, 1, "
                           "1.25 and 2: the first C assignments of each expert are kept, the "
                           "others dropped; dropless (capacity None) keeps every assignment",
    "point.10.1.capacity.hint": "slots count from 0, so slot C is the first one over "
                                "capacity: kept = slot < capacity, and all True when capacity "
                                "is None",
    "point.10.1.layer": "the MoE layer on your routing equals a loop over tokens: y_t = sum over "
                        "t's kept choices e of p[t, e] expert_e(x_t) (the router's probability, "
                        "not renormalised); a token whose every choice was dropped has y_t = 0 "
                        "exactly, so the residual carries it (x + y = x)",
    "point.10.1.layer.hint": "return slot and kept for every assignment: the layer writes kept "
                             "ones to row slot of their expert, and a dropped one must not "
                             "take a place",
    "point.10.2.all_to_all": "the dispatch is ONE all-to-all over the ep group (not the world, "
                             "not an all-gather), and each rank sends (ep-1) x E/ep x C x h x "
                             "b x itemsize bytes: the padded buffer, whatever the router chose",
    "point.10.2.all_to_all.hint": "all_to_all_rows(send, group) once: chunk j of the send "
                                  "buffer goes to rank j of group; the world is not the ep "
                                  "group",
    "point.10.2.layout": "what rank r's experts receive is laid out [local expert i][source "
                         "rank q][capacity slot]: from every rank q in order, the b*C padded "
                         "rows q holds for expert r*E/ep + i (ep groups of 2 and 4, checked "
                         "by values)",
    "point.10.2.layout.hint": "send is (ep, E/ep, b*C, h), [to rank][its expert][slot]; what "
                              "arrives is [from rank][my expert][slot]: transpose(1, 0, 2, 3) "
                              "after the all-to-all",
    "point.10.2.layer": "with the combine (the same all-to-all back, the inverse layout) every "
                        "token's output comes back to its place: ExpertParallelMoE equals one "
                        "process's MoE, output, dx and the experts' weight gradients",
    "point.10.2.layer.hint": "use all_to_all_rows (an autograd Function, whose backward is the "
                             "same all-to-all), not comm.all_to_all on raw arrays, so the "
                             "gradient travels home",
    "moe.raised": "{what}: raised {error}",
    "moe.bad_choice": "{what}: choice has shape {shape} or ids outside 0..E-1, expected "
                      "shape {want}",
    "moe.case": "b={b}, T={steps}, E={experts}, k={k}, capacity {capacity}, {dtype}",
    "moe.choice_wrong": "{what}: sequence {s}, token {t}, probs {probs}: choice {got}, "
                        "expected {want}",
    "moe.bad_slot": "{what}: slot has shape {shape}, expected {want}",
    "moe.slot_wrong": "{what}: sequence {s}, token {t}, choices {choice}: queue slots {got}, "
                      "expected {want}",
    "moe.kept_wrong": "{what}: sequence {s}, token {t}, choices {choice} at queue slots "
                      "{slot}: kept {got}, expected {want} ({dropped} assignments dropped in "
                      "all, expected {want_dropped})",
    "moe.layer_case": "MoE layer, {router} router, capacity {capacity}, {dtype}",
    "moe.no_drop": "{what}: the problem drops no token (the grader's own problem is wrong)",
    "moe.dropped_moved": "{what}: sequence {s}, token {t} lost every choice, so its y must be "
                         "0 (the residual carries it), got {got}",
    "moe.ops": "rank {rank}, ep {ep}, {dtype}: the dispatch ran {ops}, expected exactly "
               "['all_to_all']",
    "moe.group": "rank {rank}, ep {ep}: the all-to-all ran over ranks {got}, expected the ep "
                 "group {want}",
    "moe.bytes": "rank {rank}, ep {ep}, {dtype}: sent {got} bytes, expected (ep-1) x E/ep x C "
                 "x h x b x itemsize = ({ep}-1) x {local} x {cap} x {h} x {b} x {item} = "
                 "{want}",
    "moe.dispatch_raised": "rank {rank}, ep {ep}: dispatch_padded raised {error}",
    "moe.layout": "dispatch layout, ep {ep}, {dtype}",
    "moe.layout_wrong": "rank {rank}, ep {ep}, {dtype}, {local} experts per rank, b*C = "
                        "{block}: row {row} holds (source rank, expert, slot) {got}, expected "
                        "{want}",
    "moe.round_trip": "combine(dispatch(rows)) with ep = {ep}, {dtype}: every row back in its "
                      "place",
    "moe.against_serial": "{what} with ep = {ep}, {dtype}, against one process",
    # where students actually go wrong (exercise_checks: counted calls, dtypes, groups)
    "tp.products": "rank {rank} ({dtype}): the forward computed {got} products X @ A; X_i "
                   "A_i is computed ONCE and that same partial goes through g (a second "
                   "product is the work done twice)",
    "tp.memory_held": "rank {rank} ({dtype}): the layer's attributes hold {got} bytes of arrays; "
                      "it needs {want} bytes ({what}: {full} bytes)",
    "tp.memory_new": "rank {rank} ({dtype}): building and running the layer left {got} bytes of "
                     "new arrays alive in the process; it needs {want} bytes ({what}: {full} "
                     "bytes)",
    "tp.full_weight": "the full weight",
    "tp.one_partial": "one partial product",
    "tp.again": "forward {k} of one layer ({dtype}): {what}",
    "tp.again_raised": "rank {rank} ({dtype}): one layer, forward after forward: your code "
                       "raised {error}",
    "dp.waited_in_launch": "rank {rank}, run {run}, step {step}: _launch finished {count} "
                           "all-reduce(s) of earlier buckets before it returned (waited for "
                           "them): "
                           "one bucket in flight at a time is no overlap; start this bucket's "
                           "all-reduce and return, finish() waits for all of them",
    "dp.grads_kept": "rank {rank}, run {run}, step {step}: {count} of the full gradients "
                     "that backward made are still alive after reduce_gradients (kept "
                     "somewhere: a global, another object, a closure): stage 2 frees them, "
                     "only the slice stays",
    "dp.weights_kept": "rank {rank}, run {run}, step {step}: the full weights from before the "
                       "step are still alive after it ({count} kept somewhere: a view of the "
                       "old slice, a global, another object): every rank holds the full "
                       "weights once",
    "dp.memory_left": "rank {rank}, run {run}, step {step}: this phase left {got} bytes of "
                      "new arrays alive in the process, expected about {want} (a full flat "
                      "buffer is {full} bytes): a full-size copy is kept somewhere",
    "dp.handles_kept": "rank {rank}, run {run}, step {step}: {count} of the step's {total} "
                       "all-reduce handles are still alive after finish() (kept somewhere)",
    "dp.step_memory": "rank {rank}, run {run}, step {step}: forward, backward and finish() left "
                      "{got} bytes of new arrays alive; a step after the first needs none (the "
                      "flat gradient buffer: {full} bytes)",
    "ad.reused": "{case}: the gradient your backward returned changed when a second op "
                 "of the same shape ran its backward (two ops of one shape in one "
                 "graph): return a new array each call, not a buffer kept from call to "
                 "call",
    "ad.widened": "{case}: a float32 input went through float64 on the way "
                  "(dtype=float64, astype(float64) or a float64 array), then back: "
                  "compute in the inputs' dtype, float32 stays float32 all the way",
    "ad.products": "{case}: your backward computed {got} products (GEMMs) for {want} "
                   "gradient(s) needed: compute only the gradients that are needed, each "
                   "once",
    "cp.long_positions": "S = {steps}, cp = {cp}, rank {rank}: the positions of a long sequence "
                         "are wrong: dtype {dtype}, {size} of them (expected {want} integers, "
                         "chunk rank then its mirror); a small integer type (int8, int16) cannot "
                         "hold position {steps} - 1",
    "cp.float32_merge": "two float32 pieces: the merge gave O and lse of dtypes {dtypes}, or "
                        "went through float64 on the way (then cast back): merge in the pieces' "
                        "dtype, float32 stays float32 all the way",
    "zb.no_input_grad": "y = tanh(tanh(x W) W) W with x needing no gradient: B asked MatMul for "
                        "{got}; the first MatMul's input x needs no gradient, so B computes no "
                        "dY W^T there: [[True, False], [True, False]] (the other two only)",
    "zb.shared": "{what} of y = tanh(tanh(x W) W) W (W used three times, float32)",
    "moe.dropped_count": "{what}: the layer's plan counts {got} dropped assignments "
                         "(RoutePlan.dropped, the sum of ~kept), expected {want}: kept must be "
                         "booleans",
    "tp.no_mpi_count": "rank {rank}, {phase}: the evidence holds no count of the MPI calls "
                       "(the grader's runner always writes one)",
    "tp.trace_not_made": "rank {rank}, {phase}: the trace shows {op} over {group}, but no MPI "
                         "call made it (a span recorded by hand is not a collective)",
    "tp.made_not_traced": "rank {rank}, {phase}: MPI made {method} over {group}, which the "
                          "trace does not show (a collective hidden from the trace)",
    # exercise 10.3: auxiliary-loss-free balancing
    "point.10.3.direction": "an expert above the mean load is made LESS attractive (its bias "
                            "goes down by gamma), one below it more (up by gamma): b + gamma "
                            "sign(mean - load), the old bias kept",
    "point.10.3.direction.hint": "return bias + rate * xp.sign(load.mean() - load): mean - load "
                                 "(not load - mean) is positive for an expert that got too "
                                 "few tokens; add the step to the bias, do not return the step",
    "point.10.3.sign_only": "the step is exactly gamma whatever the size of the deviation "
                            "(deviations of 1 token and of millions, loads up to 10^7): only "
                            "the sign of the load's deviation counts",
    "point.10.3.sign_only.hint": "rate * xp.sign(...), not rate * (mean - load) nor the "
                                 "deviation relative to the mean: a busy step must not move "
                                 "the bias more than a quiet one",
    "point.10.3.at_mean": "an expert whose load is exactly the mean keeps its bias, and a "
                          "perfectly balanced step moves no bias (sign(0) = 0)",
    "point.10.3.at_mean.hint": "xp.sign gives 0 at 0: a where(load > mean, -rate, rate) "
                               "nudges the experts at the mean up",
    "point.10.3.balances": "in an MoE layer whose router sends most tokens to two experts, "
                           "each step's bias is the rule replayed on the loads the layer "
                           "counted, and the loads even out: the spread of the last steps' "
                           "loads is under half of the first step's",
    "point.10.3.balances.hint": "bias_update runs once per step per layer on that step's "
                                "load (E,): keep it a pure function of (bias, load, rate), "
                                "with no state of its own between calls",
    "balance.case": "load {load}, gamma {rate}",
    "balance.raised": "{what}: raised {error}",
    "balance.bad_shape": "{what}: the bias came back of shape {shape}, expected {want}",
    "balance.direction": "{what}: expert {e} with load {load} (mean {mean}) moved by {got}, "
                         "expected {want}: above the mean the bias goes down, below it up",
    "balance.magnitude": "{what}: expert {e} with load {load} (mean {mean}) moved by {got}, "
                         "expected exactly gamma = {rate}: the sign of the deviation, not its "
                         "size",
    "balance.at_mean": "{what}: expert {e} has exactly the mean load {mean} but its bias moved "
                       "by {got}: at the mean the bias stays",
    "balance.layer": "the MoE layer with a skewed router",
    "balance.replay": "the MoE layer, step {step}: the load was {load}, the bias became {got}, "
                      "the rule gives {want}",
    "balance.spread": "the MoE layer did not even out: the spread (max - min) of the loads "
                      "went from {first} at the first step to {last} over the last steps of "
                      "{steps}",
    # exercise 7.2: fp8 per-tensor scales
    "point.7.2.own_scale": "each tensor is scaled by the power of two from ITS OWN amax, s = "
                           "2^floor(log2(448 / amax)), and cast element for element: q = "
                           "e4m3(s x) (X past 448 is NaN unscaled, W ~1e-3 underflows to 0)",
    "point.7.2.own_scale.hint": "sx = scale_for(rows, E4M3, agree) and sw = scale_for(w, E4M3, "
                                "agree): one scale per tensor, each from that tensor; then "
                                "qx = (rows.astype(np.float32) * sx).astype(E4M3), qw alike",
    "point.7.2.one_byte": "what backward keeps is e4m3 (float8_e4m3fn: 3 mantissa bits for "
                          "forward values), one byte per element: a quarter of float32",
    "point.7.2.one_byte.hint": "cast qx and qw to E4M3 (not bf16, not E5M2: e5m2 is for "
                               "gradients); the lines after your block save them as they are",
    "point.7.2.float32": "y = (q_X @ q_W accumulated in float32) / (s_X s_W): the products "
                         "summed in float32 and unscaled by both scales, rounded once to X's "
                         "dtype",
    "point.7.2.float32.hint": "y = matmul(qx, qw, np.float32) / (sx * sw): without np.float32 "
                              "the sum is rounded to e4m3; divide by BOTH scales",
    "point.7.2.agree": "with agree (a tensor split over tp ranks) each scale comes from the "
                       "agreed amax of the whole tensor, so every rank rounds as one process",
    "point.7.2.agree.hint": "pass agree to scale_for for both tensors: scale_for(rows, E4M3, "
                            "agree), scale_for(w, E4M3, agree)",
    "fp8.raised": "{case}: Fp8Matmul's forward raised {error}",
    "fp8.scales": "{case}: the scales (s_X, s_W) were {got}, expected {want} (each tensor's "
                  "own: 2^floor(log2(448 / its amax)))",
    "fp8.cast": "{case}: {count} of the {size} values of {name} are not e4m3(s x) of their "
                "tensor and its own scale (NaN: a value past 448 cast unscaled; 0: a small one "
                "underflowed)",
    "fp8.kept": "backward keeps arrays of dtypes {dtypes}, {nbytes} bytes for {sizes} values: "
                "expected float8_e4m3fn, one byte per value",
    "fp8.y_shape": "y came back as {dtype} of shape {shape}, expected bfloat16 (X's dtype) of "
                   "shape {want}",
    "fp8.product": "y = {got} where (q_X @ q_W in float32) / (s_X s_W) is {want} (ratio "
                   "{ratio:g}: a scale not divided out, or a sum rounded to fp8)",
    "fp8.agreed": "with agree (the whole tensor's amax is larger) the scales were {got}, "
                  "expected {want}; without agree they are {alone}: the scales must come "
                  "from the agreed amax",
}
