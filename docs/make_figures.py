"""Regenerate every figure in docs/img/ from the real code (about ten seconds).

    python docs/make_figures.py              # writes docs/img/*.png and docs/img/*.ko.png
    python docs/make_figures.py --out /tmp/x # somewhere else (tests/test_docs.py does this)
    python docs/make_figures.py --lang en    # the English figures only (no Korean font needed)

A figure whose words matter (KOREAN) is drawn twice: NAME.png with the English texts of
minimegatron/i18n/en_figures.py, NAME.ko.png with ko_figures.py's, for the Korean pages. The
Korean pass needs a Korean font (minimegatron/tools/fonts.py names them and stops with what to
install when matplotlib knows none); a glyph missing from the fonts is an error, never a box.
The pipeline timelines are too: ``minimegatron timeline`` draws in its reader's language
(MINIMEGATRON_LANG, set here per pass), keeping the notes' terms (stage, forward, backward,
bubble, F3 / B3); the measured ones are drawn again in Korean from the English run's Chrome
trace. TERMS_ONLY would list a figure whose words are all the notes' terms (none now).

The pipeline timelines are drawn by ``minimegatron timeline`` itself
(``minimegatron.commands.timeline.main``), from the action lists of
``minimegatron/parallel/pipeline_parallel/schedules.py`` timed by ``simulate`` (simulator.py);
the bubble and memory plots read the same ``simulate`` and ``peak_in_flight``. So a
change in a schedule changes the pictures, and the pages cannot drift from the code.
The ``pipeline_trace_*`` pictures are measured, not simulated: they come from a
real 4-rank run of tutorials/07_pipeline.py, started with ``minimegatron run``.
"""
import argparse
import contextlib
import functools
import io
import json
import os
import subprocess
import sys
import tempfile
import warnings

from minimegatron.i18n import ENV, speaking, text_in
from minimegatron.parallel.pipeline_parallel.schedules import (SCHEDULES, bubble_formula,
                                                               peak_in_flight)
from minimegatron.parallel.pipeline_parallel.simulator import simulate
from minimegatron.commands import timeline
from minimegatron.tools import chrome_trace
from minimegatron.tools.timeline import draw_timeline as draw_rows
from minimegatron.tools.timeline import measured_heading, rows_from_trace
from minimegatron.tools.fonts import NoKoreanFont, korean_rc, no_tofu

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# the figures drawn in Korean too (NAME.ko.png), and those whose words are the notes' terms
KOREAN = ("bubble_vs_micro_batches", "activations_in_flight", "context_parallel",
          "sequence_parallel_trace", "loss_scale", "moe_load", "precision_ranges",
          "timeline_naive", "timeline_gpipe", "timeline_1f1b", "timeline_interleaved",
          "timeline_zb_h1", "timeline_zb_h2", "timeline_zbv", "timeline_dualpipe",
          "timeline_dualpipev", "pipeline_trace_naive", "pipeline_trace_gpipe_M4",
          "pipeline_trace_1f1b_M4")
TERMS_ONLY = ()

STAGES, MICRO_BATCHES = 4, 8
COLORS = {"gpipe": "#4C78A8", "1f1b": "#F58518", "formula": "#333333"}
PNG_META = {"Software": None}  # no matplotlib version in the file: reruns give equal bytes


def png(out, name, lang):
    """out/NAME.png for English, out/NAME.ko.png for Korean."""
    return os.path.join(out, name + ("" if lang == "en" else "." + lang) + ".png")


@functools.lru_cache(maxsize=None)
def tutorial_run(script, ranks, *args, lang="en"):
    """{file name: bytes} a real run of tutorials/SCRIPT on RANKS ranks wrote to its --out,
    run by a reader of ``lang`` (kept: the Korean pass draws from the English pass's run,
    but for the pictures the tutorial draws itself in its reader's language)."""
    with tempfile.TemporaryDirectory() as run_dir:
        subprocess.run([sys.executable, "-m", "minimegatron", "run", "-n", str(ranks),
                        "--timeout", "300", os.path.join(ROOT, "tutorials", script), *args,
                        "--out", run_dir], check=True, capture_output=True, cwd=ROOT,
                       env={**os.environ, ENV: lang})
        files = {}
        for name in os.listdir(run_dir):
            with open(os.path.join(run_dir, name), "rb") as f:
                files[name] = f.read()
        return files


