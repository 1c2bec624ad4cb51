"""Korean messages (한국어 메시지): the same keys and {fields} as en.py; terms of docs/glossary.md.

EXERCISES holds each exercise's title, hint and source note in Korean, by id;
the English ones stay in ``exercise_checks`` (the student copy raises them).
"""

F_AND_G = ("\"f and g are conjugate. f is an identity operator in the forward pass and all "
           "reduce in the backward pass while g is an all reduce in the forward pass and "
           "identity in the backward pass.\" (f는 forward에서 항등, backward에서 all-reduce이고, "
           "g는 그 반대입니다.)")
ROW_SPLIT = ("\"반면 row를 기준으로 모델(A)을 수평으로 분리하면, 데이터부터 분할되면서(scatter) "
             "연산 결과를 합산하는(all-reduce) 형태로 이뤄집니다.\"")

EXERCISES = {
    "1.1": {"title": "MatMul backward",
            "hint": "dL/dX = dL/dZ @ A^T, dL/dA = X^T @ dL/dZ (A^T: 마지막 두 축을 맞바꿈), "
                    "각각을 입력의 shape으로 unbroadcast 하세요",
            "note": "(요약) Z = X @ A    dL/dX = dL/dZ @ A^T, dL/dA = X^T @ dL/dZ  (배치, 브로드캐스팅)"},
    "1.2": {"title": "Exp backward",
            "hint": "z = e^x 이므로 dz/dx = z: grad_out에 저장해 둔 출력 ctx.saved[0]을 곱하세요",
            "note": "(요약) z = e^x    dz/dx = z"},
    "1.3": {"title": "Tanh backward",
            "hint": "dz/dx = 1 - z^2, 여기서 z = tanh(x)는 저장해 둔 출력 ctx.saved[0]입니다",
            "note": "(요약) z = tanh x    dz/dx = 1 - z^2"},
    "1.4": {"title": "Max backward (공동 최댓값들이 gradient를 나눠 가짐)",
            "hint": "ctx.saved[0]은 k개의 최댓값 자리마다 1/k, 나머지는 0입니다: 줄어든 축을 "
                    "되돌린 grad_out (_expand_reduced(grad_out, *ctx.args))에 곱하세요",
            "note": "(요약) z = max_i x_i    x_i가 공동 최댓값 k개 중 하나이면 dz/dx_i = 1/k, 아니면 0"},
    "1.5": {"title": "unbroadcast (브로드캐스팅의 backward)",
            "hint": "shape에 없는 앞쪽 축들에 대해 grad를 합한 다음, shape의 크기는 1이지만 "
                    "grad는 1이 아닌 모든 축에 대해 (keepdims=True로) 합하세요",
            "note": "(요약) 브로드캐스팅은 어디서나 NumPy 규칙을 따르고, 그 backward는 unbroadcast입니다: "
                    "늘어난 모든 축에 대해 gradient를 합해서 dL/dx가 항상 x의 shape을 갖게 합니다."},
    "1.6": {"title": "Sum backward",
            "hint": "dz/dx_i = 1: grad_out에 줄어든 축을 되돌려 주고 x의 shape으로 "
                    "broadcast하세요 (_expand_reduced(grad_out, *ctx.args))",
            "note": "(요약) z = sum_i x_i    dz/dx_i = 1"},
    "2.1": {"title": "GPipe schedule",
            "hint": "micro-batch 0..M-1의 forward (forward_actions) M개를 모두 한 다음, "
                    "같은 순서로 backward (backward_actions) M개를 모두 하세요",
            "note": "\"Mini-batch를 더 잘게 쪼갠 Micro-batch로 학습을 진행합니다.\" (요약) stage K개, "
                    "micro-batch M개일 때 bubble 비율은 schedule의 (K-1)/(M+K-1)입니다."},
    "2.2": {"title": "1F1B schedule",
            "hint": "warm-up으로 forward min(K-k-1, M)개, 그다음 한 단계마다 forward 하나와 "
                    "backward 하나, 끝으로 남은 backward들 (cool-down)",
            "note": "(요약) 1F1B는 stage k에 최대 min(M, K - k)개 micro-batch의 activation만 "
                    "동시에 둡니다. GPipe는 M개를 둡니다."},
    "3.1": {"title": "f: forward는 항등, backward는 all-reduce",
            "hint": "f의 backward: 모든 rank의 dL/dX는 ctx.group rank들의 grad_out의 합(SUM)"
                    "입니다 (집합 통신 한 번). 그것과 group 인자 몫의 None을 반환하세요",
            "note": F_AND_G},
    "3.2": {"title": "g: forward는 all-reduce, backward는 항등",
            "hint": "g의 forward: 모든 rank가 group rank들의 x의 합(SUM)을 받습니다 "
                    "(집합 통신 한 번, group.size == 1이면 할 일이 없습니다)",
            "note": F_AND_G},
    "3.3": {"title": "A의 열 분할 (ColumnParallelLinear)",
            "hint": "rank r은 (in, out) weight와 편향의 열 r*w .. (r+1)*w를 가집니다, "
                    "w = out_features / tp: width와 슬라이스 cols를 정하세요",
            "note": "\"column을 기준으로 모델(A)을 수직으로 분할하면, 위와 같이 입력 데이터(X)가 동일하게 "
                    "주입되고(broadcast) 연산 결과를 다시 모으는(all-gather) 형태로 이뤄집니다.\" "
                    "A1 = [10, 11, 12, 13]^T -> Y1 = X.A1 = [74, 258]^T; A2 = [14, 15, 16, 17]^T "
                    "-> Y2 = X.A2 = [98, 346]^T"},
    "3.4": {"title": "A의 행 분할 (RowParallelLinear)",
            "hint": "rank r은 (in, out) weight의 행 r*h .. (r+1)*h를 가집니다, "
                    "h = in_features / tp: height와 슬라이스 rows를 정하세요",
            "note": ROW_SPLIT + " X1 = [[0, 1], [4, 5]], A1 = [[10, 14], [11, 15]] -> "
                    "Y1 = [[11, 15], [95, 131]]"},
    "3.5": {"title": "행 방향 분할 forward: 부분 곱, 그다음 g",
            "hint": "partial = X_i A_i (그 .data를 self.last_partial에 보관), 그다음 "
                    "y = g(partial): reduce_from_tp(partial, self.tp_group)",
            "note": ROW_SPLIT + " ... Y1 + Y2 = Y"},
    "4.1": {"title": "DDP: gradient all-reduce",
            "hint": "평탄한 gradient 버퍼에서 bucket의 조각(bucket.reduce)에 대한 논블로킹 "
                    "all-reduce(op mean)를 제자리에서(in place) 하나만 시작하고, 그 핸들을 "
                    "bucket.handle에 두세요",
            "note": "\"forward -> backward -> (all-reduce) -> gradient `DistributedDataParallel`은 "
                    "multi process 로 동작하며, 특정 노드에 메모리가 과중되지 않습니다.\""},
    "5.1": {"title": "ZeRO 2단계: gradient reduce-scatter",
            "hint": "각 rank는 평균(MEAN) gradient 중 자기 조각만 가집니다: 펼친 gradient들을 "
                    "self.grad_shard로 reduce-scatter(op mean)한 다음, 모든 p.grad를 해제하세요",
            "note": "\"모델이 커짐에 따라 발생하는 메모리 문제를 해결하기 위해 ZeRO를 함께 사용할 수 "
                    "있습니다.\" (요약) ring all-reduce는 rank마다 buffer의 2(N-1)/N을 보내고, "
                    "reduce-scatter와 all-gather는 각각 (N-1)/N을 보냅니다."},
    "5.2": {"title": "ZeRO: 자기 shard를 업데이트하고 weight를 all-gather",
            "hint": "no_grad() 안에서 self.optimizer.update를 이 rank의 조각(self.shard, "
                    "self.grad_shard, flat.state, self.step_count)에만 적용한 다음, 조각들을 "
                    "펼친 전체 weight로 all-gather하세요: full",
            "note": "(요약) 혼합 정밀도(mixed precision) Adam(K = 12)의 장치당 ZeRO 메모리: 기준 16*P "
                    "바이트, 1단계: 4P + 12P/N; 2단계: 2P + 14P/N; 3단계: 16P/N."},
    "6.1": {"title": "interleaved 1F1B: warm-up 횟수",
            "hint": "K개 중 rank k는 모델 chunk v개로 (K-k-1)*2 + (v-1)*K번의 chunk forward로 "
                    "warm-up하되, 전체 M*v번(total)보다 많이 하지는 않습니다",
            "note": "(요약) interleaved 1F1B (Megatron-LM 2021): K개의 rank가 각각 모델 chunk v개를 가지며, "
                    "bubble이 v분의 1인 (1/v)(K-1)/M로 줄고 메시지는 v배가 됩니다."},
    "6.2": {"title": "sequence 병렬화의 g-bar: sequence 축으로 reduce-scatter",
            "hint": "g-bar의 forward: rank r은 group rank들의 x의 합(SUM) 중 token r*T/tp .. "
                    "(r+1)*T/tp (축 SEQ)를 받습니다 (집합 통신 한 번, group.size == 1이면 할 "
                    "일이 없습니다)",
            "note": "(요약) Korthikanti 외 2022: g-bar는 forward에서 reduce-scatter, backward에서 "
                    "all-gather입니다. / ring all-reduce는 rank마다 버퍼의 2(N-1)/N을 "
                    "보내고, reduce-scatter와 all-gather는 각각 (N-1)/N을 보냅니다."},
    "7.1": {"title": "손실 스케일링(loss scaling): 오버플로에서 건너뛰고 절반으로",
            "hint": "grads 중 하나라도 유한하지 않으면(all_finite) local을 1.0으로 두고, group에서 "
                    "op max로 all-reduce하세요. 오버플로면 self.scale을 절반으로(backoff_factor, "
                    "min_scale 아래로는 아님) 하고 clean_steps를 0으로, 아니면 깨끗한 스텝을 세고 "
                    "growth_interval번마다 스케일을 키우세요",
            "note": "\"Training시 필요 memory = 8.3B * 20 = 166GBytes\" (요약) gradient에 inf/nan이 "
                    "있으면 모든 rank가 그 step을 건너뛰고 loss scale을 절반으로 줄입니다."},
    "8.1": {"title": "컨텍스트 병렬화(context parallel): online softmax 병합",
            "hint": "new_lse = log(e^lse + e^block_lse)를 행마다 lse와 block_lse 중 큰 값 top에서 "
                    "계산하고 (top + log(e^(lse-top) + e^(block_lse-top))), "
                    "e^(lse-new_lse) out + e^(block_lse-new_lse) block_out과 new_lse를 "
                    "돌려주세요",
            "note": "(요약) online softmax(Milakov & Gimelshein 2018; flash attention, ring "
                    "attention): "
                    "서로 겹치지 않는 키에 대한 두 부분 attention은 lse = log(e^lse_1 + e^lse_2), "
                    "O = e^(lse_1 - lse) O_1 + e^(lse_2 - lse) O_2로 합쳐집니다."},
    "8.2": {"title": "컨텍스트 병렬화(context parallel): zigzag 배정",
            "hint": "S개 token을 크기 size = steps // (2 * cp)인 chunk 2cp개로 자르고, chunk rank의 "
                    "위치, 그다음 chunk 2*cp - 1 - rank의 위치를 오름차순으로 돌려주세요",
            "note": "(요약) zigzag (Megatron-LM 컨텍스트 병렬화): cp의 rank i는 sequence의 chunk i와 "
                    "2cp-1-i, 앞쪽 chunk와 그 거울상을 가지므로, 모든 rank가 같은 양의 인과 "
                    "attention을 계산합니다."},
    "9.1": {"title": "zero bubble: backward를 B와 W로 나누기",
            "hint": "weights = node.inputs 중 weight인 것 (is_weight), 하나도 없으면 "
                    "node.fn.backward 전체를 지금 돌려주세요. 있으면 (node.fn, node.ctx, "
                    "node.inputs, grad_outs, weights)를 W를 위해 self.steps에 붙이고, gradient가 "
                    "필요하면서 weight가 아닌 입력의 마스크로 masked_backward(...)를 돌려주세요",
            "note": "(요약) zero bubble(Qi 외 2024): Y = XW의 gradient는 둘입니다: 이전 stage가 기다리는 "
                    "B, dL/dX = dL/dY W^T, 그리고 optimizer 스텝만 필요로 하는 W, dL/dW = "
                    "X^T dL/dY. 그래서 W는 나중에 실행할 수 있습니다."},
    "9.2": {"title": "zero bubble: ZB-H1의 W 단계 배치",
            "hint": "warm-up 뒤 남은 micro-batch j마다: 그 B, cap개를 들고 있으면(F는 끝났고 W는 "
                    "아직) W가 없는 가장 오래된 micro-batch의 W, 그다음 F; 그다음 마지막 B들, "
                    "각각 뒤에 W 하나, 그다음 아직 남은 모든 W",
            "note": "(요약) ZB-H1(Qi 외 2024)은 1F1B의 F, B 순서와 최대 K개 micro-batch 보관을 그대로 "
                    "두고, 각 W를 나중에 빈틈에서 실행합니다: bubble은 1F1B의 (p-1)(T_F+T_B+T_W) "
                    "대신 (p-1)(T_F+T_B-T_W)."},
    "10.1": {"title": "MoE 라우팅: 용량이 있는 top-k",
             "hint": "choice: 확률이 가장 큰 전문가 k개, 큰 것부터, 동점은 번호가 더 작은 쪽 "
                     "(-probs의 안정 argsort), 각 sequence의 배정 k*T개를 슬롯 우선으로 줄 세우고 "
                     "(모든 첫 선택을 token 순서로, 그다음 모든 두 번째 선택): slot = 앞서 같은 "
                     "전문가를 고른 수, kept = slot < capacity (None이면 모두 True)",
             "note": "(요약) GShard / Switch 라우팅: 각 token은 top-k 전문가에게 갑니다. 각 전문가는 "
                     "한 group에서 많아야 C = ceil(k T f / E)개 token을 먼저 온 순서로 받고, 용량을 "
                     "넘는 token은 버려져 잔차(residual)로 지나갑니다."},
    "10.2": {"title": "전문가 병렬화(expert parallel): dispatch 배치",
             "hint": "행은 전문가 우선 (ep, E/ep, b*C, h)입니다: group에서 그것의 all-to-all 한 번 "
                     "(all_to_all_rows, trace.label('ep.dispatch') 안에서)이 chunk j를 rank j로 "
                     "보냅니다. 도착한 것은 [보낸 rank][내 전문가][슬롯]: [내 전문가][보낸 "
                     "rank][슬롯]으로 전치해 (E/ep*ep*b*C, h) 행으로 돌려주세요",
             "note": "(요약) 전문가 병렬화(GShard, Switch, Megatron): rank마다 전문가 E/ep개, token은 "
                     "all-to-all 두 번으로 전문가의 rank에 갔다가 돌아오며, 각각 sequence당 E x C x h인 "
                     "채워진 버퍼의 (ep-1)/ep를 보냅니다."},
    "10.3": {"title": "aux-loss 없는 균형: expert bias",
             "hint": "bias + rate * xp.sign(load.mean() - load)를 돌려주세요: 평균 load 위의 "
                     "expert는 gamma만큼 내리고, 아래는 gamma만큼 올리고, 평균이면 그대로",
             "note": "(요약) auxiliary loss 없는 균형 (DeepSeek-V3): expert마다 bias를 두어 router의 "
                     "score에 선택할 때만 더하고, step마다 load 편차의 부호로 조금 움직입니다, "
                     "b_i <- b_i + gamma sign(mean(load) - load_i)."},
    "7.2": {"title": "fp8: per-tensor scale, cast, 곱하기, unscale",
            "hint": "sx, sw = 각 tensor 자신의 scale_for(..., E4M3, agree) (X는 rows, W는 w); "
                    "qx, qw = float32 tensor에 scale을 곱해 e4m3로 cast한 것; y = qx와 qw의 "
                    "float32 곱 (matmul(..., np.float32))을 sx * sw로 나눈 것",
            "note": "(요약) fp8 학습 (Transformer Engine, torchao, nanochat): forward는 e4m3, "
                    "gradient는 e5m2이고, tensor마다 자기 amax에서 얻은 2의 거듭제곱 scale을 "
                    "곱해 가장 큰 값이 형식의 최댓값 가까이 오게 합니다; 곱은 float32로 누적하고 "
                    "1/(s_X s_W)로 unscale합니다."},
}

