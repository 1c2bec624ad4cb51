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