def copy_out(data, path):
    with open(path, "wb") as f:
        f.write(data)
    return path


def draw_timeline(out, name, lang, *argv):
    """out/NAME.png (or .ko.png): ``minimegatron timeline ARGV`` run by a reader of ``lang``."""
    path = png(out, name, lang)
    with speaking(lang), contextlib.redirect_stdout(io.StringIO()):   # a text grid too
        timeline.main([*argv, "--out", path])
    return path


def timelines(out, lang="en"):
    """timeline_naive.png, timeline_gpipe.png, timeline_1f1b.png for K=4, M=8.

    The naive schedule runs the whole batch (M micro-batches' worth) as one
    step, so its steps take M time units: all three share one time unit, the
    forward of one micro-batch, and their makespans compare (64 vs 22 vs 22).
    """
    paths = []
    for name in ("naive", "gpipe", "1f1b"):
        step = str(MICRO_BATCHES if name == "naive" else 1)
        paths.append(draw_timeline(out, f"timeline_{name}", lang, "--schedule", name,
                                   "--stages", str(STAGES), "--micro-batches",
                                   str(MICRO_BATCHES), "--t-forward", step,
                                   "--t-backward", step))
    return paths


def bubble_vs_micro_batches(out, lang="en"):
    """Simulated bubble of GPipe and 1F1B against M, with (K-1)/(M+K-1) drawn through it."""
    from matplotlib.figure import Figure
    fig = Figure(figsize=(7, 3.6), dpi=100)
    ax = fig.add_axes((0.1, 0.14, 0.86, 0.76))
    micro_batches = list(range(1, 33))
    for stages, marker in ((2, "o"), (4, "s"), (8, "^")):
        formula = [float(bubble_formula(stages, m)) for m in micro_batches]
        ax.plot(micro_batches, formula, color=COLORS["formula"], linewidth=1, zorder=1)
        for name in ("gpipe", "1f1b"):
            sim = [simulate(name, stages, m).bubble_fraction for m in micro_batches]
            ax.scatter(micro_batches, sim, s=14 if name == "gpipe" else 40,
                       marker=marker, facecolors=COLORS[name] if name == "gpipe" else "none",
                       edgecolors=COLORS[name], zorder=2,
                       label=f"K={stages} {'GPipe' if name == 'gpipe' else '1F1B'}")
        ax.axvline(4 * stages, color="#BBBBBB", linestyle=":", linewidth=1, zorder=0)
        ax.text(4 * stages - 0.3, 0.95, f"M = 4K = {4 * stages}", fontsize=8, color="#777777",
                ha="right", va="top")
    ax.set_xlabel(text_in(lang, "figure.bubble.x"))
    ax.set_ylabel(text_in(lang, "figure.bubble.y"))
    ax.set_ylim(0, 1.0)
    ax.set_xlim(0, 33)
    ax.legend(fontsize=8, ncol=3, frameon=False, loc="center right", bbox_to_anchor=(1, 0.6))
    ax.set_title(text_in(lang, "figure.bubble.title"), fontsize=10)
    path = png(out, "bubble_vs_micro_batches", lang)
    fig.savefig(path, metadata=PNG_META)
    return [path]


def activations_in_flight(out, lang="en"):
    """Peak micro-batches whose activations a stage holds: GPipe M, 1F1B min(M, K-k)."""
    from matplotlib.figure import Figure
    fig = Figure(figsize=(7, 2.8), dpi=100)
    ax = fig.add_axes((0.1, 0.17, 0.86, 0.7))
    stages = list(range(STAGES))
    width = 0.38
    for offset, name in ((-width / 2, "gpipe"), (width / 2, "1f1b")):
        peaks = [peak_in_flight(SCHEDULES[name](STAGES, MICRO_BATCHES, k)) for k in stages]
        bars = ax.bar([k + offset for k in stages], peaks, width, color=COLORS[name],
                      label="GPipe (M)" if name == "gpipe" else "1F1B (min(M, K-k))")
        ax.bar_label(bars, fontsize=8)
    ax.set_xticks(stages, [f"stage {k}" for k in stages])
    ax.set_ylabel(text_in(lang, "figure.activations.y"))
    ax.set_ylim(0, MICRO_BATCHES * 1.4)
    ax.legend(fontsize=8, frameon=False, loc="upper center", ncol=2)
    ax.set_title(text_in(lang, "figure.activations.title", stages=STAGES,
                         micro_batches=MICRO_BATCHES), fontsize=10)
    path = png(out, "activations_in_flight", lang)
    fig.savefig(path, metadata=PNG_META)
    return [path]


