"""The book's error messages a student meets, as patterns: key -> the English text with {fields}.

The book (backend, autodiff, nn, optim, data, comm, mixed_precision, parallel) raises
its ValueErrors in English and imports nothing of the lab, so the lab translates them
when it prints them (``book_errors.translate``). Each template here is the message as the
book writes it, every varying part a {field}: a field matches any text (``FIELDS`` narrows
a few), a field named twice must hold the same text twice, and a field's text is itself
translated when it matches a pattern (the ``where`` and ``why`` parts, which several
messages share). ``ko_errors.py`` holds the Korean sentences under the same keys and
fields. tests/test_book_errors.py raises every one by calling the book with bad input, so
a message reworded in the book fails there until its pattern follows.
"""

# a field's text, where "anything" would split a message in the wrong place
FIELDS = {
    "where": r"in a serial run|on rank \d+",
    "quoted": r"'[^']*'",
    "at_step": r"(?: at step \d+)?",
    "note": r"(?: \(.*\))?",
    "hint": r"(?: \(.*\))?",
    "site": r"[^\n]+:\d+(?: \(from [^\n]+:\d+\))?|\?",       # mismatch.call_site()
    "names": r"[^;]*",
    "who": r"ranks? (?:\d+|\[[\d, ]*\])",
    "world_ranks": r"\d+|\[[\d, ]*\]",
    "call": r"[^\n]*?",                                     # one line: one rank's call
    "scheme": r"\S+",                                       # verify row {scheme}
}

