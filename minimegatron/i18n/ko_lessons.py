"""Korean (한국어) texts of every exercise's lesson points (exercise_checks/lesson.py).

For each point NAME of exercise ID: ``point.ID.NAME`` says what it teaches, in
the words of exercises/ko/ID.md, and ``point.ID.NAME.hint`` what to do when it is
missed; the other keys are the judges' messages, by exercise group. Same keys and
{fields} in en_lessons.py and ko_lessons.py (tests/test_i18n.py).
"""

MESSAGES = {
    # 1.x autodiff (exercise_checks/autodiff.py)
    # 2.x and 6.1 schedules (exercise_checks/schedules.py)
    # 3.x tensor parallel (exercise_checks/tensor_parallel.py)
    "point.3.1.sum": "f의 역전파는 모든 랭크에 그룹의 dL/dY의 합(SUM)을 x의 자료형으로 줍니다 "
                     "(순전파는 항등)",
    "point.3.1.sum.hint": "grad_out을 ctx.group 위에서 (월드가 아니라) 올리듀스하고, 그룹에 "
                          "대해서는 None과 함께 돌려주세요",
    "point.3.1.one_all_reduce": "f의 비용은 역전파에서 tp 그룹 위의 dL/dY 올리듀스(all-reduce) "
                                "한 번이고, 순전파에서는 없습니다",
    "point.3.1.one_all_reduce.hint": "comm.all_reduce(grad_out, ctx.group) 한 번: 올개더 뒤의 합도, "
                                     "리듀스 뒤의 브로드캐스트도, 다른 자료형으로의 변환도 "
                                     "아닙니다",
    "point.3.1.grad_out_kept": "f의 역전파는 들어온 기울기를 그대로 둡니다: 그 배열을 함께 쓰는 "
                               "다른 가지는 자기 값을 그대로 받습니다",
    "point.3.1.grad_out_kept.hint": "올리듀스가 만든 새 배열을 돌려주세요; grad_out 안으로 제자리"
                                    "(inplace=True) 올리듀스하지 마세요",
    "point.3.2.sum": "g의 순전파는 모든 랭크에 그룹의 x의 합(SUM)을 x의 자료형으로 줍니다 "
                     "(랭크 하나면 x 그대로)",
    "point.3.2.sum.hint": "x를 group 위에서 (월드가 아니라) 올리듀스하고, group.size == 1이면 "
                          "x를 돌려주세요",
    "point.3.2.one_all_reduce": "g의 비용은 순전파에서 tp 그룹 위의 x 올리듀스(all-reduce) 한 "
                                "번이고, 역전파에서는 없으며, 랭크 하나짜리 그룹에서는 아무것도 "
                                "없습니다",
    "point.3.2.one_all_reduce.hint": "comm.all_reduce(x, group) 한 번, group.size == 1이면 없음: "
                                     "올개더 뒤의 합이 아닙니다",
    "point.3.2.input_kept": "g는 새 배열을 돌려줍니다: 입력인 이 랭크의 부분 곱 X_i A_i는 제 값을 "
                            "그대로 가집니다",
    "point.3.2.input_kept.hint": "x 안으로 제자리(inplace=True) 올리듀스하지 마세요",
    "point.3.3.columns": "랭크 r은 마스터 가중치와 편향의 열 r*w .. (r+1)*w를 가집니다, "
                         "w = out_features / tp, 어떤 tp에서든 (랭크 2개, 1개, 4개)",
    "point.3.3.columns.hint": "width = out_features // tp_group.size, cols = "
                              "slice(tp_group.rank * width, (tp_group.rank + 1) * width): 상수가 "
                              "아니라 그룹의 랭크와 크기입니다",
    "point.3.3.output": "각 랭크는 Y의 자기 열인 Y_i = X A_i + b_i를 계산하고, 모은 Y는 X A + b "
                        "입니다 (예제: Y_1 = [74, 258]^T, Y_2 = [98, 346]^T)",
    "point.3.3.output.hint": "가중치의 열과 편향의 열은 랭크 순서대로 같은 슬라이스여야 합니다",
    "point.3.4.rows": "랭크 r은 마스터 가중치의 행 r*h .. (r+1)*h와 편향 전체를 가집니다, "
                      "h = in_features / tp, 어떤 tp에서든 (랭크 2개, 1개, 4개)",
    "point.3.4.rows.hint": "height = in_features // tp_group.size, rows = "
                           "slice(tp_group.rank * height, (tp_group.rank + 1) * height): 상수가 "
                           "아니라 그룹의 랭크와 크기입니다",
    "point.3.4.output": "랭크 r의 행 A_i는 X의 자기 열 X_i와 만납니다: 부분 곱 X_i A_i를 합하면 "
                        "X A입니다 (예제: [[11, 15], [95, 131]] + [[63, 83], [163, 215]])",
    "point.3.4.output.hint": "scatter_to_tp가 X의 열을 나누듯, in_features 축(행)을 랭크 순서대로 "
                             "나누세요",
    "point.3.5.partial": "각 랭크는 먼저 자기 부분 곱 X_i A_i를 계산합니다 (last_partial에 보관, "
                         "편향 없이, 아직 합하지 않은 값)",
    "point.3.5.partial.hint": "g보다 먼저 partial = x @ self.weight, self.last_partial = "
                              "partial.data",
    "point.3.5.sum": "g가 부분 곱을 합합니다: 모든 랭크가 Y = X A + b (편향은 한 번)를 받고, "
                     "기울기는 g를 거쳐 거꾸로 흐릅니다 (예제: Y = [[74, 98], [258, 346]])",
    "point.3.5.sum.hint": "y = reduce_from_tp(partial, self.tp_group): g를 거쳐야 역전파가 "
                          "됩니다; 편향은 블록 뒤에서 더해집니다",
    "point.3.5.one_all_reduce": "행 방향 분할 선형층의 비용은 순전파에서 tp 그룹 위의 Y 올리듀스"
                                "(all-reduce) 한 번이고, 역전파에서는 없습니다",
    "point.3.5.one_all_reduce.hint": "부분 곱에 reduce_from_tp를 self.tp_group 위에서 한 번 "
                                     "부르세요 (월드도, 개더(gather)도 아닙니다)",
    "tp.no_collective": "집합 통신 없음",
    "tp.forward": "순전파",
    "tp.backward": "역전파",
    "tp.alone": "랭크 하나짜리 그룹에서",
    "tp.call": "{group} 위의 {op} {nbytes} B ({sent} B 보냄)",
    "tp.calls_wrong": "랭크 {rank}, {phase}: 집합 통신이 [{got}]였습니다; 기댓값 [{want}]",
    "tp.dtype_wrong": "랭크 {rank}: {what}의 자료형이 {got}입니다, 기댓값 {want} (입력의 자료형)",
    "tp.f_forward": "f(x) ({dtype}): 항등",
    "tp.f_backward": "dL/dX ({dtype}): 랭크 {group}의 dL/dY의 합",
    "tp.f_shared": "f와 dL/dY를 함께 쓰는 다른 가지의 기울기 ({dtype})",
    "tp.g_forward": "g(x) ({dtype}): 랭크 {group}의 x의 합",
    "tp.g_backward": "dL/dx ({dtype}): g의 역전파는 항등",
    "tp.g_alone": "랭크 하나짜리 그룹에서 g(x): x",
    "tp.g_input": "g(x) 뒤의 x ({dtype}): 이 랭크 자신의 x",
    "tp.shard": "{name} (tp={tp}), 그룹의 랭크 {r}: {what}",
    "tp.layer": "{name}: {what}",
    "tp.last_partial": "last_partial ({dtype}): X_i A_i",
    "tp.A_i": "A_{n} (이 랭크가 가진 A의 블록)",
    "tp.Y_i": "Y_{n} (이 랭크의 부분 곱)",
    "tp.Y": "Y = X A (합친 결과)",
    "tp.dX": "L = sum(Y)의 dL/dX",
    "tp.dA_i": "dL/dA_{n}",
    "tp.column": "열 방향",
    "tp.row": "행 방향",
    "tp.worked": "예제, {split} 분할: {name}",
    # 6.2 sequence parallel (exercise_checks/sequence_parallel.py)
    "point.6.2.tokens": "g-bar는 랭크 r에 그룹의 x의 합(SUM) 가운데 토큰 r*T/t .. (r+1)*T/t를 "
                        "x의 자료형, 모양 (B, T/t, D)로 줍니다 (랭크 하나면 x 그대로)",
    "point.6.2.tokens.hint": "reduce_scatter(x, group, axis=SEQ): 월드가 아니라 tp 그룹, 배치 "
                             "축도 은닉 축도 아닌 시퀀스 축",
    "point.6.2.one_reduce_scatter": "g-bar의 비용은 tp 그룹 위의 x 리듀스 스캐터(reduce-scatter) "
                                    "한 번이고 (올리듀스 뒤에 자르면 두 배의 바이트를 옮깁니다), "
                                    "랭크 하나짜리 그룹에서는 아무것도 없습니다",
    "point.6.2.one_reduce_scatter.hint": "comm.reduce_scatter 한 번, group.size == 1이면 없음: "
                                         "올리듀스 뒤의 seq_chunk가 아닙니다",
    "point.6.2.layer": "시퀀스 병렬 RowParallelLinear에서 랭크 r은 X A + b의 자기 토큰을 받고, "
                       "기울기는 프로세스 하나의 것과 같습니다",
    "point.6.2.layer.hint": "g-bar는 부분 곱 뒤의 g를 대신합니다: 그룹 위에서 합한 뒤 이 랭크의 "
                            "토큰만 가지세요",
    "sp.forward": "g-bar(x) ({dtype}), 랭크마다 모양 {shape}의 x: 랭크 {group}의 합 가운데 이 "
                  "랭크의 토큰",
    "sp.backward": "dL/dx ({dtype}): 랭크들의 dL/dy를 시퀀스 축으로 올개더한 것",
    "sp.alone": "랭크 하나짜리 그룹에서 g-bar(x): x",
    # 4.1 and 5.x data parallel (exercise_checks/data_parallel.py)
    # 7.1 mixed precision (exercise_checks/mixed_precision.py)
    "point.7.1.group_flag": "오버플로 플래그는 update마다 원소 하나짜리 플래그의 올리듀스"
                            "(all-reduce, op max) 한 번이며, 기울기를 가진 그룹 위에서 합니다",
    "point.7.1.group_flag.hint": "`local`을 `group` 위에서 op=\"max\"로 올리듀스하세요 "
                                 "(월드도, 개더(gather)도 아니고), 판단하기 전에 update마다 "
                                 "한 번",
    "point.7.1.together": "그룹의 어느 랭크에든 inf가 있으면 그 그룹의 모든 랭크가 그 스텝을 "
                          "건너뛰고, 그 그룹만 건너뜁니다",
    "point.7.1.together.hint": "found_inf는 이 랭크의 기울기가 아니라 리듀스된 플래그로 "
                               "정하세요",
    "point.7.1.backoff": "오버플로가 나면 스케일은 max(scale * backoff_factor, min_scale)이 "
                         "됩니다: 상수가 아니라 설정값입니다",
    "point.7.1.backoff.hint": "0.5와 1이 아니라 self.backoff_factor와 self.min_scale을 쓰고, "
                              "clean_steps를 0으로 되돌리세요",
    "point.7.1.growth": "깨끗한 스텝이 연달아 growth_interval번이면 스케일에 growth_factor를 "
                        "곱하고, 키운 뒤와 오버플로 뒤에는 세기를 처음부터 다시 합니다",
    "point.7.1.growth.hint": "깨끗한 스텝을 self.clean_steps에 세고, self.growth_interval에 "
                             "닿으면 self.growth_factor를 곱한 뒤 0으로 되돌리세요; "
                             "오버플로도 0으로 되돌립니다",
    "point.7.1.zero_skip": "학습에서 (ZeRO-2, float16) 건너뛴 스텝은 모든 랭크의 모든 가중치를 "
                           "비트 단위로 그대로 둡니다",
    "point.7.1.zero_skip.hint": "어느 랭크든 오버플로가 나면 update()가 모든 랭크에서 True를 "
                                "돌려주어야 어떤 랭크도 스텝을 밟지 않습니다",
    "mp.flag_calls": "랭크 {rank}: update {steps}번이 집합 통신 {count}번을 했습니다 ({got}); "
                     "그룹 {group} 위의 all_reduce {steps}번이어야 합니다",
    "mp.flag_bytes": "플래그 올리듀스가 {nbytes}바이트를 옮겼습니다: 숫자 하나면 됩니다",
    "mp.skip_step": "랭크 {rank} (그룹 {group}), 스텝 {step}: 건너뜀 {got}, 기댓값 {want}",
    "mp.backoff_wrong": "스텝 {step}의 오버플로 뒤 (스케일 {before}) 스케일이 {got}입니다, "
                        "{settings}에서 기댓값은 {want}",
    "mp.scale_wrong": "스텝 {step}: 스케일 {got}, {settings}에서 기댓값 {want}",
    "mp.zero_skip_wrong": "랭크 {rank}: float16 ZeRO-2, 스텝 1에 한 랭크에 inf: 스텝별 건너뜀 "
                          "{got} (기댓값 [False, True, False, False]); 스텝 1에서 가중치 "
                          "그대로: {unchanged}",
    "mp.zero_scales": "float16 ZeRO-2: 스텝별 손실 스케일 {got}, 기댓값 "
                      "[256.0, 256.0, 128.0, 128.0]",
}