def real_run_traces(out, lang="en"):
    """pipeline_trace_*.png: each rank's traced forward/backward/wait spans, 4 real ranks
    (the tutorial's own pictures; the Korean ones: the same run drawn again from the Chrome
    trace beside each, which carries the heading's numbers)."""
    names = {"naive_M1": "pipeline_trace_naive", "gpipe_M4": "pipeline_trace_gpipe_M4",
             "1f1b_M4": "pipeline_trace_1f1b_M4"}
    run = tutorial_run("07_pipeline.py", 4)
    if lang == "en":
        return [copy_out(run[made + ".png"], png(out, name, lang))
                for made, name in names.items()]
    paths = []
    for made, name in names.items():
        trace = json.loads(run[made + ".json"])
        rows = rows_from_trace(chrome_trace.spans_from(trace))
        paths.append(draw_rows(rows, png(out, name, lang),
                               measured_heading(lang, **trace["otherData"]), "stage",
                               text_in(lang, "figure.timeline.seconds"), lang))
    return paths


def interleaved_timeline(out, lang="en"):
    """timeline_interleaved.png: K=4 ranks, v=2 model chunks, M=8 (docs/interleaved.md)."""
    return [draw_timeline(out, "timeline_interleaved", lang, "--schedule", "interleaved",
                          "--stages", str(STAGES), "--chunks", "2", "--micro-batches",
                          str(MICRO_BATCHES))]


def zero_bubble_timelines(out, lang="en"):
    """timeline_zb_h1.png, timeline_zb_h2.png, timeline_zbv.png: K=4, M=8, T_F = T_B = T_W
    (docs/zero_bubble.md)."""
    return [draw_timeline(out, f"timeline_{name.replace('-', '_')}", lang, "--schedule", name,
                          "--stages", str(STAGES), "--t-weight", "1", "--micro-batches",
                          str(MICRO_BATCHES))
            for name in ("zb-h1", "zb-h2", "zbv")]


def dualpipe_timelines(out, lang="en"):
    """timeline_dualpipe.png (K=8 ranks, M=20: DeepSeek's picture) and timeline_dualpipev.png
    (the V on 4 ranks, the same 8 stages), F = B = W per stage (docs/zero_bubble.md)."""
    runs = {"dualpipe": ["--stages", "8"],
            "dualpipev": ["--stages", "4", "--t-forward", "2", "--t-backward", "2",
                          "--t-weight", "2"]}
    return [draw_timeline(out, f"timeline_{name}", lang, "--schedule", name,
                          "--micro-batches", "20", *sizes) for name, sizes in runs.items()]


def sequence_parallel_trace(out, lang="en"):
    """sequence_parallel_trace.png: one block's tp collectives, traced on 4 real ranks
    (tutorials/10_sequence_parallel.py --out), in order, each box as wide as its bytes."""
    from minimegatron.tools.sp_picture import draw_sequence_parallel
    run = json.loads(tutorial_run("10_sequence_parallel.py", 4)["sp_trace.json"])
    return [draw_sequence_parallel(run, png(out, "sequence_parallel_trace", lang), lang)]


@functools.lru_cache(maxsize=None)
def mixed_records(steps, growth_interval):
    """The records of a real float16 run (both languages draw the same run)."""
    from minimegatron.checks.mixed import run_mixed
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)            # the overflows themselves
        return run_mixed(None, "serial", steps, growth_interval=growth_interval,
                         init_scale=2.0 ** 16)["records"]


