"""튜토리얼 표의 머리글과 행 이름 (tutorials/*.py). 키와 {필드}는 en_tables.py와 같습니다.

강의 노트처럼 기술 용어(loss, bubble, gradient, all-to-all, ZeRO, DataParallel, DDP ...)는
영어 그대로 둡니다. 한글은 글자 폭이 두 칸이므로, 각 칸은 영어 머리글의 칸과 같은 열에서 끝납니다
(왼쪽 정렬한 목록의 칸은 같은 열에서 시작합니다. tests/test_columns.py).
"""

MESSAGES = {
    "t01.group": "group",
    "t03.serial": "직렬 계산",
    "t03.parameters": "parameter 수",
    "t03.per_step": "단계당 all-reduce 수",
    "t07.stage": "PipelineStage({stage}/{stages}, 블록 {blocks}, parameter {params:,}개)",
    "t08.group": "group",
    "t08.head_bytes": "rank (dp,pp,tp)   params   weight B    grad B  Adam m,v B  dp 보냄 B  "
                      "pp 보냄 B  tp 보냄 B",
    "t05.head_losses": "단계       직렬  DataParallel        DDP",
    "t05.head_bytes": "rank    DP 보냄    DP 받음   DDP 보냄   DDP 받음   DP grad+optim",
    "t06.head_losses": "단계      ZeRO-0      ZeRO-1      ZeRO-2      ZeRO-3",
    "t06.head_memory": "stage               weight            gradient      "
                       "optimizer 상태                합계   gather 최대  보냄/단계  통신 모델",
    "t07.head_table": "\nschedule   M       pipeline loss         직렬 loss   |diff|     bubble: "
                      "공식      에뮬    일반  stage마다 진행 중    stage마다 최대 KiB",
    "t08.step_line": "단계 {step:3d}  loss {loss:.6f}  직렬 {serial:.6f}  |diff| {diff:.1e}"
                     "  {ms:7.1f} ms",
    "t08.head_losses": "\n단계      3D loss    직렬 loss    |diff|",
    "t10.one_process": "프로세스 하나",
    "t10.sp_row": "tp={t} + sequence 병렬",
    "t12.head_tokens": "rank  연속 분할             zigzag                   ring 블록      쌍 (연속)   "
                       "쌍 (zigzag)",
    "t12.head_variants": "방식               Y       dQ       dK       dV   보냄 (trace)      "
                         "공식",
    "t12.head_bytes": "방식               측정      계산기",
    "t12.head_steps": "단계  loss, 한 프로세스   loss, {cp} 평균   |loss 차이|   |grad 차이| "
                      "|weight 차이|",
    "t13.head_table": "schedule   bubble ms  모의 계산      표  makespan ms  모의 계산                "
                      "loss           직렬 loss   |diff|",
    "t14.head_losses": "단계   한 프로세스{ep:>14}    |diff|  expert마다 배정 수          "
                       "rank마다 행 수",
    "t14.head_tokens": "token  id  expert    남음",
    "t14.head_factor": "    계수   C        버려짐     expert가 없는 token",
    "t14.head_a2a": "all-to-all              호출    호출당 B (trace)     공식",
    "t14.head_memory": "                                측정      계산기",
    "t14.expert_params": "expert의 parameter",
    "t14.dense_params": "dense 부분의 parameter",
    "t14.dispatch_buffer": "dispatch 버퍼 (바이트)",
}
