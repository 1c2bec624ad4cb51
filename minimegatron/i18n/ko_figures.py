"""사이트 그림(docs/make_figures.py, minimegatron/tools/cp_picture.py, moe_picture.py)의
한국어 문구: 제목, 축, 범례. ``make_figures.py --lang ko``가 docs/img/NAME.ko.png로 그립니다.

en_figures.py와 같은 키, 같은 {필드}입니다 (tests/test_docs_ko_figures.py).
"""

MESSAGES = {
    "figure.bubble.x": "micro-batch 수 M",
    "figure.bubble.y": "bubble = 유휴 시간 / (K x makespan)",
    "figure.bubble.title": "시뮬레이션한 bubble(점)과 공식 (K-1)/(M+K-1)(선)",
    "figure.activations.y": "보관하는 activation",
    "figure.activations.title": "동시에 진행 중인 micro-batch의 최댓값, K={stages}, "
                                "M={micro_batches}",
    "figure.sp.tp_sp": "tp + sequence",
    "figure.sp.x": "rank 0이 보낸 byte, trace 순서대로 (forward 다음 backward)",
    "figure.sp.title": "transformer block 하나, tp={tp}, trace: forward | backward. "
                       "all-reduce 2+2번이 all-gather와 reduce-scatter로 바뀝니다\n(빗금 *: "
                       "저장해 둔 입력을 backward에서 다시 gather하는 것과 LayerNorm / bias의 "
                       "gradient)",
    "figure.loss_scale.used": "step이 쓴 loss scale S",
    "figure.loss_scale.skipped": "overflow로 건너뛴 step ({steps}번 중 {skipped}번)",
    "figure.loss_scale.x": "step",
    "figure.loss_scale.title": "동적 loss scaling, float16 GPT, growth_interval={interval}",
    "figure.precision.e5m2": "e5m2 (fp8 gradient)",
    "figure.precision.e4m3": "e4m3 (fp8 forward)",
    "figure.precision.normal": "정규수 (normal)",
    "figure.precision.subnormal": "비정규수 (subnormal, 비트가 적음)",
    "figure.precision.underflow": "gradient의 {lost} underflow",
    "figure.precision.grads": "|gradient|, bf16 GPT step 하나 (scale 없이)",
    "figure.precision.x": "log2 |값|",
    "figure.precision.title": "형식마다 담는 범위: bf16은 float32의 범위, fp8은 scale이 필요",
    "figure.cp.contiguous": "연속 분할",
    "figure.cp.position": "token 위치",
    "figure.cp.tokens": "token {steps}개를 cp = {cp}개 rank에 나눔 (숫자는 rank)",
    "figure.cp.pairs": "rank별 causal 쌍 수, zigzag {zigzag}\n(연속 분할 {contiguous})",
    "figure.cp.ring": "ring attention: K/V block이 다음 rank로,\nlayer마다 {hops}번 이동",
    "figure.moe.uniform": "균등 배정",
    "figure.moe.step": "step",
    "figure.moe.assignments": "배정 수 (capacity 적용 전)",
    "figure.moe.experts": "expert별 부하, batch 전체",
    "figure.moe.padded": "padding한 buffer",
    "figure.moe.rows": "실제 token으로 계산한 행",
    "figure.moe.ranks": "rank별 부하 (자기 expert, 자기 ep group의 token)",
    "figure.timeline.title": "{name}: stage K={stages}개, micro-batch "
                             "M={micro_batches}개 | {bubble} | stage마다 최대 activation "
                             "{peaks}",
    "figure.timeline.bubble": "bubble {fraction:.1%} (공식 {formula})",
    "figure.timeline.zb_bubble": "T_W {weight:g}, bubble {bubble:g} 대 1f1b {plain:g}, "
                                 "표 {expression}",
    "figure.timeline.x": "시간 (t_forward 단위)",
    "figure.timeline.trace": "trace {path}: rank {ranks}개, bubble {bubble:.1%}",
    "figure.timeline.seconds": "시간 (초)",
    "figure.timeline.forward": "forward",
    "figure.timeline.backward": "backward",
    "figure.timeline.weight": "weight의 gradient (W)",
    "figure.timeline.tp": "tp 통신",
    "figure.timeline.pp": "pp 통신",
    "figure.timeline.dp": "dp 통신",
    "figure.timeline.comm": "send / recv / wait",
    "figure.timeline.idle": "쉼 (bubble)",
    "figure.timeline.run": "{schedule}: stage K={stages}개, M={micro_batches}, "
                           "공식 (K-1)/(M+K-1) = {formula}",
    "figure.timeline.device": "device 시간 {forward:g}/{backward:g} ms",
    "figure.timeline.plain": "plain",
    "figure.timeline.measured": "{title}, {what} | 측정한 bubble {bubble:.1%}",
    "figure.no_korean_font": "matplotlib이 아는 한국어 글꼴이 없어 그림을 영어로 그립니다. "
                             "{fonts} 중 하나를 설치하세요 (Debian/Ubuntu: sudo apt-get "
                             "install fonts-nanum, 그다음 rm -rf ~/.cache/matplotlib).",
}
