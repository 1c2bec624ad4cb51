"""Timelines: which stage computes what, when, and where the bubble is.

The same picture for a schedule simulated from its action lists
(``minimegatron.parallel.pipeline_parallel.simulator``) and for a real run's trace: a text grid
(one row per stage, one column per time step) and a Gantt chart PNG (forward
boxes blue, backward orange, weight gradient teal, communication and waits coloured by the kind of
group they ran in: tp green, pp purple, dp red, any other grey; idle pale), with
the bubble fraction idle / (stages * makespan) next to GPipe's formula
(K - 1) / (M + K - 1) (interleaved, v chunks per stage: (K - 1) / (vM + K - 1)).
Zero-bubble schedules (zero_bubble.py: zb-h1, zb-h2, zbv with its two chunks
in a V) split the backward into B and W (``--t-weight`` T_W, default 1 for
them): printed with the paper's bubble next to 1F1B's at the same times.
``--chrome-trace FILE`` also writes the
timeline as Chrome trace JSON for Perfetto (chrome_trace.py).

    minimegatron timeline --schedule gpipe --stages 4 --micro-batches 8
    minimegatron timeline --schedule 1f1b --stages 4 --micro-batches 8 --t-backward 2
    minimegatron timeline --schedule interleaved --stages 4 --chunks 2 --micro-batches 8
    minimegatron timeline --schedule zb-h1 --stages 4 --micro-batches 8 --t-weight 1
    minimegatron timeline --schedule zbv --stages 4 --micro-batches 8
    minimegatron timeline --trace trace.json --out run.png

Trace file (``--trace``): a JSON list of spans, one dict per span,

    {"rank": 0, "op": "forward", "start": 0.0012, "end": 0.0040, "label": "mb3",
     "micro_batch": 3}

op "forward", "backward" or "weight" is compute (drawn F3 / B3 / W3 from micro_batch; a trace
without it: the last number in label); any other op ("send", "recv", "wait", ...) is
communication, drawn in its group's colour when the span has a "group" named
like grid.py's ("tp0", "dp1", "pp0"), else grey. A communication span that
lies inside a compute box of its rank (the tp all-reduces inside a layer) is
drawn as a strip along the box's bottom edge. start and end are seconds from
any common origin; "kind" is accepted in place of "op".

The command (its arguments and printed lines) is ``minimegatron/commands/timeline.py``;
this module computes the rows and draws them.
"""
import bisect
import re

from minimegatron.i18n import text_in
from minimegatron.tools import chrome_trace
from minimegatron.tools.fonts import drawn_in

COLORS = {"forward": "#4C78A8", "backward": "#F58518", "weight": "#2A9D8F", "tp": "#54A24B",
          "pp": "#B279A2", "dp": "#E45756", "comm": "#8C8C8C", "idle": "#EEEEEE"}
COMPUTE = ("forward", "backward", "weight")
# the legend's kinds, in order; their texts are figure.timeline.KIND (i18n/*_figures.py)
LEGEND = ("forward", "backward", "weight", "tp", "pp", "dp", "comm", "idle")
GROUP_KIND = re.compile(r"\b(tp|pp|dp)\d*$")     # "all_reduce tp0" -> tp (grid.py's names)


def text_grid(sim):
    """One row per stage, one column per shortest time step: F<i>, B<i>, W<i> or '..' (idle)."""
    steps = [slot.end - slot.start for row in sim.slots for slot in row]
    unit = min(steps)
    columns = [[] for _ in sim.slots]
    for stage, row in enumerate(sim.slots):
        for slot in row:
            first, last = slot.start / unit, slot.end / unit
            if abs(first - round(first)) > 1e-9 or abs(last - round(last)) > 1e-9:
                raise ValueError("text grid needs every time to be a multiple of the "
                                 f"shortest step {unit}; use an integer t_backward/t_forward")
            columns[stage] += [(column, str(slot)) for column in range(round(first),
                                                                      round(last))]
    width = max(2, max(len(str(slot)) for row in sim.slots for slot in row))
    num_columns = round(sim.makespan / unit)
    name_width = len(str(sim.num_stages - 1))
    lines = []
    for stage, filled in enumerate(columns):
        cells = ["." * width] * num_columns
        for column, label in filled:
            cells[column] = label.ljust(width)
        lines.append(f"stage {stage:<{name_width}} |" + " ".join(cells).rstrip())
    return "\n".join(lines)


