"""checkpoint를 쓰거나 읽거나 불러올 수 없을 때의 메시지 (tools/checkpoint*.py): 키와 {필드}는
en_checkpoint_errors.py와 같습니다. 기술 용어(checkpoint, rank, shape, dtype, optimizer state,
NaN, inf, meta, crc32 ...)는 영어 그대로 둡니다."""

MESSAGES = {
    "ckpt.err.empty_path": "checkpoint: 경로가 비었거나 경로가 아닙니다 ({path!r})",
    "ckpt.err.directory": "checkpoint: {path!r}은 파일이 아니라 디렉터리입니다",
    "ckpt.err.nan_save": "checkpoint {path!r}: {key}에 NaN이나 inf가 있어 저장하지 않았습니다 "
                         "(이전 파일은 그대로 둡니다)",
    "ckpt.err.meta_size": "checkpoint {path!r}: meta가 {nbytes} byte로 {limit}보다 큽니다 "
                          "(rng_state가 그렇게 큰가요?)",
    "ckpt.err.no_file": "checkpoint {path!r}: 그런 파일이 없습니다",
    "ckpt.err.too_big": "checkpoint {path!r}은 {size} byte로, 이 모델의 checkpoint가 "
                        "가질 수 있는 {limit}보다 큽니다",
    "ckpt.err.unreadable": "checkpoint {path!r}이 잘렸거나 손상되었습니다 (읽을 수 없음: "
                           "{error})",
    "ckpt.err.corrupt": "checkpoint {path!r}이 손상되었습니다: {why}",
    "ckpt.err.nan_load": "checkpoint {path!r}: array {key!r}에 NaN이나 inf가 있습니다",
    "ckpt.err.format": "checkpoint {path!r}: format/version이 {got!r}입니다, {format!r} "
                       "version {version}이어야 합니다",
    "ckpt.err.disagree": "checkpoint: rank마다 {name}의 전체 shape이 다릅니다 ({first}, rank "
                         "{rank}에서는 {shape})",
    "ckpt.err.stream": "checkpoint {path!r}: dropout stream {name!r}의 상태를 쓸 수 없습니다 "
                       "({error})",
    "ckpt.err.config": "checkpoint {path!r}은 다른 config로 저장되었습니다: {differ}",
    "ckpt.err.optimizer_class": "checkpoint {path!r}에는 {saved} state가 있는데, 이 실행은 "
                                "{ours}를 씁니다",
    "ckpt.err.names": "checkpoint {path!r}: parameter 이름이 모델과 다릅니다 (파일에만: "
                      "{in_file}, 모델에만: {in_model})",
    "ckpt.err.shape": "checkpoint {path!r}: {name}이 파일에서는 {shape}, 이 모델에서는 "
                      "{ours}입니다",
    "ckpt.err.optimizer_kind": "checkpoint {path!r}에는 {saved}의 state가 있는데(weight마다 "
                               "{fields}), 이 실행의 optimizer는 {ours}입니다(weight마다 "
                               "{our_fields})",
    "ckpt.err.optimizer_params": "checkpoint: optimizer의 parameter가 모델의 parameter와 "
                                 "정확히 같지 않습니다",
    "ckpt.err.no_config": "checkpoint: config=GPTConfig(...)를 주세요 (모델에 .config가 "
                          "없습니다)",
    "ckpt.err.save": "checkpoint: {path!r}을 저장할 수 없습니다: {error}",
    "ckpt.err.state_keys": "checkpoint: weight마다 optimizer state array가 {count}개입니다, "
                           "많아야 {most}개를 지원합니다",
    "ckpt.err.load": "checkpoint {path!r}을 불러올 수 없습니다 ({error})",
    "ckpt.why.duplicate": "zip 항목이 중복됩니다",
    "ckpt.why.compressed": "항목 {name!r}이 압축되었거나 암호화되었습니다 (이 형식은 "
                           "array를 그대로 저장합니다)",
    "ckpt.why.declared": "항목들이 선언한 byte가 파일 크기보다 많습니다",
    "ckpt.why.no_meta": "읽을 수 있는 'meta' 기록이 없습니다",
    "ckpt.why.missing": "array {arrays}이 없거나 목록에 없습니다",
    "ckpt.why.listed_as": "array {key!r}이 {shape} {dtype}, {size} byte로 적혀 있는데 "
                          "{want_shape} {want_dtype}이어야 합니다",
    "ckpt.why.too_big": "{size} byte로, array들에 필요한 것보다 큽니다",
    "ckpt.why.checksum": "array {key!r}이 기록된 shape/dtype/crc32 checksum과 맞지 "
                         "않습니다",
    "ckpt.why.not_npy": "{name}이 version 1이나 2의 .npy array가 아닙니다",
    "ckpt.why.holds": "{name}에 {shape} {dtype}이 {size} byte로 들어 있습니다",
    "ckpt.why.truncated": "{name}이 잘렸습니다",
    "ckpt.why.too_long": "{name}이 너무 깁니다",
    "ckpt.why.no_listing": "meta에 array 목록이 없습니다",
    "ckpt.why.meta_lists": "meta가 {key!r}을 {info!r}으로 적습니다",
    "ckpt.why.state_dtypes": "optimizer state의 dtype 기록이 잘못되었습니다: {dtypes!r}",
    "ckpt.why.mixed": "mixed-precision 기록이 잘못되었습니다: {record!r}",
    "ckpt.why.expert_bias": "expert bias 기록이 잘못되었습니다 (aux loss 없는 균형)",
    "ckpt.why.moe": "MoE config가 {saved!r}입니다",
    "ckpt.why.no_config": "meta에 config가 없습니다",
    "ckpt.why.records": "optimizer나 rng 기록이 잘못되었습니다",
}
