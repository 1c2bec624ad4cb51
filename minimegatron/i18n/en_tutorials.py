"""English messages of tutorials 03-11 (the catalogue in en.py holds 00-02): key -> template."""

MESSAGES = {
    # tutorials/03_tensor_parallel_mlp.py
    "t03.heading": "Megatron MLP, D={d}, ffn={ffn}, on {tp} ranks; X (2, 4, {d})\n",
    "t03.shards": "A_{rank} = columns {first}..{last} of A: shape {a_shape}; "
                  "B_{rank} = rows of B: shape {b_shape}\n"
                  "  partial GeLU(X A_i) B_i [0, 0, :3] = {partial}",
    "t03.each": "each {nbytes} bytes = 2*4*{d} float64 values",
    "t03.each_tp1": "tp=1: one rank has nothing to sum; with tp > 1 each moves 2*4*{d} float64 "
                    "values",
    "t03.all_reduces": "\nall-reduces: forward {forward}, backward {backward} ({each})",
    "t03.step": "one SGD step (lr {lr}) on both: |dL/dW_i - its slice of dL/dW| = {grad:.1e}, "
                "|W_i - its slice of W| = {weight:.1e}",
    "t03.per_rank": "per rank (tp={tp})",
    # tutorials/09_interleaved_1f1b.py
    "t09.heading": "interleaved 1F1B, K={K} ranks, v={v} chunks, M={M} micro-batches "
                   "(one column = one chunk step, 1/{v} of a stage's forward):",
    "t09.bubble": "\nbubble (idle / busy)   simulated {sim}   formula (1/v)(K-1)/M = {formula}   "
                  "plain 1F1B {plain} = (K-1)/M",
    "t09.fraction": "bubble (idle / total)  simulated {sim} = {sim_pct:.1%}   plain 1F1B "
                    "{plain} = {plain_pct:.1%}",
    "t09.messages": "messages per step      {chunked} = 2M(Kv-1)   plain 1F1B {plain} = 2M(K-1)",
    "t09.held": "activations held, in whole stages per rank: {held}   plain 1F1B {plain}",
    "t09.columns": "\nstep   loss interleaved   loss one process    |diff|",
    "t09.check": "\nagainst one process (8-layer GPT, 2 AdamW steps, every rank): {diffs}   "
                 "{verdict} (< {tol:g})",
    "t09.pass": "PASS",
    "t09.fail": "FAIL",
    # tutorials/11_mixed_precision.py
    "t11.heading": "ZeRO-2 in float16 on {n} ranks; inf planted on rank {rank} at step {step}; "
                   "growth interval {interval}",
    "t11.columns": "step loss scale     loss  skipped on ranks",
    "t11.overflow": "   <- overflow: every rank skipped, scale halved",
    "t11.skipped": "skipped steps: {count} of {steps} (the scaler counts them: skipped_steps)",
    "t11.compare": "\nagainst one process (the whole batch, the same inf), {steps} steps: the "
                   "same skips and scales: {verdict}\n  max |loss diff| {loss:.1e} (the mean of "
                   "the ranks' losses), |grad diff| {grad:.1e} (g / S)\n  max |weight diff| "
                   "{weight:.1e}: float16 rounding can flip the sign of a tiny gradient, and "
                   "AdamW's\n  step, about +-lr whatever |g|, then differs by about 2 lr = "
                   "{two_lr:g} (checks/precision.py)",
    "t11.formats": "\nthe half formats (ml_dtypes.finfo): bf16 has float32's range, fp8 needs "
                   "a scale\nformat          max     normal  subnormal   epsilon   1e-8 ->",
    "t11.e4m3": "e4m3 of 500 unscaled: {unscaled} (no inf in e4m3fn); scaled by s = {scale:g} "
                "then / s: {back}",
    "t11.numpy_only": "bf16 and fp8 training runs on the NumPy backend only: ml_dtypes' types "
                      "are NumPy dtypes, and CuPy has none (MINIMEGATRON_BACKEND=numpy)",
    "t11.low": "{name} ZeRO-2, no loss scale, {steps} steps: max |loss diff| {loss:.1e}, |weight "
               "diff| {weight:.1e} against one {name} process; {vs32:.1e} against one float32 "
               "process (bf16's epsilon {ulp:g}; AdamW's sign flips: ~2 lr, as above)",
    "t11.yes": "yes",
    "t11.no": "NO",
    "t11.bytes": "\nbytes per parameter, measured on one process ({params:,} parameters): "
                 "{kinds} = {total:g}",
    "t11.zero": "the same bytes per parameter for 7.5B parameters, N = 64 (GB = 1e9 bytes): "
                "{totals}",
    # tutorials/04_megatron_gpt.py
    "t04.heading": "GPT {layers} layers, d_model {d_model}, {heads} heads, vocab {vocab}: "
                   "tp={tp}, {local:,} parameters per rank",
    "t04.of_serial": " (serial {n:,})",
    "t04.loss_tp": "loss tp={tp}",
    "t04.columns": "step {loss_tp:>14}    loss serial    |diff|  all-reduces",
    "t04.formula": "forward 2*{n}+4, backward 2*{n}+1",
    "t04.why_tp1": " (tp=1: nothing to sum; with tp > 1 it is {formula})",
    "t04.summary": "\nsummary over {steps} steps ({elapsed:.1f} s):\n"
                   "  max |loss tp={tp} - loss serial| = {worst:.2e}\n"
                   "  all-reduces per step: {reduces}{why}\n"
                   "  parameters per rank {local:,}",
    "t04.of": " of {n:,}",
    # tutorials/10_sequence_parallel.py
    "t10.heading": "GPT {layers} layers, d_model {h}, {a} heads, seq_len {s}, batch {b}: tp={t}\n",
    "t10.part1": "1. one block's tp collectives per rank (tp={tp}), count and bytes sent",
    "t10.same": "  {phase}: same bytes per rank: {verdict}",
    "t10.yes": "yes",
    "t10.no": "NO",
    "t10.part2": "\n2. activation bytes one block keeps on a rank (float64, dropout 0): "
                 "measured / formula",
    "t10.equal": "equal",
    "t10.different": "DIFFERENT",
    "t10.note": "  (one process: b[sbh(21 + as/h) + 2sb]; sequence parallel divides all of it by "
                "t)\n\n   the paper's Table 2 for this shape (16-bit): tp {tp:,.0f} B, tp+sp "
                "{sp:,.0f} B  (minimegatron memory table2)",
    "t10.part3": "\n3. tp={t} + sequence parallel vs one process, {steps} AdamW steps: "
                 "max |loss diff| {loss:.1e}, |grad diff| {grad:.1e}, |weight diff| {weight:.1e}",
    "t10.columns": "step        loss tp+sp   loss one process    |diff|   (batch {batch})",
    # tutorials/05_data_parallel.py
    "t05.heading": "{n} ranks, batch {batch}: {rows} rows per rank, {params:,} parameters",
    "t05.rows": "rows {first}..{last} of each batch; last local DDP loss {loss:.6f}",
    "t05.bytes": "\nbytes per step per rank (trace; kB = 1000 B), and what DataParallel's ranks "
                 "hold\nbesides the weights (gradients + AdamW state):",
    "t05.summary": "DataParallel: the master moves {ratio:.1f}x (= N-1) the bytes of rank 1; DDP: "
                   "every rank the same {ddp:.1f}k = 2(N-1)/N x {grads:.1f}k of gradients",
    # tutorials/06_zero.py
    "t06.heading": "{n} ranks, P = {params:,} parameters, float64 (b = 8), AdamW\n",
    "t06.bytes": "\nper rank, bytes (measured from the arrays / model_state_bytes formula):",
    "t06.outside": "  ^ outside the padding margin!",
    "t06.fsdp2": "\nFSDP2, every weight sharded on its own rows (dim 0), AdamW on the shards: "
                 "max |loss - stage 3's| {off:.1e}; per rank, bytes (measured / "
                 "tools/memory_fsdp.fsdp2_bytes), the gathered peak is two units (prefetch):",
    "t06.fsdp2_head": "            weights               grads           optimizer       "
                      "gathered peak       sent per step",
    "t06.margin": "margin: padding to a multiple of N, at most 4 * 8 * N * groups bytes "
                  "({margin} B for one flat group); G = 8P = {g:,d} B; a sent/step above the "
                  "model is padding (stage 3 pads every layer).",
    # tutorials/07_pipeline.py
    "t07.heading": "{layers}-layer GPT, batch {batch}, {stages} stages",
    "t07.checkpointing": ", activation checkpointing",
    "t07.why": "\nPlain, each step lasts its real compute plus Python's overhead between steps, "
               "which the formula\ndoes not count (and on a laptop, where the ranks share the "
               "cores, a stage also computes slower while\nits neighbours compute and waits for "
               "a core after its message arrives); emulated, every step lasts\na fixed device "
               "time slept without a core, as a GPU stage waits, so the timeline follows the "
               "formula.\n(this machine: {cores} cores for {ranks} ranks)",
    "t07.compute": "Real compute of a micro-batch inside the emulated steps, at most: "
                   "{times}{end}",
    "t07.op": "{op} {ms:.1f} ms of {budget:g}",
    "t07.too_long": " (longer steps are not shortened: raise --t-forward/--t-backward)",
    "t07.late": "The OS woke the sleeping ranks {ms:.2f} ms late on average (each delay on the "
                "critical path adds to the bubble: other programs keep the cores busy).",
    "t07.memory": "\nAt a fixed batch GPipe keeps the whole batch's activations whatever M is (M "
                  "in flight, each 1/M of the batch);\n1F1B keeps min(M, K - k) of M "
                  "micro-batches, with the same bubble: the deeper the pipeline, the less the "
                  "later stages hold.",
    "t07.timelines": "\ntimelines: <schedule>_M<M>.png (emulated) and <schedule>_M<M>_plain.png, "
                     "each with a Chrome trace .json beside it (https://ui.perfetto.dev), "
                     "{files} files in {out}/",
    # tutorials/08_3d_parallel.py
    "t08.ranks": "--dp {dp} x --pp {pp} x --tp {tp} = {product}, but this job has {n} ranks; "
                 "launch with -n {product} or change the flags",
    "t08.heading": "3D parallel GPT: {n} ranks = dp {dp} x pp {pp} x tp {tp}; {schedule}, {m} "
                   "micro-batches of {size} per replica, global batch {batch}, {steps} AdamW "
                   "steps",
    "t08.serial": "serial reference: {steps} steps on rank 0 alone in {seconds:.2f} s",
    "t08.bytes": "model state held and bytes sent in the last step, per rank (measured: "
                 "tools/memory_measure.py, the trace)",
    "t08.no_prediction": "(no prediction: the calculator needs n_layer={n_layer} divisible by "
                         "pp={pp})",
    "t08.predicted": "predicted by tools/memory.rank_report (float64, ZeRO 0), per stage:",
    "t08.traffic": "(the traffic differs by the 8-byte loss: all-reduced over dp, broadcast from "
                   "the last stage over pp)",
    "t08.max": "max |3D - serial| over {steps} steps: {worst:.2e}; median step {ms:.1f} ms",
    "t08.timeline": "timeline of the last step: {path}",
    "t08.chrome": "the same as a Chrome trace (https://ui.perfetto.dev): {path}",
    "t08.writes": "\nwhat the GPT writes (prompt {prompt!r}, {chars} characters, temperature "
                  "{temperature}, seed 0); before training: the serial model, whose weights the "
                  "grid starts from; after: sampled on the grid (every rank takes part)",
    "t08.before": "before training",
    "t08.after": "after {steps} steps",
    "t08.words": "{when}: {found} of {total} words are corpus words ({percent:.0f}%)",
    "t08.same": "the serial model writes the same text: {same}",
    "t08.yes": "yes",
    "t08.no": "NO",
    "t08.saved": "saved {checkpoint}: more with python -m minimegatron sample --checkpoint "
                 "{checkpoint} --prompt 'In pipeline'",
    # tutorials/12_context_parallel.py
    "t12.part1": "1. who holds which of S={steps} tokens (cp={cp}), and the causal work per "
                 "rank: ring blocks needed (contiguous) and (query, key) pairs",
    "t12.part2": "\n2. causal attention on every rank, {heads} heads of {hd}, batch {batch}, "
                 "S={steps}, float64: max |diff| against one process, and the bytes a rank "
                 "sent in one forward",
    "t12.part3": "\n3. GPT with its sequence split over cp={cp} ranks (ring attention) vs one "
                 "process, {steps} AdamW steps: max |loss diff| {loss:.1e}, |grad diff| "
                 "{grad:.1e}, |weight diff| {weight:.1e}",
    "t12.part4": "\n4. activation bytes one layer of that GPT keeps for backward on a rank "
                 "(batch {batch}, float64), measured from the autograd graph next to "
                 "tools/memory.py (one process: {serial:,d} B)",
    "t12.picture": "picture of the splits, the causal work and the ring: {path}",
    "t12.in_flight": "ring K/V blocks in flight (transient, one layer): forward {forward:,d} B, "
                     "backward {backward:,d} B",
    # tutorials/13_zero_bubble.py
    "t13.grid": "\n{name}, K={K} stages, M={M} micro-batches, T_F = T_B = T_W (simulated; "
                "W<i>: the weight gradient of micro-batch i, '..' idle)",
    "t13.measured": "\none step on {K} ranks, M={M}, emulated device time: every F, B and W "
                    "lasts {ms:g} ms (1F1B's backward is B + W); bubble = the most a stage "
                    "idles between its first step and its last",
    "t13.drawn": "timelines and Chrome traces (https://ui.perfetto.dev): {files} files in "
                 "{out}",
    "t13.even_ranks": "DualPipe (part 4) puts stages k and K-1-k on one rank, so the rank count "
                      "K must be even: this job has {K}; run it with -n 4",
    "t13.zbv_micro_batches": "--micro-batches {M}: ZBV needs at least 2K - 1 = {least}",
    "t13.compute": "longest real compute of one step: {ms:.1f} ms (each lasts {budget:g} ms "
                   "of emulated device time)",
    "t13.check_heading": "\nagainst one process (8-layer GPT, 2 AdamW steps, every rank):",
    "t13.check": "  {name:<6} {diffs}   {verdict} (< {tol:g})",
    "t13.dual_heading": "\n4. DualPipe and DualPipeV (M={M}), each against one process; "
                        "DualPipe's ranks k and K-1-k hold the same two stages:",
    "t13.dual_rank": "  {name:<9} rank {rank}: {params:,d} parameters; all-reduces over the "
                     "mirror pair {pair}: {sums} ({nbytes:,d} B the last)",
    "t13.pass": "PASS",
    "t13.fail": "FAIL",
    # tutorials/14_mixture_of_experts.py
    "t14.part1": "1. GPT with an MoE in every block: E={experts} experts, top-{k}, capacity "
                 "C={cap} per expert and sequence; ep={ep} folded over dp={dp}, batch "
                 "{batch}, {steps} AdamW steps next to one process. Per step: the loss, "
                 "assignments per expert over the whole batch (uniform: {uniform:g}) and "
                 "the real rows the experts of each rank computed (the padded buffer: "
                 "{padded} rows)",
    "t14.same_load": "the load per expert summed over the ranks equals one process's: {same}",
    "t14.yes": "yes",
    "t14.no": "NO",
    "t14.picture": "picture of the load per expert and per rank: {path}",
    "t14.part2": "\n2. the router's choices for the first {shown} tokens of rank 0 (block 0, "
                 "the last step): top-k experts, largest probability first; a choice over "
                 "capacity is DROPPED (the residual carries the token)",
    "t14.same_choices": "every rank's choices and drops equal one process's on its tokens: "
                        "{same}",
    "t14.part3": "\n3. assignments dropped at each capacity factor, C = ceil(k T f / E) "
                 "(one process, the trained weights, both MoE blocks)",
    "t14.part4": "\n4. bytes each rank sent in the all-to-alls of the last step (trace), one "
                 "per MoE block, beside the formula",
    "t14.bytes_padded": "padded: (ep-1) x E/ep x C x h x b x itemsize = ({ep}-1) x {local} x "
                        "{cap} x {h} x {b} x 8 = {want:,d} B each, on every rank (max |trace "
                        "- formula| {off:g})",
    "t14.bytes_dropless": "dropless (one layer, rank 0's rows per expert {counts}): dispatch "
                          "sent {sent:,d} B, from the counts {want:,d} B; every all-to-all of "
                          "every rank, max |trace - formula| {off:g}",
    "t14.part5": "\n5. what rank 0 holds in this run (the dispatch buffer: the last step's "
                 "trace), measured, beside the memory calculator (minimegatron memory moe)",
    "t14.memory": "every rank of dp={dp}, ep={ep}: max |measured - calculator| {off:g}",
    "t14.check": "every rank against one process, {steps} steps: max |loss diff| {loss:.1e}, "
                 "|grad diff| {grad:.1e}, |weight diff| {weight:.1e} (an expert weight: the "
                 "rows of the experts the rank holds)",
    "t14.part6": "\n6. aux-loss-free balancing (DeepSeek-V3): the router chooses from probs + "
                 "bias, the gates stay the probs; after each step every bias moves by "
                 "gamma={gamma:g} against the sign of its expert's load deviation (loads "
                 "summed over dp x cp). Dropless, the batch of 32: the grid's run with the bias "
                 "beside one process's, then one process three ways on the same batches",
    "t14.head_balance": "step        none    aux loss        bias   (busiest expert / mean "
                        "load, 1.00 is even)   biases of block 0",
    "t14.balance": "mean spread over the last {steps} steps: no balancing {none:.2f}, aux loss "
                   "{aux:.2f}, expert bias {bias:.2f} (gamma={gamma:g}, no aux loss)",
    "t14.balance_check": "the bias on the grid against one process, {steps} steps: max |loss or "
                         "bias diff| {off:.1e}",
    "t14.by_hand": "dropless dispatch by hand (block 0's trained router, {tokens} random tokens "
                   "a rank, no capacity): dispatch_dropless sends each row to its expert's rank "
                   "(all_to_allv), the E/ep experts there compute, combine_dropless brings the "
                   "outputs back; max |output - one process's experts| {diff:.1e}, every rank",
}