# the why of each chapter's order (exercise_checks.CHAPTERS), in Korean
CHAPTERS = {
    "1": "unbroadcast와 Sum의 backward를 먼저 합니다. MatMul의 backward(1.1)는 unbroadcast로 "
         "gradient를 줄여 더하고, Max의 backward(1.4)는 Sum처럼 줄어든 축을 되돌려 줍니다",
    "2": "GPipe를 먼저 합니다. 1F1B는 같은 forward와 backward를 다른 순서로 실행합니다",
    "3": "f와 g를 먼저 합니다. 열 분할 layer의 backward는 f를 거치고(3.3), 행 분할 layer의 "
         "forward는 g로 끝나며(3.5), 3.5는 3.4가 가진 행을 곱합니다",
    "4": "연습 문제가 하나입니다. DDP의 모델은 1장의 MatMul과 unbroadcast를 거쳐 학습합니다",
    "5": "gradient shard(5.1)를 먼저, 그것을 읽는 update(5.2)를 나중에 합니다",
    "6": "6.1은 2.2의 warm-up을 model chunk마다 하는 것이고, 6.2는 3장의 g를 sequence 방향으로 "
         "하는 것입니다",
    "7": "loss scaling(7.1)을 FP8의 tensor별 scale(7.2)보다 먼저 합니다. 7.1의 step은 ZeRO "
         "모델(5장)에서 실행됩니다",
    "8": "attention 조각 두 개의 병합(8.1)을 먼저, ring attention이 그 조각들을 병합하는 "
         "zigzag 분할(8.2)을 나중에 합니다",
    "9": "나눈 backward(9.1)를 먼저, 그 W 단계를 배치하는 schedule(9.2)을 나중에 합니다",
    "10": "routing을 먼저 합니다. dispatch(10.2)는 router가 고른 것을 보내고, balancing(10.3)은 "
          "그 선택을 셉니다",
}

