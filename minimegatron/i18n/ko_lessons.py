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
    "point.4.1.one_per_bucket": "버킷 하나는 스텝마다 dp 그룹 위의 올리듀스(all-reduce) 한 "
                                "번이며, 평탄한 기울기 버퍼 중 자기 조각(bucket.reduce: 버퍼 "
                                "전체가 아니라 버킷의 바이트)만 보냅니다",
    "point.4.1.one_per_bucket.hint": "_launch에서 comm.iall_reduce를 한 번, self.group 위에서 "
                                     "bucket.reduce에 대해 부르세요 (버퍼 전체도, "
                                     "bucket.grads도 아닙니다)",
    "point.4.1.overlap": "올리듀스는 논블로킹입니다: _launch가 반환될 때 아직 진행 중이어서 "
                         "그동안 역전파가 계속되고, finish()가 그것을 기다립니다",
    "point.4.1.overlap.hint": "핸들을 bucket.handle에 두고 _launch 안에서 기다리지 마세요: "
                              "finish()가 기다립니다",
    "point.4.1.mean_in_place": "finish() 후 모든 p.grad는 여전히 평탄한 버퍼의 뷰이며, 그룹 "
                               "기울기들의 평균(MEAN), 즉 배치 전체에 대한 한 프로세스의 "
                               "기울기를 담습니다 (float64, float32, float16, 크기 2와 4인 그룹)",
    "point.4.1.mean_in_place.hint": "op=\"mean\"과 inplace=True: 결과는 새 배열이 아니라 "
                                    "bucket.reduce 자체에 들어가야 하며, 그룹 크기를 상수로 "
                                    "쓰지 마세요",
    "point.4.1.same_update": "그래서 모든 복제본이 같은 AdamW 스텝을 밟습니다: 매 스텝 뒤의 "
                             "손실과 가중치가 한 프로세스의 것과 같습니다",
    "point.4.1.same_update.hint": "모든 랭크는 역전파를 마칠 때 모델의 자료형으로 같은 "
                                  "평균 p.grad를 가져야 합니다: 위의 항목을 보세요",
    "point.5.1.reduce_scatter": "기울기는 스텝마다 dp 그룹 위에서, 패딩한 평탄한 기울기의 "
                                "리듀스 스캐터(reduce-scatter) 한 번으로 오갑니다 (두 배의 "
                                "바이트를 보내는 올리듀스가 아닙니다)",
    "point.5.1.reduce_scatter.hint": "comm.reduce_scatter(flat.flat_grads(), self.group, "
                                     "op=\"mean\")를 한 번",
    "point.5.1.own_slice": "self.grad_shard는 배치 전체에 대한 한 프로세스의 평균(MEAN) "
                           "기울기 중 이 랭크의 조각 r입니다 (패딩한 평탄한 버퍼의 순서)",
    "point.5.1.own_slice.hint": "self.group 위에서 op=\"mean\"; 랭크 r은 패딩한 평탄한 기울기의 "
                                "r번째 조각만 가집니다",
    "point.5.1.freed": "그다음 모든 전체 p.grad를 해제(None)하고, 기울기는 조각의 바이트만 "
                       "차지합니다: 이것이 2단계가 아끼는 메모리입니다",
    "point.5.1.freed.hint": "flat.params의 모든 p에 p.grad = None을 하고, self.grad_shard에 전체 "
                            "크기 기울기 버퍼의 뷰를 남기지 마세요",
    "point.5.2.own_update": "옵티마이저의 규칙은 스텝마다 한 번, 이 랭크의 조각에만 적용됩니다: "
                            "update(self.shard, self.grad_shard, flat.state, "
                            "self.step_count), 그 옵티마이저 상태(AdamW의 m과 v)는 조각 크기",
    "point.5.2.own_update.hint": "self.optimizer.update를 한 번, self.shard 자체에 (복사본도, "
                                 "전체 가중치도 아니라) flat.state, self.step_count와 함께 "
                                 "부르세요",
    "point.5.2.all_gather": "갱신한 조각은 스텝마다 dp 그룹 위의 올개더(all-gather) 한 번으로 "
                            "오가며, 이 랭크의 조각만 보냅니다 (0으로 채운 전체 버퍼의 "
                            "올리듀스가 아닙니다: 두 배의 바이트)",
    "point.5.2.all_gather.hint": "full = comm.all_gather(self.shard, self.group)를 한 번",
    "point.5.2.weights": "매 스텝 뒤 모든 랭크는 한 프로세스의 전체 가중치를 가집니다 (ZeRO "
                         "1, 2단계, float64와 float32, 크기 2와 4인 그룹)",
    "point.5.2.weights.hint": "먼저 self.shard를 업데이트하고, 그렇게 갱신한 조각을 모델의 "
                              "자료형 그대로 full로 올개더하세요",
    "dp.raised": "랭크 {rank}, 그룹 {group}에서 {run}: 여러분의 코드가 {error}을(를) "
                 "일으켰습니다",
    "dp.missing": "랭크 {rank}, {run}, 스텝 {step}: {what}이(가) 없습니다 (None)",
    "dp.shape": "랭크 {rank}, {run}, 스텝 {step}: {what}의 모양이 {got}, 기댓값 {want}",
    "dp.dtype": "랭크 {rank}, {run}, 스텝 {step}: {what}의 자료형이 {got}, 기댓값 {want}",
    "dp.differs": "랭크 {rank}, {run}, 스텝 {step}: {what}이(가) 한 프로세스와 최대 {diff:.3g}"
                  " 다릅니다 (허용 오차 {tol:.0e}); 인덱스 {index}에서 값 {got:.6g}, 기댓값 "
                  "{want:.6g} (전체적으로 값 / 기댓값 ~ {ratio:.3g})",
    "dp.loss_differs": "그룹 {group}에서 {run}, 스텝 {step}: 평균 손실 {got:.10g}, 한 프로세스 "
                       "{want:.10g} (허용 오차 {tol:.0e})",
    "dp.bucket_calls": "랭크 {rank}, {run}, 스텝 {step}: 버킷들이 {got}을(를) 했습니다; "
                       "기댓값은 그룹 {group} 위의 all_reduce {count}번, 버킷마다 한 번, "
                       "{want} 바이트",
    "dp.not_in_flight": "랭크 {rank}, {run}, 스텝 {step}: 버킷 올리듀스 {count}개 중 {done}개가 "
                        "_launch가 반환될 때 이미 끝나 있었습니다 (기다렸습니다)",
    "dp.grad_copies": "랭크 {rank}, {run}: finish() 후 {names}의 p.grad가 평탄한 기울기 버퍼의 "
                      "뷰가 아닙니다 (복사본)",
    "dp.grad_calls": "랭크 {rank}, {run}, 스텝 {step}: reduce_gradients가 {got}을(를) "
                     "했습니다; 기댓값은 그룹 {group} 위의 reduce_scatter 한 번, {nbytes} 바이트",
    "dp.grad_shard": "self.grad_shard (패딩한 값 {padded}개 중 {start} .. {end})",
    "dp.grads_alive": "랭크 {rank}, {run}, 스텝 {step}: reduce_gradients 뒤에도 p.grad "
                      "{count}개가 남아 있습니다 ({names} ...)",
    "dp.grad_memory": "랭크 {rank}, {run}, 스텝 {step}: reduce_gradients 뒤 기울기가 {got} "
                      "바이트를 차지합니다; 조각만이면 {want} 바이트 (뷰는 버퍼 전체를 살려 "
                      "둡니다)",
    "dp.update_count": "랭크 {rank}, {run}, 스텝 {step}: self.optimizer.update가 {count}번 "
                       "실행되었습니다; 기댓값은 한 번",
    "dp.update_args": "랭크 {rank}, {run}, 스텝 {step}: update의 param이 self.shard인가 "
                      "{param} (모양 {shape}, 기댓값 [{length}]), grad가 self.grad_shard인가 "
                      "{grad}, state가 flat.state인가 {state}, step {got} (기댓값 {want})",
    "dp.state_shape": "랭크 {rank}, {run}: 옵티마이저 상태의 모양이 {got}; 기댓값은 각각 "
                      "[{length}] (이 랭크의 조각)",
    "dp.gather_calls": "랭크 {rank}, {run}, 스텝 {step}: 업데이트가 {got}을(를) 했습니다; "
                       "기댓값은 그룹 {group} 위의 all_gather 한 번, {nbytes} 바이트",
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