def rows_from_simulation(sim):
    """Per stage, (start, end, kind, label) boxes of a simulated schedule."""
    kinds = {"F": "forward", "B": "backward", "W": "weight"}
    return [[(slot.start, slot.end, kinds[slot.op], str(slot)) for slot in row]
            for row in sim.slots]


def _field(span, *names):
    for name in names:
        value = span.get(name) if isinstance(span, dict) else getattr(span, name, None)
        if value is not None:
            return value
    return None


def rows_from_trace(spans):
    """Per rank, (start, end, kind, label) boxes of traced spans (dicts or objects).

    Times are shifted so the earliest span starts at 0. Communication is kind
    "comm", labelled by its op and, if the span has one, its group ("all_reduce tp0").
    """
    spans = list(spans)
    if not spans:
        raise ValueError("the trace has no spans")
    origin = min(float(_field(span, "start")) for span in spans)
    rows = [[] for _ in range(1 + max(int(_field(span, "rank")) for span in spans))]
    for span in spans:
        op = str(_field(span, "op", "kind"))
        kind = op if op in COMPUTE else "comm"
        group = _field(span, "group")
        label = op if group is None else f"{op} {group}"
        if kind != "comm":
            number = _field(span, "micro_batch")
            if number is None:                      # an older trace: the number in its label
                number = (re.findall(r"\d+", str(_field(span, "label") or "")) or [""])[-1]
            label = op[0].upper() + str(number) + chrome_trace.chunk_of(_field(span, "label"))
        start, end = float(_field(span, "start")) - origin, float(_field(span, "end")) - origin
        rows[int(_field(span, "rank"))].append((start, end, kind, label))
    return [sorted(row) for row in rows]


def bubble_from_rows(rows):
    """1 - compute time / (rows * makespan); the makespan runs from 0 to the last end."""
    makespan = max(end for row in rows for _, end, _, _ in row)
    compute = sum(end - start for row in rows for start, end, kind, _ in row
                  if kind in COMPUTE)
    return 1 - compute / (len(rows) * makespan)


def measured_heading(lang, schedule, stages, micro_batches, formula, bubble, device_ms=None):
    """The title of a measured run's timeline (tutorial 07): the schedule, its formula and the
    measured bubble, ``device_ms`` (forward, backward) when device time was emulated."""
    title = text_in(lang, "figure.timeline.run", schedule=schedule, stages=stages,
                    micro_batches=micro_batches, formula=formula)
    what = (text_in(lang, "figure.timeline.plain") if device_ms is None else
            text_in(lang, "figure.timeline.device", forward=device_ms[0],
                    backward=device_ms[1]))
    return text_in(lang, "figure.timeline.measured", title=title, what=what, bubble=bubble)


def traffic_kind(kind, label):
    """The colour key of a box: its kind, or for communication its group's kind (tp/pp/dp)."""
    found = GROUP_KIND.search(label) if kind == "comm" else None
    return found.group(1) if found else kind


def _boxes_by_colour(row):
    """{(colour key, inside): [(start, width)]}; inside: communication within a compute box."""
    compute = sorted((start, end) for start, end, kind, _ in row if kind != "comm")
    starts = [start for start, _ in compute]
    boxes = {}
    for start, end, kind, label in row:
        before = bisect.bisect_right(starts, start) - 1       # the compute box starting last
        inside = kind == "comm" and before >= 0 and end <= compute[before][1]
        boxes.setdefault((traffic_kind(kind, label), inside), []).append((start, end - start))
    return boxes