def loss_scale_over_steps(out, lang="en", steps=80, growth_interval=8):
    """The dynamic loss scale of a real float16 run (checks/mixed.run_mixed, one process):
    starts at Megatron's 2^16, halves on each (natural) overflow, doubles after 8 clean steps."""
    from matplotlib.figure import Figure
    records = mixed_records(steps, growth_interval)
    fig = Figure(figsize=(7, 2.8), dpi=100)
    ax = fig.add_axes((0.1, 0.17, 0.86, 0.7))
    ax.step(range(steps), [r["scale"] for r in records], where="post", color=COLORS["1f1b"],
            label=text_in(lang, "figure.loss_scale.used"))
    skipped = [i for i, r in enumerate(records) if r["skipped"]]
    ax.plot(skipped, [records[i]["scale"] for i in skipped], "x", color=COLORS["formula"],
            label=text_in(lang, "figure.loss_scale.skipped", skipped=len(skipped),
                          steps=steps))
    ax.set_yscale("log", base=2)
    ax.set_xlabel(text_in(lang, "figure.loss_scale.x"))
    ax.legend(fontsize=8, frameon=False, loc="lower right")
    ax.set_title(text_in(lang, "figure.loss_scale.title", interval=growth_interval),
                 fontsize=10)
    path = png(out, "loss_scale", lang)
    fig.savefig(path, metadata=PNG_META)
    return [path]

def context_parallel_picture(out, lang="en"):
    """context_parallel.png: S = 16 tokens over cp = 4, both splits, the causal pairs per
    rank and the ring (docs/context_parallel.md, tutorials/12)."""
    from minimegatron.tools.cp_picture import draw_context_parallel
    return [draw_context_parallel(16, 4, png(out, "context_parallel", lang), lang)]


def moe_load_picture(out, lang="en"):
    """moe_load.png: the load per expert and per rank over 4 steps of a real 8-rank run of
    tutorials/14_mixture_of_experts.py (ep = 4 over dp = 8; docs/moe.md)."""
    run = tutorial_run("14_mixture_of_experts.py", 8, "--steps", "4")
    if lang == "en":                                    # the tutorial's own picture
        return [copy_out(run["14_mixture_of_experts.png"], png(out, "moe_load", lang))]
    from minimegatron.tools.moe_picture import draw_moe_load
    numbers = json.loads(run["14_mixture_of_experts.json"])
    return [draw_moe_load(numbers["loads"], numbers["rows"], numbers["uniform"],
                          numbers["padded"], png(out, "moe_load", lang), lang)]


def precision_ranges(out, lang="en"):
    """precision_ranges.png: the ranges of float16, bf16, e4m3, e5m2 and the |gradients| of a
    real bf16 GPT step (docs/mixed_precision.md, "bf16 and fp8"; tools/precision_picture.py)."""
    from minimegatron.tools.precision_picture import draw_precision_ranges
    return [draw_precision_ranges(png(out, "precision_ranges", lang), lang)]


FIGURES = (timelines, bubble_vs_micro_batches, activations_in_flight, real_run_traces,
           interleaved_timeline, zero_bubble_timelines, dualpipe_timelines,
           context_parallel_picture, sequence_parallel_trace, loss_scale_over_steps,
           moe_load_picture, precision_ranges)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "img"))
    parser.add_argument("--lang", choices=("all", "en", "ko"), default="all",
                        help="en: NAME.png; ko: the Korean NAME.ko.png; all: both (default)")
    args = parser.parse_args(argv)
    import matplotlib
    try:
        korean = korean_rc() if args.lang in ("all", "ko") else None   # before any drawing
    except NoKoreanFont as error:
        print(f"make_figures.py --lang {args.lang}: {error}", file=sys.stderr)
        return 1
    os.makedirs(args.out, exist_ok=True)
    passes = [("en", {})] if args.lang in ("all", "en") else []
    passes += [("ko", korean)] if korean else []
    for lang, rc in passes:
        with matplotlib.rc_context(rc), no_tofu():
            for make in FIGURES:                 # each draws NAME.png, or NAME.ko.png for ko
                for path in make(args.out, lang):
                    print(f"wrote {path} ({os.path.getsize(path) // 1024} KB)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
