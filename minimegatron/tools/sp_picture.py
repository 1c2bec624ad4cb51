"""The picture of sequence parallelism: one transformer block's tp collectives, in order.

Two rows, from a real 4-rank run of tutorials/10_sequence_parallel.py (``--out`` writes
sp_trace.json): tp alone above tp + sequence parallelism, each collective a box as wide as
the bytes rank 0 sent, in trace order; a bar marks where forward ends. The 2 + 2 all-reduces
of tp become all-gathers and reduce-scatters of the same bytes; the hatched boxes (*) are what
sequence parallelism adds: backward's re-gather of the stored input and the LayerNorm / bias
gradients' all-reduce.

    draw_sequence_parallel(json.load(open("out/sp_trace.json")), "sp.png")   # make_figures

Its words are English unless ``lang="ko"`` (i18n/en_figures.py, ko_figures.py).
"""
from minimegatron.i18n import text_in

COLORS = {"all_reduce": "#4C78A8", "all_gather": "#F58518", "reduce_scatter": "#54A24B"}
SHORT = {"all_reduce": "AR", "all_gather": "AG", "reduce_scatter": "RS"}


def draw_sequence_parallel(run, path, lang="en"):
    """run: {"tp": size, "spans": {"tp": [...], "tp+sp": [...]}}, each span (phase, op, label,
    _, bytes sent). Writes a PNG to ``path``, its words in ``lang``; returns path."""
    try:
        from matplotlib.figure import Figure
    except ImportError as error:
        raise ImportError("drawing needs matplotlib: pip install 'minimegatron[plot]'") \
            from error
    fig = Figure(figsize=(9, 2.8), dpi=100)
    ax = fig.add_axes((0.13, 0.18, 0.85, 0.6))
    for y, name in ((1, "tp"), (0, "tp+sp")):
        x = 0
        for phase, op, label, _, sent in run["spans"][name]:
            extra = "regather" in label or "sp-params" in label
            ax.barh(y, sent, left=x, height=0.6, color=COLORS[op], edgecolor="white",
                    hatch="//" if extra else None, alpha=0.5 if extra else 1.0)
            if sent > 1500:
                ax.text(x + sent / 2, y, SHORT[op] + ("*" if extra else ""), ha="center",
                        va="center", fontsize=8, color="white")
            x += sent
        forward = sum(span[4] for span in run["spans"][name] if span[0] == "forward")
        ax.plot([forward, forward], [y - 0.42, y + 0.42], color="#333333", linewidth=1.5)
    ax.set_yticks([0, 1], [text_in(lang, "figure.sp.tp_sp"), "tp"])
    ax.set_xlabel(text_in(lang, "figure.sp.x"))
    ax.set_title(text_in(lang, "figure.sp.title", tp=run["tp"]), fontsize=9)
    fig.savefig(path, metadata={"Software": None})   # reruns give equal bytes
    return path
