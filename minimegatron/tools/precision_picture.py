"""The picture of the number formats: what float16, bf16, e4m3 and e5m2 hold, and where the
gradients of a real bf16 GPT step fall (docs/mixed_precision.md, "bf16 and fp8").

One bar per format over log2 |value|: its normal range (from the smallest normal to the
largest value, ``ml_dtypes.finfo``) and, paler, its subnormals (fewer bits of precision, down
to the smallest subnormal); under them the histogram of log2 |gradient| of one step of the
small demo GPT in bfloat16, unscaled, and for each format the share of those gradients below
its smallest subnormal: what would underflow to zero without a scale.

    draw_precision_ranges("precision_ranges.png")                  # docs/make_figures.py

Its words are English unless ``lang="ko"`` (i18n/en_figures.py, ko_figures.py).
"""
import dataclasses

import ml_dtypes
import numpy as np

from minimegatron.data.demo import SMALL_CONFIG, batch
from minimegatron.i18n import text_in
from minimegatron.nn import GPT

BAR, HISTOGRAM = "#4C78A8", "#F58518"


def bf16_gradient_exponents():
    """log2 |gradient| of every nonzero gradient of one bf16 step of the demo GPT."""
    config = dataclasses.replace(SMALL_CONFIG, dtype="bfloat16")
    model = GPT(config)
    model.loss(*batch(config, 8, 0)).backward()
    grads = np.concatenate([np.abs(p.grad.astype(np.float32)).ravel()
                            for p in model.parameters()])
    return np.log2(grads[grads > 0])


def draw_precision_ranges(path, lang="en"):
    """Write the picture as a PNG to ``path``, its words in ``lang``; returns path."""
    try:
        from matplotlib.figure import Figure
    except ImportError as error:
        raise ImportError("drawing needs matplotlib: pip install 'minimegatron[plot]'") \
            from error
    grads = bf16_gradient_exponents()
    formats = [(text_in(lang, "figure.precision.e5m2"), ml_dtypes.float8_e5m2),
               (text_in(lang, "figure.precision.e4m3"), ml_dtypes.float8_e4m3fn),
               ("bf16", ml_dtypes.bfloat16), ("float16", np.float16)]
    fig = Figure(figsize=(7, 3.0), dpi=100)
    ax = fig.add_axes((0.2, 0.17, 0.76, 0.68))
    for i, (name, dtype) in enumerate(formats):
        info = ml_dtypes.finfo(dtype)
        tiny, top = np.log2(float(info.smallest_normal)), np.log2(float(info.max))
        low = np.log2(float(info.smallest_subnormal))
        ax.barh(i, top - tiny, left=tiny, color=BAR, height=0.5,
                label=text_in(lang, "figure.precision.normal") if i == 0 else None)
        ax.barh(i, tiny - low, left=low, color=BAR, alpha=0.35, height=0.5,
                label=text_in(lang, "figure.precision.subnormal") if i == 0 else None)
        lost = float(np.mean(grads < low))
        said = text_in(lang, "figure.precision.underflow", lost=f"{lost:.0%}") if lost else ""
        ax.text(max(low, -140) - 1, i, said, ha="right", va="center", fontsize=7)
    ax.hist(grads, bins=60, bottom=-0.9, weights=np.full(grads.size, 3.0 / grads.size),
            color=HISTOGRAM, label=text_in(lang, "figure.precision.grads"))
    ax.set_yticks(range(len(formats)), [n for n, _ in formats], fontsize=8)
    ax.set_xlim(-145, 130)
    ax.set_ylim(-1, len(formats) + 0.4)
    ax.set_xlabel(text_in(lang, "figure.precision.x"))
    ax.legend(fontsize=7, frameon=False, loc="upper center", ncol=3)
    ax.set_title(text_in(lang, "figure.precision.title"), fontsize=10)
    fig.savefig(path, metadata={"Software": None})   # reruns give equal bytes
    return path
