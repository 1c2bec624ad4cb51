"""English messages: the grader, the exercise checks and the tutorials (see i18n/__init__.py)."""

MESSAGES = {
    # grader.py
    "grader.no_package": "no minimegatron/ package in {path} (make a copy with: minimegatron "
                         "exercises make DIR, then grade --path DIR)",
    "grader.cd_copy": "no minimegatron/ package in {path}: your copy is {copy}; go there with "
                      "`cd {copy}` and grade again (or: minimegatron grade --path {copy})",
    "grader.self_check": "note: this minimegatron is itself a student copy (self-check mode): "
                         "each exercise runs with YOUR other exercises as they are, and one "
                         "you have not written yet is stood in for by the grader. The "
                         "teacher's reference install grades each exercise alone.",
    "grader.not_marked": "Exercise {id} is not marked in {package}",
    "grader.markers_missing": "the markers '# EXERCISE {id} begin/end' are missing from "
                              "minimegatron/{file} in {path}: put them back around your code",
    "grader.grading": "grading {count} exercise(s) in {package}",
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
    "grader.forged": "one rank reported this exercise twice: only the grader's runner writes "
                     "those reports, so student code wrote one, and the exercise cannot pass",
    "grader.result.PASS": "PASS",
    "grader.result.FAIL": "FAIL",
    "grader.result.TODO": "TODO",
    "grader.result.HANG": "HANG",
    "grader.result.ERROR": "ERROR",
    "grader.result.CHANGED": "CHANGED",
    "grader.result.TIMEOUT": "TIMEOUT",
    "grader.point_ok": "ok: {point}",
    "grader.point_missed": "missed: {point}\n  {detail}\n  hint: {hint}",
    "grader.bad_evidence": "the check's evidence is not in the form the judge reads ({error})",
    "grader.changed": "changed outside the exercise: {paths}. A copy may change the exercise "
                      "blocks only, so this cell cannot pass (the blocks alone, graded inside "
                      "the reference: {result})",
    # gradebook.py
    "gradebook.no_class": "no class folder {path}: give the folder that holds one copy per "
                          "student (minimegatron exercises make CLASS/NAME)",
    "gradebook.empty": "{path} holds no student folder",
    "gradebook.timeout": "the copy ran past --student-timeout and was stopped",
    "gradebook.no_report": "the grader ended without a report for this copy",
    "gradebook.progress": "[{done}/{count}] {student}: {passed} of {total} pass "
                          "({seconds:.0f} s)",
    "gradebook.wrote": "wrote {path}",
    # exercise_checks/common.py
    "check.array_of_shape": "array of shape {shape}",
    "check.got_none": "{where}{what}: got None, expected {expected}",
    "check.wrong_shape": "{where}{what}: shape {got}, expected {expected}",
    "check.expected_got": "{where}{what}:\n  expected {expected}\n  got      {got}",
    "check.worst_entry": "{where}{what}: worst entry {index}: expected {expected}, got {got} "
                         "(|diff| {diff:.3g} > {atol:g})",
    # tutorials/00_autodiff_and_gpt.py
    "t00.mpi_note": "(one process's lesson: under minimegatron run -n {n} only rank 0 runs "
                    "it; the others end at once)",
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
    "t02.ranks": "the worked example splits A over 2 ranks; run it with -n 2, not -n {n}",
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
    "t02.trained": "after {steps} SGD steps (lr {lr:g}): L = {losses}   A_{n} = {A_i}",
    "t02.serial_trained": "serial, after {steps} SGD steps: L = {losses}   A = {A}",
    "t02.compare": "\none process (nn.Linear, the same A, the same SGD), {steps} steps: L, Y, "
                   "dL/dX, dL/dA\nand A after each step equal: column {column}, row {row}",
    "entry.banner": "minimegatron {name}: package {path}",
    "entry.blank": "this copy's {message} (fill in that block, then grade it: "
                   "minimegatron grade {id})",
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
