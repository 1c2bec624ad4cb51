"""English texts of the command line: argparse's own words, every command's description,
option help and usage errors, the exercises command's output (commands/*.py).

Keys: ``argparse.*`` are argparse's own texts exactly (commands/parser.py maps them),
``cli.COMMAND.*`` one command's texts. A help text is also formatted by argparse, so
a literal percent sign is written %%.
"""

MESSAGES = {
    # argparse's own words (commands/parser.py): English is argparse's text, unchanged
    "argparse.usage": "usage: ",
    "argparse.options": "options",
    "argparse.positionals": "positional arguments",
    "argparse.help": "show this help message and exit",
    "argparse.error": "%(prog)s: error: %(message)s\n",
    "argparse.required": "the following arguments are required: %s",
    "argparse.unrecognized": "unrecognized arguments: %s",
    "cli.did_you_mean": "; did you mean {options}?",
    "argparse.argument": "argument %(argument_name)s: %(message)s",
    "argparse.choice": "invalid choice: %(value)r (choose from %(choices)s)",
    "argparse.invalid": "invalid %(type)s value: %(value)r",
    "argparse.one": "expected one argument",
    "argparse.at_least_one": "expected at least one argument",
    "argparse.at_most_one": "expected at most one argument",
    "argparse.n1": "expected %s argument",
    "argparse.n": "expected %s arguments",
    "argparse.ambiguous": "ambiguous option: %(option)s could match %(matches)s",
    "argparse.one_of": "one of the arguments %s is required",
    "argparse.not_allowed": "not allowed with argument %s",
    "argparse.ignored": "ignored explicit argument %r",
    "argparse.unknown_parser": "unknown parser %(parser_name)r (choices: %(choices)s)",
    "argparse.cannot_open": "can't open '%(filename)s': %(error)s",
    # commands/entry.py: a usage error, one line
    "cli.error": "error: {message}",
    # commands/argtypes.py: what a checked number or path must be
    "cli.type.must_be": "must be {what}, got {value}",
    "cli.type.positive_int": "a positive integer",
    "cli.type.nonnegative_int": "a non-negative integer",
    "cli.type.int_at_least": "an integer >= {lo}",
    "cli.type.int_between": "an integer from {lo} to {hi}",
    "cli.type.positive_float": "a finite positive number",
    "cli.type.nonnegative_float": "a finite non-negative number",
    "cli.type.no_file": "no such file: {path}",
    "cli.type.is_dir": "{path} is a directory, expected a file path",
    "cli.type.no_dir": "the directory of {path} does not exist",
    # commands/cli.py: the dispatcher
    "cli.usage": "usage: minimegatron COMMAND [args]",
    "cli.commands": "commands:",
    "cli.unknown": "minimegatron: unknown command {name}",
    "cli.run": "launch a script (or 'verify') on N MPI ranks",
    "cli.verify": "check every parallel scheme against one process",
    "cli.memory": "parameters, memory, FLOPs and scaling model",
    "cli.calibrate": "measure this machine's GEMM and MPI rates",
    "cli.timeline": "draw a pipeline schedule or a traced run",
    "cli.exercises": "make a student copy of the package",
    "cli.grade": "grade a student copy",
    "cli.sample": "load a checkpoint and let the GPT write text",
    "cli.start": "start a parallel run: minimegatron run -n N SCRIPT.py (or a command, e.g. "
                 "minimegatron run -n 8 verify)",
    # run.py
    "cli.run.description": "run a script (or a minimegatron command) on N MPI ranks: "
                           "minimegatron run -n N script.py [args]",
    "cli.run.np": "number of ranks",
    "cli.run.timeout": "after S s, report where each rank waits (HANG), kill the job",
    "cli.run.target": "script.py, or a minimegatron command such as verify",
    "cli.run.args": "the arguments of the script or command",
    "cli.run.alternative": "Without this launcher: mpirun -n N python3 script.py (plain MPI: "
                           "no --timeout, no report of the rank that ended the job)",
    "cli.run.no_script": "no such script: {path}",
    "cli.run.no_command": "no such script or command: {name!r} (a script ends in .py; "
                          "commands: {commands})",
    "cli.run.did_you_mean": "; did you mean {name!r}?",
    "cli.run.too_many": "-n {n}: this machine holds at most {most} ranks ({cores} cores x "
                        "{per_core}, {memory} MB available at {rank_mb} MB a rank, {files} "
                        "open files at {per_rank} a rank); set {env}={n} to start them anyway",
    "cli.run.over_override": "-n {n}: more than {env}={most} allows; raise it to start them",
    "cli.run.bad_max": "{env} must be a positive integer, got {value}",
    "cli.run.beside": "minimegatron run: the ranks import {path} (beside the script)",
    "cli.run.error": "minimegatron run: error: {message}",
    # verify.py
    "cli.verify.description": "check every parallel scheme against one process, on N ranks: "
                              "minimegatron run -n N verify",
    "cli.verify.schemes": "comma list from {schemes} (default: all)",
    "cli.verify.dtype": "floating-point type of the model and the one-process reference "
                        "(default float64)",
    "cli.verify.precision": "mixed: float16 model, float32 masters, loss scale, SGD "
                            "(= --dtype float16; docs/verification.md)",
    "cli.verify.no_cupy": "--backend cupy needs CuPy and a GPU: pip install "
                          "'minimegatron[gpu-cuda12]' (or [gpu-cuda13], the prebuilt wheel "
                          "for your CUDA)",
    "cli.verify.backend": "array backend: numpy, or cupy on a GPU (default: "
                          "MINIMEGATRON_BACKEND, else numpy)",
    "cli.verify.steps": "AdamW steps per row (default 2)",
    "cli.verify.matrix": "print the composition table (axes x features: PASS, or refused and "
                         "why) and exit; on 4k ranks each cell that fits is trained",
    "cli.verify.unknown": "unknown scheme(s) {unknown}; choose from {schemes}",
    "cli.verify.header": "minimegatron verify: {n} ranks, {dtype}, {steps} {rule} steps per "
                         "row, schemes {schemes}",
    "cli.verify.no_grid": "no grid of these schemes fits {n} rank(s): 3D needs two axes > 1, "
                          "so at least 4 ranks",
    "cli.verify.one_rank": "one rank: nothing parallel ran, each row above is one process "
                           "against itself. Run it on N ranks: minimegatron run -n 8 verify",
    # checks/verify.py: the progress lines and the table of minimegatron verify
    "cli.verify.progress": "loss {loss:>8}  grad {grad:>8}  weight {weight:>8}",
    "cli.verify.skip.no_grid": "no grid of {n} rank(s) fits: needs {rule}",
    "cli.verify.skip.rule_3d": "dp x pp x tp with two axes > 1",
    "cli.verify.skip.rule_4d": "dp x pp x tp x cp with cp > 1 and tp or pp > 1",
    "cli.verify.skip.rule_moe3d": "dp x pp x tp with dp > 1 and tp or pp > 1",
    "cli.verify.skip.rule_other": "its grids",
    "cli.verify.skip.sp_tp": "sequence parallelism needs tp > 1 (an even world)",
    "cli.verify.skip.needs_pp": "{scheme} runs a pipeline of pp = 2 (an even world)",
    "cli.verify.skip.fp8": "fp8: its matmuls stay bf16 (not one of FP8_SCHEMES)",
    "cli.verify.skip.unavailable": "not available",
    "cli.verify.skip.hsdp": "HSDP replicates over 2: dp = {dp} is odd",
    "cli.verify.skip.chunks": "{chunks} chunks x {pp} stages: ",
    "cli.verify.head": "scheme       grid (dp x pp x tp, M)   max|loss diff| max|grad diff| "
                       "max|weight diff|  tolerance{vs64}  status",
    "cli.verify.summary": "{passed} of {count} rows pass, {skipped} skipped ({dtype}; tolerance "
                          "= max({floor}, {safety} x one process's drift from a one-ulp "
                          "nudge{vs64}); {failed}",
    "cli.verify.vs64": "; vs {ref} = (diff + one process's {half} error) / ({scale} x the "
                       "{reference} run's max |value|), <= 1 passes",
    "cli.verify.flips": "fp8: the gradient tolerance is at least {flips} x the float32 run's "
                        "max |gradient| (one flipped e4m3 rounding of the largest)",
    "cli.verify.failed": "FAILED: {rows}",
    "cli.verify.none_failed": "none failed",
    "cli.verify.weak": "warning: {count} row(s) needed a tolerance above {limit}: after this "
                       "many steps one process drifts that far from itself, so a small bug "
                       "could hide in the drift. Use fewer --steps",
    "cli.verify.or_float64": " (or float64).",
    # memory.py
    "cli.memory.description": "parameters, memory, FLOPs and communication of a GPT in closed "
                              "form (docs/memory.md has every formula), and the scaling model",
    "cli.memory.view": "what to print: config (this configuration, the default), table1, "
                       "table2, zero, scaling, mixed or moe",
    "cli.memory.layers": "L, transformer layers (default 72)",
    "cli.memory.hidden": "h, hidden size (default 3072)",
    "cli.memory.heads": "a, attention heads (default 32)",
    "cli.memory.vocab": "V, vocabulary size (default 51200)",
    "cli.memory.seq": "s, sequence length in tokens (default 1024)",
    "cli.memory.dp": "N, data-parallel ranks (default 1)",
    "cli.memory.pp": "K, pipeline stages (default 1)",
    "cli.memory.tp": "t, tensor-parallel ranks (default 1)",
    "cli.memory.cp": "c, context-parallel ranks: each holds s/c tokens (default 1)",
    "cli.memory.micro_batch": "b, sequences per micro-batch (default 8)",
    "cli.memory.micro_batches": "M, micro-batches per step (default 1)",
    "cli.memory.zero": "ZeRO stage: 0 none, 1 optimizer state, 2 and gradients, 3 and "
                       "weights split over dp (default 0)",
    "cli.memory.schedule": "pipeline schedule, which sets the micro-batches a stage holds "
                           "(default 1f1b; interleaved with v = 2 chunks per stage)",
    "cli.memory.checkpoint": "activation checkpointing: keep each layer's input, recompute "
                             "the rest",
    "cli.memory.precision": "bytes per value: mixed (float16 and float32 masters, the "
                            "default), float32 or float64",
    "cli.memory.sequence_parallel": "split LayerNorm/dropout activations by tokens over tp "
                                    "(Table 2)",
    "cli.memory.attention": "the context-parallel variant when --cp > 1 (what a layer keeps)",
    "cli.memory.moe_title": "mixture of experts",
    "cli.memory.moe_description": "view moe: total and active parameters, expert parameters "
                                  "per rank under ep, the dispatch buffer, e.g. minimegatron "
                                  "memory moe --experts 8 --top-k 2 --ep 4 --dp 8",
    "cli.memory.experts": "E experts per MoE layer (default 8)",
    "cli.memory.top_k": "k, experts per token (default 2)",
    "cli.memory.ep": "expert-parallel ranks, folded over dp x cp (must divide both)",
    "cli.memory.moe_every": "MoE in blocks i with (i+1) %% every == 0 (2: every other)",
    "cli.memory.capacity_factor": "f, C = ceil(k s f / E) slots per expert and sequence; "
                                  "0 = dropless (default 1)",
    "cli.memory.hardware": "JSON written by minimegatron calibrate (default: a DGX-2H)",
    "cli.memory.cannot_read": "argument --hardware: cannot read {path}: {error}",
    "cli.memory.heads_split": "--hidden {hidden} must divide by --heads {heads} (each head has "
                        "hidden/heads dimensions)",
    "cli.memory.enumerated": "--schedule {schedule} is read off its action list, which "
                             "stops at --micro-batches {most} (got {micro}); gpipe and 1f1b "
                             "are formulas and take any number",
    "cli.memory.split": "--layers {layers} must divide by --pp {pp}, and --hidden {hidden} "
                        "and --heads {heads} by --tp {tp}",
    "cli.memory.cp_chunks": "--cp {cp}: --seq {seq} must divide into {parts} equal chunks",
    "cli.memory.ulysses": "--attention ulysses: the {heads} heads of a tp rank must divide by "
                          "--cp {cp}",
    "cli.memory.sp": "--sequence-parallel: --seq {seq} / --cp {cp} must divide by --tp {tp}",
    "cli.memory.moe": "--ep {ep} must divide --experts {experts} and dp x cp = {dpcp}, and "
                      "--top-k {top_k} <= --experts",
    # calibrate.py
    "cli.calibrate.description": "measure this machine's GEMM rate, the engine's op rates "
                                 "and all-reduce latency and bandwidth, into the JSON that "
                                 "minimegatron memory --hardware reads (the model: "
                                 "minimegatron/tools/calibrate.py)",
    "cli.calibrate.out": "JSON path ('' to only print)",
    "cli.calibrate.ranks": "ranks for the collective run when started alone (default 2)",
    "cli.calibrate.no_mpi": "GEMM only, no MPI launch",
    "cli.calibrate.wrote": "wrote {path} (read it with --hardware {path})",
    # timeline.py
    "cli.timeline.description": "draw a pipeline schedule (simulated) or a traced run",
    "cli.timeline.schedule": "the pipeline schedule to simulate (default gpipe)",
    "cli.timeline.stages": "K, pipeline stages (default 4)",
    "cli.timeline.micro_batches": "M, micro-batches per step (default 8)",
    "cli.timeline.chunks": "model chunks per stage, v (interleaved only; default 2)",
    "cli.timeline.t_forward": "time of one forward of one stage (default 1)",
    "cli.timeline.t_backward": "time of one backward of one stage (default 1)",
    "cli.timeline.t_weight": "weight-gradient time T_W (default 1 for zb-h1/zb-h2/zbv and "
                             "dualpipe/dualpipev, else "
                             "0; a whole backward takes t-backward + t-weight)",
    "cli.timeline.out": "PNG path; '' for text only",
    "cli.timeline.trace": "JSON list of spans from a real run, drawn instead",
    "cli.timeline.chrome_trace": "also write the timeline as Chrome trace JSON (Perfetto)",
    "cli.timeline.bad_trace": "argument --trace: {path} is not a list of spans ({error})",
    "cli.timeline.wrote_chrome": "wrote {path} (Chrome trace: open it in https://ui.perfetto.dev)",
    "cli.wrote": "wrote {path}",
    # exercises.py
    "cli.exercises.description": "classroom copies with blanked blocks",
    "cli.exercises.epilog": "hand out:   minimegatron exercises make class/alice     (one "
                            "copy per student)\n"
                            "the student installs the copy:  pip install -e "
                            "'class/alice[mpi,plot]'\n"
                            "collect the copies into class/, then grade them all:\n"
                            "            minimegatron grade --class class/ --csv book.csv "
                            "--json book.json\n"
                            "a copy may change the exercise blocks only; any other change is "
                            "reported\n(CHANGED) and never passes. The teacher's guide: "
                            "docs/teaching.md.",
    "cli.exercises.action": "what to do",
    "cli.exercises.list": "the exercises and the file each one is in",
    "cli.exercises.order": "The order of each chapter's work (each exercise is graded alone, "
                           "so any order passes; this is the order the ideas build in):",
    "cli.exercises.order_page": "**Order in chapter {chapter}.** {order}. {why}. Each "
                                "exercise is graded alone, so any order passes; this is the "
                                "order the ideas build in.",
    "cli.exercises.make": "write a student copy into DIR",
    "cli.exercises.make_dir": "the folder of the new copy",
    "cli.exercises.force": "write into a non-empty DIR (its minimegatron/ is replaced)",
    "cli.exercises.solve": "put reference solutions back into a copy",
    "cli.exercises.solve_dir": "the folder of the copy",
    "cli.exercises.ids": "ids, groups, or all",
    "cli.exercises.not_marked": "(not marked in this package)",
    "cli.exercises.next_student": "next (student): cd {path} && python3 -m venv .venv && . "
                                  ".venv/bin/activate && python3 -m pip install -e "
                                  "\".[mpi,plot]\"   (the copy's README.md says the rest)",
    "cli.exercises.next_teacher": "next (teacher): minimegatron grade --path {path}   (every "
                                  "exercise is TODO at first)",
    "cli.exercises.solved": "solved {ids} in {path}",
    "cli.no_exercise": "no exercise {spec}; known: {known} (or a group number such as 3, or "
                       "all)",
    "cli.exercises.error": "minimegatron exercises: {error}",
    "cli.exercises.refuse": "refusing to write a copy into {path}: choose a new directory, "
                            "e.g. class/student1",
    "cli.exercises.is_file": "{path} is a file; choose a new directory",
    "cli.exercises.not_empty": "{path} is not empty ({n} entries); choose a new directory, or "
                               "add --force to write over the files in it",
    "cli.exercises.source_copy": "{path} is itself a student copy (exercises {ids} are blank); "
                                 "make the copy from the reference package",
    "cli.exercises.no_such": "no exercise {id} in {path}; known: {known}",
    "cli.exercises.no_solution": "{path} is a student copy: it has no solution to {id}",
    # grade.py
    "cli.grade.description": "check a student copy, exercise by exercise (--class: every copy "
                             "of a class, into a gradebook)",
    "cli.grade.epilog": "a student, from the copy's directory:   minimegatron grade 3.2\n"
                        "the teacher, one copy:                  minimegatron grade --path "
                        "class/alice\n"
                        "the teacher, the whole class:           minimegatron grade --class "
                        "class/ --csv book.csv \\\n"
                        "                                                           --json "
                        "book.json\n"
                        "Each cell is PASS, FAIL (the point of the lesson missed, and a hint), "
                        "TODO, HANG,\nERROR, CHANGED (a file outside the exercise blocks "
                        "differs from the handout: never\nPASS), TIMEOUT (a busy machine: grade "
                        "again) or "
                        "SUSPECT (the block uses open, os,\nthe trace's switches...: not run, "
                        "never PASS; the line is shown). What each exercise\nchecks: "
                        "exercises/<id>.md, docs/teaching.md.",
    "cli.grade.exercise": "an id (3.2), a group (3), a list (1.1,3) or all (default)",
    "cli.grade.path": "directory holding the copy's minimegatron/",
    "cli.grade.timeout": "seconds a check may run without finishing (default 60)",
    "cli.grade.class_title": "a whole class",
    "cli.grade.class": "grade every student folder under DIR (one copy each)",
    "cli.grade.csv": "write the gradebook as CSV",
    "cli.grade.json": "write the gradebook as JSON",
    "cli.grade.jobs": "copies graded at once (default: cores / 4)",
    "cli.grade.student_timeout": "seconds one copy may take in all (default 1200)",
    "cli.grade.error": "minimegatron grade: {error}",
    # sample.py
    "cli.sample.description": "load a checkpoint and let the GPT write text",
    "cli.sample.checkpoint": "a file written by save_checkpoint (tutorials/08_3d_parallel.py "
                             "writes one: out/3d_gpt.npz, in its --out folder)",
    "cli.sample.prompt": "the text to continue (default 'In ')",
    "cli.sample.tokens": "characters to write (default 200)",
    "cli.sample.temperature": "divides the logits before sampling: lower is surer (default "
                              "0.8)",
    "cli.sample.top_k": "keep the k likeliest characters (default: all)",
    "cli.sample.not_in_vocab": "the prompt's character {char} is not in the vocabulary "
                               "({chars})",
    "cli.sample.empty": "the prompt is empty: give at least one character (--prompt)",
    "cli.sample.not_text": "checkpoint {path}: its GPT has a vocabulary of {vocab} tokens, the "
                           "shipped corpus has {chars} characters: it was not trained on text "
                           "(out/3d_gpt.npz of tutorials/08_3d_parallel.py is)",
    "cli.sample.seed": "seed of the sampling (default 0)",
}
