"""책(book)의 오류 메시지, 한국어: 키와 {필드}는 en_errors.py와 같습니다.

필드에는 영어 메시지에서 잘라 낸 글자가 그대로 들어갑니다 (식별자, 숫자, 'zb-h1' 같은 이름).
강의 노트처럼 기술 용어(rank, tp, micro-batch, stage, token, gradient, dtype, shape ...)는
영어 그대로 둡니다 (docs/glossary.ko.md).
"""

MESSAGES = {
    # the grid and the splits (parallel/)
    "grid.size": "grid 크기 {name}={value}은 1 이상의 정수여야 합니다 (받은 값 {sizes})",
    "grid.world": "grid {product} = rank {ranks}개인데 job의 rank는 {world}개입니다. 곱이 "
                  "{world}인 크기를 고르세요",
    "split.batch": "{name}의 row {rows}개가 group {group}의 rank {size}개에 똑같이 나뉘지 "
                   "않습니다: {size}로 나누어떨어지는 batch 크기를 쓰세요",
    "tp.divisible": "tensor parallel: {what}={value}이 tp={tp}로 나누어떨어지지 "
                    "않습니다{hint}",
    "tp.pad_vocab": " (pad_vocab=False; pad_vocab=True면 vocabulary를 tp의 배수로 채웁니다)",
    "tp.linear": "{kind}ParallelLinear: {split}={value}이 tp={tp}로 나누어떨어지지 "
                 "않습니다",
    "tp.linear_weight": "{kind}ParallelLinear: master_weight의 shape이 {shape}입니다. "
                        "(in_features, out_features) = ({rows}, {cols})이어야 합니다",
    "tp.vocab": "VocabParallelEmbedding: num_embeddings={vocab}이 tp={tp}로 "
                "나누어떨어지지 않습니다 (vocabulary를 채우세요: pad)",
    "tp.shards": "길이 {width}인 축 {axis}이 tp={tp}로 나누어떨어지지 않습니다",
    "tp.last_axis": "마지막 축 {width}을 tp rank {size}개에 나눌 수 없습니다",
    "sp.tokens": "sequence parallel: token {steps}개인 sequence가 tp={tp} rank에 나뉘지 "
                 "않습니다. {tp}로 나누어떨어지는 길이를 쓰세요",
    "cp.tokens": "context parallel: token {steps}개인 sequence가 같은 크기의 chunk {parts}개로 "
                 "나뉘지 않습니다 ({split} 분할, cp={cp} rank). {parts}로 나누어떨어지는 "
                 "길이를 쓰세요",
    "cp.attention": "context parallel: attention은 {valid} 중 하나여야 합니다, 받은 값 {got}",
    "cp.dropout": "context parallel: dropout={p}은 지원하지 않습니다 (mask가 token을 "
                  "따라가야 합니다), dropout=0을 쓰세요",
    "cp.ulysses_heads": "Ulysses: head {heads}개가 cp={cp} rank에 나뉘지 않습니다. {cp}로 "
                        "나누어떨어지는 head 수를 쓰세요 (또는 ring / all-gather attention)",
    "cp.ulysses_tp_heads": "Ulysses: tp rank 하나의 head {heads}개 (head {all_heads}개 / "
                           "tp={tp})가 cp={cp} rank에 나뉘지 않습니다. tp나 cp rank를 줄이세요 "
                           "(또는 ring / all-gather attention)",
    "ep.grid": "expert parallel: ep={ep}이 grid에 맞지 않습니다: expert는 같은 dense "
               "weight를 가진 dp x cp = {dp} x {cp} = {ranks}개 rank에 걸쳐 접히므로, ep는 "
               "{ranks}를 나눠야 합니다",
    "ep.experts": "expert parallel: num_experts={experts}이 ep={ep}로 나누어떨어지지 "
                  "않습니다. ep rank마다 expert E/ep개를 가집니다",
    "moe.top_k": "MoE: top_k={top_k} > num_experts={experts}: token은 있는 expert보다 많이 "
                 "고를 수 없습니다",
    "moe.capacity": "MoE: capacity_factor는 0보다 큰 유한한 수여야 합니다 (dropless면 None), "
                    "받은 값 {value}",
    "moe.int": "MoEConfig.{name}은 1 이상의 int여야 합니다, 받은 값 {value}",
    "moe.capacity_most": "MoE: capacity_factor={value} > num_experts/top_k = {most}: {most}에서 "
                         "이미 모든 expert에 모든 token이 들어갈 자리가 있습니다 (C = T). 그 "
                         "이하를 쓰거나 dropless면 None을 쓰세요",
    "moe.clip": "MoETrainer: clip_grad는 0보다 큰 유한한 수여야 합니다 (None: clipping 안 함), "
                "받은 값 {value}",
    # the model (nn/) and the data
    "gpt.heads": "GPTConfig: d_model={d_model}이 n_head={heads}로 나누어떨어지지 않습니다",
    "gpt.positive": "GPTConfig.{name}은 {low} 이상의 int여야 합니다, 받은 값 {value}",
    "gpt.dropout": "GPTConfig.dropout은 [0, 1) 안에 있어야 합니다, 받은 값 {value}",
    "gpt.seq_len": "token {steps}개인 sequence인데 seq_len은 {seq_len}입니다",
    "ids.vocab": "{what} {bad}이 vocabulary [0, {size}) 밖에 있습니다",
    "loss.empty": "loss가 target을 하나도 받지 못했습니다 (빈 batch): batch와 seq_len은 "
                  "1 이상이어야 합니다",
    "data.batch": "batch에는 batch_size >= 1, seq_len >= 1이 필요합니다, 받은 값 "
                  "batch_size={batch}, seq_len={seq_len}",
    "state.missing": "load_state_dict: 빠진 것 {missing}, 예상하지 못한 것 {unexpected}",
    "state.shape": "load_state_dict: {name}의 shape이 {shape}인데, 모델은 {expected}을 "
                   "기대합니다",
    "generate.idx": "generate: idx는 B, T >= 1인 token id의 (B, T) 배열이어야 합니다, 받은 "
                    "값: shape {shape}의 {dtype}",
    "generate.temperature": "generate: temperature는 0보다 커야 합니다, 받은 값 {value}",
    "generate.top_k": "generate: top_k는 None이거나 1 이상의 int여야 합니다, 받은 값 {value}",
    "generate.max_new": "generate: max_new_tokens는 0 이상의 int여야 합니다, 받은 값 {value}",
    # the engine (autodiff/) and the backend
    "matmul.shapes": "matmul: shape {first}와 {second}가 맞지 않습니다 (첫째의 마지막 축이 "
                     "둘째의 끝에서 두 번째 축과 같아야 합니다)",
    "dropout.rng": "p > 0인 dropout에는 seed를 준 rng가 필요합니다 (backend.host_rng)",
    "backend.unknown": "모르는 backend {name}, {valid} 중 하나를 고르세요",
    "recompute.tensor": "recompute(fn, ...): fn은 Tensor 하나를 돌려줘야 합니다",
    # optimizers, mixed precision, data parallel
    "optim.interval": "{name}은 {interval} 안의 유한한 수여야 합니다, 받은 값 {value}",
    "optim.empty": "optimizer가 빈 parameter 목록을 받았습니다",
    "optim.betas": "betas는 쌍 (beta1, beta2)이어야 합니다, 받은 값 {value}",
    "optim.state_count": "optimizer state는 parameter {saved}개의 것인데, 이 optimizer의 "
                         "parameter는 {params}개입니다",
    "scaler.number": "{name}은 {low} 이상의 유한한 수여야 합니다, 받은 값 {value}",
    "scaler.backoff": "backoff_factor는 (0, 1) 안에 있어야 합니다, 받은 값 {value}",
    "scaler.interval": "growth_interval은 1 이상의 int여야 합니다, 받은 값 {value}",
    "mixed.wraps": "MixedPrecisionOptimizer는 Optimizer (SGD, AdamW)를 감쌉니다",
    "ddp.empty": "DistributedDataParallel: module에 학습할 parameter가 없습니다",
    "ddp.dtypes": "DistributedDataParallel: parameter들의 dtype이 서로 다릅니다 {dtypes}. "
                  "flat gradient buffer 하나는 dtype 하나를 담습니다",
    "ddp.reduce_dtype": "reduce_dtype은 None, 'float16', 'float32' 중 하나여야 합니다, "
                        "받은 값 {value}",
    "ddp.bucket": "bucket_bytes는 양의 int여야 합니다, 받은 값 {value}",
    "zero.stage": "ZeRO stage는 1, 2, 3 중 하나여야 합니다, 받은 값 {stage} (stage 0은 "
                  "그냥 DistributedDataParallel)",
    "zero.optimizer": "ZeRO에는 optimizer=Optimizer (예: AdamW(...))가 필요합니다: 그 update "
                      "규칙을 rank마다 자기 조각에 적용합니다",
    "fsdp.zero": "FSDP2는 모든 weight와 그 gradient, optimizer state를 shard합니다 (ZeRO-3의 "
                 "자리). zero_stage={stage}을 대신하므로 한 run의 sharding은 하나입니다",
    "fsdp.pipeline": "여기서는 FSDP2를 pipeline과 함께 쓰지 않습니다. unit마다의 all-gather와 "
                     "reduce-scatter가 schedule 안에서 micro-batch마다 한 번씩 실행되기 "
                     "때문입니다 (ZeRO-3처럼). pp는 1이어야 합니다",
    # pipelines: schedules, stages, the engine, 3D
    "schedule.unknown": "모르는 schedule {name}, 쓸 수 있는 것: {valid}",
    "schedule.sizes": "num_stages >= 1, num_micro_batches >= 1, 0 <= stage < num_stages여야 "
                      "합니다. 받은 값 num_stages={stages}, num_micro_batches={micro}, "
                      "stage={stage}",
    "schedule.interleaved": "interleaved schedule에는 micro-batch 수가 pipeline stage 수의 "
                            "배수여야 합니다: M={micro}, K={stages}",
    "schedule.chunks": "schedule {name}은 stage마다 model chunk {chunks}개를 돌립니다. "
                       "num_chunks={asked}는 'interleaved'만 받습니다",
    "schedule.num_chunks": "num_chunks는 1 이상의 int여야 합니다, 받은 값 {value}",
    "schedule.warm_up": "schedule {name}에는 stage {stages}개에 micro-batch가 적어도 "
                        "{least}개 필요합니다 (첫 stage의 warm-up). 받은 값 {micro}",
    "schedule.dualpipe": "schedule {name}에는 짝수 개의 stage와, stage 수의 두 배 이상인 "
                         "짝수 개의 micro-batch가 필요합니다 (절반은 아래로, 절반은 위로 "
                         "갑니다): 받은 값 stage {stages}개, micro-batch {micro}개",
    "schedule.dualpipev": "schedule {name}에는 stage {stages}개에 micro-batch가 적어도 "
                          "{least}개 필요합니다 (stage 수의 두 배: V의 chunk 2P개). 받은 값 "
                          "{micro}",
    "schedule.times": "step 시간은 양수여야 합니다. 받은 값 t_forward={forward}, "
                      "t_backward={backward}, t_weight={weight}",
    "schedule.t_weight": "schedule {name}은 W를 따로 돌립니다: t_weight > 0이어야 합니다, "
                         "받은 값 t_weight={weight}",
    "schedule.op": "모르는 op {op}, 쓸 수 있는 op: {valid}",
    "stage.layers": "stage {stages}개의 pipeline인데 모델의 layer는 {layers}개뿐입니다: "
                    "stage마다 layer가 적어도 하나 필요합니다",
    "stage.index": "stage {stage}이 0..{last} 안에 없습니다",
    "engine.micro": "num_micro_batches는 1 이상의 int여야 합니다, 받은 값 {value}",
    "engine.split": "sequence {batch}개인 batch가 같은 크기의 micro-batch {micro}개로 "
                    "나뉘지 않습니다",
    "engine.ends": "첫 stage에는 inputs가, 마지막 stage에는 targets가 필요합니다",
    "threed.micro": "micro_batches는 1 이상의 int여야 합니다, 받은 값 {value}",
    "threed.zero": "Trainer3D는 zero_stage 0 (DDP), 1, 2를 pipeline과 합칩니다. 받은 값 "
                   "zero_stage={value}",
    "threed.empty": "global batch에는 sequence가 적어도 1개 필요합니다, 받은 값 {batch}",
    "threed.split": "sequence {batch}개인 global batch가 dp={dp} x micro-batch {micro}개로 "
                    "나뉘지 않습니다: {parts}의 배수를 쓰세요",
    # collectives (comm/)
    "comm.op": "모르는 reduction op {op}, {valid} 중 하나를 고르세요",
    "comm.mean": "op='mean'에는 부동소수점 dtype이 필요합니다, 받은 값 {dtype}",
    "comm.inplace": "all_reduce: inplace=True와 out=은 함께 쓸 수 없습니다",
    "comm.out": "{op}: out 인자{why}",
    "comm.out_kind": "는 x와 같은 종류의 배열 ({kind})이어야 합니다, 받은 값 {got}",
    "comm.out_shape": "의 shape은 {shape}, dtype은 {dtype}입니다. 결과의 shape은 {result}, "
                      "dtype은 {result_dtype}입니다",
    "comm.out_read_only": "는 읽기 전용입니다",
    "comm.out_overlaps": "가 x와 메모리를 공유합니다 (all_reduce: inplace=True를 쓰세요)",
    "comm.peer": "{op} {direction} rank {peer}: group {group}의 rank는 0..{last}입니다 "
                 "(world rank {ranks}): peer는 주어진 group의 rank여야 합니다",
    "comm.all_to_all": "all_to_all: 길이 {length}인 축 {axis}이 같은 크기의 chunk "
                       "{size}개로 나뉘지 않습니다 ({group}의 rank마다 하나)",
    # a CollectiveMismatch: rank마다의 줄은 호출(식별자)과 호출한 곳을 그대로 둡니다
    "mismatch.collective": "group {quoted}에서 collective 불일치 ({reason}), 데이터는 옮기지 "
                           "않았습니다:\n{lines}",
    "mismatch.rank_line": "  {who} (world {world_ranks}): {site}에서 {call}",
    "mismatch.the_collective": "호출한 collective가 다릅니다",
    "mismatch.differs": "{what}이 다릅니다",
    "mismatch.root": "root {root}은 이 group (rank {size}개)의 rank가 아닙니다",
    "mismatch.rows": "row 수가 다른데 sizes가 주어지지 않았습니다",
    "mismatch.sizes_length": "sizes의 항목은 {entries}개인데 rank는 {size}개입니다",
    "mismatch.sizes_rows": "sizes {sizes}이 각 rank가 가진 row 수 {rows}와 맞지 않습니다",
    "mismatch.counts": "all_to_allv의 개수가 맞지 않습니다: {pairs}",
    "mismatch.pair": "rank {sender}은 rank {receiver}에게 row {sent}개를 보내는데, rank "
                     "{receiver}은 rank {sender}에게서 {expected}개를 기다립니다",
    "mismatch.fields": "{what}이 다음 항목에서 다릅니다: {names}. {why}",
    "mismatch.fields_all": "{what}의 항목 자체가 다릅니다. {why}",
    "mismatch.why_agreed": "같은 크기의 메시지로는 드러나지 않으므로 첫 step 전에 맞춰 봅니다",
    "mismatch.why_step": "step과 group마다 한 번 맞춰 봅니다. step의 collective는 여기서 따라 "
                         "나오므로 하나씩 검사하지 않습니다",
    "mismatch.p2p": "group {quoted}, tag {tag}에서 send/recv 불일치 (dtype이나 원소 수가 "
                    "다릅니다. 받는 rank에서만 발생):\n  {sent_line}\n  {received_line}",
    "mismatch.sent": "rank {rank}: {site}에서 {call}을 보냈습니다",
    "mismatch.receives": "rank {rank}: {site}에서 {call}으로 받습니다",
    # NaN and inf (NonFiniteError)
    "finite.step": "step {step}, {where}: {what}이 유한하지 않습니다 (NaN/inf) "
                   "(계속 학습하려면 check_finite=False를 주세요)",
    "finite.named": "{where}{at_step}: {what} {quoted}이 유한하지 않습니다 (NaN/inf){note}",
    "finite.activation": "{where}: 유한하지 않은 activation: {first} (유한하지 않은 첫 module "
                         "입력 또는 출력, weight는 모두 유한){note}",
    "finite.scale": "{where}: 최소 loss scale {scale}에서 overflow (지금까지 {skipped} step "
                    "건너뜀): 어떤 scale에서도 gradient가 유한하지 않습니다 (NaN/inf weight나 "
                    "입력, 발산한 모델), 계속하려면 at_min_scale='warn'을 주세요",
    "act.output": "{quoted}의 출력",
    "at.step": ", step {step}",
    "where.serial": "직렬 실행",
    "where.rank": "rank {rank}",
    "note.zero3": " (ZeRO-3 shard 안)",
}

# en_errors.NAMES in Korean: what the ranks agree on (the same keys and fields)
NAMES = {
    "name.training_plan": "학습 계획",
    "name.process_grid": "프로세스 grid",
    "name.optimizer": "optimizer",
    "name.zero_optimizer": "ZeRO optimizer",
    "name.context_parallelism": "context parallel 설정",
    "name.step_inputs": "step의 입력",
    "name.pipeline_batch": "pipeline step의 batch",
    "name.verify_row": "verify의 {scheme} 행",
    "name.engine": "PipelineEngine 설정",
    "name.zero_layout": "ZeRO shard 구성",
    "name.ddp_layout": "DistributedDataParallel bucket 구성",
}
