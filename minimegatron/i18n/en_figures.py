"""English texts of the site's figures (docs/make_figures.py and the pictures of
minimegatron/tools/cp_picture.py, moe_picture.py): titles, axes and legends.

``make_figures.py --lang ko`` draws the same figures with ko_figures.py's texts as
docs/img/NAME.ko.png; same keys and {fields} (tests/test_docs_ko_figures.py).
"""

MESSAGES = {
    "figure.bubble.x": "micro-batches M",
    "figure.bubble.y": "bubble = idle / (K x makespan)",
    "figure.bubble.title": "simulated bubble (points) on the formula (K-1)/(M+K-1) (lines)",
    "figure.activations.y": "activations held",
    "figure.activations.title": "peak micro-batches in flight, K={stages}, M={micro_batches}",
    "figure.sp.tp_sp": "tp + sequence",
    "figure.sp.x": "bytes sent by rank 0, in trace order (forward, then backward)",
    "figure.sp.title": "one transformer block, tp={tp}, traced: forward | backward; the 2+2 "
                       "all-reduces become all-gathers and reduce-scatters\n(hatched *: the "
                       "backward re-gathers of the stored input and the LayerNorm / bias "
                       "gradients)",
    "figure.loss_scale.used": "loss scale S used by the step",
    "figure.loss_scale.skipped": "overflow: step skipped ({skipped} of {steps})",
    "figure.loss_scale.x": "step",
    "figure.loss_scale.title": "dynamic loss scaling, float16 GPT, "
                               "growth_interval={interval}",
    "figure.precision.e5m2": "e5m2 (fp8 grads)",
    "figure.precision.e4m3": "e4m3 (fp8 fwd)",
    "figure.precision.normal": "normal",
    "figure.precision.subnormal": "subnormal (fewer bits)",
    "figure.precision.underflow": "{lost} of grads underflow",
    "figure.precision.grads": "|gradient|, one bf16 GPT step (unscaled)",
    "figure.precision.x": "log2 |value|",
    "figure.precision.title": "what each format holds: bf16 has float32's range, fp8 needs a "
                              "scale",
    "figure.cp.contiguous": "contiguous",
    "figure.cp.position": "token position",
    "figure.cp.tokens": "{steps} tokens over cp = {cp} ranks (the number: the rank)",
    "figure.cp.pairs": "causal pairs per rank, zigzag {zigzag}\n(contiguous {contiguous})",
    "figure.cp.ring": "ring attention: K/V blocks go to\nthe next rank, {hops} hops per layer",
    "figure.moe.uniform": "uniform",
    "figure.moe.step": "step",
    "figure.moe.assignments": "assignments (before capacity)",
    "figure.moe.experts": "load per expert, whole batch",
    "figure.moe.padded": "padded buffer",
    "figure.moe.rows": "rows computed for real tokens",
    "figure.moe.ranks": "load per rank (its experts, its ep group's tokens)",
    "figure.timeline.title": "{name}: K={stages} stages, M={micro_batches} micro-batches | "
                             "{bubble} | peak activations per stage {peaks}",
    "figure.timeline.bubble": "bubble {fraction:.1%} (formula {formula})",
    "figure.timeline.zb_bubble": "T_W {weight:g}, bubble {bubble:g} vs 1f1b {plain:g}, "
                                 "table {expression}",
    "figure.timeline.x": "time (units of t_forward)",
    "figure.timeline.trace": "trace {path}: {ranks} ranks, bubble {bubble:.1%}",
    "figure.timeline.seconds": "time (s)",
    "figure.timeline.forward": "forward",
    "figure.timeline.backward": "backward",
    "figure.timeline.weight": "weight grad (W)",
    "figure.timeline.tp": "tp traffic",
    "figure.timeline.pp": "pp traffic",
    "figure.timeline.dp": "dp traffic",
    "figure.timeline.comm": "send / recv / wait",
    "figure.timeline.idle": "idle (bubble)",
    "figure.timeline.run": "{schedule}: K={stages} stages, M={micro_batches}, "
                           "formula (K-1)/(M+K-1) = {formula}",
    "figure.timeline.device": "device time {forward:g}/{backward:g} ms",
    "figure.timeline.plain": "plain",
    "figure.timeline.measured": "{title}, {what} | measured bubble {bubble:.1%}",
    "figure.no_korean_font": "no Korean font known to matplotlib, so the figure is drawn in "
                             "English: install one of {fonts} (Debian/Ubuntu: sudo apt-get "
                             "install fonts-nanum, then rm -rf ~/.cache/matplotlib)",
}
