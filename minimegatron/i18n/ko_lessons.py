"""Korean (한국어) texts of every exercise's lesson points (exercise_checks/lesson.py).

For each point NAME of exercise ID: ``point.ID.NAME`` says what it teaches, in
the words of exercises/ko/ID.md, and ``point.ID.NAME.hint`` what to do when it is
missed; the other keys are the judges' messages, by exercise group. Same keys and
{fields} in en_lessons.py and ko_lessons.py (tests/test_i18n.py).
"""

MESSAGES = {
    # 1.x autodiff (exercise_checks/autodiff.py)
    "point.1.1.transpose": "Z = X @ A에서 dL/dX = dL/dZ @ A^T, dL/dA = X^T @ dL/dZ이며, 각각 "
                           "입력의 모양(shape)과 자료형(dtype)을 가집니다 (float32는 float32로)",
    "point.1.1.transpose.hint": "모양을 확인하세요: dL/dX는 (n, m)(m, k) = (n, k), dL/dA는 "
                                "(k, n)(n, m) = (k, m)",
    "point.1.1.batched": "배치가 있으면 전치는 마지막 두 축만 바꾸고, broadcast로 늘어난 배치 "
                         "축은 두 gradient 모두에서 합쳐 없앱니다 (unbroadcast)",
    "point.1.1.batched.hint": "모든 축을 뒤집는 .T가 아니라 xp.swapaxes(a2, -1, -2), 그다음 "
                              "unbroadcast(..., x2.shape)와 unbroadcast(..., a2.shape)",
    "point.1.1.vectors": "벡터(1차원) X나 A는 1차원 gradient를 돌려받습니다: 계산에 쓴 행렬 x2, "
                         "a2가 아니라 x.shape과 a.shape",
    "point.1.1.vectors.hint": "마지막에 각 결과를 x.shape과 a.shape으로 reshape 하세요",
    "point.1.1.needed": "필요한 gradient만 계산합니다: ctx.needs_input_grad가 False인 입력에는 "
                        "None",
    "point.1.1.needed.hint": "gx는 ctx.needs_input_grad[0]일 때만, ga는 "
                             "ctx.needs_input_grad[1]일 때만 계산하고 나머지는 None으로 두세요",
    "point.1.1.twice": "같은 ctx로 backward를 다시 부를 수 있습니다, zero-bubble의 W 단계처럼 "
                       "(B는 dL/dX, W는 dL/dA, 그다음 둘 다): 매번 올바른 gradient",
    "point.1.1.twice.hint": "ctx.saved를 읽기만 하고 ctx, x, a의 어느 것도 바꾸지 마세요 (x.shape = "
                            "... 도, ctx.saved 비우기도 없이): 두 번째 호출이 그대로 찾아야 합니다",
    "point.1.2.chain": "dL/dx = dL/dz * z: grad_out에 forward가 저장한 출력을 곱합니다. 1만이 "
                       "아닌 어떤 grad_out이든",
    "point.1.2.chain.hint": "연쇄 법칙: dL/dx = dL/dz * dz/dx이고, z = e^x이면 dz/dx는 forward에서 저장해 둔 출력 "
                            "z입니다",
    "point.1.2.float32": "float32 입력은 같은 값의 float32 gradient를 받습니다",
    "point.1.2.float32.hint": "grad_out과 ctx.saved[0]만으로 계산하세요: float64 배열도 "
                              "형 변환도 없이",
    "point.1.2.no_overwrite": "backward는 새 배열을 반환하고 grad_out과 저장된 출력을 그대로 "
                              "둡니다 (저장된 z가 곧 forward의 결과입니다)",
    "point.1.2.no_overwrite.hint": "grad_out이나 ctx.saved[0]에 *=, +=, out=을 쓰지 마세요: gradient를 새 "
                                   "배열로 만드세요",
    "point.1.3.derivative": "dL/dx = dL/dz * (1 - z^2)이며, z = tanh(x)는 forward가 저장한 "
                            "출력입니다",
    "point.1.3.derivative.hint": "d tanh(x)/dx = 1 - tanh(x)^2이고 tanh(x)는 forward에서 저장한 출력입니다. 그다음 "
                                 "grad_out과 연쇄 법칙",
    "point.1.3.float32": "float32 (또는 float16) 입력은 같은 값의, 자기 자료형의 gradient를 받습니다",
    "point.1.3.float32.hint": "xp.ones(shape)는 float64이고, 형 변환은 자료형 하나를 정합니다: "
                              "z의 자료형을 지키는 1 - z ** 2를 쓰세요",
    "point.1.3.no_overwrite": "backward는 새 배열을 반환하고 grad_out과 저장된 출력을 그대로 "
                              "둡니다 (저장된 z가 곧 forward의 결과입니다)",
    "point.1.3.no_overwrite.hint": "grad_out이나 ctx.saved[0]에 *=, +=, out=을 쓰지 마세요: "
                                   "1 - z ** 2를 새 배열로 만드세요",
    "point.1.4.route": "z = max x의 gradient는 최댓값이었던 원소로 grad_out을 곱해 가고, 나머지 "
                       "원소는 0을 받습니다",
    "point.1.4.route.hint": "저장된 weight ctx.saved[0]에, 줄어든 축을 되살린 grad_out을 "
                            "곱하세요",
    "point.1.4.ties": "k개의 원소가 최댓값으로 동률이면 각각 gradient의 1/k을 받습니다",
    "point.1.4.ties.hint": "ctx.saved[0]에는 이미 동률인 최댓값마다 1/k이 있습니다: "
                           "(ctx.saved[0] > 0)이 아니라 그대로 쓰세요",
    "point.1.4.axes": "grad_out은 x의 모양을 만나기 전에 max가 없앤 축을 되찾습니다. 모든 axis "
                      "(None, 정수, 음수, 튜플)와 keepdims에 대해",
    "point.1.4.axes.hint": "_expand_reduced(grad_out, *ctx.args)가 모든 경우를 처리합니다",
    "point.1.5.leading": "브로드캐스팅이 앞에 붙인 축을 모두 합쳐 없앱니다: grad (2, 3, 4)를 "
                         "모양 (4,)로 하면 축 0과 1을 합칩니다",
    "point.1.5.leading.hint": "앞쪽 축은 grad.ndim - len(shape)개입니다: 하나하나 모두 "
                              "합치세요",
    "point.1.5.stretched": "shape에서는 크기가 1이지만 grad에서는 아닌 축은 합치고 크기 1로 "
                           "남깁니다 (keepdims=True)",
    "point.1.5.stretched.hint": "그 축들에 대해 grad.sum(axis=..., keepdims=True): 결과가 "
                                "정확히 shape이 되도록",
    "point.1.5.mixed": "둘 다 일어났으면 (grad (2, 3, 4)를 모양 (3, 1)로) 둘 다 되돌립니다. "
                       "학습 중 a + b의 b에 대해서도",
    "point.1.5.mixed.hint": "앞쪽 축과 늘어난 축을 모두 합치세요. 앞쪽 축이 없어진 뒤에는 "
                            "shape의 축 i가 grad의 축 i입니다",
    "point.1.5.float32": "float32 gradient는 float32 결과로 합쳐집니다",
    "point.1.5.float32.hint": "grad 자신의 자료형으로 합치세요 (dtype=xp.float64도, 더해 넣을 "
                              "float64 zeros도 없이)",
    "point.1.6.spread": "dL/dx_i는 x_i가 더해진 출력 원소의 dL/dz입니다: grad_out을 x의 모양으로 "
                        "다시 펼칩니다",
    "point.1.6.spread.hint": "grad_out에 줄어든 축을 되살린 뒤 x의 모양으로 broadcast "
                             "하세요: _expand_reduced(grad_out, *ctx.args)",
    "point.1.6.axes": "모든 axis (None, 정수, 음수, 튜플)는 keepdims와 상관없이 x의 모양을 "
                      "주며, 각 원소는 자기 출력 원소에서 옵니다",
    "point.1.6.axes.hint": "없어진 축을 (모두, keepdims가 False일 때만) 되살린 뒤 "
                           "xp.broadcast_to(grad, shape)",
    "point.1.6.float32": "float32 (또는 float16) 입력은 자기 자료형의 gradient를 받습니다",
    "point.1.6.float32.hint": "grad_out 자체를 broadcast 하세요: xp.ones(shape) * grad는 "
                              "float64이고, 형 변환은 자료형 하나를 정합니다",
    "ad.case_count": "확인 코드가 경우 {got}개를 기록했습니다, 기댓값 {want}개",
    "ad.raised": "{case}: 여러분의 backward에서 {error} 발생",
    "ad.strided": ", X, A, grad_out이 C-연속(C-contiguous)이 아님",
    "ad.twice": ", 같은 ctx로 backward를 다시",
    "ad.call": "backward 호출 {n}: ",
    "ad.count": "{case}: 여러분의 backward가 gradient {got}개를 반환했습니다, 기댓값 {want}개",
    "ad.none": "{case}: {name}이 None입니다. 그 입력에는 gradient가 필요합니다",
    "ad.dtype": "{what}: 자료형 {got}, 기댓값 {want} (입력의 자료형)",
    "ad.not_needed": "{case}: {name}을 계산했지만, ctx.needs_input_grad에 따르면 그 입력에는 "
                     "gradient가 필요 없습니다 (None을 반환하세요)",
    "ad.grad_out_changed": "{case}: 여러분의 backward 뒤에 grad_out의 값이 바뀌었습니다: "
                           "제자리에서(in place) 바뀐 것입니다",
    "ad.saved_changed": "{case}: 여러분의 backward 뒤에 저장된 출력(forward의 결과)의 값이 "
                        "바뀌었습니다: 제자리에서(in place) 바뀐 것입니다",
    # 2.x and 6.1 schedules (exercise_checks/schedules.py)
    "point.2.1.forwards_first": "stage k는 M개의 forward를 micro-batch 0..M-1 순서로 모두 "
                                "실행한 뒤 M개의 backward를 같은 순서로 모두 실행하므로, M개 "
                                "micro-batch 모두의 activation을 한꺼번에 가집니다",
    "point.2.1.forwards_first.hint": "반복문 두 개: i = 0..M-1에 대해 forward_actions, "
                                     "그다음 i = 0..M-1에 대해 backward_actions (거꾸로도, "
                                     "micro-batch 하나씩도 아니게), 어떤 K와 M에서도",
    "point.2.1.messages": "각 forward는 바로 앞에서 stage k-1로부터 activation을 수신하고 바로 "
                          "뒤에서 stage k+1로 송신하며, 각 backward는 gradient로 반대 방향에 "
                          "같은 일을 합니다: micro-batch와 경계마다 메시지 하나, 첫 "
                          "stage와 마지막 stage 너머로는 없음, 그리고 어떤 stage도 "
                          "끝없이 기다리지 않습니다",
    "point.2.1.messages.hint": "모든 단계를 forward_actions(K, k, i)와 "
                               "backward_actions(K, k, i)로 만드세요. 이웃이 있는 곳에만 수신과 송신을 붙여 줍니다",
    "point.2.1.bubble": "시뮬레이션한 pipeline bubble이 schedule의 (K-1)/(M+K-1)입니다, backward가 "
                        "forward와 같은 길이일 때와 두 배 길이일 때 모두",
    "point.2.1.bubble.hint": "어떤 단계도 입력이 도착하기 전에 시작할 수 없고, 더 오래 기다려서도 "
                             "안 됩니다: 수신, 계산, 송신을 micro-batch 순서로",
    "point.2.2.warmup": "stage k는 교차를 시작하기 전에 min(K-k-1, M)번의 forward로 "
                        "warm-up하므로, 최대 min(M, K-k)개 micro-batch의 activation을 가집니다 "
                        "(GPipe는 M개)",
    "point.2.2.warmup.hint": "stage k는 뒤에 있는 stage 수만큼 forward로 warm-up합니다 (마지막 stage는 없음), M보다 "
                             "많지 않게",
    "point.2.2.alternate": "warm-up 뒤에는 forward가 남아 있는 동안 forward 하나, 그다음 backward "
                           "하나 (아직 기다리는 가장 오래된 micro-batch의 backward), 그다음 "
                           "남은 backward, 둘 다 0..M-1 순서로",
    "point.2.2.alternate.hint": "i번째 단계에서 micro-batch warmup + i의 forward를, 그다음에 "
                                "micro-batch i의 backward를 실행하세요. 반복문 뒤에는 backward "
                                "M-warmup..M-1 (cool-down 단계)",
    "point.2.2.messages": "각 forward는 바로 앞에서 stage k-1로부터 activation을 수신하고 바로 "
                          "뒤에서 stage k+1로 송신하며, 각 backward는 gradient로 반대 방향에 "
                          "같은 일을 합니다: micro-batch와 경계마다 메시지 하나, 첫 "
                          "stage와 마지막 stage 너머로는 없음, 그리고 어떤 stage도 "
                          "끝없이 기다리지 않습니다",
    "point.2.2.messages.hint": "모든 단계를 forward_actions(K, k, i)와 "
                               "backward_actions(K, k, i)로 통째로 만드세요: 다른 단계의 송신 앞에 둔 수신은 이웃을 기다리게 "
                               "합니다",
    "point.2.2.bubble": "시뮬레이션한 pipeline bubble이 GPipe와 같은 (K-1)/(M+K-1)입니다, "
                        "backward가 forward와 같은 길이일 때와 두 배 길이일 때 모두",
    "point.2.2.bubble.hint": "warm-up이 너무 짧거나 단계의 순서가 어긋나면 stage가 기다립니다: "
                             "warm-up, 교차, cool-down을 정확히 따르세요",
    "point.6.1.warmup": "chunk가 v개인 K개 중 rank k는 첫 backward 전에 (K-k-1)*2 + (v-1)*K번의 "
                        "chunk forward를 실행하므로, 그보다 하나 많은 chunk activation까지만 "
                        "가집니다",
    "point.6.1.warmup.hint": "(v-1)*K 단계가 micro-batch 0을 마지막 chunk까지 나르고, k 뒤의 rank마다 두 번 (갔다가 "
                             "돌아오기) "
                             "셉니다",
    "point.6.1.capped": "warm-up은 chunk forward M*v번 전부보다 많지 않습니다: micro-batch가 "
                        "적어도 모든 (micro-batch, chunk) 쌍이 forward를 한 번, backward를 한 번 "
                        "합니다",
    "point.6.1.capped.hint": "min(..., total)을 쓰세요: total = M*v는 이미 정해져 있습니다",
    "point.6.1.runs": "이 warm-up이면 각 chunk backward가 자기 forward 뒤에 오고 모든 수신이 자기 "
                      "송신을 찾습니다: 모든 rank의 목록이 끝까지 실행됩니다 (시뮬레이션)",
    "point.6.1.runs.hint": "다른 횟수로는 두 rank가 서로 상대가 나중에야 보내는 메시지를 기다릴 "
                           "수 있습니다: 공식만 쓰세요",
    "point.6.1.bubble": "pipeline bubble이 v분의 1로 줄어듭니다: 시뮬레이션한 유휴/계산 "
                        "비율이 (1/v)(K-1)/M입니다",
    "point.6.1.bubble.hint": "warm-up이 너무 짧으면 rank가 gradient를 기다립니다: warm-up 점이 말하는 대로 세고 total로 "
                             "상한을 두세요",
    "sched.where": "{name}(K={stages}, M={micro}) stage {stage}",
    "sched.il_where": "interleaved(K={stages}, M={micro}, v={chunks}) rank {stage}",
    "sched.too_long": "{where}: 동작 {count}개, schedule에 필요한 것의 열 배보다 많습니다 "
                      "(최대 {most}개)",
    "sched.bad_action": "{where}: {item}은 Action (op, micro-batch, chunk)이 아닙니다",
    "sched.stage_count": "K={stages}: 동작 목록 {got}개, stage마다 하나여야 합니다",
    "sched.deadlock": "K={stages}, M={micro}, v={chunks}, 시뮬레이션: {error}",
    "sched.order": "{where}: forward (F)와 backward (B)의 순서가 {got}, 기댓값 {want}\n  동작: "
                   "{actions}",
    "sched.held": "{where}: 동시에 가진 micro-batch activation {got}개, 기댓값 {want}\n  동작: "
                  "{actions}",
    "sched.warmup": "{where}: 첫 backward 전의 forward {got}번, 기댓값 {want} (warm-up {warmup}번, "
                    "그다음 교차의 첫 forward)\n  동작: {actions}",
    "sched.messages": "{where}: 동작 {index}이 {got}, 기댓값 {want}\n  거기부터: {actions}",
    "sched.message_count": "{where}: micro-batch {got}에 대한 {op}, 기댓값 {want}",
    "sched.bubble": "K={stages}, M={micro}, backward가 forward의 {t_backward}배: 시뮬레이션한 "
                    "bubble {got}, 기댓값 (K-1)/(M+K-1) = {want}",
    "sched.il_bubble": "K={stages}, M={micro}, v={chunks}, backward가 forward의 {t_backward}배: "
                       "시뮬레이션한 유휴/계산 {got}, 기댓값 (1/v)(K-1)/M = {want}",
    "sched.il_warmup": "{where}: 첫 교차 전의 warm-up chunk forward {got}번 (가진 activation 최대 "
                       "{held}개), 기댓값 {want}\n  동작: {actions}",
    "sched.il_pairs": "{where}: chunk {op} {count}번, 기댓값 {want}번, (micro-batch, chunk) "
                      "쌍마다 한 번, 예: {example}",
    "sched.settings": "schedule을 채점기의 설정 {want}이 아니라 {got}에서 실행했습니다",
    "sched.il_backward_first": "{where}: {step}이 자기 forward보다 먼저 옵니다\n  동작: "
                               "{actions}",
    "sched.il_capped": "{where}: 공식이 {formula}로 chunk forward 전부 {total}번보다 많습니다. "
                       "warm-up {got}번, 기댓값 {total}",
    # 3.x tensor parallel (exercise_checks/mappings.py, linear.py, tp_problem.py)
    "point.3.1.sum": "f의 backward는 모든 rank에 group의 dL/dY의 합(SUM)을 x의 자료형으로 줍니다 "
                     "(forward는 항등)",
    "point.3.1.sum.hint": "grad_out을 ctx.group 위에서 (월드가 아니라) all-reduce하고, group에 "
                          "대해서는 None과 함께 돌려주세요",
    "point.3.1.one_all_reduce": "f의 비용은 backward에서 tp group 위의 dL/dY all-reduce "
                                "한 번이고, forward에서는 없습니다",
    "point.3.1.one_all_reduce.hint": "comm.all_reduce(grad_out, ctx.group) 한 번: all-gather 뒤의 합도, "
                                     "reduce 뒤의 broadcast도, 다른 자료형으로의 변환도 "
                                     "아닙니다",
    "point.3.1.grad_out_kept": "f의 backward는 들어온 gradient를 그대로 둡니다: 그 배열을 함께 쓰는 "
                               "다른 가지는 자기 값을 그대로 받습니다",
    "point.3.1.grad_out_kept.hint": "all-reduce가 만든 새 배열을 돌려주세요. grad_out 안으로 제자리"
                                    "(inplace=True) all-reduce하지 말고, 호출마다 다시 쓰는 버퍼(out=)에도 "
                                    "넣지 마세요",
    "point.3.2.sum": "g의 forward는 모든 rank에 group의 x의 합(SUM)을 x의 자료형으로 줍니다 "
                     "(rank 하나면 x 그대로)",
    "point.3.2.sum.hint": "x를 group 위에서 (월드가 아니라) all-reduce하고, group.size == 1이면 "
                          "x를 돌려주세요",
    "point.3.2.one_all_reduce": "g의 비용은 forward에서 tp group 위의 x all-reduce 한 "
                                "번이고, backward에서는 없으며, rank 하나짜리 group에서는 아무것도 "
                                "없습니다",
    "point.3.2.one_all_reduce.hint": "comm.all_reduce(x, group) 한 번, group.size == 1이면 없음: "
                                     "all-gather 뒤의 합이 아닙니다",
    "point.3.2.input_kept": "g는 새 배열을 돌려줍니다: 입력인 이 rank의 부분 곱 X_i A_i는 제 값을 "
                            "그대로 가집니다",
    "point.3.2.input_kept.hint": "x 안으로 제자리(inplace=True) all-reduce하지 말고, 호출마다 "
                                 "다시 쓰는 버퍼(out=)에도 넣지 마세요",
    "point.3.3.columns": "rank r은 마스터 weight와 편향의 열 r*w .. (r+1)*w를 가집니다, "
                         "w = out_features / tp, 어떤 tp에서든 (rank 2개, 1개, 4개)",
    "point.3.3.columns.hint": "w = out_features / tp: tp group의 rank r은 열 r*w .. (r+1)*w를 가집니다. "
                              "상수가 아니라 "
                              "group의 rank와 크기로",
    "point.3.3.output": "각 rank는 Y의 자기 열인 Y_i = X A_i + b_i를 계산하고, 모은 Y는 X A + b "
                        "입니다 (예제: Y_1 = [74, 258]^T, Y_2 = [98, 346]^T)",
    "point.3.3.output.hint": "weight의 열과 편향의 열은 rank 순서대로 같은 슬라이스여야 합니다",
    "point.3.3.memory": "rank는 자기 shard만 가집니다, weight의 in*out/tp개와 편향의 out/tp개: "
                        "모든 rank에 전체 마스터 weight를 두지 않습니다",
    "point.3.3.memory.hint": "마스터 weight를 자르고 놓아 주세요: weight (또는 그 복사본)의 참조를 "
                             "self에도 다른 어디에도 두지 마세요",
    "point.3.4.rows": "rank r은 마스터 weight의 행 r*h .. (r+1)*h와 편향 전체를 가집니다, "
                      "h = in_features / tp, 어떤 tp에서든 (rank 2개, 1개, 4개)",
    "point.3.4.rows.hint": "h = in_features / tp: tp group의 rank r은 행 r*h .. (r+1)*h를 가집니다. 상수가 "
                           "아니라 group의 "
                           "rank와 크기로",
    "point.3.4.output": "rank r의 행 A_i는 X의 자기 열 X_i와 만나고, 부분 곱 X_i A_i를 합하면 "
                        "X A입니다 (예제: [[11, 15], [95, 131]] + [[63, 83], [163, 215]])",
    "point.3.4.output.hint": "scatter_to_tp가 X의 열을 나누듯, in_features 축(행)을 rank 순서대로 "
                             "나누세요",
    "point.3.5.partial": "각 rank는 먼저 자기 부분 곱 X_i A_i를 계산합니다 (last_partial에 보관, "
                         "편향 없이, 아직 합하지 않은 값)",
    "point.3.5.partial.hint": "이 rank의 곱 X_i A_i를, 무엇이 그것을 합하기 전에, self.last_partial에 두세요",
    "point.3.5.sum": "g가 부분 곱을 합하므로 모든 rank가 Y = X A + b (편향은 한 번)를 받고, "
                     "gradient는 g를 거쳐 거꾸로 흐릅니다 (예제: Y = [[74, 98], [258, 346]])",
    "point.3.5.sum.hint": "부분 곱을 g (autograd 함수)를 거쳐 합해야 backward가 됩니다. 편향은 블록 뒤에서 더합니다",
    "point.3.5.one_all_reduce": "행 방향 분할 선형층의 비용은 forward에서 tp group 위의 Y all-reduce"
                                " 한 번이고, backward에서는 없습니다",
    "point.3.5.one_all_reduce.hint": "부분 곱에 reduce_from_tp를 self.tp_group 위에서 한 번 "
                                     "부르세요 (월드도, gather도 아닙니다)",
    "point.3.5.every_forward": "같은 층의 forward는 매번 자기 X_i A_i (한 번 계산, last_partial에 "
                               "보관)와 자기 Y를 계산합니다, 첫 forward의 것이 아니라",
    "point.3.5.every_forward.hint": "부분 곱은 매번 이번 호출의 x로 계산하세요: forward에서 다음 "
                                    "forward로 아무것도 캐시하지 마세요",
    "point.3.5.memory": "forward를 여러 번 한 뒤에도 층은 부분 곱을 하나, 가장 최근 것 "
                        "(last_partial)만 shard와 편향 곁에 둡니다: 모두가 아니라",
    "point.3.5.memory.hint": "forward마다 self.last_partial을 바꾸세요. 앞선 부분 곱의 리스트, "
                             "전역 변수, 복사본을 두지 마세요",
    "tp.no_collective": "집합 통신 없음",
    "tp.forward": "forward",
    "tp.backward": "backward",
    "tp.alone": "rank 하나짜리 group에서",
    "tp.call": "{group} 위의 {op} {nbytes} B ({sent} B 보냄)",
    "tp.calls_wrong": "rank {rank}, {phase}: 집합 통신이 [{got}]였습니다. 기댓값 [{want}]",
    "tp.dtype_wrong": "rank {rank}: {what}의 자료형이 {got}입니다, 기댓값 {want} (입력의 자료형)",
    "tp.f_forward": "f(x) ({dtype}): 항등",
    "tp.f_backward": "dL/dX ({dtype}): rank {group}의 dL/dY의 합",
    "tp.f_shared": "f의 backward에 건넸고 호출한 쪽이 아직 쥐고 있는 dL/dY ({dtype})",
    "tp.f_reused": "두 번째 f(같은 모양)가 도는 동안 들고 있던 f의 dL/dX ({dtype}) "
                   "(호출마다 다시 쓰는 버퍼는 덮어써집니다)",
    "tp.g_forward": "g(x) ({dtype}): rank {group}의 x의 합",
    "tp.g_backward": "dL/dx ({dtype}): g의 backward는 항등",
    "tp.g_alone": "rank 하나짜리 group에서 g(x): x",
    "tp.g_input": "g(x) 뒤의 x ({dtype}): 이 rank 자신의 x",
    "tp.g_reused": "두 번째 g(같은 모양)가 도는 동안 들고 있던 g(x) ({dtype}) "
                   "(호출마다 다시 쓰는 버퍼는 덮어써집니다)",
    "tp.shard": "{name} (tp={tp}), group의 rank {r}: {what}",
    "tp.layer": "{name}: {what}",
    "tp.last_partial": "last_partial ({dtype}): X_i A_i",
    "tp.A_i": "A_{n} (이 rank가 가진 A의 블록)",
    "tp.Y_i": "Y_{n} (이 rank의 부분 곱)",
    "tp.Y": "Y = X A (합친 결과)",
    "tp.dX": "L = sum(Y)의 dL/dX",
    "tp.dA_i": "dL/dA_{n}",
    "tp.column": "열 방향",
    "tp.row": "행 방향",
    "tp.worked": "예제, {split} 분할: {name}",
    # 6.2 sequence parallel (exercise_checks/sequence_parallel.py)
    "point.6.2.tokens": "g-bar는 rank r에 group의 x의 합(SUM) 가운데 token r*T/t .. (r+1)*T/t를 "
                        "x의 자료형, 모양 (B, T/t, D)로 줍니다 (rank 하나면 x 그대로)",
    "point.6.2.tokens.hint": "tp group 위의 (월드가 아니라) reduce-scatter, sequence 축 SEQ를 따라 "
                             "나누기 (배치 축도, 은닉 축도 아니게), "
                             "새 배열로 (호출마다 다시 쓰는 버퍼가 아니게)",
    "point.6.2.one_reduce_scatter": "g-bar의 비용은 tp group 위의 x reduce-scatter "
                                    "한 번이고 (all-reduce 뒤에 자르면 두 배의 바이트를 옮깁니다), "
                                    "rank 하나짜리 group에서는 아무것도 없습니다",
    "point.6.2.one_reduce_scatter.hint": "comm.reduce_scatter 한 번, group.size == 1이면 없음: "
                                         "all-reduce 뒤의 seq_chunk가 아닙니다",
    "point.6.2.layer": "sequence 병렬 RowParallelLinear에서 rank r은 X A + b의 자기 token을 받고, "
                       "gradient는 프로세스 하나의 것과 같습니다",
    "point.6.2.layer.hint": "g-bar는 부분 곱 뒤의 g를 대신합니다: group 위에서 합한 뒤 이 rank의 "
                            "token만 가지세요",
    "sp.forward": "g-bar(x) ({dtype}), rank마다 모양 {shape}의 x: rank {group}의 합 가운데 이 "
                  "rank의 token",
    "sp.backward": "dL/dx ({dtype}): rank들의 dL/dy를 sequence 축으로 all-gather한 것",
    "sp.alone": "rank 하나짜리 group에서 g-bar(x): x",
    "sp.reused": "두 번째 g-bar(같은 모양)가 도는 동안 들고 있던 g-bar(x) ({dtype}) "
                 "(호출마다 다시 쓰는 버퍼는 덮어써집니다)",
    # 4.1 and 5.x data parallel (exercise_checks/data_parallel.py, zero.py, dp_problem.py)
    "point.4.1.one_per_bucket": "bucket 하나는 스텝마다 dp group 위의 all-reduce 한 "
                                "번이며, 평탄한 gradient 버퍼 중 자기 조각(bucket.reduce: 버퍼 "
                                "전체가 아니라 bucket의 바이트)만 보냅니다",
    "point.4.1.one_per_bucket.hint": "_launch에서 comm.iall_reduce를 한 번, self.group 위에서 "
                                     "bucket.reduce에 대해 부르세요 (버퍼 전체도, "
                                     "bucket.grads도 아닙니다)",
    "point.4.1.overlap": "all-reduce는 논블로킹입니다: _launch가 반환될 때 아직 진행 중이어서 "
                         "그동안 backward가 계속되고, finish()가 그것을 기다립니다",
    "point.4.1.overlap.hint": "핸들을 bucket.handle에 두고 _launch 안에서 그것도, 앞선 bucket의 "
                              "것도 기다리지 마세요: finish()가 모두를 기다립니다",
    "point.4.1.mean_in_place": "finish() 후 모든 p.grad는 여전히 평탄한 버퍼의 뷰이며, group "
                               "gradient들의 평균(MEAN), 즉 배치 전체에 대한 한 프로세스의 "
                               "gradient를 담습니다 (float64, float32, float16, 크기 2와 4인 group)",
    "point.4.1.mean_in_place.hint": "op=\"mean\"과 inplace=True: 결과는 새 배열이 아니라 "
                                    "bucket.reduce 자체에 들어가야 하며, group 크기를 상수로 "
                                    "쓰지 마세요",
    "point.4.1.same_update": "그래서 모든 복제본이 같은 AdamW 스텝을 밟습니다: 매 스텝 뒤의 "
                             "손실과 weight가 한 프로세스의 것과 같습니다",
    "point.4.1.same_update.hint": "모든 rank는 backward를 마칠 때 모델의 자료형으로 같은 "
                                  "평균 p.grad를 가져야 합니다: 위의 항목을 보세요",
    "point.4.1.freed": "finish() 뒤에는 그 step의 것이 아무것도 남지 않습니다: 모든 bucket의 handle이 "
                       "사라지고, step이 새 gradient 배열을 남기지 않습니다",
    "point.4.1.freed.hint": "bucket.handle 하나만 두세요 (finish()가 기다리고 버립니다): handle의 "
                            "리스트도, 나중을 위해 둔 gradient 복사본도 두지 마세요",
    "point.5.1.reduce_scatter": "gradient는 스텝마다 dp group 위에서, 패딩한 평탄한 gradient의 "
                                "reduce-scatter 한 번으로 오갑니다 (두 배의 "
                                "바이트를 보내는 all-reduce가 아닙니다)",
    "point.5.1.reduce_scatter.hint": "self.group 위에서 평탄한 gradient의 reduce-scatter 한 번: "
                                     "각 rank는 평균의 자기 조각만 받고, "
                                     "통신은 all-reduce의 절반입니다",
    "point.5.1.own_slice": "self.grad_shard는 배치 전체에 대한 한 프로세스의 평균(MEAN) "
                           "gradient 중 이 rank의 조각 r입니다 (패딩한 평탄한 버퍼의 순서)",
    "point.5.1.own_slice.hint": "self.group 위에서 op=\"mean\"; rank r은 패딩한 평탄한 gradient의 "
                                "r번째 조각만 가집니다",
    "point.5.1.freed": "그다음 모든 전체 p.grad를 해제(None)하고, gradient는 조각의 바이트만 "
                       "차지합니다: 이것이 2단계가 아끼는 메모리입니다",
    "point.5.1.freed.hint": "flat.params의 모든 p에 p.grad = None을 하고, self.grad_shard에 전체 "
                            "크기 gradient 버퍼의 뷰를 남기지 말고, 직접 만든 속성에 전체 gradient를 "
                            "담아 두지도 마세요",
    "point.5.2.own_update": "optimizer의 규칙은 스텝마다 한 번, 이 rank의 조각에만 적용됩니다: "
                            "update(self.shard, self.grad_shard, flat.state, "
                            "self.step_count), 그 optimizer 상태(AdamW의 m과 v)는 조각 크기",
    "point.5.2.own_update.hint": "self.optimizer.update를 한 번, self.shard 자체에 (복사본도, "
                                 "전체 weight도 아니라) flat.state, self.step_count와 함께 "
                                 "부르세요",
    "point.5.2.all_gather": "갱신한 조각은 스텝마다 dp group 위의 all-gather 한 번으로 "
                            "오가며, 이 rank의 조각만 보냅니다 (0으로 채운 전체 버퍼의 "
                            "all-reduce가 아닙니다: 두 배의 바이트)",
    "point.5.2.all_gather.hint": "self.group 위에서 갱신된 조각들의 all-gather 한 번이면 모든 rank가 평탄한 전체 "
                                 "weight를 받습니다",
    "point.5.2.weights": "매 스텝 뒤 모든 rank는 한 프로세스의 전체 weight를 한 벌만 가집니다 (ZeRO "
                         "1, 2단계, float64와 float32, 크기 2와 4인 group)",
    "point.5.2.weights.hint": "먼저 self.shard를 업데이트하고, 그렇게 갱신한 조각을 모델의 "
                              "자료형 그대로 full로 all-gather하세요",
    "dp.raised": "rank {rank}, group {group}에서 {run}: 여러분의 코드가 {error}을 "
                 "일으켰습니다",
    "dp.missing": "rank {rank}, {run}, 스텝 {step}: {what}이 없습니다 (None)",
    "dp.shape": "rank {rank}, {run}, 스텝 {step}: {what}의 모양이 {got}, 기댓값 {want}",
    "dp.dtype": "rank {rank}, {run}, 스텝 {step}: {what}의 자료형이 {got}, 기댓값 {want}",
    "dp.differs": "rank {rank}, {run}, 스텝 {step}: {what}이 한 프로세스와 최대 {diff:.3g}"
                  " 다릅니다 (허용 오차 {tol:.0e}). 인덱스 {index}에서 값 {got:.6g}, 기댓값 "
                  "{want:.6g} (전체적으로 값 / 기댓값 ~ {ratio:.3g})",
    "dp.loss_differs": "group {group}에서 {run}, 스텝 {step}: 평균 손실 {got:.10g}, 한 프로세스 "
                       "{want:.10g} (허용 오차 {tol:.0e})",
    "dp.bucket_calls": "rank {rank}, {run}, 스텝 {step}: bucket들이 {got}을 했습니다. "
                       "기댓값은 group {group} 위의 all_reduce {count}번, bucket마다 한 번, "
                       "{want} 바이트",
    "dp.not_in_flight": "rank {rank}, {run}, 스텝 {step}: bucket all-reduce {count}개 중 {done}개가 "
                        "_launch가 반환될 때 이미 끝나 있었습니다 (기다렸습니다)",
    "dp.not_in_place": "rank {rank}, {run}, 스텝 {step}: bucket {count}개가 다른 배열(복사본, "
                       "결과를 bucket.reduce에 다시 넣음)을 all-reduce했습니다: all-reduce는 "
                       "bucket.reduce 자체를 읽고 써야 합니다 (inplace=True)",
    "dp.grad_copies": "rank {rank}, {run}: finish() 후 {names}의 p.grad가 평탄한 gradient 버퍼의 "
                      "뷰가 아닙니다 (복사본)",
    "dp.grad_calls": "rank {rank}, {run}, 스텝 {step}: reduce_gradients가 {got}을 "
                     "했습니다. 기댓값은 group {group} 위의 reduce_scatter 한 번, {nbytes} 바이트",
    "dp.grad_shard": "self.grad_shard (패딩한 값 {padded}개 중 {start} .. {end})",
    "dp.grads_alive": "rank {rank}, {run}, 스텝 {step}: reduce_gradients 뒤에도 p.grad "
                      "{count}개가 남아 있습니다 ({names} ...)",
    "dp.grad_memory": "rank {rank}, {run}, 스텝 {step}: reduce_gradients 뒤 gradient가 {got} "
                      "바이트를 차지합니다. 조각만이면 {want} 바이트 (뷰는 버퍼 전체를 살려 "
                      "둡니다. 전체 gradient를 담아 둔 속성도 마찬가지입니다)",
    "dp.update_count": "rank {rank}, {run}, 스텝 {step}: self.optimizer.update가 {count}번 "
                       "실행되었습니다. 기댓값은 한 번",
    "dp.update_args": "rank {rank}, {run}, 스텝 {step}: update의 param이 self.shard인가 "
                      "{param} (모양 {shape}, 기댓값 [{length}]), grad가 self.grad_shard인가 "
                      "{grad}, state가 flat.state인가 {state}, step {got} (기댓값 {want})",
    "dp.state_shape": "rank {rank}, {run}: optimizer 상태의 모양이 {got}, 기댓값은 각각 "
                      "[{length}] (이 rank의 조각)",
    "dp.gather_calls": "rank {rank}, {run}, 스텝 {step}: 업데이트가 {got}을 했습니다. "
                       "기댓값은 group {group} 위의 all_gather 한 번, {nbytes} 바이트",
    # 7.1 mixed precision (exercise_checks/mixed_precision.py)
    "point.7.1.group_flag": "오버플로 플래그는 update마다 원소 하나짜리 플래그의 all-reduce"
                            " (op max) 한 번이며, gradient를 가진 group 위에서 합니다",
    "point.7.1.group_flag.hint": "`local`을 `group` 위에서 op=\"max\"로 all-reduce하세요 "
                                 "(월드도, gather도 아니고), 판단하기 전에 update마다 "
                                 "한 번",
    "point.7.1.together": "group의 어느 rank든 어느 gradient에든 inf, -inf, NaN이 있으면 그 "
                          "group의 모든 rank가 그 스텝을 건너뛰고, 그 group만 건너뜁니다, 여러 rank가 "
                          "한꺼번에 오버플로할 때도",
    "point.7.1.together.hint": "local은 all_finite(grads)로 정하고 (모든 배열, NaN도 inf와 "
                               "똑같이 셉니다), found_inf는 이 rank의 gradient가 아니라 reduce된 "
                               "플래그로 정하세요",
    "point.7.1.backoff": "오버플로가 나면 스케일은 max(scale * backoff_factor, min_scale)이 "
                         "됩니다: 상수가 아니라 설정값입니다",
    "point.7.1.backoff.hint": "0.5와 1이 아니라 self.backoff_factor와 self.min_scale을 쓰고, "
                              "clean_steps를 0으로 되돌리세요",
    "point.7.1.growth": "깨끗한 스텝이 연달아 growth_interval번이면 스케일에 growth_factor를 "
                        "곱하고, 키운 뒤와 오버플로 뒤에는 세기를 처음부터 다시 합니다",
    "point.7.1.growth.hint": "깨끗한 스텝을 self.clean_steps에 세고, self.growth_interval에 "
                             "닿으면 self.growth_factor를 곱한 뒤 0으로 되돌리세요. "
                             "오버플로도 0으로 되돌립니다",
    "point.7.1.zero_skip": "학습에서 (ZeRO-2, float16) 건너뛴 스텝은 모든 rank의 모든 weight를 "
                           "비트 단위로 그대로 둡니다",
    "point.7.1.zero_skip.hint": "어느 rank든 오버플로가 나면 update()가 모든 rank에서 True를 "
                                "돌려주어야 어떤 rank도 스텝을 밟지 않습니다",
    "mp.flag_calls": "rank {rank}: update {steps}번이 집합 통신 {count}번을 했습니다 ({got}). "
                     "group {group} 위의 all_reduce {steps}번이어야 합니다",
    "mp.flag_bytes": "플래그 all-reduce가 {nbytes}바이트를 옮겼습니다: 숫자 하나면 됩니다",
    "mp.skip_poison": "rank {rank} (group {group}), 스텝 {step}: 건너뛰지 않았지만 group의 "
                      "rank {holder}의 grads[{index}]에 {what}이 있었습니다",
    "mp.skip_step": "rank {rank} (group {group}), 스텝 {step}: 건너뜀 {got}, 기댓값 {want}",
    "mp.backoff_wrong": "스텝 {step}의 오버플로 뒤 (스케일 {before}) 스케일이 {got}입니다, "
                        "{settings}에서 기댓값은 {want}",
    "mp.scale_wrong": "스텝 {step}: 스케일 {got}, {settings}에서 기댓값 {want}",
    "mp.zero_skip_wrong": "rank {rank}: float16 ZeRO-2, 스텝 1에 한 rank에 inf: 스텝별 건너뜀 "
                          "{got} (기댓값 [False, True, False, False]), 스텝 1에서 weight "
                          "그대로: {unchanged}",
    "mp.zero_scales": "float16 ZeRO-2: 스텝별 손실 스케일 {got}, 기댓값 "
                      "[256.0, 256.0, 128.0, 128.0]",
    # 8.x context parallel (exercise_checks/context_parallel.py)
    "point.8.1.union": "서로 겹치지 않는 키에 대한 두 조각의 (O, lse)를 병합하면 그 키 전체에 "
                       "대한 attention이 됩니다: O와 lse",
    "point.8.1.union.hint": "new_lse = log(e^lse + e^block_lse), 각 조각의 출력은 softmax "
                            "질량 중 제 몫 e^(lse - new_lse)와 e^(block_lse - new_lse)로 "
                            "가중합니다: 이전 출력도 다시 스케일하세요",
    "point.8.1.stable": "lse 행이 +-1000이고 조각끼리 1000 떨어져 있어도 결과가 유한하고 "
                        "맞습니다: 행마다 더 큰 lse로 옮겨서 계산합니다",
    "point.8.1.stable.hint": "log(e^a + e^b)는 a = 710에서 넘칩니다: top = xp.maximum(lse, "
                             "block_lse)을 (배열 전체가 아니라 행마다) 구하고 new_lse = top + "
                             "log(e^(lse - top) + e^(block_lse - top))로 계산하세요",
    "point.8.1.chain": "조각 4개를 하나씩, 어떤 순서로 접어도 모든 키에 대한 attention이 되고, "
                       "넘겨받은 조각은 바뀌지 않습니다",
    "point.8.1.chain.hint": "병합된 출력과 함께 병합된 lse를 돌려주고 (다음 조각이 그것과 "
                            "병합됩니다), out이나 block_out에 쓰지 말고 새 배열을 만드세요",
    "point.8.1.ring": "cp group 2개짜리와 4개짜리에서 ring attention (rank i는 블록 i개를 병합)이 "
                      "한 프로세스의 인과 attention과 같습니다, forward와 dQ, dK, dV",
    "point.8.1.ring.hint": "backward는 forward의 마지막 lse를 다시 씁니다: 병합은 지금까지 본 "
                           "모든 키에 대한 lse를 돌려주어야 합니다",
    "point.8.2.mirror": "rank i는 S/(2cp) token짜리 chunk 2cp개 중 chunk i, 그다음 chunk "
                        "2cp-1-i를 각각 오름차순으로 가집니다, 어떤 cp에서든",
    "point.8.2.mirror.hint": "size = steps // (2 * cp), 앞쪽 chunk는 rank, 그 거울상은 "
                             "2 * cp - 1 - rank (cp = 2에만 맞는 상수가 아니라), 앞쪽 chunk가 "
                             "먼저",
    "point.8.2.partition": "rank들의 위치를 모으면 0..S-1이고, 모든 token이 정확히 한 번, "
                           "rank마다 S/cp개입니다",
    "point.8.2.partition.hint": "chunk c는 위치 c*size .. (c+1)*size - 1을 가지고, chunk i의 "
                                "거울상은 2*cp - 1 - i입니다 (마지막 chunk는 2cp-1)",
    "point.8.2.balance": "모든 rank가 같은 수의 인과 (쿼리, 키) 쌍을 계산합니다",
    "point.8.2.balance.hint": "연속 분할은 rank cp-1에 일을 가장 많이 줍니다: 앞쪽 chunk를 "
                              "끝에서부터의 거울상과 짝지으세요",
    "point.8.2.attention": "cp group 2개짜리와 4개짜리에서 zigzag 분할의 all-gather attention이 한 "
                           "프로세스의 인과 attention과 같습니다, forward와 dQ, dK, dV",
    "point.8.2.attention.hint": "positions는 모든 rank에서 sequence를 같은 방식으로 잘라야 "
                                "합니다: 0..S-1을 S/cp token씩 나눈 분할",
    "point.8.2.callers": "두 호출자는 아무것도 공유하지 않습니다: 호출마다 자기 배열을 돌려주므로, "
                         "제 위치를 제자리에서 옮기는 호출자도, 다음 호출도 남의 것을 바꾸지 "
                         "않습니다",
    "point.8.2.callers.hint": "위치를 호출마다 새로 만드세요: 전역 변수나 캐시에 배열을 두고 다시 "
                              "내주지도, 버퍼를 다시 채우지도 마세요",
    "cp.not_finite": "{what}: 유한하지 않습니다 (inf 또는 NaN)",
    "cp.two_pieces": "조각 두 개",
    "cp.far_apart": "{lse} 근처의 lse 행, 조각끼리 최대 1000 차이",
    "cp.four_pieces": "조각 4개 (키를 {cuts}에서 자름)를 {order} 순서로 병합",
    "cp.pieces_changed": "merge가 넘겨받은 배열을 바꿨습니다 (out이나 block_out, lse나 "
                         "block_lse)",
    "cp.against_serial": "cp = {cp}의 {what}, 한 프로세스와 비교",
    "cp.not_run": "cp = {cp}: 실행하지 않음, positions가 sequence를 분할(partition)하지 "
                  "않습니다",
    "cp.raised": "positions(S={steps}, rank={rank}, cp={cp})가 {error}를 냈습니다",
    "cp.callers_held": "positions(S={steps}, rank={rank}, cp={cp})를 든 채 다른 rank의 것을 모두 "
                       "요청한 뒤: {got}, 혼자일 때는 {want} (호출들이 공유한 버퍼)",
    "cp.callers_again": "첫 호출자가 제 배열을 제자리에서 옮긴 뒤 다시 요청한 positions(S={steps}, "
                        "rank={rank}, cp={cp}): {got}, 혼자일 때는 {want} (두 호출자에게 건넨 배열 "
                        "하나)",
    "cp.positions_wrong": "positions(S={steps}, rank={rank}, cp={cp}): {got}, 기댓값 {want}",
    "cp.not_partition": "S={steps}, cp={cp}: rank들이 {got}를 가집니다, 모든 token이 한 번씩이 "
                        "아닙니다",
    "cp.unbalanced": "S={steps}, cp={cp}: rank별 인과 쌍 {pairs}, 모두 같지 않습니다",
    # 9.x zero bubble (exercise_checks/zb_split.py, zb_schedule.py)
    "point.9.1.input_now": "B가 끝나면, 어떤 W보다 먼저, dL/dX (두 Linear를 거친 dY W^T)가 "
                           "완성되어 맞습니다: 이전 stage가 기다리는 것",
    "point.9.1.input_now.hint": "weight 입력이 없는 연산은 B에서 backward 전체를 실행하고, weight가 "
                                "있는 연산은 지금 그 밖의 입력의 gradient를 계산합니다 (어느 것이 "
                                "weight인지는 requires_grad가 아니라 is_weight가 말해 줍니다)",
    "point.9.1.b_no_weight": "B는 X^T dY를 계산하지 않습니다: B 뒤에 모든 weight의 grad는 그대로이고, "
                             "각 Linear에는 입력의 gradient만 요청됩니다",
    "point.9.1.b_no_weight.hint": "마스크 (필요하고 weight가 아님)로 masked_backward를 거쳐 "
                                  "backward를 부르세요. 그러면 MatMul은 dY W^T만 계산합니다. 둘 다 "
                                  "계산하고 하나를 버려도 곱셈 비용은 듭니다",
    "point.9.1.w_no_input": "W는 X^T dY만 계산합니다: Linear마다 곱셈 하나, weight가 있는 연산만 "
                            "기록되고, 입력 gradient는 B가 만든 그대로입니다",
    "point.9.1.w_no_input.hint": "(node.fn, node.ctx, node.inputs, grad_outs, weights)는 weight가 "
                                 "있는 연산에만 붙이세요: W가 쓰는 마스크는 needs_input_grad가 "
                                 "아니라 weights입니다",
    "point.9.1.values": "B 다음 W (micro-batch 둘, W는 나중에 거꾸로)가 전체 backward와 비트 단위로 "
                        "같습니다, float64와 float32에서, 그리고 중앙 차분(central differences)과도",
    "point.9.1.values.hint": "weight가 있는 모든 연산의 op, ctx, 입력, grad_outs를 기록하세요. 그래야 "
                             "다음 micro-batch의 B 뒤에도 W에 필요한 것이 다 있습니다",
    "point.9.1.either_order": "weight는 곱의 어느 입력이든 될 수 있습니다: y = W x (weight가 "
                              "첫째)에서도 B는 dL/dx만, W는 dL/dW만 줍니다, y = x W에서처럼",
    "point.9.1.either_order.hint": "모든 입력에 is_weight를 써서 어느 자리에 있든 weight를 "
                                   "찾으세요: weight가 둘째 입력이라고 가정하지 마세요",
    "point.9.2.once": "모든 stage에서 micro-batch마다 W가 정확히 한 번 실행되고, W를 빼면 "
                      "목록은 1F1B의 것입니다: 같은 F, B, 메시지",
    "point.9.2.once.hint": "배치한 W의 수(weights)를 세세요. cool-down과 끝에 남은 W들로 M이 되어야 "
                           "합니다",
    "point.9.2.after_b": "각 W는 자기 micro-batch의 B 뒤에 옵니다",
    "point.9.2.after_b.hint": "W는 B가 끝난 가장 오래된 micro-batch를 풀어 줍니다: W(weights)는 "
                              "B 뒤에 두고, 앞에 두지 마세요",
    "point.9.2.memory": "어떤 stage도 K개보다 많은 micro-batch (F는 끝났고 W는 아직)를 들고 "
                        "있지 않습니다: 1F1B의 최댓값",
    "point.9.2.memory.hint": "cap개를 들고 있으면 다음 F 전에 W 하나를 실행하세요 (micro-batch의 "
                             "activation을 풀어 주는 것이 W입니다)",
    "point.9.2.bubble": "시뮬레이션한 bubble이 (K-1)(T_F+T_B-T_W) 이하로 1F1B의 "
                        "(K-1)(T_F+T_B+T_W)보다 작습니다, T_W = T_F와 T_W = T_F/2에서",
    "point.9.2.bubble.hint": "B마다 바로 W를 두면 다시 1F1B입니다: stage가 cap개를 들 때까지 "
                             "각 W를 미뤄서 빈틈을 채우게 하세요",
    "point.9.2.h2": "같은 코드가 ZB-H2의 warm-up과 cap(2K-1)으로도: W는 한 번씩 자기 B 뒤에, "
                    "최대 2K-1개 보관, bubble은 (K-1)(T_F+T_B-2T_W) 이하",
    "point.9.2.h2.hint": "held를 num_stages가 아니라 인자 cap과 비교하세요",
    "zb.dtypes": "분할 backward를 float64, float32 순서가 아니라 {got}에서 실행했습니다",
    "zb.none": "{what}: None입니다",
    "zb.dtype": "{what}: dtype {got}, 기댓값 {want}",
    "zb.raised": "{dtype}: {error} 예외가 났습니다",
    "zb.after_b": "B 뒤, W 전의 {what}, {dtype}",
    "zb.after_w": "W 뒤의 {what}, {dtype}",
    "zb.weights_in_b": "{dtype}: B 뒤에 weight {names}가 벌써 gradient를 갖습니다 (그것은 W의 "
                       "일입니다)",
    "zb.b_calls": "{dtype}: B에서 {op}의 backward가 (입력, weight) = {got}로 요청되었습니다. 4번 "
                  "모두 [True, False]여야 합니다",
    "zb.w_calls": "{dtype}: W에서 {op}의 backward가 (입력, weight) = {got}로 요청되었습니다. 4번 "
                  "모두 [False, True]여야 합니다",
    "zb.steps": "{dtype}: W가 micro-batch마다 연산 {got}개를 기록했습니다, 기댓값 [4, 4] "
                "(weight가 있는 연산: MatMul 2개와 Add 2개)",
    "zb.x_changed": "{dtype}: W가 dL/dx{i}를 바꿨습니다 (W는 weight gradient만 계산합니다)",
    "zb.first": "y = tanh(W x), float64, {half} 뒤: {what}",
    "zb.first_calls": "y = tanh(W x): {half}에서 MatMul의 backward가 (W, x) = {got}로 "
                      "요청되었습니다. 기댓값 {want}",
    "zb.not_whole": "{what}: 전체 backward와 비트 단위로 같지 않습니다",
    "zb.numeric": "중앙 차분과 비교한 {what}",
    "zb.w_once": "{where}: micro-batch {got}의 W, 0..{m}-1 각각 한 번이어야 합니다\n"
                 "  동작: {actions}",
    "zb.not_1f1b": "{where}: W를 빼면 목록이 {got}\n  기댓값 1F1B의 {want}",
    "zb.w_first": "{where}: {step}이 자기 B보다 먼저 옵니다\n  동작: {actions}",
    "zb.held": "{where}: 한 번에 micro-batch {got}개 보관 (F는 끝났고 W는 아직), 최대 "
               "{most}개\n  동작: {actions}",
    "zb.bubble": "{name}(K={stages}, M={micro}), T_F={t_f}, T_B={t_b}, T_W={t_w}: 시뮬레이션한 "
                 "bubble {got}, 표의 값은 {table}, 1F1B는 {plain}",
    # exercises 10.1 and 10.2: mixture of experts
    "point.10.1.top_k": "각 token의 선택은 확률이 가장 큰 전문가(expert) k개이고, 큰 것부터이며, "
                        "확률이 같으면 전문가 번호가 더 작은 쪽으로 갑니다 (동점이 가득한 행, E는 "
                        "32까지, token 하나, float64와 float32)",
    "point.10.1.top_k.hint": "xp.argsort(-probs, axis=-1, kind=\"stable\")[..., :k]: -p의 "
                             "안정 정렬은 같은 확률을 전문가 순서대로 둡니다. p를 정렬하고 "
                             "뒤집으면 번호가 더 큰 쪽이 먼저 옵니다",
    "point.10.1.queue": "각 sequence의 배정 k*T개는 슬롯 우선(slot-major)으로, 먼저 온 순서대로 "
                        "줄을 섭니다: 모든 token의 첫 선택을 token 순서로, 그다음 모든 두 번째 "
                        "선택, slot = 같은 sequence에서 앞서 같은 전문가를 고른 배정의 수 (token "
                        "하나일 때도, token이 2048개를 넘을 때도)",
    "point.10.1.queue.hint": "queue = choice.transpose(0, 2, 1).reshape(b, k * T) (token "
                             "우선인 choice.reshape(b, T * k)가 아닙니다), 각 sequence의 큐 "
                             "축을 따라 cumsum으로 세고 1을 빼세요",
    "point.10.1.capacity": "kept = slot < C, C = ceil(k T f / E), 용량 계수(capacity factor) "
                           "0.5, 1, 1.25, 2에서: 각 전문가의 처음 C개 배정은 남고, 나머지는 "
                           "버려집니다(drop). dropless (capacity None)는 모든 배정을 남깁니다",
    "point.10.1.capacity.hint": "슬롯은 0부터 세므로 슬롯 C가 용량을 넘는 첫 번째입니다: "
                                "kept = slot < capacity, capacity가 None이면 모두 True",
    "point.10.1.layer": "여러분의 라우팅 위의 MoE 레이어는 token별 반복문과 같습니다: y_t = t의 "
                        "남은 선택 e에 대한 p[t, e] expert_e(x_t)의 합 (router 확률 그대로, "
                        "재정규화하지 않음), 모든 선택을 잃은 token은 y_t = 0이 정확히 되어 "
                        "잔차(residual)가 그것을 나릅니다 (x + y = x)",
    "point.10.1.layer.hint": "모든 배정의 slot과 kept를 돌려주세요: 레이어는 남은 배정을 그 "
                             "전문가의 slot번 행에 쓰고, 버려진 배정은 자리를 차지하면 안 "
                             "됩니다",
    "point.10.2.all_to_all": "dispatch는 ep group에서의 올투올(all-to-all) 한 번이고 "
                             "(월드도, all-gather도 아님), 각 rank는 (ep-1) x E/ep x C x h x b x "
                             "itemsize 바이트를 보냅니다: router가 무엇을 고르든 채워진(padded) "
                             "버퍼 전체",
    "point.10.2.all_to_all.hint": "all_to_all_rows(send, group) 한 번: 보내는 버퍼의 chunk j가 "
                                  "group의 rank j로 갑니다. 월드는 ep group이 아닙니다",
    "point.10.2.layout": "rank r의 전문가들이 받는 것은 [로컬 전문가 i][보낸 rank q][용량 "
                         "슬롯] 순서입니다: 모든 rank q에서 차례로, q가 전문가 r*E/ep + i를 "
                         "위해 가진 b*C개의 채워진 행 (ep group 2개짜리와 4개짜리, 값으로 확인)",
    "point.10.2.layout.hint": "send는 (ep, E/ep, b*C, h), [받을 rank][그 전문가][슬롯], 도착한 "
                              "것은 [보낸 rank][내 전문가][슬롯]: 올투올 다음에 "
                              "transpose(1, 0, 2, 3)",
    "point.10.2.layer": "combine(combine, 같은 올투올로 되돌아감, 역순 배치)과 함께 모든 token의 "
                        "출력이 제자리로 돌아옵니다: ExpertParallelMoE가 한 프로세스의 MoE와 "
                        "같습니다, 출력, dx, 전문가 weight의 gradient",
    "point.10.2.layer.hint": "날 배열에 comm.all_to_all을 쓰지 말고 all_to_all_rows (backward가 "
                             "같은 올투올인 autograd Function)를 쓰세요, 그래야 gradient가 "
                             "돌아옵니다",
    "moe.raised": "{what}: {error}를 냈습니다",
    "moe.bad_choice": "{what}: choice의 모양이 {shape}이거나 번호가 0..E-1 밖입니다, 기대한 "
                      "모양 {want}",
    "moe.case": "b={b}, T={steps}, E={experts}, k={k}, 용량 {capacity}, {dtype}",
    "moe.choice_wrong": "{what}: sequence {s}, token {t}, 확률 {probs}: choice {got}, 기댓값 "
                        "{want}",
    "moe.bad_slot": "{what}: slot의 모양 {shape}, 기댓값 {want}",
    "moe.slot_wrong": "{what}: sequence {s}, token {t}, 선택 {choice}: 큐 슬롯 {got}, 기댓값 "
                      "{want}",
    "moe.kept_wrong": "{what}: sequence {s}, token {t}, 큐 슬롯 {slot}의 선택 {choice}: kept "
                      "{got}, 기댓값 {want} (모두 배정 {dropped}개가 버려짐, 기댓값 "
                      "{want_dropped}개)",
    "moe.layer_case": "MoE 레이어, {router} router, 용량 {capacity}, {dtype}",
    "moe.no_drop": "{what}: 버려지는 token이 없습니다 (채점기 자신의 문제가 잘못되었습니다)",
    "moe.dropped_moved": "{what}: sequence {s}, token {t}는 모든 선택을 잃었으므로 y가 0이어야 "
                         "합니다 (잔차가 나름), 받은 값 {got}",
    "moe.ops": "rank {rank}, ep {ep}, {dtype}: dispatch가 {ops}를 실행했습니다, 기댓값은 "
               "정확히 ['all_to_all']",
    "moe.group": "rank {rank}, ep {ep}: 올투올이 rank {got}에서 돌았습니다, 기댓값은 ep group "
                 "{want}",
    "moe.bytes": "rank {rank}, ep {ep}, {dtype}: {got} 바이트를 보냈습니다, 기댓값 (ep-1) x "
                 "E/ep x C x h x b x itemsize = ({ep}-1) x {local} x {cap} x {h} x {b} x "
                 "{item} = {want}",
    "moe.dispatch_raised": "rank {rank}, ep {ep}: dispatch_padded가 {error}를 냈습니다",
    "moe.layout": "dispatch 배치, ep {ep}, {dtype}",
    "moe.layout_wrong": "rank {rank}, ep {ep}, {dtype}, rank당 전문가 {local}개, b*C = "
                        "{block}: 행 {row}은 (보낸 rank, 전문가, 슬롯) {got}, 기댓값 {want}",
    "moe.round_trip": "ep = {ep}, {dtype}에서 combine(dispatch(rows)): 모든 행이 제자리로",
    "moe.against_serial": "ep = {ep}, {dtype}에서 {what}, 한 프로세스와 비교",
    # where students actually go wrong (exercise_checks: counted calls, dtypes, groups)
    "tp.products": "rank {rank} ({dtype}): forward가 곱 X @ A를 {got}번 계산했습니다. X_i A_i는 한 번만 계산하고 "
                   "바로 그 부분 곱을 g에 넘깁니다 (두 번째 곱은 같은 일을 두 번 한 것입니다)",
    "tp.memory_held": "rank {rank} ({dtype}): 층의 속성이 배열 {got}바이트를 가지고 있습니다. "
                      "필요한 것은 {want}바이트입니다 ({what}: {full}바이트)",
    "tp.memory_new": "rank {rank} ({dtype}): 층을 만들고 실행한 뒤 새 배열 {got}바이트가 프로세스에 "
                     "살아 있습니다. 필요한 것은 {want}바이트입니다 ({what}: {full}바이트)",
    "tp.full_weight": "전체 weight",
    "tp.one_partial": "부분 곱 하나",
    "tp.again": "한 층의 forward {k} ({dtype}): {what}",
    "tp.again_raised": "rank {rank} ({dtype}): 한 층에 forward를 거듭하자 코드가 {error}를 "
                       "일으켰습니다",
    "dp.waited_in_launch": "rank {rank}, 실행 {run}, 단계 {step}: _launch가 반환하기 전에 앞선 bucket의 "
                           "all-reduce "
                           "{count}개를 끝냈습니다 (그것들을 기다렸습니다): 한 번에 bucket 하나만 진행 중이면 겹침이 아닙니다. 이 "
                           "bucket의 "
                           "all-reduce를 시작하고 반환하세요, 모두를 기다리는 것은 finish()입니다",
    "dp.grads_kept": "rank {rank}, 실행 {run}, 단계 {step}: backward가 만든 전체 gradient 중 {count}개가 "
                     "reduce_gradients 뒤에도 살아 있습니다 (전역 변수, 다른 객체, 클로저 어딘가에 보관됨): 2단계는 그것들을 "
                     "해제하고 조각만 남깁니다",
    "dp.weights_kept": "rank {rank}, 실행 {run}, 단계 {step}: 스텝 이전의 전체 weight가 스텝 뒤에도 살아 있습니다 "
                       "({count}개가 어딘가에 보관됨: 옛 조각의 뷰, 전역 변수, 다른 객체): 모든 rank는 전체 weight를 한 벌만 가집니다",
    "dp.memory_left": "rank {rank}, 실행 {run}, 단계 {step}: 이 단계가 프로세스에 새 배열 {got}바이트를 살려 두었습니다, "
                      "기대값은 약 {want}바이트입니다 (전체 평탄 버퍼는 {full}바이트): 전체 크기의 사본이 어딘가에 보관되어 있습니다",
    "dp.handles_kept": "rank {rank}, 실행 {run}, 단계 {step}: 이 step의 all-reduce handle {total}개 중 "
                       "{count}개가 finish() 뒤에도 살아 있습니다 (어딘가에 보관됨)",
    "dp.step_memory": "rank {rank}, 실행 {run}, 단계 {step}: forward, backward, finish()가 새 배열 "
                      "{got}바이트를 살려 두었습니다. 첫 step 뒤의 step에는 필요 없습니다 (평평한 "
                      "gradient 버퍼: {full}바이트)",
    "ad.reused": "{case}: 같은 모양의 두 번째 연산이 backward를 실행하자 여러분의 backward가 돌려준 gradient가 바뀌었습니다 (한 "
                 "그래프 안에 "
                 "같은 모양의 연산 두 개): 호출마다 새 배열을 돌려주세요, 호출에서 호출로 이어지는 버퍼가 아니라",
    "ad.widened": "{case}: float32 입력이 도중에 float64를 거쳐 (dtype=float64, astype(float64) 또는 "
                  "float64 배열) 다시 돌아왔습니다: 입력의 자료형으로 계산하세요, float32는 처음부터 끝까지 float32입니다",
    "ad.products": "{case}: 필요한 gradient {want}개에 대해 여러분의 backward가 곱(GEMM)을 {got}번 계산했습니다: 필요한 "
                   "gradient만, 각각 한 번씩 계산하세요",
    "cp.long_positions": "S = {steps}, cp = {cp}, rank {rank}: 긴 sequence의 위치가 틀렸습니다: 자료형 {dtype}, "
                         "{size}개 (기대값은 정수 {want}개, chunk rank 다음 그 거울 chunk), 작은 정수 자료형(int8, "
                         "int16)은 "
                         "위치 {steps} - 1을 담을 수 없습니다",
    "cp.float32_merge": "float32 조각 두 개: 병합이 자료형 {dtypes}의 O와 lse를 주었거나, 도중에 float64를 거쳤습니다 "
                        "(그리고 다시 변환): 조각의 자료형으로 병합하세요, float32는 처음부터 끝까지 float32입니다",
    "zb.no_input_grad": "x에 gradient가 필요 없는 y = tanh(tanh(x W) W) W: B가 MatMul에 {got}을 요청했습니다. 첫 "
                        "MatMul의 입력 x는 gradient가 필요 없으므로 B는 거기서 dY W^T를 계산하지 않습니다: [[True, False], "
                        "[True, False]] (나머지 두 개만)",
    "zb.shared": "y = tanh(tanh(x W) W) W의 {what} (W를 세 번 사용, float32)",
    "moe.dropped_count": "{what}: 레이어의 plan이 버려진(drop) 배정을 {got}개로 셉니다 "
                         "(RoutePlan.dropped, ~kept의 합), 기대한 값은 {want}개입니다: kept는 "
                         "bool이어야 합니다",
    "tp.no_mpi_count": "rank {rank}, {phase}: 증거에 MPI 호출 수가 없습니다 "
                       "(grader의 runner는 항상 적습니다)",
    "tp.trace_not_made": "rank {rank}, {phase}: trace에는 {group} 위의 {op}가 있지만, 그것을 한 MPI "
                         "호출이 없습니다 (손으로 적은 span은 집합 통신이 아닙니다)",
    "tp.made_not_traced": "rank {rank}, {phase}: MPI가 {group} 위에서 {method}를 했지만 trace에는 "
                          "없습니다 (trace에서 숨긴 집합 통신)",
    # exercise 10.3: auxiliary-loss-free balancing
    "point.10.3.direction": "평균 load보다 많이 받은 expert는 덜 끌리게 (bias가 gamma만큼 "
                            "내려가고), 적게 받은 expert는 더 끌리게 (gamma만큼 올라가게) "
                            "합니다: b + gamma sign(mean - load), 원래 bias는 그대로 둔 채",
    "point.10.3.direction.hint": "bias + rate * xp.sign(load.mean() - load)를 돌려주세요: "
                                 "mean - load는 (load - mean이 아니라) token을 너무 적게 받은 "
                                 "expert에서 양수입니다; step만 돌려주지 말고 bias에 더하세요",
    "point.10.3.sign_only": "step은 편차의 크기와 상관없이 정확히 gamma입니다 (token 1개의 "
                            "편차와 수백만의 편차, 10^7까지의 load): load 편차의 부호만 셉니다",
    "point.10.3.sign_only.hint": "rate * (mean - load)도, 평균에 대한 상대 편차도 아닌 "
                                 "rate * xp.sign(...): 바쁜 step이 조용한 step보다 bias를 더 "
                                 "움직이면 안 됩니다",
    "point.10.3.at_mean": "load가 정확히 평균인 expert는 bias를 그대로 두고, 완전히 균형 잡힌 "
                          "step은 어떤 bias도 움직이지 않습니다 (sign(0) = 0)",
    "point.10.3.at_mean.hint": "xp.sign은 0에서 0입니다: where(load > mean, -rate, rate)는 "
                               "평균에 있는 expert를 올려 버립니다",
    "point.10.3.balances": "router가 대부분의 token을 expert 두 개로 보내는 MoE layer에서, "
                           "각 step의 bias는 layer가 센 load에 규칙을 다시 적용한 것과 같고, "
                           "load가 고르게 됩니다: 마지막 step들의 load 폭은 첫 step의 절반 "
                           "아래입니다",
    "point.10.3.balances.hint": "bias_update는 layer마다 step마다 그 step의 load (E,)로 한 번 "
                                "불립니다: 호출 사이에 자기 상태를 두지 말고 (bias, load, rate)"
                                "의 순수 함수로 두세요",
    "balance.case": "load {load}, gamma {rate}",
    "balance.raised": "{what}: {error}를 냈습니다",
    "balance.bad_shape": "{what}: bias가 모양 {shape}로 돌아왔습니다, 기대한 모양 {want}",
    "balance.direction": "{what}: load {load}인 expert {e} (평균 {mean})가 {got}만큼 "
                         "움직였습니다, 기대한 값 {want}: 평균 위면 bias가 내려가고, 아래면 "
                         "올라갑니다",
    "balance.magnitude": "{what}: load {load}인 expert {e} (평균 {mean})가 {got}만큼 "
                         "움직였습니다, 기대한 값은 정확히 gamma = {rate}: 편차의 크기가 아니라 "
                         "부호입니다",
    "balance.at_mean": "{what}: expert {e}의 load가 정확히 평균 {mean}인데 bias가 {got}만큼 "
                       "움직였습니다: 평균에서는 bias가 그대로입니다",
    "balance.layer": "router가 치우친 MoE layer",
    "balance.replay": "MoE layer, step {step}: load는 {load}, bias는 {got}가 되었고, 규칙으로는 "
                      "{want}입니다",
    "balance.spread": "MoE layer가 고르게 되지 않았습니다: load의 폭 (max - min)이 첫 step의 "
                      "{first}에서 {steps} step 중 마지막 step들의 {last}가 되었습니다",
    # exercise 7.2: fp8 per-tensor scale
    "point.7.2.own_scale": "tensor마다 자기 자신의 amax에서 얻은 2의 거듭제곱 s = "
                           "2^floor(log2(448 / amax))로 scale하고 원소마다 cast합니다: q = "
                           "e4m3(s x) (448을 넘는 X는 scale 없이 NaN이 되고, ~1e-3인 W는 0으로 "
                           "underflow합니다)",
    "point.7.2.own_scale.hint": "sx = scale_for(rows, E4M3, agree), sw = scale_for(w, E4M3, "
                                "agree): tensor마다 scale 하나, 각각 그 tensor에서; 그다음 "
                                "qx = (rows.astype(np.float32) * sx).astype(E4M3), qw도 같게",
    "point.7.2.one_byte": "backward가 보관하는 것은 e4m3 (float8_e4m3fn: forward 값을 위한 "
                          "mantissa 3 bit), 원소당 1 byte로 float32의 4분의 1입니다",
    "point.7.2.one_byte.hint": "qx와 qw를 E4M3로 cast하세요 (bf16도, E5M2도 아닙니다: e5m2는 "
                               "gradient용). block 뒤의 줄들이 그대로 저장합니다",
    "point.7.2.float32": "y = (float32로 누적한 q_X @ q_W) / (s_X s_W): 곱을 float32로 더하고 "
                         "두 scale로 unscale한 뒤, X의 dtype으로 한 번만 반올림합니다",
    "point.7.2.float32.hint": "y = matmul(qx, qw, np.float32) / (sx * sw): np.float32가 없으면 "
                              "합이 e4m3로 반올림됩니다; 두 scale 모두로 나누세요",
    "point.7.2.agree": "agree가 있으면 (tp rank들에 나뉜 tensor) 각 scale은 tensor 전체의 합의된 "
                       "amax에서 나오므로, 모든 rank가 프로세스 하나처럼 반올림합니다",
    "point.7.2.agree.hint": "두 tensor 모두 scale_for에 agree를 넘기세요: scale_for(rows, E4M3, "
                            "agree), scale_for(w, E4M3, agree)",
    "fp8.raised": "{case}: Fp8Matmul의 forward가 {error}를 냈습니다",
    "fp8.scales": "{case}: scale (s_X, s_W)이 {got}였고, 기대값은 {want}입니다 (tensor마다 "
                  "자기 것: 2^floor(log2(448 / 그 amax)))",
    "fp8.cast": "{case}: {name}의 값 {size}개 중 {count}개가 자기 tensor와 자기 scale의 "
                "e4m3(s x)가 아닙니다 (NaN: 448을 넘는 값을 scale 없이 cast; 0: 작은 값이 "
                "underflow)",
    "fp8.kept": "backward가 dtype {dtypes}의 배열을 보관합니다, 값 {sizes}개에 {nbytes} byte: "
                "기대값은 float8_e4m3fn, 값당 1 byte",
    "fp8.y_shape": "y가 shape {shape}의 {dtype}로 돌아왔고, 기대값은 shape {want}의 bfloat16 "
                   "(X의 dtype)입니다",
    "fp8.product": "y = {got}인데 (float32로 계산한 q_X @ q_W) / (s_X s_W)는 {want}입니다 (비율 "
                   "{ratio:g}: 나누지 않은 scale, 또는 fp8로 반올림한 합)",
    "fp8.agreed": "agree가 있을 때 (tensor 전체의 amax가 더 큼) scale이 {got}였고, 기대값은 "
                  "{want}입니다; agree 없이는 {alone}입니다: scale은 합의된 amax에서 나와야 합니다",
}