def draw_timeline(rows, path, title, row_name="stage", xlabel="time", lang="en"):
    """Gantt chart of rows (see rows_from_*) as a PNG of 1200 x (160 + 50 * rows) pixels,
    its legend in ``lang`` (title and xlabel come in the caller's; Korean needs a Korean
    font: ``fonts.drawing_language`` first).

    Full height: compute (on top), then communication waits; a strip along a
    compute box's bottom edge: communication inside it (tp all-reduces).
    """
    try:                                        # (what _draw imports)
        from matplotlib.figure import Figure  # noqa: F401
        from matplotlib.patches import Patch  # noqa: F401
    except ImportError as error:
        raise ImportError("drawing a timeline needs matplotlib: "
                          "pip install 'minimegatron[plot]'") from error
    with drawn_in(lang):
        return _draw(rows, path, title, row_name, xlabel, lang)


def _draw(rows, path, title, row_name, xlabel, lang):
    """The chart itself, drawn with the rcParams around it (draw_timeline's)."""
    from matplotlib.figure import Figure
    from matplotlib.patches import Patch
    height = 1.6 + 0.5 * len(rows)
    fig = Figure(figsize=(12, height), dpi=100)
    ax = fig.add_axes((0.08, 0.6 / height, 0.9, 1 - 1.5 / height))
    makespan = max(end for row in rows for _, end, _, _ in row)
    pixels_per_time = 0.9 * 1200 / makespan
    # one label style for the whole chart: the longest label in the median compute box
    compute = sorted((end - start, label) for row in rows for start, end, kind, label in row
                     if kind != "comm") or [(0, "")]
    width = compute[len(compute) // 2][0] * pixels_per_time
    length = max(len(label) for _, label in compute)
    full_labels = width / (length + 1) >= 6
    fontsize = min(10, width / (length + (1 if full_labels else 0)))
    kinds_seen = {"idle"}
    for index, row in enumerate(rows):
        ax.broken_barh([(0, makespan)], (index - 0.4, 0.8), facecolors=COLORS["idle"])
        boxes = _boxes_by_colour(row)
        # waits first, compute over them, strips last (one call per colour: fast)
        for (key, inside), spans in sorted(boxes.items(), key=lambda item: (
                item[0][1], item[0][0] in COMPUTE)):
            kinds_seen.add(key)
            ax.broken_barh(spans, (index + 0.12, 0.28) if inside else (index - 0.4, 0.8),
                           facecolors=COLORS[key], edgecolors="white",
                           linewidth=0.5 if inside else 1)
        for start, end, kind, label in row:
            text = label if full_labels else label[1:]  # "F12", or "12": colour says F
            fits = (end - start) * pixels_per_time >= 0.75 * fontsize * (len(text) + 1)
            if kind != "comm" and fits and fontsize >= 5:
                ax.text((start + end) / 2, index - 0.1 * any(key[1] for key in boxes), text,
                        ha="center", va="center", color="white", fontsize=fontsize,
                        fontweight="bold")
    ax.set_yticks(range(len(rows)), [f"{row_name} {index}" for index in range(len(rows))])
    ax.set_ylim(len(rows) - 0.5, -0.5)
    ax.set_xlim(0, makespan)
    ax.set_xlabel(xlabel)
    handles = [Patch(facecolor=COLORS[kind], label=text_in(lang, f"figure.timeline.{kind}"))
               for kind in LEGEND if kind in kinds_seen]
    fig.legend(handles=handles, loc="upper right", ncol=len(handles), frameon=False,
               bbox_to_anchor=(0.98, 1 - 0.45 / height))
    fig.suptitle(title, x=0.08, y=1 - 0.1 / height, ha="left", va="top", fontsize=12)
    fig.savefig(path)
    return path
