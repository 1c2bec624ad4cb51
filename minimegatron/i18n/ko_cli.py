"""명령줄의 한국어 텍스트: argparse 자체의 말, 각 명령의 설명, 옵션 도움말, 사용법 오류,
exercises 명령의 출력 (commands/*.py). 키와 {필드}는 en_cli.py와 같습니다.

강의 노트처럼 기술 용어(rank, all-reduce, pipeline, micro-batch, gradient, ZeRO, GPipe,
bubble ...)는 영어 그대로 한국어 문장 안에 씁니다. 도움말은 argparse가 한 번 더
포맷하므로 퍼센트 기호는 %%로 씁니다.
"""

MESSAGES = {
    # argparse 자체의 말 (commands/parser.py)
    "argparse.usage": "사용법: ",
    "argparse.options": "옵션",
    "argparse.positionals": "위치 인자",
    "argparse.help": "이 도움말을 보여 주고 끝냅니다",
    "argparse.error": "%(prog)s: 오류: %(message)s\n",
    "argparse.required": "다음 인자가 필요합니다: %s",
    "argparse.unrecognized": "알 수 없는 인자: %s",
    "cli.did_you_mean": ". 혹시 {options}을 뜻했나요?",
    "argparse.argument": "인자 %(argument_name)s: %(message)s",
    "argparse.choice": "잘못된 선택 %(value)r (다음 중에서 고르세요: %(choices)s)",
    "argparse.invalid": "잘못된 %(type)s 값: %(value)r",
    "argparse.one": "값 하나가 필요합니다",
    "argparse.at_least_one": "값이 하나 이상 필요합니다",
    "argparse.at_most_one": "값은 하나까지만 줄 수 있습니다",
    "argparse.n1": "값 %s개가 필요합니다",
    "argparse.n": "값 %s개가 필요합니다",
    "argparse.ambiguous": "모호한 옵션 %(option)s: 다음 중 어느 것인지 알 수 없습니다: "
                          "%(matches)s",
    "argparse.one_of": "다음 인자 중 하나가 필요합니다: %s",
    "argparse.not_allowed": "인자 %s과 함께 쓸 수 없습니다",
    "argparse.ignored": "명시한 값 %r은 무시됩니다",
    "argparse.unknown_parser": "알 수 없는 동작 %(parser_name)r (선택: %(choices)s)",
    "argparse.cannot_open": "'%(filename)s'을 열 수 없습니다: %(error)s",
    # commands/entry.py: a usage error, one line
    "cli.error": "오류: {message}",
    # commands/argtypes.py
    "cli.type.must_be": "{what}여야 합니다, 받은 값 {value}",
    "cli.type.positive_int": "양의 정수",
    "cli.type.nonnegative_int": "0 이상의 정수",
    "cli.type.int_at_least": "{lo} 이상의 정수",
    "cli.type.int_between": "{lo}부터 {hi}까지의 정수",
    "cli.type.positive_float": "유한한 양수",
    "cli.type.nonnegative_float": "0 이상의 유한한 수",
    "cli.type.no_file": "파일이 없습니다: {path}",
    "cli.type.is_dir": "{path}은 폴더입니다, 파일 경로를 주세요",
    "cli.type.no_dir": "{path}의 폴더가 없습니다",
    # commands/cli.py
    "cli.usage": "사용법: minimegatron COMMAND [args]",
    "cli.commands": "명령:",
    "cli.unknown": "minimegatron: 알 수 없는 명령 {name}",
    "cli.run": "스크립트(또는 'verify')를 N개 MPI rank에서 실행",
    "cli.verify": "모든 병렬 방식을 프로세스 하나와 비교해 검사",
    "cli.memory": "parameter, 메모리, FLOPs와 scaling 모델",
    "cli.calibrate": "이 컴퓨터의 GEMM 속도와 MPI 속도를 측정",
    "cli.timeline": "pipeline schedule이나 추적한 실행을 그림으로",
    "cli.exercises": "패키지의 학생용 사본 만들기",
    "cli.grade": "학생 사본 채점",
    "cli.sample": "checkpoint를 읽어 GPT가 글을 쓰게 하기",
    "cli.start": "병렬 실행 시작: minimegatron run -n N SCRIPT.py (명령도 됩니다. 예: "
                 "minimegatron run -n 8 verify)",
    # run.py
    "cli.run.description": "스크립트(또는 minimegatron 명령)를 N개 MPI rank에서 실행합니다: "
                           "minimegatron run -n N script.py [args]",
    "cli.run.np": "rank 수",
    "cli.run.timeout": "S초가 지나면 각 rank가 기다리는 곳을 알리고 (HANG) 작업을 끝냅니다",
    "cli.run.target": "script.py, 또는 verify 같은 minimegatron 명령",
    "cli.run.args": "스크립트나 명령에 넘길 인자",
    "cli.run.alternative": "이 런처 없이: mpirun -n N python3 script.py (MPI 그대로: "
                           "--timeout이 없고, 작업을 끝낸 rank를 알려 주지 않습니다)",
    "cli.run.no_script": "스크립트가 없습니다: {path}",
    "cli.run.no_command": "그런 script나 명령이 없습니다: {name!r} (script는 .py로 끝납니다. "
                          "명령: {commands})",
    "cli.run.did_you_mean": ". 혹시 {name!r}을 뜻했나요?",
    "cli.run.too_many": "-n {n}: 이 machine은 rank를 최대 {most}개까지 감당합니다 (core "
                        "{cores}개 x {per_core}, 사용 가능한 memory {memory} MB / rank당 "
                        "{rank_mb} MB, open file {files}개 / rank당 {per_rank}개), 그래도 "
                        "띄우려면 {env}={n}을 설정하세요",
    "cli.run.over_override": "-n {n}: {env}={most}가 허용하는 것보다 많습니다. 띄우려면 그 "
                             "값을 올리세요",
    "cli.run.bad_max": "{env}는 양의 정수여야 합니다, 받은 값 {value}",
    "cli.run.beside": "minimegatron run: rank들은 {path}를 import합니다 (스크립트 옆의 것)",
    "cli.run.error": "minimegatron run: 오류: {message}",
    # verify.py
    "cli.verify.description": "모든 병렬 방식을 프로세스 하나와 비교해 검사합니다. N개 rank에서 "
                              "실행: minimegatron run -n N verify",
    "cli.verify.schemes": "{schemes} 중에서 쉼표로 고른 목록 (기본값: 전부)",
    "cli.verify.dtype": "모델과 프로세스 하나짜리 기준의 부동소수점 형식 (기본값 float64)",
    "cli.verify.precision": "mixed: float16 모델, float32 master weight, loss scale, SGD "
                            "(= --dtype float16; docs/verification.md)",
    "cli.verify.no_cupy": "--backend cupy에는 CuPy와 GPU가 필요합니다: pip install "
                          "'minimegatron[gpu-cuda12]' (CUDA 13이면 [gpu-cuda13], CUDA에 맞춰 "
                          "미리 빌드한 wheel)",
    "cli.verify.backend": "배열 백엔드: numpy, 또는 GPU의 cupy (기본값: MINIMEGATRON_BACKEND, "
                          "없으면 numpy)",
    "cli.verify.steps": "행마다 AdamW 단계 수 (기본값 2)",
    "cli.verify.matrix": "조합표를 찍고 끝냅니다 (axes x features: PASS, 또는 거절과 그 "
                         "이유). rank 수가 4의 배수이면 들어맞는 칸마다 학습합니다",
    "cli.verify.unknown": "알 수 없는 방식 {unknown}, 다음 중에서 고르세요: {schemes}",
    "cli.verify.header": "minimegatron verify: rank {n}개, {dtype}, 행마다 {rule} {steps}단계, "
                         "방식 {schemes}",
    "cli.verify.no_grid": "이 방식들의 격자 중 rank {n}개에 맞는 것이 없습니다: 3D는 1보다 큰 "
                          "축이 둘 필요하므로 rank가 적어도 4개 필요합니다",
    "cli.verify.one_rank": "rank 하나: 병렬로 실행된 것이 없습니다. 위의 각 행은 프로세스 하나를 "
                           "자기 자신과 비교한 것입니다. N개 rank에서 실행하세요: minimegatron "
                           "run -n 8 verify",
    # checks/verify.py: minimegatron verify의 진행 줄과 표
    "cli.verify.progress": "loss {loss:>8}  gradient {grad:>8}  weight {weight:>8}",
    "cli.verify.skip.no_grid": "rank {n}개에 맞는 격자가 없습니다: {rule}이 필요합니다",
    "cli.verify.skip.rule_3d": "1보다 큰 축이 둘인 dp x pp x tp",
    "cli.verify.skip.rule_4d": "cp > 1이고 tp나 pp > 1인 dp x pp x tp x cp",
    "cli.verify.skip.rule_moe3d": "dp > 1이고 tp나 pp > 1인 dp x pp x tp",
    "cli.verify.skip.rule_other": "이 방식의 격자",
    "cli.verify.skip.sp_tp": "sequence parallelism에는 tp > 1이 필요합니다 (짝수 world)",
    "cli.verify.skip.needs_pp": "{scheme}은 pp = 2인 pipeline으로 실행됩니다 (짝수 world)",
    "cli.verify.skip.fp8": "fp8: 이 방식의 행렬 곱은 bf16으로 남습니다 (FP8_SCHEMES에 없음)",
    "cli.verify.skip.unavailable": "사용할 수 없음",
    "cli.verify.skip.hsdp": "HSDP는 2개씩 복제하므로 dp가 짝수여야 합니다: dp = {dp}",
    "cli.verify.skip.chunks": "chunk {chunks}개 x stage {pp}개: ",
    "cli.verify.head": "방식         격자 (dp x pp x tp, M)    최대|loss 차| 최대|grad 차| "
                       "최대|weight 차|    허용 오차{vs64}  상태",
    "cli.verify.summary": "행 {count}개 중 {passed}개 통과, {skipped}개 건너뜀 ({dtype}, 허용 "
                          "오차 = max({floor}, {safety} x weight를 한 ulp 움직였을 때 프로세스 "
                          "하나가 자기 자신에서 벗어나는 정도{vs64}), {failed}",
    "cli.verify.vs64": "; vs {ref} = (차이 + 프로세스 하나의 {half} 오차) / ({scale} x {reference} "
                       "실행의 최대 |값|), 1 이하면 통과",
    "cli.verify.flips": "fp8: gradient 허용 오차는 적어도 float32 실행의 최대 |gradient|의 "
                        "{flips}배입니다 (가장 큰 값의 e4m3 반올림이 한 번 뒤집히는 크기)",
    "cli.verify.failed": "실패(FAILED): {rows}",
    "cli.verify.none_failed": "실패 없음",
    "cli.verify.weak": "경고: 행 {count}개가 {limit}보다 큰 허용 오차를 필요로 했습니다: 단계가 "
                       "이만큼이면 프로세스 하나가 자기 자신에서 그만큼 벗어나므로 작은 버그가 "
                       "그 안에 숨을 수 있습니다. --steps를 줄이세요",
    "cli.verify.or_float64": " (또는 float64).",
    # memory.py
    "cli.memory.description": "GPT의 parameter, 메모리, FLOPs, 통신량을 닫힌 식으로 계산하고 "
                              "(모든 식은 docs/memory.md), scaling 모델로 단계 시간을 예측합니다",
    "cli.memory.view": "출력할 것: config (이 설정, 기본값), table1, table2, zero, scaling, "
                       "mixed 또는 moe",
    "cli.memory.layers": "L, transformer 층 수 (기본값 72)",
    "cli.memory.hidden": "h, hidden 크기 (기본값 3072)",
    "cli.memory.heads": "a, attention head 수 (기본값 32)",
    "cli.memory.vocab": "V, 어휘 크기 (기본값 51200)",
    "cli.memory.seq": "s, token 단위 sequence 길이 (기본값 1024)",
    "cli.memory.dp": "N, data parallel rank 수 (기본값 1)",
    "cli.memory.pp": "K, pipeline stage 수 (기본값 1)",
    "cli.memory.tp": "t, tensor parallel rank 수 (기본값 1)",
    "cli.memory.cp": "c, context parallel rank 수: 각 rank가 s/c token을 가집니다 (기본값 1)",
    "cli.memory.micro_batch": "b, micro-batch 하나의 sequence 수 (기본값 8)",
    "cli.memory.micro_batches": "M, 단계마다 micro-batch 수 (기본값 1)",
    "cli.memory.zero": "ZeRO 단계: 0 없음, 1 optimizer 상태, 2 여기에 gradient, 3 여기에 "
                       "weight까지 dp에 나눔 (기본값 0)",
    "cli.memory.schedule": "pipeline schedule: stage 하나가 동시에 들고 있는 micro-batch 수를 "
                           "정합니다 (기본값 1f1b; interleaved는 stage마다 chunk v = 2개)",
    "cli.memory.checkpoint": "activation checkpointing: 각 층의 입력만 두고 나머지는 다시 계산",
    "cli.memory.precision": "값 하나의 바이트: mixed (float16과 float32 master, 기본값), "
                            "float32 또는 float64",
    "cli.memory.sequence_parallel": "LayerNorm/dropout activation을 token 방향으로 tp에 나눔 "
                                    "(Table 2)",
    "cli.memory.attention": "--cp > 1일 때의 context parallel 방식 (층이 들고 있는 것)",
    "cli.memory.moe_title": "mixture of experts (MoE)",
    "cli.memory.moe_description": "view moe: 전체 parameter와 활성 parameter, ep에서 rank마다 "
                                  "expert parameter, dispatch 버퍼. 예: minimegatron memory moe "
                                  "--experts 8 --top-k 2 --ep 4 --dp 8",
    "cli.memory.experts": "E, MoE 층마다 expert 수 (기본값 8)",
    "cli.memory.top_k": "k, token마다 고르는 expert 수 (기본값 2)",
    "cli.memory.ep": "expert parallel rank 수, dp x cp 위에 겹쳐 놓음 (둘 다 나눠야 함)",
    "cli.memory.moe_every": "(i+1) %% every == 0인 블록 i에 MoE (2: 한 블록 건너 하나)",
    "cli.memory.capacity_factor": "f, expert와 sequence마다 C = ceil(k s f / E)칸, 0 = dropless "
                                  "(기본값 1)",
    "cli.memory.hardware": "minimegatron calibrate가 쓴 JSON (기본값: DGX-2H)",
    "cli.memory.cannot_read": "인자 --hardware: {path}을 읽을 수 없습니다: {error}",
    "cli.memory.heads_split": "--hidden {hidden}은 --heads {heads}로 나누어떨어져야 합니다 "
                        "(head마다 hidden/heads 차원)",
    "cli.memory.enumerated": "--schedule {schedule}은 action list에서 읽으므로 "
                             "--micro-batches {most}까지입니다 (받은 값 {micro}). gpipe와 "
                             "1f1b는 공식이라 어떤 수든 됩니다",
    "cli.memory.split": "--layers {layers}는 --pp {pp}로, --hidden {hidden}과 --heads {heads}는 "
                        "--tp {tp}로 나누어떨어져야 합니다",
    "cli.memory.cp_chunks": "--cp {cp}: --seq {seq}를 같은 크기의 조각 {parts}개로 나눌 수 "
                            "있어야 합니다",
    "cli.memory.ulysses": "--attention ulysses: tp rank 하나의 head {heads}개가 --cp {cp}로 "
                          "나누어떨어져야 합니다",
    "cli.memory.sp": "--sequence-parallel: --seq {seq} / --cp {cp}가 --tp {tp}로 "
                     "나누어떨어져야 합니다",
    "cli.memory.moe": "--ep {ep}는 --experts {experts}와 dp x cp = {dpcp}를 나눠야 하고, "
                      "--top-k {top_k} <= --experts여야 합니다",
    # calibrate.py
    "cli.calibrate.description": "이 컴퓨터의 GEMM 속도, 엔진 연산 속도, all-reduce의 지연과 "
                                 "대역폭을 재서 minimegatron memory --hardware가 읽는 JSON으로 "
                                 "씁니다 (모델: minimegatron/tools/calibrate.py)",
    "cli.calibrate.out": "JSON 경로 (''이면 출력만)",
    "cli.calibrate.ranks": "혼자 시작했을 때 집합 통신 측정에 쓸 rank 수 (기본값 2)",
    "cli.calibrate.no_mpi": "GEMM만 재고 MPI는 띄우지 않음",
    "cli.calibrate.wrote": "{path}을 썼습니다 (--hardware {path}로 읽으세요)",
    # timeline.py
    "cli.timeline.description": "pipeline schedule(시뮬레이션)이나 추적한 실행을 그립니다",
    "cli.timeline.schedule": "시뮬레이션할 pipeline schedule (기본값 gpipe)",
    "cli.timeline.stages": "K, pipeline stage 수 (기본값 4)",
    "cli.timeline.micro_batches": "M, 단계마다 micro-batch 수 (기본값 8)",
    "cli.timeline.chunks": "stage마다 모델 chunk 수 v (interleaved 전용, 기본값 2)",
    "cli.timeline.t_forward": "stage 하나의 forward 한 번에 걸리는 시간 (기본값 1)",
    "cli.timeline.t_backward": "stage 하나의 backward 한 번에 걸리는 시간 (기본값 1)",
    "cli.timeline.t_weight": "weight gradient 시간 T_W (zb-h1/zb-h2/zbv와 dualpipe/dualpipev는 "
                             "기본값 1, 나머지는 0; "
                             "backward 전체는 t-backward + t-weight)",
    "cli.timeline.out": "PNG 경로, ''이면 텍스트만",
    "cli.timeline.trace": "실제 실행에서 나온 span 목록 JSON, 시뮬레이션 대신 그림",
    "cli.timeline.chrome_trace": "timeline을 Chrome trace JSON(Perfetto)으로도 씀",
    "cli.timeline.bad_trace": "인자 --trace: {path}은 span 목록이 아닙니다 ({error})",
    "cli.timeline.wrote_chrome": "{path}을 썼습니다 (Chrome trace: https://ui.perfetto.dev"
                                 "에서 여세요)",
    "cli.wrote": "{path}을 썼습니다",
    # exercises.py
    "cli.exercises.description": "연습 블록을 비운 수업용 사본",
    "cli.exercises.epilog": "나눠 주기:   minimegatron exercises make class/alice     (학생마다 "
                            "사본 하나)\n"
                            "학생은 사본을 설치합니다:  pip install -e 'class/alice[mpi,plot]'\n"
                            "사본을 class/에 모은 다음 한꺼번에 채점합니다:\n"
                            "            minimegatron grade --class class/ --csv book.csv "
                            "--json book.json\n"
                            "사본은 연습 블록만 바꿀 수 있습니다. 다른 곳을 바꾸면 보고되고\n"
                            "(CHANGED) 절대 통과하지 못합니다. 강사용 안내: docs/teaching.md.",
    "cli.exercises.action": "할 일",
    "cli.exercises.list": "연습 문제와 각 문제가 있는 파일",
    "cli.exercises.order": "장마다 풀어 나가는 순서 (각 연습 문제는 따로 채점하므로 어떤 순서로 "
                           "풀어도 통과할 수 있고, 이 순서는 개념이 쌓이는 순서입니다):",
    "cli.exercises.order_page": "**{chapter}장의 순서.** {order}. {why}. 각 연습 문제는 따로 "
                                "채점하므로 어떤 순서로 풀어도 통과할 수 있고, 이 순서는 개념이 "
                                "쌓이는 순서입니다.",
    "cli.exercises.make": "DIR에 학생용 사본을 씁니다",
    "cli.exercises.make_dir": "새 사본의 폴더",
    "cli.exercises.force": "비어 있지 않은 DIR에도 씁니다 (그 안의 minimegatron/은 바뀝니다)",
    "cli.exercises.solve": "사본에 모범 답안을 다시 넣습니다",
    "cli.exercises.solve_dir": "사본의 폴더",
    "cli.exercises.ids": "문제 번호, 묶음, 또는 all",
    "cli.exercises.not_marked": "(이 패키지에는 표시되어 있지 않음)",
    "cli.exercises.next_student": "다음 (학생): cd {path} && python3 -m venv .venv && . "
                                  ".venv/bin/activate && python3 -m pip install -e "
                                  "\".[mpi,plot]\"   (나머지는 사본의 README.ko.md에)",
    "cli.exercises.next_teacher": "다음 (강사): minimegatron grade --path {path}   (처음에는 "
                                  "모든 문제가 TODO)",
    "cli.exercises.solved": "{path}에 {ids}의 답을 넣었습니다",
    "cli.no_exercise": "연습 문제 {spec}이 없습니다. 있는 문제: {known} (또는 3 같은 묶음 "
                       "번호, 또는 all)",
    "cli.exercises.error": "minimegatron exercises: 오류: {error}",
    "cli.exercises.refuse": "{path}에는 사본을 쓰지 않습니다: 새 폴더를 고르세요 (예: "
                            "class/student1)",
    "cli.exercises.is_file": "{path}은 파일입니다: 새 폴더를 고르세요",
    "cli.exercises.not_empty": "{path}이 비어 있지 않습니다 (항목 {n}개): 새 폴더를 고르거나, "
                               "그 안의 파일 위에 쓰려면 --force를 붙이세요",
    "cli.exercises.source_copy": "{path}은 그 자체가 학생용 사본입니다 (연습 문제 {ids}이 "
                                 "비어 있음): 모범 답안이 든 패키지에서 사본을 만드세요",
    "cli.exercises.no_such": "{path}에 연습 문제 {id}이 없습니다. 있는 문제: {known}",
    "cli.exercises.no_solution": "{path}은 학생용 사본이라 {id}의 답이 없습니다",
    # grade.py
    "cli.grade.description": "학생 사본을 문제마다 검사합니다 (--class: 한 반의 모든 사본을 "
                             "성적부로)",
    "cli.grade.epilog": "학생, 사본 폴더에서:          minimegatron grade 3.2\n"
                        "강사, 사본 하나:              minimegatron grade --path class/alice\n"
                        "강사, 반 전체:                minimegatron grade --class class/ "
                        "--csv book.csv \\\n"
                        "                                                  --json book.json\n"
                        "각 칸은 PASS, FAIL (놓친 수업의 요점과 힌트), TODO, HANG,\n"
                        "ERROR, CHANGED (연습 블록 밖의 파일이 나눠 준 것과 다름: 절대\n"
                        "PASS 아님), TIMEOUT (바쁜 기계: 다시 채점) 또는 SUSPECT (블록이 open, os,\n"
                        "trace의 스위치 등을 씀: 실행하지 않음, 절대 PASS 아님, 그 줄을 보여 줌)입니다.\n"
                        "각 문제가 검사하는 것: "
                        "exercises/<id>.md, docs/teaching.md.",
    "cli.grade.exercise": "문제 번호 (3.2), 묶음 (3), 목록 (1.1,3) 또는 all (기본값)",
    "cli.grade.path": "사본의 minimegatron/이 있는 폴더",
    "cli.grade.timeout": "검사 하나가 끝나지 않고 돌 수 있는 초 (기본값 60)",
    "cli.grade.class_title": "반 전체",
    "cli.grade.class": "DIR 아래 학생 폴더를 모두 채점 (폴더마다 사본 하나)",
    "cli.grade.csv": "성적부를 CSV로 씀",
    "cli.grade.json": "성적부를 JSON으로 씀",
    "cli.grade.jobs": "동시에 채점할 사본 수 (기본값: 코어 수 / 4)",
    "cli.grade.student_timeout": "사본 하나에 모두 합쳐 쓸 수 있는 초 (기본값 1200)",
    "cli.grade.error": "minimegatron grade: 오류: {error}",
    # sample.py
    "cli.sample.description": "checkpoint를 읽어 GPT가 글을 쓰게 합니다",
    "cli.sample.checkpoint": "save_checkpoint가 쓴 파일 (tutorials/08_3d_parallel.py가 "
                             "--out 폴더에 하나 씁니다: out/3d_gpt.npz)",
    "cli.sample.prompt": "이어 쓸 텍스트 (기본값 'In ')",
    "cli.sample.tokens": "쓸 글자 수 (기본값 200)",
    "cli.sample.temperature": "샘플링 전에 logits를 나누는 값: 낮을수록 확신이 큽니다 "
                              "(기본값 0.8)",
    "cli.sample.top_k": "가장 그럴듯한 글자 k개만 남김 (기본값: 전부)",
    "cli.sample.not_in_vocab": "프롬프트의 글자 {char}이 어휘에 없습니다 ({chars})",
    "cli.sample.empty": "프롬프트가 비어 있습니다: 글자를 하나 이상 주세요 (--prompt)",
    "cli.sample.not_text": "checkpoint {path}: 이 GPT의 어휘는 token {vocab}개인데 함께 배포된 "
                           "말뭉치는 글자 {chars}개입니다: 텍스트로 학습한 모델이 아닙니다 "
                           "(tutorials/08_3d_parallel.py가 쓰는 out/3d_gpt.npz가 그런 "
                           "모델입니다)",
    "cli.sample.seed": "샘플링의 seed (기본값 0)",
}
