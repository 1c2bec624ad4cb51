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
    "point.1.1.batched": "배치가 있으면 전치는 마지막 두 축만 바꾸고, 브로드캐스트로 늘어난 배치 "
                         "축은 두 기울기 모두에서 합쳐 없앱니다 (unbroadcast)",
    "point.1.1.batched.hint": "모든 축을 뒤집는 .T가 아니라 xp.swapaxes(a2, -1, -2); 그다음 "
                              "unbroadcast(..., x2.shape)와 unbroadcast(..., a2.shape)",
    "point.1.1.vectors": "벡터(1차원) X나 A는 1차원 기울기를 돌려받습니다: 계산에 쓴 행렬 x2, "
                         "a2가 아니라 x.shape과 a.shape",
    "point.1.1.vectors.hint": "마지막에 각 결과를 x.shape과 a.shape으로 reshape 하세요",
    "point.1.1.needed": "필요한 기울기만 계산합니다: ctx.needs_input_grad가 False인 입력에는 "
                        "None",
    "point.1.1.needed.hint": "gx는 ctx.needs_input_grad[0]일 때만, ga는 "
                             "ctx.needs_input_grad[1]일 때만 계산하고 나머지는 None으로 두세요",
    "point.1.2.chain": "dL/dx = dL/dz * z: grad_out에 순전파가 저장한 출력을 곱합니다. 1만이 "
                       "아닌 어떤 grad_out이든",
    "point.1.2.chain.hint": "return grad_out * ctx.saved[0]",
    "point.1.2.float32": "float32 입력은 같은 값의 float32 기울기를 받습니다",
    "point.1.2.float32.hint": "grad_out과 ctx.saved[0]만으로 계산하세요: float64 배열도 "
                              "형 변환도 없이",
    "point.1.2.no_overwrite": "역전파는 새 배열을 반환하고 grad_out과 저장된 출력을 그대로 "
                              "둡니다 (저장된 z가 곧 순전파의 결과입니다)",
    "point.1.2.no_overwrite.hint": "grad_out이나 ctx.saved[0]에 *=, +=, out=을 쓰지 마세요: "
                                   "return grad_out * ctx.saved[0]",
    "point.1.3.derivative": "dL/dx = dL/dz * (1 - z^2)이며, z = tanh(x)는 순전파가 저장한 "
                            "출력입니다",
    "point.1.3.derivative.hint": "z = ctx.saved[0]; return grad_out * (1 - z ** 2)",
    "point.1.3.float32": "float32 입력은 같은 값의 float32 기울기를 받습니다",
    "point.1.3.float32.hint": "xp.ones(shape)는 float64입니다: z의 자료형을 지키는 "
                              "1 - z ** 2를 쓰세요",
    "point.1.3.no_overwrite": "역전파는 새 배열을 반환하고 grad_out과 저장된 출력을 그대로 "
                              "둡니다 (저장된 z가 곧 순전파의 결과입니다)",
    "point.1.3.no_overwrite.hint": "grad_out이나 ctx.saved[0]에 *=, +=, out=을 쓰지 마세요: "
                                   "1 - z ** 2를 새 배열로 만드세요",
    "point.1.4.route": "z = max x의 기울기는 최댓값이었던 원소로 grad_out을 곱해 가고, 나머지 "
                       "원소는 0을 받습니다",
    "point.1.4.route.hint": "저장된 가중치 ctx.saved[0]에, 줄어든 축을 되살린 grad_out을 "
                            "곱하세요",
    "point.1.4.ties": "k개의 원소가 최댓값으로 동률이면 각각 기울기의 1/k을 받습니다",
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
    "point.1.5.mixed.hint": "앞쪽 축과 늘어난 축을 모두 합치세요; 앞쪽 축이 없어진 뒤에는 "
                            "shape의 축 i가 grad의 축 i입니다",
    "point.1.5.float32": "float32 기울기는 float32 결과로 합쳐집니다",
    "point.1.5.float32.hint": "grad 자신의 자료형으로 합치세요 (dtype=xp.float64도, 더해 넣을 "
                              "float64 zeros도 없이)",
    "point.1.6.spread": "dL/dx_i는 x_i가 더해진 출력 원소의 dL/dz입니다: grad_out을 x의 모양으로 "
                        "다시 펼칩니다",
    "point.1.6.spread.hint": "grad_out에 줄어든 축을 되살린 뒤 x의 모양으로 브로드캐스트 "
                             "하세요: _expand_reduced(grad_out, *ctx.args)",
    "point.1.6.axes": "모든 axis (None, 정수, 음수, 튜플)는 keepdims와 상관없이 x의 모양을 "
                      "주며, 각 원소는 자기 출력 원소에서 옵니다",
    "point.1.6.axes.hint": "없어진 축을 (모두, keepdims가 False일 때만) 되살린 뒤 "
                           "xp.broadcast_to(grad, shape)",
    "point.1.6.float32": "float32 입력은 float32 기울기를 받습니다",
    "point.1.6.float32.hint": "grad_out 자체를 브로드캐스트 하세요: xp.ones(shape) * grad는 "
                              "float64입니다",
    "ad.case_count": "확인 코드가 경우 {got}개를 기록했습니다, 기댓값 {want}개",
    "ad.raised": "{case}: 여러분의 역전파(backward)에서 {error} 발생",
    "ad.count": "{case}: 여러분의 역전파가 기울기 {got}개를 반환했습니다, 기댓값 {want}개",
    "ad.none": "{case}: {name}이(가) None입니다. 그 입력에는 기울기가 필요합니다",
    "ad.dtype": "{what}: 자료형 {got}, 기댓값 {want} (입력의 자료형)",
    "ad.not_needed": "{case}: {name}을(를) 계산했지만, ctx.needs_input_grad에 따르면 그 입력에는 "
                     "기울기가 필요 없습니다 (None을 반환하세요)",
    "ad.grad_out_changed": "{case}: 여러분의 역전파 뒤에 grad_out의 값이 바뀌었습니다: "
                           "제자리에서(in place) 바뀐 것입니다",
    "ad.saved_changed": "{case}: 여러분의 역전파 뒤에 저장된 출력(순전파의 결과)의 값이 "
                        "바뀌었습니다: 제자리에서(in place) 바뀐 것입니다",
    # 2.x and 6.1 schedules (exercise_checks/schedules.py)
    # 3.x tensor parallel (exercise_checks/tensor_parallel.py)
    # 6.2 sequence parallel (exercise_checks/sequence_parallel.py)
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
