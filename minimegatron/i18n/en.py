"""English messages: the grader, the exercise checks and the tutorials (see i18n/__init__.py)."""

MESSAGES = {
    # grader.py
    "grader.no_package": "no minimegatron/ package in {path} (make a copy with: minimegatron "
                         "exercises make DIR, then grade --path DIR)",
    "grader.self_check": "note: this minimegatron is itself a student copy (self-check mode): "
                         "each exercise runs with YOUR other exercises as they are, so a check "
                         "may first need an earlier exercise done. The teacher's reference "
                         "install grades each exercise alone.",
    "grader.not_marked": "Exercise {id} is not marked in {package}",
    "grader.markers_missing": "the markers '# EXERCISE {id} begin/end' are missing from "
                              "minimegatron/{file} in {path}: put them back around your code",
    "grader.grading": "grading {count} exercise(s) in {package}",
    "grader.pass": "PASS",
    "grader.fail": "FAIL",
    "grader.ranks": " [{nprocs} ranks, {group} groups of 2]",
    "grader.source_notes": 'source notes: "{note}"',
    "grader.summary": "{passed} of {count} exercise(s) pass",
    "grader.todo": "not done yet: {message}",
    "grader.needs_first": "needs Exercise {id} first, which is not done yet in this copy: "
                          "{message}",
    "grader.exercise_hint": "Exercise {id}: {hint}",
    "grader.rank": "rank {rank}: ",
    "grader.ranks_prefix": "ranks {ranks}: ",
    "grader.hang": "HANG: no progress for {seconds:.0f} s, so every rank was killed. A rank "
                   "waits in a collective (or a receive) that the other ranks of its group "
                   "never join: do all of them make the same calls, in the same order, on the "
                   "same group?",
    "grader.hang_waiting": "rank {rank}: still inside the check (waiting)",
    "grader.hang_finished": "rank {rank}: finished first with {status}: {message}",
    "grader.hang_stacks": "where each rank waited when it was killed:",
    "grader.too_much_output": "the check printed more than {mib} MiB, so it was killed: is a "
                              "print inside a loop?",
    "grader.crashed": "the check crashed (exit code {code}) before reporting; its output ends "
                      "with:\n{tail}",
    "grader.forged": "a result line for this exercise did not come from the grader's runner: "
                     "student code wrote to the grader's results file, so the exercise cannot "
                     "pass",
    # exercise_checks/common.py
    "check.array_of_shape": "array of shape {shape}",
    "check.got_none": "{where}{what}: got None, expected {expected}",
    "check.wrong_shape": "{where}{what}: shape {got}, expected {expected}",
    "check.expected_got": "{where}{what}:\n  expected {expected}\n  got      {got}",
    "check.worst_entry": "{where}{what}: worst entry {index}: expected {expected}, got {got} "
                         "(|diff| {diff:.3g} > {atol:g})",
    # exercise_checks/autodiff.py
    "autodiff.mismatch": "{case} with inputs of shapes {shapes}:\n  {message}\n  "
                         "(numerical = expected, autodiff = your backward)",
    "autodiff.raised": "{case} with inputs of shapes {shapes}: your backward raised "
                       "{error}: {message}",
    "autodiff.pass": "gradcheck: {count} cases, max error {worst:.1e}",
    "autodiff.batched": "batched X @ A",
    "autodiff.broadcast_both": "batch broadcast on both",
    "autodiff.vector_matrix": "vector @ matrix",
    "autodiff.matrix_vector": "matrix @ vector",
    "autodiff.tied_max": "gradient of x.max(axis=1).sum() at x = [[1, 3, 3], [2, 0, 1]] "
                         "(the two tied 3s share the gradient)",
    "autodiff.unbroadcast": "unbroadcast(grad of shape (2, 3, 4), shape={shape})",
    "autodiff.add_rows": "((a + b)**2).sum(), b broadcast over rows",
    "autodiff.add_column": "((a + b)**2).sum(), b of shape (3, 1)",
    # exercise_checks/schedules.py
    "sched.where": "{name}(K={stages}, M={micro}) stage {stage}",
    "sched.forward_order": "{where}: forward micro-batches, in order",
    "sched.backward_order": "{where}: backward micro-batches, in order",
    "sched.backward_first": "{where}: backward {i} comes before forward {i}:\n  {actions}",
    "sched.held": "{where}: most activations held at once (actions: {actions})",
    "sched.simulate": "{name}(K={stages}, M={micro}): {error}",
    "sched.bubble": "{name}(K={stages}, M={micro}): simulated bubble fraction (K-1)/(M+K-1)",
    "sched.pass": "{count} (K, M) pairs: invariants hold, bubble = (K-1)/(M+K-1); e.g. K=2, "
                  "M=3 stage 0: {actions}",
    "sched.il_where": "interleaved(K={stages}, M={micro}, v={chunks}) rank {stage}",
    "sched.il_pairs": "{where}: the (micro-batch, chunk) pairs run forward (actions: {actions})",
    "sched.il_held": "{where}: most chunk activations held at once = min(warm-up + 1, M*v) "
                     "(actions: {actions})",
    "sched.il_bubble": "interleaved(K={stages}, M={micro}, v={chunks}): simulated idle / busy "
                       "(1/v)(K-1)/M",
    "sched.il_pass": "{count} (K, M, v): warm-up, activations held and bubble = (1/v)(K-1)/M "
                     "hold; e.g. K=2, M=2, v=2 rank 0: {actions}",
    # exercise_checks/tensor_parallel.py
    "tp.need_two": "the tensor-parallel exercises run on tp groups of 2 ranks, got {size}",
    "tp.A_i": "A_{n} (this rank's block of A)",
    "tp.X_i": "X_{n}",
    "tp.Y_i": "Y_{n} (this rank's local product)",
    "tp.Y": "Y = X A (combined)",
    "tp.dX": "dL/dX for L = sum(Y)",
    "tp.dA_i": "dL/dA_{n}",
    "tp.column": "column",
    "tp.row": "row",
    "tp.worked": "worked example, {split} split: {name}",
    "tp.too_large": "rank {rank}: {what} {key}: error {error:.3g} (should be < {tol:g}): {why}",
    "tp.copy_forward": "copy_to_tp forward of ones((2, 3))",
    "tp.copy_backward": "copy_to_tp backward: dL/dX when rank r's dL/dY is r + 1 everywhere "
                        "(all-reduce: 1 + 2 on every rank)",
    "tp.copy_adjoint": "<f(x), y> summed over ranks must equal <x, f^T(y)>",
    "tp.copy_pass": "f: forward identity, backward all-reduce; adjoint identity holds",
    "tp.reduce_forward": "reduce_from_tp forward: rank r holds (r + 1) [[1, 2], [3, 4]], the "
                         "sum is",
    "tp.reduce_backward": "reduce_from_tp backward of dL/dY = 2 (identity)",
    "tp.reduce_adjoint": "<g(x), y> must equal <x, g^T(y)> summed over ranks",
    "tp.reduce_pass": "g: forward all-reduce, backward identity; worked example Y = [[74, 98], "
                      "[258, 346]]",
    "tp.column_why": "rank r must keep columns r*out/tp .. (r+1)*out/tp of the weight and bias",
    "tp.column_pass": "rank {rank}: A_{n} = {A}, Y_{n} = {Y}",
    "tp.row_why": "rank r must keep rows r*in/tp .. (r+1)*in/tp of the weight",
    "tp.row_pass": "rank {rank}: A_{n} = {A}",
    "tp.forward_why": "Y = sum_i X_i A_i (through g), then + b once",
    "tp.forward_pass": "rank {rank}: Y_{n} = {Y_i}, Y_1 + Y_2 = {Y}",
    # exercise_checks/data_parallel.py
    "dp.loss": "the loss (mean over the whole batch)",
    "dp.grad": "a gradient after backward",
    "dp.weight": "a weight after the AdamW step",
    "dp.differs": "rank {rank}: {scheme} vs one process, {steps} AdamW step(s): {what} "
                  "differs by up to {value:.3g} (tolerance {tol:g}). {advice}",
    "dp.ddp_mean": "Linear(2, 2) weight gradient after finish(), dp group {ranks}, rank r's "
                   "input = {base} + r + 1 (each rank's own gradient is that value in ones; "
                   "their mean over THIS group is {mean:g})",
    "dp.ddp_advice": "Every rank must end backward with the MEAN of all ranks' gradients.",
    "dp.ddp_pass": "DDP gradients and weights = one process (max diff {diff:.1e})",
    "dp.zero2_advice": "Rank r must hold slice r of the MEAN gradient (reduce-scatter, op "
                       "mean).",
    "dp.zero2_pass": "stage 2 slices = one process (max diff {diff:.1e})",
    "dp.zero_update_advice": "Update only this rank's slice (self.shard with self.grad_shard), "
                             "then all-gather the slices into the full flat weights.",
    "dp.zero_update_pass": "stages 1 and 2 weights = one process (max diff {diff:.1e})",
    "dp.zero_stage": "ZeRO stage {stage}",
    # tutorials/00_autodiff_and_gpt.py
    "t00.mpi_note": "(one process's lesson: under mpirun -n {n} only rank 0 runs it; the "
                    "others end at once)",
    "t00.part1": "Part 1: y = sum(tanh(x @ w)); dy/dw = x^T (1 - tanh^2(x @ w))",
    "t00.compare": "  autodiff: {autodiff}  by hand: {hand}",
    "t00.part2": "\nPart 2: GPT with {params:,} parameters, {steps} AdamW steps",
    "t00.start": "  start near log(10) = {start:.2f}; floor 3/16 log(10) = {floor:.2f}",
    "t00.step": "  step {step:4d}  loss {loss:.4f}  {bar}",
    # tutorials/01_collectives.py
    "t01.all_reduce": "all_reduce (sum): everyone gets x_0 + ... + x_{{N-1}}",
    "t01.reduce": "reduce to rank 0: only the root gets the sum",
    "t01.broadcast": "broadcast from rank 0: everyone gets rank 0's x",
    "t01.scatter": "scatter from rank 0: rank r gets chunk r of [0 .. 2N-1]",
    "t01.gather": "gather to rank 0: the root gets cat(x_0, ..., x_{{N-1}})",
    "t01.all_gather": "all_gather: everyone gets cat(x_0, ..., x_{{N-1}})",
    "t01.reduce_scatter": "reduce_scatter: rank r gets chunk r of the sum of all y",
    "t01.ring": "isend right / irecv left (a ring, nonblocking so nobody deadlocks)",
    "t01.small_world": "\n(world size {n} != 8, so the grid is 1 x 1 x {n}: dp=1, pp=1, tp={n})",
    "t01.tp_all_reduce": "all_reduce of the world rank over this rank's tp group",
    # tutorials/02_worked_example.py
    "t02.serial": "X = {X}\nA = {A}\nserial Y = X A = {Y}\n",
    "t02.column_how": "A split by columns; X copied (f); Y = cat(Y_1, Y_2)",
    "t02.row_how": "A split by rows; X split by columns; Y = Y_1 + Y_2 (g)",
    "t02.heading": "--- {split} split: {how}",
    "t02.local": "A_{n} = {A_i}   input = {X_i}\nY_{n} = {Y_i}   combined Y = {Y}",
    "t02.grads": "dL/dX = {dX}   dL/dA_{n} = {dA_i}",
    "t02.serial_grads": "\nserial, L = sum(Y): dL/dX = ones A^T = {dX}\n"
                        "                     dL/dA = X^T ones = {dA}",
    "t02.split": "split",
    "t02.local_product": "local product",
    "t02.combine": "combine",
    "t02.column": "column",
    "t02.row": "row",
    "t02.all_gather": "all-gather",
    "t02.all_reduce": "all-reduce",
    "entry.banner": "minimegatron {name}: package {path}",
    "entry.blank": "this copy's {message} (fill in that block, then grade it: "
                   "minimegatron grade {id})",
    "sp.forward": "reduce_scatter_to_sequence forward: rank r holds (r + 1) X, X = "
                  "[[[1, 2], [3, 4], [5, 6], [7, 8]]] (B, T, D) = (1, 4, 2); rank r gets "
                  "tokens 2r, 2r + 1 of the sum",
    "sp.backward": "reduce_scatter_to_sequence backward: rank r's dL/dY is r + 1, so dL/dX "
                   "is their all-gather along the sequence",
    "sp.adjoint": "<g-bar(x), y> summed over ranks must equal <x, g-bar^T(y)> summed over ranks",
    "sp.gpt": "ParallelGPT(sequence_parallel=True) vs one process:",
    "sp.gpt_why": "the block must equal one process: check the reduce-scatter's group and axis",
    "sp.pass": "g-bar: forward reduce-scatter along the sequence, backward all-gather; "
               "GPT vs one process: loss {loss:.1e}, grad {grad:.1e}",
    # exercise_checks/mixed_precision.py
    "mp.clean": "DynamicLossScaler(8, growth_interval=2).update(finite grads): [skipped, scale]",
    "mp.grow": "a second clean step (growth_interval = 2 reached, the scale doubles): "
               "[skipped, scale]",
    "mp.overflow": "dp group {ranks}, an inf on its rank 1: {poisoned} (only group [0, 2] has "
                   "one; the flag is reduced with MAX over THIS group): [skipped, scale]",
    "mp.zero_skip": "ZeRO-2 in float16, inf on rank 1 at step 1 only: skipped per step (every "
                    "rank alike)",
    "mp.changed": "rank {rank}: a skipped step changed the weights (skip means no update)",
    "mp.scales": "the loss scale per step (2^8, halved after the overflow, doubled after 2 "
                 "clean steps)",
    "mp.pass": "every rank skipped the overflow step and halved the scale: {scales}",
    # launcher.py, reaper.py
    "run.epilog": "every collective is checked (ranks that call different collectives, shapes, "
                  "dtypes, ops or roots get one error naming both sides). MINIMEGATRON_CHECK=0 "
                  "turns the checks off, for benchmarks only: a mismatch then may return wrong "
                  "numbers on some ranks with exit code 0, or hang (docs/running.md)",
    "run.first_end": "rank {rank}: ended without a clean exit or a Python exception ({how}: "
                     "os._exit, a signal, or a crash)",
    "run.ended_after": "ranks {ranks} were ended after rank {rank}, by the launcher",
    # verify.py
    "verify.none_ran": "no row ran on {n} rank(s): every grid of {schemes} was skipped (see the "
                       "notes above), so nothing was checked",
}