PATTERNS = {
    # the grid and the splits (parallel/)
    "grid.size": "grid size {name}={value} must be an integer >= 1 (got {sizes})",
    "grid.world": "grid {product} = {ranks} ranks, but the job has {world} ranks; choose "
                  "sizes whose product is {world}",
    "split.batch": "{name} of {rows} rows does not split evenly over the {size} ranks of "
                   "group {group}: use a batch size divisible by {size}",
    "tp.divisible": "tensor parallel: {what}={value} is not divisible by tp={tp}{hint}",
    "tp.pad_vocab": " (pad_vocab=False; pad_vocab=True pads it to a multiple of tp)",
    "tp.linear": "{kind}ParallelLinear: {split}={value} is not divisible by tp={tp}",
    "tp.linear_weight": "{kind}ParallelLinear: master_weight has shape {shape}, expected "
                        "(in_features, out_features) = ({rows}, {cols})",
    "tp.vocab": "VocabParallelEmbedding: num_embeddings={vocab} is not divisible by tp={tp} "
                "(pad the vocabulary)",
    "tp.shards": "axis {axis} of length {width} is not divisible by tp={tp}",
    "tp.last_axis": "cannot split a last axis of {width} over {size} tp ranks",
    "sp.tokens": "sequence parallel: a sequence of {steps} tokens does not split over "
                 "tp={tp} ranks; use a length divisible by {tp}",
    "cp.tokens": "context parallel: a sequence of {steps} tokens does not split into {parts} "
                 "equal chunks ({split} split over cp={cp} ranks); use a length divisible "
                 "by {parts}",
    "cp.attention": "context parallel: attention must be one of {valid}, got {got}",
    "cp.dropout": "context parallel: dropout={p} is not supported (its masks would have to "
                  "follow the tokens); use dropout=0",
    "cp.ulysses_heads": "Ulysses: {heads} heads do not split over cp={cp} ranks; use a head "
                        "count divisible by {cp} (or ring / all-gather attention)",
    "cp.ulysses_tp_heads": "Ulysses: the {heads} heads of a tp rank ({all_heads} heads / "
                           "tp={tp}) do not split over cp={cp} ranks; use fewer tp or cp "
                           "ranks (or ring / all-gather attention)",
    "ep.grid": "expert parallel: ep={ep} does not fit the grid: experts fold over the dp x cp "
               "= {dp} x {cp} = {ranks} ranks that hold the same dense weights, so ep must "
               "divide {ranks}",
    "ep.experts": "expert parallel: num_experts={experts} is not divisible by ep={ep}; every "
                  "ep rank holds E/ep experts",
    "moe.top_k": "MoE: top_k={top_k} > num_experts={experts}: a token cannot pick more "
                 "experts than there are",
    "moe.capacity": "MoE: capacity_factor must be a finite number > 0 (or None for dropless), "
                    "got {value}",
    "moe.int": "MoEConfig.{name} must be an int >= 1, got {value}",
    "moe.capacity_most": "MoE: capacity_factor={value} > num_experts/top_k = {most}: at {most} "
                         "every expert has room for every token already (C = T); use at most "
                         "that, or None for dropless",
    "moe.clip": "MoETrainer: clip_grad must be a finite number > 0 (or None: no clipping), "
                "got {value}",
    # the model (nn/) and the data
    "gpt.heads": "GPTConfig: d_model={d_model} is not divisible by n_head={heads}",
    "gpt.positive": "GPTConfig.{name} must be an int >= {low}, got {value}",
    "gpt.dropout": "GPTConfig.dropout must be in [0, 1), got {value}",
    "gpt.seq_len": "sequence of {steps} tokens, but seq_len is {seq_len}",
    "ids.vocab": "{what} {bad} is outside the vocabulary [0, {size})",
    "loss.empty": "the loss got no targets (an empty batch): batch and seq_len must be >= 1",
    "data.batch": "a batch needs batch_size >= 1 and seq_len >= 1, got batch_size={batch}, "
                  "seq_len={seq_len}",
    "state.missing": "load_state_dict: missing {missing}, unexpected {unexpected}",
    "state.shape": "load_state_dict: {name} has shape {shape}, the model expects {expected}",
    "generate.idx": "generate: idx must be a (B, T) array of token ids with B, T >= 1, got "
                    "{dtype} of shape {shape}",
    "generate.temperature": "generate: temperature must be > 0, got {value}",
    "generate.top_k": "generate: top_k must be None or an int >= 1, got {value}",
    "generate.max_new": "generate: max_new_tokens must be an int >= 0, got {value}",
    # the engine (autodiff/) and the backend
    "matmul.shapes": "matmul: shapes {first} and {second} do not align (the last axis of the "
                     "first must equal the second-to-last of the second)",
    "dropout.rng": "dropout with p > 0 needs a seeded rng (backend.host_rng)",
    "backend.unknown": "unknown backend {name}; choose one of {valid}",
    "recompute.tensor": "recompute(fn, ...) needs fn to return one Tensor",
    # optimizers, mixed precision, data parallel
    "optim.interval": "{name} must be a finite number in {interval}, got {value}",
    "optim.empty": "the optimizer got an empty parameter list",
    "optim.betas": "betas must be a pair (beta1, beta2), got {value}",
    "optim.state_count": "optimizer state for {saved} parameters, this optimizer has {params}",
    "scaler.number": "{name} must be a finite number >= {low}, got {value}",
    "scaler.backoff": "backoff_factor must be in (0, 1), got {value}",
    "scaler.interval": "growth_interval must be an int >= 1, got {value}",
    "mixed.wraps": "MixedPrecisionOptimizer wraps an Optimizer (SGD, AdamW)",
    "ddp.empty": "DistributedDataParallel: the module has no trainable parameters",
    "ddp.dtypes": "DistributedDataParallel: the parameters have different dtypes {dtypes}; "
                  "one flat gradient buffer holds one dtype",
    "ddp.reduce_dtype": "reduce_dtype must be None, 'float16' or 'float32', got {value}",
    "ddp.bucket": "bucket_bytes must be a positive int, got {value}",
    "zero.stage": "ZeRO stage must be 1, 2 or 3, got {stage} (stage 0 is plain "
                  "DistributedDataParallel)",
    "zero.optimizer": "ZeRO needs optimizer=an Optimizer (e.g. AdamW(...)) whose update rule "
                      "it applies to each rank's slice",
    "fsdp.zero": "FSDP2 shards every weight, its gradient and its optimizer state (ZeRO-3's "
                 "place): it replaces zero_stage={stage}, a run has one sharding",
    "fsdp.pipeline": "FSDP2 is not composed with the pipeline here: its per-unit all-gather "
                     "and reduce-scatter would run once per micro-batch inside the schedule "
                     "(as ZeRO-3); pp must be 1",
    # pipelines: schedules, stages, the engine, 3D
    "schedule.unknown": "unknown schedule {name}; valid: {valid}",
    "schedule.sizes": "need num_stages >= 1, num_micro_batches >= 1 and 0 <= stage < "
                      "num_stages; got num_stages={stages}, num_micro_batches={micro}, "
                      "stage={stage}",
    "schedule.interleaved": "the interleaved schedule needs the number of micro-batches to be "
                            "a multiple of the pipeline stages: M={micro}, K={stages}",
    "schedule.chunks": "schedule {name} runs {chunks} model chunk(s) per stage; only "
                       "'interleaved' takes num_chunks={asked}",
    "schedule.num_chunks": "num_chunks must be an int >= 1, got {value}",
    "schedule.warm_up": "schedule {name} needs at least {least} micro-batches for {stages} "
                        "stages (the first stage's warm-up); got {micro}",
    "schedule.dualpipe": "schedule {name} needs an even number of stages and an even number "
                         "of micro-batches at least twice the stages (half go down, half go "
                         "up): got {stages} stages, {micro} micro-batches",
    "schedule.dualpipev": "schedule {name} needs at least {least} micro-batches for {stages} "
                          "stages (twice the stages: the V's 2P chunks); got {micro}",
    "schedule.times": "need positive step times; got t_forward={forward}, "
                      "t_backward={backward}, t_weight={weight}",
    "schedule.t_weight": "schedule {name} runs W on its own: need t_weight > 0, got "
                         "t_weight={weight}",
    "schedule.op": "unknown op {op}; valid ops: {valid}",
    "stage.layers": "pipeline of {stages} stages, but the model has only {layers} layers: "
                    "every stage needs at least one layer",
    "stage.index": "stage {stage} is not in 0..{last}",
    "engine.micro": "num_micro_batches must be an int >= 1, got {value}",
    "engine.split": "a batch of {batch} sequences does not split into {micro} equal "
                    "micro-batches",
    "engine.ends": "the first stage needs the inputs and the last the targets",
    "threed.micro": "micro_batches must be an int >= 1, got {value}",
    "threed.zero": "Trainer3D composes zero_stage 0 (DDP), 1 or 2 with the pipeline; got "
                   "zero_stage={value}",
    "threed.empty": "a global batch needs at least 1 sequence, got {batch}",
    "threed.split": "a global batch of {batch} sequences does not split into dp={dp} x "
                    "{micro} micro-batches: use a multiple of {parts}",
    # collectives (comm/)
    "comm.op": "unknown reduction op {op}; choose one of {valid}",
    "comm.mean": "op='mean' needs a floating dtype, got {dtype}",
    "comm.inplace": "all_reduce: inplace=True and out= exclude each other",
    "comm.out": "{op}: out= {why}",
    "comm.out_kind": "must be an array of x's kind ({kind}), got {got}",
    "comm.out_shape": "has shape {shape} and dtype {dtype}; the result has shape {result} and "
                      "dtype {result_dtype}",
    "comm.out_read_only": "is read-only",
    "comm.out_overlaps": "overlaps x (all_reduce: use inplace=True)",
    "comm.peer": "{op} {direction} rank {peer} of group {group}, which has ranks 0..{last} "
                 "(world ranks {ranks}): a peer is a rank of the group it is given",
    "comm.all_to_all": "all_to_all: axis {axis} of length {length} does not split into {size} "
                       "equal chunks (one per rank of {group})",
    # a CollectiveMismatch (comm/mismatch.py, comm_check.py, agreement.py): the framing words;
    # each rank's line keeps its call (describe(): identifiers) and its call site
    "mismatch.collective": "collective mismatch in group {quoted} ({reason}); no data was "
                           "moved:\n{lines}",
    "mismatch.rank_line": "  {who} (world {world_ranks}): {call} at {site}",
    "mismatch.the_collective": "the collective differs",
    "mismatch.differs": "{what} differs",
    "mismatch.root": "root {root} is not a rank of this {size}-rank group",
    "mismatch.rows": "row counts differ and no sizes were given",
    "mismatch.sizes_length": "sizes has {entries} entries for {size} ranks",
    "mismatch.sizes_rows": "sizes {sizes} does not match the rows each rank holds {rows}",
    "mismatch.counts": "all_to_allv counts differ: {pairs}",
    "mismatch.pair": "rank {sender} sends {sent} rows to rank {receiver}, rank {receiver} "
                     "expects {expected} from rank {sender}",
    "mismatch.fields": "{what} differs in: {names}; {why}",
    "mismatch.fields_all": "{what} differs in its fields; {why}",
    "mismatch.why_agreed": "agreed before the first step, since messages of the same size "
                           "cannot show it",
    "mismatch.why_step": "agreed once per step and group; the step's collectives follow from "
                         "it and are not checked one by one",
    "mismatch.p2p": "send/recv mismatch in group {quoted}, tag {tag} (dtype or element count "
                    "differs; raised by the receiver only):\n  {sent_line}\n  {received_line}",
    "mismatch.sent": "rank {rank} sent {call} at {site}",
    "mismatch.receives": "rank {rank} receives into {call} at {site}",
    # NaN and inf (NonFiniteError)
    "finite.step": "non-finite {what} at step {step} {where} (pass check_finite=False to "
                   "train on)",
    "finite.named": "non-finite {what} {quoted}{at_step} {where}{note}",
    "finite.activation": "non-finite activation: {first} (the first module input or output "
                         "that is not finite; every weight finite) {where}{note}",
    "finite.scale": "an overflow at the minimum loss scale {scale} {where} ({skipped} steps "
                    "skipped so far): the gradients are not finite at any scale (a NaN/inf "
                    "weight or input, a diverged model); pass at_min_scale='warn' to skip on",
    "act.output": "output of {quoted}",
    "at.step": " at step {step}",
    "where.serial": "in a serial run",
    "where.rank": "on rank {rank}",
    "note.zero3": " (in its ZeRO-3 shard)",
}

# What ranks agree on, as the book names it in a CollectiveMismatch's {what}
# (comm/agreement.agree_fields, comm_check.agree, comm_check.agreed_step); a name is
# matched whole, {scheme} any text. tests/test_book_errors.py finds every name the book
# passes and checks each has its Korean.
NAMES = {
    "name.training_plan": "the training plan",
    "name.process_grid": "the process grid",
    "name.optimizer": "the optimizer",
    "name.zero_optimizer": "the ZeRO optimizer",
    "name.context_parallelism": "context parallelism",
    "name.step_inputs": "the step's inputs",
    "name.pipeline_batch": "the pipeline step's batch",
    "name.verify_row": "verify row {scheme}",
    "name.engine": "PipelineEngine configuration",
    "name.zero_layout": "ZeRO shard layout",
    "name.ddp_layout": "DistributedDataParallel bucket layout",
}