MESSAGES = {
    # grader.py
    "grader.no_package": "{path}에 minimegatron/ 패키지가 없습니다 (사본 만들기: minimegatron "
                         "exercises make DIR, 그다음 grade --path DIR)",
    "grader.cd_copy": "{path}에 minimegatron/ 패키지가 없습니다. 여러분의 사본은 {copy}에 "
                      "있으니 `cd {copy}` 명령으로 옮겨 가서 다시 채점하세요 (또는 minimegatron "
                      "grade --path {copy})",
    "grader.self_check": "참고: 이 minimegatron은 그 자체가 학생용 사본입니다 (자가 점검 모드): "
                         "각 연습 문제는 여러분의 다른 연습 문제 코드를 그대로 둔 채 실행되고, "
                         "아직 쓰지 않은 연습 문제는 채점기가 대신 채웁니다. 강사용 참조 "
                         "설치본은 각 연습 문제를 따로 채점합니다.",
    "grader.not_marked": "연습 문제 {id}가 {package}에 표시되어 있지 않습니다",
    "grader.markers_missing": "{path}의 minimegatron/{file}에서 표시 주석 '# EXERCISE {id} "
                              "begin/end'가 없어졌습니다: 여러분의 코드 앞뒤에 다시 넣으세요",
    "grader.grading": "{package}의 연습 문제 {count}개를 채점합니다",
    "grader.ranks": " [rank {nprocs}개, rank 2개짜리 {group} group]",
    "grader.source_notes": "강의 노트: {note}",
    "grader.summary": "연습 문제 {count}개 중 {passed}개 통과",
    "grader.todo": "아직 하지 않음: {message}",
    "grader.needs_first": "먼저 연습 문제 {id}이 필요한데, 이 사본에서 아직 하지 않았습니다: "
                          "{message}",
    "grader.exercise_hint": "연습 문제 {id}: {hint}",
    "grader.rank": "rank {rank}: ",
    "grader.ranks_prefix": "rank {ranks}: ",
    "grader.hang": "멈춤(HANG): {seconds:.0f} 초 동안 진행이 없어 모든 rank를 종료했습니다. "
                   "어떤 rank가 같은 group의 다른 rank들이 참여하지 않는 집합 통신(collective) "
                   "(또는 수신)에서 기다립니다: 모든 rank가 같은 group에서 같은 호출을 같은 "
                   "순서로 합니까?",
    "grader.hang_waiting": "rank {rank}: 아직 검사 안에 있음 (대기 중)",
    "grader.hang_finished": "rank {rank}: 먼저 끝남, 결과 {status}: {message}",
    "grader.hang_stacks": "종료될 때 각 rank가 기다리던 곳:",
    "grader.too_much_output": "검사가 {mib} MiB 넘게 출력해서 종료했습니다: 반복문 안에 print가 "
                              "있습니까?",
    "grader.crashed": "검사가 결과를 보고하기 전에 비정상 종료했습니다 (종료 코드 {code}). "
                      "출력의 끝부분:\n{tail}",
    "grader.forged": "한 rank가 이 연습 문제를 두 번 보고했습니다: 그 보고는 채점기의 러너만 "
                     "쓰므로 학생 코드가 하나를 쓴 것이고, 이 연습 문제는 통과할 수 없습니다",
    "grader.result.PASS": "통과",
    "grader.result.FAIL": "실패",
    "grader.result.TODO": "미완성",
    "grader.result.HANG": "멈춤",
    "grader.result.ERROR": "오류",
    "grader.result.CHANGED": "변경됨",
    "grader.result.TIMEOUT": "시간 초과",
    "grader.point_ok": "통과: {point}",
    "grader.point_missed": "놓친 점: {point}\n  {detail}\n  힌트: {hint}",
    "grader.bad_evidence": "검사의 증거가 판정기가 읽는 형식이 아닙니다 ({error})",
    "grader.changed": "연습 문제 밖이 바뀌었습니다: {paths}. 사본은 연습 문제 블록만 바꿀 수 "
                      "있으므로 이 칸은 통과할 수 없습니다 (블록만 참조 구현 안에서 채점한 "
                      "결과: {result})",
    "gradebook.no_class": "반 폴더 {path}가 없습니다: 학생마다 사본 하나씩을 담은 폴더를 "
                          "주세요 (minimegatron exercises make CLASS/NAME)",
    "gradebook.empty": "{path}에 학생 폴더가 없습니다",
    "gradebook.timeout": "사본이 --student-timeout을 넘겨 멈췄습니다",
    "gradebook.no_report": "채점기가 이 사본의 보고 없이 끝났습니다",
    "gradebook.progress": "[{done}/{count}] {student}: {total}개 중 {passed}개 통과 "
                          "({seconds:.0f}초)",
    "gradebook.wrote": "{path}를 썼습니다",
    # exercise_checks/common.py
    "check.array_of_shape": "shape {shape}인 배열",
    "check.got_none": "{where}{what}: None을 받았습니다, 기댓값 {expected}",
    "check.wrong_shape": "{where}{what}: shape {got}, 기댓값 {expected}",
    "check.expected_got": "{where}{what}:\n  기댓값 {expected}\n  실제값 {got}",
    "check.worst_entry": "{where}{what}: 가장 많이 틀린 원소 {index}: 기댓값 {expected}, "
                         "실제값 {got} (|차이| {diff:.3g} > {atol:g})",
    # tutorials/00_autodiff_and_gpt.py
    "t00.mpi_note": "(프로세스 하나로 하는 실습: minimegatron run -n {n}에서는 rank 0만 실행하고 나머지는 "
                    "바로 끝납니다)",
    "t00.part1": "1부: y = sum(tanh(x @ w)), dy/dw = x^T (1 - tanh^2(x @ w))",
    "t00.compare": "  자동 미분(autodiff): {autodiff}  손으로 계산: {hand}",
    "t00.part2": "\n2부: parameter {params:,}개인 GPT, AdamW {steps}단계",
    "t00.start": "  손실은 log(10) = {start:.2f} 근처에서 시작, 하한 3/16 log(10) = {floor:.2f}",
    "t00.step": "  단계 {step:4d}  손실 {loss:.4f}  {bar}",
    # tutorials/01_collectives.py
    "t01.all_reduce": "all_reduce (all-reduce, 합): 모든 rank가 x_0 + ... + x_{{N-1}}을 받습니다",
    "t01.reduce": "rank 0으로 reduce: 루트(root)만 합을 받습니다",
    "t01.broadcast": "rank 0에서 broadcast: 모든 rank가 rank 0의 x를 받습니다",
    "t01.scatter": "rank 0에서 scatter: rank r이 [0 .. 2N-1]의 조각 r을 받습니다",
    "t01.gather": "rank 0으로 gather: 루트가 cat(x_0, ..., x_{{N-1}})을 받습니다",
    "t01.all_gather": "all_gather (all-gather): 모든 rank가 cat(x_0, ..., x_{{N-1}})을 받습니다",
    "t01.reduce_scatter": "reduce_scatter (reduce-scatter): rank r이 모든 y의 합의 조각 r을 "
                          "받습니다",
    "t01.ring": "오른쪽으로 isend / 왼쪽에서 irecv (점대점 통신의 링, 논블로킹이라 교착 상태"
                "(deadlock)가 없습니다)",
    "t01.small_world": "\n(월드 크기(world size) {n} != 8 이므로 그리드는 1 x 1 x {n}: dp=1, "
                       "pp=1, tp={n})",
    "t01.tp_all_reduce": "이 rank의 tp group에서 world rank의 all_reduce",
    # tutorials/02_worked_example.py
    "t02.ranks": "손으로 푸는 예제는 A를 rank 2개에 나눕니다. -n {n}이 아니라 -n 2로 실행하세요",
    "t02.serial": "X = {X}\nA = {A}\n직렬 계산 Y = X A = {Y}\n",
    "t02.column_how": "A를 열 단위로 분할, X는 복사 (f), Y = cat(Y_1, Y_2)",
    "t02.row_how": "A를 행 단위로 분할, X는 열 단위로 분할, Y = Y_1 + Y_2 (g)",
    "t02.heading": "--- {split} 분할: {how}",
    "t02.local": "A_{n} = {A_i}   입력 = {X_i}\nY_{n} = {Y_i}   합친 Y = {Y}",
    "t02.grads": "dL/dX = {dX}   dL/dA_{n} = {dA_i}",
    "t02.serial_grads": "\n직렬 계산, L = sum(Y): dL/dX = ones A^T = {dX}\n"
                        "                       dL/dA = X^T ones = {dA}",
    "t02.split": "분할",
    "t02.local_product": "부분 곱",
    "t02.combine": "합치기",
    "t02.column": "열 방향",
    "t02.row": "행 방향",
    "t02.all_gather": "all-gather",
    "t02.all_reduce": "all-reduce",
    "t02.trained": "SGD {steps}단계 후 (lr {lr:g}): L = {losses}   A_{n} = {A_i}",
    "t02.serial_trained": "직렬 계산, SGD {steps}단계 후: L = {losses}   A = {A}",
    "t02.compare": "\n프로세스 하나와 비교 (nn.Linear, 같은 A, 같은 SGD), {steps}단계: 단계마다 L, Y, "
                   "dL/dX, dL/dA와\n단계 후의 A가 같은가: 열 방향 {column}, 행 방향 {row}",
    "entry.banner": "minimegatron {name}: 패키지 {path}",
    "entry.blank": "이 사본의 {message} (그 블록을 채운 다음 채점하세요: minimegatron grade {id})",
    # launcher.py, reaper.py
    "run.epilog": "모든 집합 통신은 검사됩니다 (서로 다른 집합 통신, 모양, dtype, 연산, 루트를 호출한 rank들은 양쪽을 모두 밝히는 하나의 오류를 "
                  "받습니다). MINIMEGATRON_CHECK=0은 검사를 끄며 벤치마크 전용입니다: 그러면 불일치가 일부 rank에서 종료 코드 0과 함께 "
                  "틀린 숫자를 돌려주거나 멈출 수 있습니다 (docs/running.md)",
    "run.first_end": "rank {rank}: 정상 종료나 Python 예외 없이 끝났습니다 ({how}: os._exit, 시그널 "
                     "또는 크래시)",
    "run.ended_after": "rank {ranks}은 rank {rank} 다음에 런처가 끝냈습니다",
    # verify.py
    "verify.none_ran": "{n}개 rank에서 실행된 행이 없습니다: {schemes}의 모든 격자를 건너뛰었으므로 (위의 설명 참고) 아무것도 확인하지 "
                       "않았습니다",
}
