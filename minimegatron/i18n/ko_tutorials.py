"""Korean messages of tutorials 03-11 (ko.py holds 00-02), the terms of docs/glossary.md."""

MESSAGES = {
    # tutorials/03_tensor_parallel_mlp.py
    "t03.heading": "Megatron MLP, D={d}, ffn={ffn}, rank {tp}개, X (2, 4, {d})\n",
    "t03.shards": "A_{rank} = A의 열 {first}..{last}: 모양(shape) {a_shape}, "
                  "B_{rank} = B의 행: 모양 {b_shape}\n"
                  "  부분 곱(partial product) GeLU(X A_i) B_i [0, 0, :3] = {partial}",
    "t03.each": "각각 {nbytes} 바이트 = float64 값 2*4*{d}개",
    "t03.each_tp1": "tp=1: rank 하나로는 더할 것이 없습니다. tp > 1이면 각각 float64 값 "
                    "2*4*{d}개를 옮깁니다",
    "t03.all_reduces": "\nall-reduce: forward {forward}번, "
                       "backward {backward}번 ({each})",
    "t03.step": "양쪽에서 SGD 한 단계 (lr {lr}): |dL/dW_i - dL/dW의 해당 조각| = {grad:.1e}, "
                "|W_i - W의 해당 조각| = {weight:.1e}",
    "t03.per_rank": "rank당 (tp={tp})",
    # tutorials/09_interleaved_1f1b.py
    "t09.heading": "interleaved 1F1B, K={K} rank, v={v} model chunk, "
                   "M={M} micro-batch (한 열 = chunk 한 단계, stage forward의 "
                   "1/{v}):",
    "t09.bubble": "\nbubble (유휴 / 작업)   시뮬레이션 {sim}   공식 (1/v)(K-1)/M = {formula}"
                  "   일반 1F1B {plain} = (K-1)/M",
    "t09.fraction": "bubble (유휴 / 전체)          시뮬레이션 {sim} = {sim_pct:.1%}   일반 1F1B "
                    "{plain} = {plain_pct:.1%}",
    "t09.messages": "단계당 메시지 수            {chunked} = 2M(Kv-1)   일반 1F1B {plain} = 2M(K-1)",
    "t09.held": "보관하는 activation, rank당 stage 단위: {held}   일반 1F1B {plain}",
    "t09.columns": "\n단계   interleaved 손실   한 프로세스 손실    |차이|",
    "t09.check": "\n프로세스 하나와 비교 (8층 GPT, AdamW 2단계, 모든 rank): {diffs}   "
                 "{verdict} (< {tol:g})",
    "t09.pass": "통과(PASS)",
    "t09.fail": "실패(FAIL)",
    # tutorials/11_mixed_precision.py
    "t11.heading": "float16 ZeRO-2, rank {n}개, 단계 {step}에서 rank {rank}에 inf를 심음, "
                   "증가 간격(growth interval) {interval}",
    "t11.columns": "단계 손실스케일     손실  건너뛴 rank",
    "t11.overflow": "   <- 오버플로(overflow): 모든 rank가 건너뛰고 스케일을 절반으로",
    "t11.skipped": "건너뛴 스텝: {steps}개 중 {count}개 (스케일러가 셉니다)",
    "t11.compare": "\n프로세스 하나와 비교 (배치 전체, 같은 inf), {steps}단계: 건너뛴 단계와 스케일이 "
                   "같은가: {verdict}\n  max |loss diff| {loss:.1e} (rank 손실의 평균), "
                   "|grad diff| {grad:.1e} (g / S)\n  max |weight diff| {weight:.1e}: float16 "
                   "반올림이 아주 작은 gradient의 부호를 바꾸면, |g|와 상관없이\n  약 +-lr인 "
                   "AdamW의 한 걸음이 약 2 lr = {two_lr:g} 만큼 달라집니다 (checks/precision.py)",
    "t11.formats": "\nhalf 형식들 (ml_dtypes.finfo): bf16은 float32의 범위, fp8은 scale이 "
                   "필요합니다\n형식          최댓값    normal  subnormal   epsilon   1e-8 ->",
    "t11.e4m3": "scale 없는 e4m3의 500: {unscaled} (e4m3fn에는 inf가 없음), s = {scale:g}로 "
                "scale한 뒤 / s: {back}",
    "t11.numpy_only": "bf16과 fp8 학습은 NumPy backend에서만 실행됩니다: ml_dtypes의 타입은 NumPy "
                      "dtype이고 CuPy에는 없습니다 (MINIMEGATRON_BACKEND=numpy)",
    "t11.low": "{name} ZeRO-2, loss scale 없음, {steps}단계: {name} 프로세스 하나와 최대 |loss 차| "
               "{loss:.1e}, |weight 차| {weight:.1e}, float32 프로세스 하나와 {vs32:.1e} "
               "(bf16의 epsilon {ulp:g}, AdamW의 부호 뒤집힘: 위처럼 ~2 lr)",
    "t11.yes": "예",
    "t11.no": "아니요(NO)",
    "t11.bytes": "\nparameter당 바이트, 프로세스 하나에서 측정 (parameter {params:,}개): "
                 "{kinds} = {total:g}",
    "t11.zero": "같은 parameter당 바이트로 7.5B parameter, N = 64 (GB = 1e9 바이트): {totals}",
    # tutorials/04_megatron_gpt.py
    "t04.heading": "GPT {layers}층, d_model {d_model}, 헤드(head) {heads}개, 어휘(vocab) {vocab}: "
                   "tp={tp}, rank당 parameter {local:,}개",
    "t04.of_serial": " (직렬 계산 {n:,}개)",
    "t04.loss_tp": "손실 tp={tp}",
    "t04.columns": "단계 {loss_tp:>12}      직렬 손실    |diff|   all-reduce",
    "t04.formula": "forward에서 2*{n}+4번, backward에서 2*{n}+1번",
    "t04.why_tp1": " (tp=1: 더할 것이 없습니다. tp > 1이면 {formula})",
    "t04.summary": "\n{steps}단계 요약 ({elapsed:.1f} 초):\n"
                   "  max |loss tp={tp} - loss serial| = {worst:.2e}\n"
                   "  단계당 all-reduce: {reduces}{why}\n"
                   "  rank당 parameter {local:,}개",
    "t04.of": " (전체 {n:,}개 중)",
    # tutorials/10_sequence_parallel.py
    "t10.heading": "GPT {layers}층, d_model {h}, 헤드(head) {a}개, seq_len {s}, 배치(batch) {b}: "
                   "tp={t}\n",
    "t10.part1": "1. 블록 하나의 rank당 tp 집합 통신(collective) (tp={tp}), 횟수와 보낸 바이트",
    "t10.same": "  {phase}: rank당 바이트가 같은가: {verdict}",
    "t10.yes": "예",
    "t10.no": "아니요(NO)",
    "t10.part2": "\n2. 블록 하나가 한 rank에 보관하는 activation 바이트 (float64, "
                 "dropout 0): 측정값 / 공식",
    "t10.equal": "같음",
    "t10.different": "다름(DIFFERENT)",
    "t10.note": "  (프로세스 하나: b[sbh(21 + as/h) + 2sb], sequence 병렬화(sequence parallel)는 이 "
                "전부를 t로 나눕니다)\n\n   이 모양(shape)에 대한 논문의 표 2 (16비트): "
                "tp {tp:,.0f} B, tp+sp {sp:,.0f} B  (minimegatron memory table2)",
    "t10.part3": "\n3. tp={t} + sequence 병렬화와 프로세스 하나 비교, AdamW {steps}단계: "
                 "max |loss diff| {loss:.1e}, |grad diff| {grad:.1e}, |weight diff| {weight:.1e}",
    "t10.columns": "단계        tp+sp 손실   한 프로세스 손실    |차이|   (배치 {batch})",
    # tutorials/05_data_parallel.py
    "t05.heading": "rank {n}개, 배치(batch) {batch}: rank당 {rows}행, "
                   "parameter {params:,}개",
    "t05.rows": "각 배치의 행 {first}..{last}, 마지막 로컬 DDP 손실(loss) {loss:.6f}",
    "t05.bytes": "\nrank당 단계별 바이트 (trace; kB = 1000 B), 그리고 DataParallel의 rank가 "
                 "weight 외에\n보관하는 것 (gradient + AdamW optimizer "
                 "상태(optimizer state)):",
    "t05.summary": "DataParallel: 마스터(master)가 rank 1의 {ratio:.1f}배 (= N-1) 바이트를 "
                   "옮깁니다. DDP: 모든 rank가 같은 {ddp:.1f}k = 2(N-1)/N x gradient {grads:.1f}k",
    # tutorials/06_zero.py
    "t06.heading": "rank {n}개, P = parameter {params:,}개, float64 (b = 8), "
                   "AdamW\n",
    "t06.bytes": "\nrank당 바이트 (실제 배열에서 측정한 값 / model_state_bytes 공식(formula)):",
    "t06.outside": "  ^ 패딩 여유(padding margin)를 벗어났습니다!",
    "t06.fsdp2": "\nFSDP2: 모든 weight를 자기 행(dim 0)으로 나누고, AdamW가 shard를 그대로 "
                 "갱신합니다. 최대 |loss - stage 3의 loss| {off:.1e}. rank당 바이트 (측정값 / "
                 "tools/memory_fsdp.fsdp2_bytes), gathered peak는 unit 두 개입니다 (prefetch):",
    "t06.fsdp2_head": "             weight            gradient      optimizer 상태       "
                      "gathered peak     스텝당 보낸 양",
    "t06.margin": "여유(margin): N의 배수로 패딩(padding), 최대 4 * 8 * N * groups 바이트 (flat group "
                  "하나면 {margin} B), G = 8P = {g:,d} B; sent/step이 model보다 "
                  "크면 그 차이는 패딩입니다 (ZeRO stage 3은 층마다 패딩합니다).",
    # tutorials/07_pipeline.py
    "t07.heading": "{layers}층 GPT, 배치(batch) {batch}, stage {stages}개",
    "t07.checkpointing": ", activation 체크포인팅(activation checkpointing)",
    "t07.why": "\nplain에서는 각 단계가 실제 계산 시간에 단계 사이 Python 오버헤드(overhead)까지 "
               "걸리는데,\n공식은 이것을 세지 않습니다 (노트북처럼 rank들이 코어(core)를 "
               "나눠 쓰면, stage는 이웃이 계산하는 동안\n더 느리게 계산하고 메시지가 도착한 뒤에도 "
               "코어를 기다립니다), emulated에서는 모든 단계가\n코어 없이 잠든 고정된 장치 "
               "시간(device time)만큼 걸려 GPU stage처럼 기다리므로, 타임라인(timeline)이 "
               "공식을 따릅니다.\n(이 컴퓨터: rank {ranks}개에 코어 {cores}개)",
    "t07.compute": "emulated 단계 안에서 micro-batch 하나의 실제 계산 시간, 최대: "
                   "{times}{end}",
    "t07.op": "{op} {ms:.1f} ms (정해진 시간 {budget:g} ms)",
    "t07.too_long": " (더 긴 단계는 줄어들지 않습니다: --t-forward/--t-backward를 늘리세요)",
    "t07.late": "운영체제(OS)가 잠든 rank를 평균 {ms:.2f} ms 늦게 깨웠습니다 (임계 경로(critical "
                "path)의 지연은 모두 bubble에 더해집니다: 다른 프로그램이 코어를 쓰고 "
                "있습니다).",
    "t07.memory": "\n배치가 고정되면 GPipe는 M과 상관없이 배치 전체의 activation을 "
                  "보관합니다 (M개가 진행 중, 각각 배치의 1/M);\n1F1B는 M개 micro-batch 중 "
                  "min(M, K - k)개를 보관하고 bubble은 같습니다: pipeline이 깊을수록 뒤쪽 "
                  "stage가 덜 보관합니다.",
    "t07.timelines": "\n타임라인: <schedule>_M<M>.png (emulated)와 <schedule>_M<M>_plain.png, "
                     "각각 옆에 Chrome trace .json (https://ui.perfetto.dev), "
                     "{out}/에 파일 {files}개",
    # tutorials/08_3d_parallel.py
    "t08.ranks": "--dp {dp} x --pp {pp} x --tp {tp} = {product}인데 이 job의 rank는 {n}개입니다. "
                 "-n {product}로 실행하거나 flag를 바꾸세요",
    "t08.heading": "3D 병렬화(3D parallelism) GPT: rank {n}개 = dp {dp} x pp {pp} x tp {tp}, "
                   "{schedule}, 복제본(replica)마다 크기 {size}인 micro-batch {m}개, "
                   "전역 배치(global batch) {batch}, AdamW {steps}단계",
    "t08.serial": "직렬 기준(serial reference): rank 0 혼자 {steps}단계, {seconds:.2f} 초",
    "t08.bytes": "rank별로 보관한 모델 상태(model state)와 마지막 단계에서 보낸 바이트 (측정: "
                 "tools/memory_measure.py, trace)",
    "t08.no_prediction": "(예측 없음: 계산기는 n_layer={n_layer}이 pp={pp}로 나누어떨어져야 "
                         "합니다)",
    "t08.predicted": "tools/memory.rank_report의 예측 (float64, ZeRO 0), stage별:",
    "t08.traffic": "(통신량은 8바이트 손실(loss)만큼 다릅니다: dp로는 all-reduce, pp로는 "
                   "마지막 stage에서 broadcast)",
    "t08.max": "max |3D - serial|, {steps}단계: {worst:.2e}, 단계 시간 중앙값 {ms:.1f} ms",
    "t08.timeline": "마지막 단계의 타임라인(timeline): {path}",
    "t08.chrome": "같은 타임라인의 Chrome trace (https://ui.perfetto.dev): {path}",
    "t08.writes": "\nGPT가 쓰는 글 (프롬프트(prompt) {prompt!r}, {chars}자, 온도(temperature) "
                  "{temperature}, seed 0), 학습 전: 그리드(grid)가 weight를 물려받는 직렬 모델, "
                  "학습 후: 그리드에서 샘플링 (모든 rank가 참여)",
    "t08.before": "학습 전",
    "t08.after": "{steps}단계 학습 후",
    "t08.words": "{when}: 단어 {total}개 중 {found}개가 말뭉치(corpus) 단어 ({percent:.0f}%)",
    "t08.same": "직렬 모델이 같은 글을 쓰는가: {same}",
    "t08.yes": "예",
    "t08.no": "아니요(NO)",
    "t08.saved": "{checkpoint}에 저장함: 더 보려면 python -m minimegatron sample --checkpoint "
                 "{checkpoint} --prompt 'In pipeline'",
    # tutorials/12_context_parallel.py
    "t12.part1": "1. S={steps}개 token 중 누가 무엇을 갖는가 (cp={cp}), 그리고 rank당 인과"
                 "(causal) 계산량: 필요한 링(ring) 블록 수 (연속 분할) 와 (query, key) 쌍의 수",
    "t12.part2": "\n2. 모든 rank에서의 인과 attention, 헤드(head) {heads}개 x {hd}, "
                 "배치(batch) {batch}, S={steps}, float64: 한 프로세스와의 최대 |차이|, "
                 "그리고 한 rank가 forward 한 번에 보낸 바이트",
    "t12.part3": "\n3. sequence를 cp={cp}개 rank에 나눈 GPT (ring attention) 대 한 프로세스, "
                 "AdamW {steps}단계: 최대 |loss 차이| {loss:.1e}, |grad 차이| {grad:.1e}, "
                 "|weight 차이| {weight:.1e}",
    "t12.part4": "\n4. 그 GPT의 층 하나가 한 rank에서 backward를 위해 갖는 activation 바이트 "
                 "(배치 {batch}, float64), 자동 미분 그래프에서 잰 값과 tools/memory.py "
                 "(한 프로세스: {serial:,d} B)",
    "t12.picture": "분할, 인과 계산량, 링(ring)의 그림: {path}",
    "t12.in_flight": "전송 중인 링 K/V 블록 (일시적, 층 하나): forward {forward:,d} B, "
                     "backward {backward:,d} B",
    # tutorials/13_zero_bubble.py
    "t13.grid": "\n{name}, K={K} stage, M={M} micro-batch, T_F = T_B = "
                "T_W (시뮬레이션, W<i>: micro-batch i의 weight gradient, '..' 유휴)",
    "t13.measured": "\nrank {K}개에서 한 스텝, M={M}, 에뮬레이션한 장치 시간: F, B, W마다 "
                    "{ms:g} ms (1F1B의 backward는 B + W), bubble = 한 stage가 첫 단계와 "
                    "마지막 단계 사이에 가장 오래 쉬는 시간",
    "t13.drawn": "타임라인과 크롬 트레이스(Chrome trace, https://ui.perfetto.dev): {out}에 "
                 "파일 {files}개",
    "t13.even_ranks": "DualPipe(4부)는 한 rank에 stage k와 K-1-k를 함께 두므로 rank 수 K가 "
                      "짝수여야 합니다: 이 job의 rank는 {K}개입니다. -n 4로 실행하세요",
    "t13.zbv_micro_batches": "--micro-batches {M}: ZBV에는 micro-batch가 적어도 2K - 1 = "
                             "{least}개 필요합니다",
    "t13.compute": "한 단계의 가장 긴 실제 계산: {ms:.1f} ms (각각 에뮬레이션한 장치 시간 "
                   "{budget:g} ms 동안)",
    "t13.check_heading": "\n한 프로세스와 비교 (8층 GPT, AdamW 2 스텝, 모든 rank):",
    "t13.check": "  {name:<6} {diffs}   {verdict} (기준 < {tol:g})",
    "t13.dual_heading": "\n4. DualPipe와 DualPipeV (M={M}), 각각 한 프로세스와 비교, "
                        "DualPipe의 rank k와 K-1-k는 같은 stage 두 개를 가집니다:",
    "t13.dual_rank": "  {name:<9} rank {rank}: parameter {params:,d}개, 거울 쌍 {pair} 위의 "
                     "all-reduce: {sums}번 (마지막 {nbytes:,d} B)",
    "t13.pass": "통과(PASS)",
    "t13.fail": "실패(FAIL)",
    # tutorials/14_mixture_of_experts.py
    "t14.part1": "1. 모든 블록에 MoE가 있는 GPT: 전문가(expert) E={experts}개, top-{k}, 전문가와 "
                 "sequence마다 용량 C={cap}, ep={ep}를 dp={dp}에 접어 넣음, 배치 {batch}, 한 "
                 "프로세스와 나란히 AdamW {steps} 스텝. 스텝마다: 손실, 배치 전체의 전문가별 "
                 "배정 수 (균등: {uniform:g}), 각 rank의 전문가들이 계산한 실제 행 수 (채워진 "
                 "버퍼: {padded}행)",
    "t14.same_load": "rank들에서 합한 전문가별 부하가 한 프로세스와 같습니다: {same}",
    "t14.yes": "예",
    "t14.no": "아니오",
    "t14.picture": "전문가별, rank별 부하 그림: {path}",
    "t14.part2": "\n2. rank 0의 처음 {shown}개 token에 대한 router의 선택 (블록 0, 마지막 "
                 "스텝): top-k 전문가, 확률이 큰 것부터, 용량을 넘는 선택은 DROPPED (잔차가 "
                 "token을 나름)",
    "t14.same_choices": "모든 rank의 선택과 버림이 자기 token에서 한 프로세스와 같습니다: "
                        "{same}",
    "t14.part3": "\n3. 용량 계수마다 버려진 배정, C = ceil(k T f / E) (한 프로세스, 학습된 "
                 "weight, MoE 블록 둘 다)",
    "t14.part4": "\n4. 마지막 스텝의 all-to-all에서 각 rank가 보낸 바이트 (트레이스), "
                 "MoE 블록마다 하나, 공식과 나란히",
    "t14.bytes_padded": "채움(padded): (ep-1) x E/ep x C x h x b x itemsize = ({ep}-1) x "
                        "{local} x {cap} x {h} x {b} x 8 = 각각 {want:,d} B, 모든 rank에서 "
                        "(최대 |트레이스 - 공식| {off:g})",
    "t14.bytes_dropless": "dropless (레이어 하나, rank 0의 전문가별 행 {counts}): dispatch가 "
                          "{sent:,d} B를 보냄, 개수로부터 {want:,d} B; 모든 rank의 모든 "
                          "all-to-all에서 최대 |트레이스 - 공식| {off:g}",
    "t14.part5": "\n5. 이 실행에서 rank 0이 가진 것 (dispatch 버퍼: 마지막 스텝의 트레이스), "
                 "측정값과 메모리 계산기 (minimegatron memory moe)",
    "t14.memory": "dp={dp}, ep={ep}의 모든 rank: 최대 |측정 - 계산기| {off:g}",
    "t14.check": "모든 rank와 한 프로세스 비교, {steps} 스텝: 최대 |loss 차이| {loss:.1e}, "
                 "|grad 차이| {grad:.1e}, |weight 차이| {weight:.1e} (전문가 weight: 그 rank가 "
                 "가진 전문가들의 행)",
    "t14.part6": "\n6. aux loss 없는 균형 (DeepSeek-V3): router는 probs + bias로 전문가를 고르고, "
                 "gate는 probs 그대로입니다. 스텝이 끝날 때마다 각 bias는 그 전문가의 load가 "
                 "평균보다 많으면 gamma={gamma:g}만큼 내려가고 적으면 올라갑니다 (load는 "
                 "dp x cp에서 합산). dropless, 배치 32: bias를 쓰는 그리드 실행을 한 프로세스와 "
                 "비교한 뒤, 한 프로세스로 세 가지 방식을 같은 배치에서 나란히 돌립니다",
    "t14.head_balance": "단계        none    aux loss        bias   (가장 바쁜 expert / 평균 load, "
                        "1.00이면 고름)    블록 0의 bias",
    "t14.balance": "마지막 {steps} 스텝의 평균 쏠림: 균형 없음 {none:.2f}, aux loss {aux:.2f}, "
                   "expert bias {bias:.2f} (gamma={gamma:g}, aux loss 없음)",
    "t14.balance_check": "그리드의 bias 실행과 한 프로세스 비교, {steps} 스텝: 최대 |loss 또는 "
                         "bias 차이| {off:.1e}",
    "t14.by_hand": "손으로 하는 dropless dispatch (블록 0의 학습된 router, rank마다 무작위 token "
                   "{tokens}개, 용량 없음): dispatch_dropless가 각 행을 그 전문가의 rank로 보내고 "
                   "(all_to_allv), 그곳의 E/ep 전문가가 계산하고, combine_dropless가 출력을 "
                   "돌려보냄, 최대 |출력 - 한 프로세스의 전문가| {diff:.1e}, 모든 rank",
}
