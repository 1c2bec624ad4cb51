"""English texts of the memory and timeline commands' tables and lines (tools/memory*.py,
tools/scaling.py, commands/memory.py, commands/timeline.py): key -> template.

``report.col.*`` are column headers and ``report.row.*`` row names, each padded to its
column by ``columns.fit`` (so the English tables are what they were, byte for byte)."""

MESSAGES = {
    # column headers
    "report.col.hidden": "hidden",
    "report.col.heads": "heads",
    "report.col.layers": "layers",
    "report.col.params": "params",
    "report.col.size": "params",
    "report.col.ours": "ours, untied",
    "report.col.fp16_weights": "fp16 weights GB",
    "report.col.stage": "stage",
    "report.col.params_rank": "params/rank",
    "report.col.weights": "weights",
    "report.col.grads": "grads",
    "report.col.optim": "optim",
    "report.col.activ": "activ",
    "report.col.total": "total",
    "report.col.float64_total": "float64 total",
    "report.col.comm": "{axis} comm",
    "report.col.technique": "technique",
    "report.col.formula": "formula",
    "report.col.measured": "measured",
    "report.col.bytes_param": "bytes/param",
    "report.col.measured_gb": "measured GB",
    "report.col.formula_gb": "formula GB",
    "report.col.expert_params": "expert params/rank",
    "report.col.dense_params": "dense params/rank",
    "report.col.gpus": "GPUs",
    "report.col.step_s": "step s",
    "report.col.comm_share": "comm %",
    "report.col.eff": "eff %",
    "report.col.paper": "paper %",
    "report.col.gpus_node": "GPUs/node",
    "report.col.crosses": "crosses",
    "report.yes": "yes",
    "report.no": "no",
    # row names
    "report.row.none": "no parallelism",
    "report.row.tp": "tensor parallel (baseline)",
    "report.row.sp": "tensor + sequence parallel",
    "report.row.tp_selective": "tensor parallel + selective recompute",
    "report.row.sp_selective": "tensor + sequence parallel + selective recompute",
    "report.row.full": "full activation recompute",
    "report.row.weights16": "float16 weights",
    "report.row.grads16": "float16 gradients",
    "report.row.master": "float32 master, m, v",
    "report.row.buffers": "DDP float32 reduce buffer",
    "report.row.total": "total",
    # memory (tools/memory.py)
    "report.table1.title": "Megatron-LM Table 1 (V = 51,200, s = 1,024, hidden per head 96)",
    "report.table1.rule": "8.3e9 params x {bytes} bytes (16 model state + activations/buffers) "
                          "= {gb:.0f} GB",
    "report.zero.title": "ZeRO, {billions}B parameters, Nd = {dp}, GB per device (GB = 1e9 "
                         "bytes)",
    "report.config.model": "GPT L={layers} h={hidden} heads={heads} V={vocab} s={seq}: "
                           "{params:,d} parameters (Megatron's formula: {megatron:,d})",
    "report.config.grid": "grid dp={dp} pp={pp} tp={tp}{cp} ({ranks} ranks), ZeRO-{zero}, "
                          "{precision}, micro-batch {micro_batch} x {micro_batches} "
                          "({schedule}), checkpointing {checkpointing}{sp}",
    "report.config.cp": " cp={cp} ({attention} attention)",
    "report.config.on": "on",
    "report.config.off": "off",
    "report.config.sp": ", sequence parallel",
    "report.config.unit": "per rank, {unit} = 10^{power} bytes; comm = bytes sent per step",
    "report.config.flops": "FLOPs per step (batch {batch}): {flops:.3e}; Megatron's "
                           "96BsLh^2(...) formula: {megatron:.3e} (assumes recomputation)",
    "report.config.predicted": "predicted step on {hardware} (scaling.step_time, ZeRO and cp "
                               "ignored): {total:.3g} s = compute {compute:.3g} + tp {tp:.3g} "
                               "+ dp {dp:.3g} + pp {pp:.3g}; efficiency {efficiency:.0%}",
    "report.table2.title": "Korthikanti et al. 2022, Table 2: activation memory per "
                           "transformer layer (16-bit), s={s} b={b} h={h} a={a} t={t}",
    # scaling (tools/scaling.py)
    "report.scaling.units": "step seconds; GB = 1e9 bytes; eff = achieved FLOP/s per GPU / "
                            "one GPU's",
    "report.scaling.hardware": "hardware: {name}: {tflops:.1f} TFLOP/s per device achieved, "
                               "{per_node} per node, intra {intra:.0f} GB/s per device, "
                               "inter {inter:.0f} GB/s per node",
    "report.scaling.table1": "Megatron-LM Table 1 weak scaling, micro-batch 8 per replica, "
                             "activation recomputation, fp16 communication, no overlap",
    "report.scaling.paper": "paper: {single:.0f} TFLOP/s on 1 GPU, {pflops} PFLOP/s on 512 "
                            "GPUs ({share:.0%} of linear)",
    "report.scaling.across": "8.3B model, tensor parallel across a node boundary (IB per GPU "
                             "fixed)",
    # mixture of experts (tools/memory_moe.py)
    "report.moe.title": "MoE GPT L={layers} h={hidden} s={seq} V={vocab}, E={experts} "
                        "experts, top-{top_k}, MoE in every {every} block(s)",
    "report.moe.params": "parameters: total {total:,d}, active per token {active:,d}, experts "
                         "{experts:,d} (dense GPT: {dense:,d})",
    "report.moe.grid": "grid dp={dp} cp={cp} pp={pp} tp={tp}, ep={ep} folded over dp x cp",
    "report.moe.buffer": "dispatch buffer (E b C h, capacity factor {factor:g}): {bytes:,d} "
                         "bytes; 4 of them per MoE layer in flight (dispatch and combine, send "
                         "and receive); all-to-all sends (ep-1)/ep of each",
    "report.moe.dropless": "dropless: buffers follow the router, k b s h values on average",
    # mixed precision (tools/memory_mixed.py)
    "report.precision.title": "float16, bf16 and fp8, bytes per parameter: measured | formula "
                              "(AdamW, DDP reducing in float32), then what backward keeps of "
                              "the blocks' matmuls (bytes, one batch)",
    "report.precision.weights": "weights (half precision)",
    "report.precision.grads": "gradients (half precision)",
    "report.precision.optimizer": "float32 master + Adam m, v",
    "report.precision.buffers": "DDP's float32 buffer",
    "report.precision.total": "total (state + buffer)",
    "report.precision.saved": "saved by the matmuls",
    "report.mixed.title": "Mixed precision, bytes per parameter: measured on a float16 GPT of "
                          "{count} parameters (AdamW, DDP reducing in float32) | formula",
    "report.mixed.state": "   (model state {state:g} + buffer {buffer:g})",
    "report.mixed.zero": "ZeRO over N ranks, model state per parameter: stage 1 4 + 12/N, "
                         "stage 2 2 + 14/N, stage 3 16/N; {billions:g}B parameters, N = {dp} "
                         "(GB = 1e9 bytes):",
    # timeline (commands/timeline.py)
    "report.timeline.gpipe": "makespan {makespan:g}, bubble {fraction:.4f} (GPipe formula "
                             "(K-1)/(M+K-1) = {formula} = {value:.4f})",
    "report.timeline.held": "activations held at peak, per stage: {peaks}",
    "report.timeline.interleaved": "makespan {makespan:g}, bubble {fraction:.4f} = "
                                   "(K-1)/(vM+K-1) = {formula} (plain 1F1B {plain} = "
                                   "{plain_value:.4f}); idle/busy {ratio} = (1/v)(K-1)/M "
                                   "(Megatron's t_pb/t_id)",
    "report.timeline.chunk_held": "chunk activations held at peak, per stage: {peaks} "
                                  "(1/{chunks} of a stage each)",
    "report.timeline.zb_times": "T_F {forward:g}, T_B {backward:g}, T_W {weight:g}; bubble = "
                                "the most a stage idles between its first and last step (the "
                                "zero-bubble paper's)",
    "report.timeline.zb_bubble": "bubble {schedule} {bubble:g} (table {expression} = "
                                 "{table:g}{assumes}) vs 1f1b {plain:g} (table "
                                 "{plain_expression} = {plain_table:g})",
    "report.timeline.zb_assumes": ", which assumes {assumption}",
    "report.timeline.zb_makespan": "makespan {makespan:g} vs 1f1b {plain:g}; idle / (stages "
                                   "* makespan) {fraction:.4f} vs 1f1b {plain_fraction:.4f}",
    "report.timeline.zb_held": "activations held at peak (F done, W not), per stage: {peaks} "
                               "(1f1b: {plain_peaks})",
    "report.timeline.zb_chunk_held": "chunk activations held at peak (F done, W not), per "
                                     "stage: {peaks} (1f1b: {plain_peaks}); a chunk holds "
                                     "1/{chunks} of a stage's layers",
    "report.timeline.dual_held": "chunk activations held at peak (F done, W not), per rank: "
                                 "{peaks} (1f1b: {plain_peaks}); in stages: {stages} "
                                 "(DeepSeek's table: PP + 1)",
    "report.timeline.rank": "rank {rank}: compute {compute:.4f} s, communication/wait "
                            "{comm:.4f} s",
    "report.timeline.measured": "measured bubble (time not computing) {bubble:.4f}",
}
