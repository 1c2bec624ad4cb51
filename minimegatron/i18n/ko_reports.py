"""memory, timeline 명령의 표와 줄 (tools/memory*.py, tools/scaling.py, commands/memory.py,
commands/timeline.py). 키와 {필드}는 en_reports.py와 같습니다.

강의 노트처럼 기술 용어(stage, rank, gradient, optimizer, bubble, makespan, micro-batch,
activation, chunk, ZeRO, all-to-all ...)는 영어 그대로 둡니다 (docs/glossary.ko.md). 머리글은
``columns.fit``이 한글의 두 칸 폭을 세어 열에 맞춥니다."""

MESSAGES = {
    # column headers
    "report.col.hidden": "hidden",
    "report.col.heads": "head",
    "report.col.layers": "layer",
    "report.col.params": "parameter",
    "report.col.size": "크기",
    "report.col.ours": "우리 (untied)",
    "report.col.fp16_weights": "fp16 weight GB",
    "report.col.stage": "stage",
    "report.col.params_rank": "parameter/rank",
    "report.col.weights": "weight",
    "report.col.grads": "gradient",
    "report.col.optim": "optim",
    "report.col.activ": "activation",
    "report.col.total": "합계",
    "report.col.float64_total": "float64 합계",
    "report.col.comm": "{axis} 통신",
    "report.col.technique": "기법",
    "report.col.formula": "공식",
    "report.col.measured": "측정",
    "report.col.bytes_param": "byte/parameter",
    "report.col.measured_gb": "측정 GB",
    "report.col.formula_gb": "공식 GB",
    "report.col.expert_params": "expert parameter/rank",
    "report.col.dense_params": "dense parameter/rank",
    "report.col.gpus": "GPU",
    "report.col.step_s": "step 초",
    "report.col.comm_share": "통신 %",
    "report.col.eff": "효율 %",
    "report.col.paper": "논문 %",
    "report.col.gpus_node": "GPU/node",
    "report.col.crosses": "넘음",
    "report.yes": "예",
    "report.no": "아니오",
    # row names
    "report.row.none": "병렬화 없음",
    "report.row.tp": "tensor parallel (기준)",
    "report.row.sp": "tensor + sequence parallel",
    "report.row.tp_selective": "tensor parallel + 선택적 재계산",
    "report.row.sp_selective": "tensor + sequence parallel + 선택적 재계산",
    "report.row.full": "activation 전체 재계산",
    "report.row.weights16": "float16 weight",
    "report.row.grads16": "float16 gradient",
    "report.row.master": "float32 master, m, v",
    "report.row.buffers": "DDP float32 reduce 버퍼",
    "report.row.total": "합계",
    # memory (tools/memory.py)
    "report.table1.title": "Megatron-LM Table 1 (V = 51,200, s = 1,024, head마다 hidden 96)",
    "report.table1.rule": "8.3e9 parameter x {bytes} byte (model state 16 + activation/버퍼) "
                          "= {gb:.0f} GB",
    "report.zero.title": "ZeRO, parameter {billions}B, Nd = {dp}, 장치마다 GB (GB = 1e9 byte)",
    "report.config.model": "GPT L={layers} h={hidden} heads={heads} V={vocab} s={seq}: "
                           "parameter {params:,d}개 (Megatron의 공식: {megatron:,d})",
    "report.config.grid": "grid dp={dp} pp={pp} tp={tp}{cp} (rank {ranks}개), ZeRO-{zero}, "
                          "{precision}, micro-batch {micro_batch} x {micro_batches} "
                          "({schedule}), activation checkpointing {checkpointing}{sp}",
    "report.config.cp": " cp={cp} ({attention} attention)",
    "report.config.on": "켬",
    "report.config.off": "끔",
    "report.config.sp": ", sequence parallel",
    "report.config.unit": "rank마다, {unit} = 10^{power} byte; 통신 = step마다 보내는 byte",
    "report.config.flops": "step마다 FLOPs (batch {batch}): {flops:.3e}, Megatron의 "
                           "96BsLh^2(...) 공식: {megatron:.3e} (재계산을 가정)",
    "report.config.predicted": "{hardware}에서 예측한 step (scaling.step_time, ZeRO와 cp는 "
                               "빼고): {total:.3g} s = 계산 {compute:.3g} + tp {tp:.3g} "
                               "+ dp {dp:.3g} + pp {pp:.3g}, 효율 {efficiency:.0%}",
    "report.table2.title": "Korthikanti et al. 2022, Table 2: transformer layer마다 "
                           "activation 메모리 (16-bit), s={s} b={b} h={h} a={a} t={t}",
    # scaling (tools/scaling.py)
    "report.scaling.units": "step 초, GB = 1e9 byte; 효율 = GPU마다 달성한 FLOP/s / GPU "
                            "하나의 FLOP/s",
    "report.scaling.hardware": "하드웨어: {name}: 장치마다 달성 {tflops:.1f} TFLOP/s, "
                               "node마다 {per_node}개, node 안 장치마다 {intra:.0f} GB/s, "
                               "node 사이 node마다 {inter:.0f} GB/s",
    "report.scaling.table1": "Megatron-LM Table 1 weak scaling, replica마다 micro-batch 8, "
                             "activation 재계산, fp16 통신, overlap 없음",
    "report.scaling.paper": "논문: GPU 1개에서 {single:.0f} TFLOP/s, GPU 512개에서 {pflops} "
                            "PFLOP/s (선형의 {share:.0%})",
    "report.scaling.across": "8.3B 모델, node 경계를 넘는 tensor parallel (GPU마다 IB 고정)",
    # mixture of experts (tools/memory_moe.py)
    "report.moe.title": "MoE GPT L={layers} h={hidden} s={seq} V={vocab}, expert E={experts}개, "
                        "top-{top_k}, block {every}개마다 MoE",
    "report.moe.params": "parameter: 전체 {total:,d}, token마다 활성 {active:,d}, expert "
                         "{experts:,d} (dense GPT: {dense:,d})",
    "report.moe.grid": "grid dp={dp} cp={cp} pp={pp} tp={tp}, ep={ep}: dp x cp 위에 접힘",
    "report.moe.buffer": "dispatch 버퍼 (E b C h, capacity factor {factor:g}): {bytes:,d} "
                         "byte; MoE layer마다 4개가 동시에 쓰임 (dispatch와 combine, 보내기와 "
                         "받기), all-to-all은 각각의 (ep-1)/ep를 보냅니다",
    "report.moe.dropless": "dropless: 버퍼 크기는 router를 따르고, 평균 k b s h 값",
    # mixed precision (tools/memory_mixed.py)
    "report.precision.title": "float16, bf16, fp8의 parameter마다 byte: 측정 | 공식 (AdamW, DDP는 "
                              "float32로 reduce), 그리고 block의 matmul에서 backward가 남겨 두는 "
                              "byte (batch 하나)",
    "report.precision.weights": "weight (반정밀도)",
    "report.precision.grads": "gradient (반정밀도)",
    "report.precision.optimizer": "float32 master + Adam m, v",
    "report.precision.buffers": "DDP의 float32 버퍼",
    "report.precision.total": "합계 (state + 버퍼)",
    "report.precision.saved": "matmul이 저장한 것",
    "report.mixed.title": "Mixed precision, parameter마다 byte: parameter {count}개인 float16 "
                          "GPT에서 측정 (AdamW, DDP는 float32로 reduce) | 공식",
    "report.mixed.state": "   (model state {state:g} + 버퍼 {buffer:g})",
    "report.mixed.zero": "rank N개 위의 ZeRO, parameter마다 model state: stage 1 4 + 12/N, "
                         "stage 2 2 + 14/N, stage 3 16/N; parameter {billions:g}B, N = {dp} "
                         "(GB = 1e9 byte):",
    # timeline (commands/timeline.py)
    "report.timeline.gpipe": "makespan {makespan:g}, bubble {fraction:.4f} (GPipe 공식 "
                             "(K-1)/(M+K-1) = {formula} = {value:.4f})",
    "report.timeline.held": "최대로 가진 activation, stage마다: {peaks}",
    "report.timeline.interleaved": "makespan {makespan:g}, bubble {fraction:.4f} = "
                                   "(K-1)/(vM+K-1) = {formula} (그냥 1F1B {plain} = "
                                   "{plain_value:.4f}), 쉼/일 {ratio} = (1/v)(K-1)/M "
                                   "(Megatron의 t_pb/t_id)",
    "report.timeline.chunk_held": "최대로 가진 chunk activation, stage마다: {peaks} (각각 "
                                  "stage의 1/{chunks})",
    "report.timeline.zb_times": "T_F {forward:g}, T_B {backward:g}, T_W {weight:g}; bubble = "
                                "한 stage가 첫 step과 마지막 step 사이에 노는 시간의 최댓값 "
                                "(zero-bubble 논문의 정의)",
    "report.timeline.zb_bubble": "bubble {schedule} {bubble:g} (표 {expression} = "
                                 "{table:g}{assumes}) 대 1f1b {plain:g} (표 "
                                 "{plain_expression} = {plain_table:g})",
    "report.timeline.zb_assumes": ", {assumption}을 가정",
    "report.timeline.zb_makespan": "makespan {makespan:g} 대 1f1b {plain:g}, 쉼 / (stage 수 "
                                   "* makespan) {fraction:.4f} 대 1f1b {plain_fraction:.4f}",
    "report.timeline.zb_held": "최대로 가진 activation (F는 끝, W는 아직), stage마다: {peaks} "
                               "(1f1b: {plain_peaks})",
    "report.timeline.zb_chunk_held": "최대로 가진 chunk activation (F는 끝, W는 아직), stage"
                                     "마다: {peaks} (1f1b: {plain_peaks}), chunk 하나는 "
                                     "stage layer의 1/{chunks}",
    "report.timeline.dual_held": "최대로 가진 chunk activation (F는 끝, W는 아직), rank마다: "
                                 "{peaks} (1f1b: {plain_peaks}), stage 단위로: {stages} "
                                 "(DeepSeek의 표: PP + 1)",
    "report.timeline.rank": "rank {rank}: 계산 {compute:.4f} s, 통신/대기 {comm:.4f} s",
    "report.timeline.measured": "측정한 bubble (계산하지 않은 시간) {bubble:.4f}",
}
