"""The picture of a mixture of experts in training: the load per expert and per rank.

Two panels over the training steps (tutorials/14_mixture_of_experts.py):

1. assignments per expert: how many of the batch's k x tokens the router sent to
   each of the E experts (before capacity), one line per expert; a uniform router
   sends k x tokens / E to each (dashed);
2. rows per rank: how many real token rows the experts of each rank computed (after
   capacity), one line per rank, under the padded buffer every rank computes anyway
   (E/ep x ep x b x C rows per MoE layer, dashed): the gap is the padding.

    draw_moe_load(loads, rank_rows, uniform, padded, "out/14_mixture_of_experts.png")

Its words are English unless ``lang="ko"`` (docs/make_figures.py draws the site's Korean
figure with a Korean font; i18n/en_figures.py, ko_figures.py).
"""
from minimegatron.i18n import text_in


def draw_moe_load(loads, rank_rows, uniform, padded, path, lang="en"):
    """loads: per step a list of E counts; rank_rows: per step a list of one count per rank;
    uniform, padded: the two dashed levels. Writes a PNG to ``path``, its words in ``lang``,
    and returns it (needs matplotlib)."""
    def words(key):
        return text_in(lang, "figure.moe." + key)

    try:
        from matplotlib.figure import Figure
    except ImportError as error:
        raise ImportError("drawing needs matplotlib: pip install 'minimegatron[plot]'") \
            from error
    steps = list(range(len(loads)))
    fig = Figure(figsize=(12, 4), dpi=100)
    experts, ranks = (fig.add_axes(box) for box in ((0.06, 0.13, 0.33, 0.75),
                                                    (0.54, 0.13, 0.33, 0.75)))
    for e in range(len(loads[0])):
        experts.plot(steps, [row[e] for row in loads], marker="o", label=f"expert {e}")
    experts.axhline(uniform, color="grey", linestyle="--", label=words("uniform"))
    experts.set(xlabel=words("step"), xticks=steps, ylabel=words("assignments"),
                title=words("experts"))
    experts.legend(fontsize=7, loc="center left", bbox_to_anchor=(1.0, 0.5))
    for r in range(len(rank_rows[0])):
        ranks.plot(steps, [row[r] for row in rank_rows], marker="o", label=f"rank {r}")
    ranks.axhline(padded, color="grey", linestyle="--", label=words("padded"))
    ranks.set(xlabel=words("step"), xticks=steps, ylabel=words("rows"),
              ylim=(0, 1.1 * padded), title=words("ranks"))
    ranks.legend(fontsize=7, loc="center left", bbox_to_anchor=(1.0, 0.5))
    fig.savefig(path, metadata={"Software": None})   # reruns give equal bytes
    return path
