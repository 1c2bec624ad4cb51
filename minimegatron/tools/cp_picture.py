"""The picture of context parallelism: who holds which tokens, who does which causal work,
and the ring the K/V blocks travel.

Three panels, from the same functions the attention code uses
(``parallel/context_parallel/zigzag.py``):

1. the S tokens of the sequence, coloured by the rank that holds them: the
   contiguous split (rank r holds tokens r*S/cp .. (r+1)*S/cp) above the
   zigzag split (the sequence in 2*cp chunks, rank i holds chunks i and
   2*cp-1-i);
2. the causal attention matrix (query i attends to keys j <= i), each row
   coloured by the rank that owns the query under the zigzag split, with the
   number of (query, key) pairs each rank computes: equal on every rank,
   where the contiguous split gives the last rank the most;
3. the ring: cp ranks on a circle, each sending the K/V block it holds to the
   next rank and receiving one from the previous, cp - 1 hops per layer.

    draw_context_parallel(16, 4, "out/12_context_parallel.png")    # tutorial 12

Its words are English unless ``lang="ko"`` (docs/make_figures.py draws the site's Korean
figure with a Korean font; i18n/en_figures.py, ko_figures.py).
"""
import math

import numpy as np

from minimegatron.backend import to_numpy
from minimegatron.i18n import text_in
from minimegatron.parallel.context_parallel.zigzag import causal_pairs, positions

SPLITS = ("contiguous", "zigzag")


def owners(steps, cp, split):
    """(steps,) array: the rank that holds each token under ``split``."""
    owner = np.empty(steps, dtype=int)
    for rank in range(cp):
        owner[to_numpy(positions(steps, rank, cp, split)).astype(int)] = rank   # device -> host
    return owner


def draw_context_parallel(steps, cp, path, lang="en"):
    """Write the three panels as a PNG to ``path``, their words in ``lang``; returns path
    (needs matplotlib)."""
    try:
        from matplotlib.figure import Figure
        from matplotlib.patches import FancyArrowPatch
    except ImportError as error:
        raise ImportError("drawing needs matplotlib: pip install 'minimegatron[plot]'") \
            from error
    colours = [f"C{rank % 10}" for rank in range(cp)]
    fig = Figure(figsize=(13, 4.4), dpi=100)
    tokens, matrix, ring = (fig.add_axes(box) for box in
                            ((0.08, 0.15, 0.33, 0.7), (0.46, 0.1, 0.23, 0.8),
                             (0.75, 0.1, 0.22, 0.8)))
    for row, split in enumerate(SPLITS):                        # panel 1: who holds what
        for token, rank in enumerate(owners(steps, cp, split)):
            tokens.add_patch(_box(token, 1 - row, colours[rank]))
            tokens.text(token + 0.5, 1.5 - row, str(rank), ha="center", va="center",
                        fontsize=8, color="white")
    tokens.set(xlim=(0, steps), ylim=(0, 2), yticks=[0.5, 1.5],
               yticklabels=["zigzag", text_in(lang, "figure.cp.contiguous")],
               xlabel=text_in(lang, "figure.cp.position"),
               title=text_in(lang, "figure.cp.tokens", steps=steps, cp=cp))
    zigzag = owners(steps, cp, "zigzag")                          # panel 2: causal work
    for query in range(steps):
        for key in range(query + 1):
            matrix.add_patch(_box(key, steps - 1 - query, colours[zigzag[query]]))
    pairs = {split: causal_pairs(cp, split, steps) for split in SPLITS}
    matrix.set(xlim=(0, steps), ylim=(0, steps), xticks=[], yticks=[], xlabel="key",
               ylabel="query", title=text_in(lang, "figure.cp.pairs", zigzag=pairs["zigzag"],
                                             contiguous=pairs["contiguous"]))
    centres = [(math.cos(2 * math.pi * r / cp), math.sin(2 * math.pi * r / cp))
               for r in range(cp)]                                # panel 3: the ring
    for rank, (x, y) in enumerate(centres):
        nx, ny = centres[(rank + 1) % cp]
        ring.add_patch(FancyArrowPatch((x, y), (nx, ny), arrowstyle="-|>", mutation_scale=14,
                                       shrinkA=18, shrinkB=18, color="grey",
                                       connectionstyle="arc3,rad=-0.2"))
        ring.scatter([x], [y], s=900, color=colours[rank], zorder=3)
        ring.text(x, y, str(rank), ha="center", va="center", color="white", fontsize=12,
                  zorder=4)
    ring.set(xlim=(-1.5, 1.5), ylim=(-1.5, 1.5), xticks=[], yticks=[], aspect="equal",
             title=text_in(lang, "figure.cp.ring", hops=cp - 1))
    fig.savefig(path)
    return path


def _box(x, y, colour):
    from matplotlib.patches import Rectangle
    return Rectangle((x, y), 1, 1, facecolor=colour, edgecolor="white", linewidth=0.5)
