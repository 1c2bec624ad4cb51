"""``minimegatron timeline``: draw a pipeline schedule (simulated) or a traced run.

The rows, the text grid and the Gantt chart are ``minimegatron/tools/timeline.py`` (its
docstring has the trace format); this is the command: its arguments and the lines it
prints (makespan, bubble next to its formula, activations held at peak). The picture's title,
axis and legend are in the reader's language (MINIMEGATRON_LANG, i18n/*_figures.py); Korean
needs a Korean font, else English and one line naming it (tools/fonts.drawing_language).

    minimegatron timeline --schedule gpipe --stages 4 --micro-batches 8
    minimegatron timeline --schedule 1f1b --stages 4 --micro-batches 8 --t-backward 2
    minimegatron timeline --schedule interleaved --stages 4 --chunks 2 --micro-batches 8
    minimegatron timeline --schedule zb-h1 --stages 4 --micro-batches 8 --t-weight 1
    minimegatron timeline --schedule dualpipe --stages 8 --micro-batches 20
    minimegatron timeline --trace trace.json --out run.png
"""
import json
import sys

from minimegatron.commands.argtypes import (chunk_count, existing_file, finite_nonnegative_float,
                                            finite_positive_float, micro_batch_count,
                                            output_path, stage_count)
from minimegatron.commands.entry import banner
from minimegatron.commands.parser import ArgumentParser, say
from minimegatron.i18n import language, text_in
from minimegatron.parallel.pipeline_parallel import dualpipe
from minimegatron.parallel.pipeline_parallel.schedules import (SCHEDULES, SPLIT, bubble_formula,
                                                               chunk_share, chunks_per_stage,
                                                               get_schedule, peak_in_flight)
from minimegatron.parallel.pipeline_parallel.simulator import simulate
from minimegatron.parallel.pipeline_parallel.zero_bubble import bubble_table
from minimegatron.tools import chrome_trace
from minimegatron.tools.fonts import drawing_language
from minimegatron.tools.timeline import (bubble_from_rows, draw_timeline, rows_from_simulation,
                                         rows_from_trace, text_grid)


def _simulated(args, lang):
    chunks = args.chunks or (2 if args.schedule == "interleaved" else 1)
    split = args.schedule in SPLIT
    t_weight = args.t_weight if args.t_weight is not None else float(split)  # zb: T_W = 1
    times = (args.t_forward, args.t_backward)
    sim = simulate(args.schedule, args.stages, args.micro_batches, *times, chunks, t_weight)
    micro_batches = 1 if args.schedule == "naive" else args.micro_batches
    schedule = get_schedule(args.schedule, chunks)
    peaks = [peak_in_flight(schedule(args.stages, args.micro_batches, stage))
             for stage in range(args.stages)]
    formula = bubble_formula(args.stages, micro_batches, chunks)
    print(text_grid(sim))
    bubble = text_in(lang, "figure.timeline.bubble", fraction=sim.bubble_fraction,
                     formula=formula)
    if split:
        bubble = _zero_bubble_lines(args, sim, t_weight, peaks, lang)
    elif chunks == 1:
        print(say("report.timeline.gpipe", makespan=sim.makespan,
                  fraction=sim.bubble_fraction, formula=formula, value=float(formula)))
        print(say("report.timeline.held", peaks=peaks))
    else:
        plain = bubble_formula(args.stages, micro_batches)
        print(say("report.timeline.interleaved", makespan=sim.makespan,
                  fraction=sim.bubble_fraction, formula=formula, plain=plain,
                  plain_value=float(plain), ratio=sim.bubble_ratio))
        print(say("report.timeline.chunk_held", peaks=peaks, chunks=chunks))
    name = args.schedule + (f" v={chunks}" if chunks > 1 else "")
    title = text_in(lang, "figure.timeline.title", name=name, stages=args.stages,
                    micro_batches=micro_batches, bubble=bubble,
                    peaks=", ".join(map(str, peaks)))
    return (rows_from_simulation(sim), title, "stage", text_in(lang, "figure.timeline.x"),
            chrome_trace.from_simulation(sim))


def _zero_bubble_lines(args, sim, t_weight, peaks, lang):
    """Print a zero-bubble schedule's bubble beside 1F1B's at the same times; the title's."""
    K, times = args.stages, (args.t_forward, args.t_backward, t_weight)
    plain = simulate("1f1b", K, args.micro_batches, *times[:2], t_weight=t_weight)
    plain_peaks = [peak_in_flight(get_schedule("1f1b")(K, args.micro_batches, stage))
                   for stage in range(K)]
    table_of = dualpipe.table_row if args.schedule in dualpipe.DUALPIPE else bubble_table
    table, expression, holds, assumption = table_of(args.schedule, K, *times)
    plain_table, plain_expression, _, _ = bubble_table("1f1b", K, *times)
    print(say("report.timeline.zb_times", forward=times[0], backward=times[1],
              weight=times[2]))
    assumes = "" if holds else say("report.timeline.zb_assumes", assumption=assumption)
    print(say("report.timeline.zb_bubble", schedule=args.schedule, bubble=sim.bubble,
              expression=expression, table=table, assumes=assumes, plain=plain.bubble,
              plain_expression=plain_expression, plain_table=plain_table))
    print(say("report.timeline.zb_makespan", makespan=sim.makespan, plain=plain.makespan,
              fraction=sim.bubble_fraction, plain_fraction=plain.bubble_fraction))
    chunks = chunks_per_stage(args.schedule)                  # zbv: 2, each half the layers
    if args.schedule in dualpipe.DUALPIPE:                    # DeepSeek's PP + 1 stages
        share = chunk_share(args.schedule, chunks)
        print(say("report.timeline.dual_held", peaks=peaks, plain_peaks=plain_peaks,
                  stages=", ".join(f"{float(p * share):g}" for p in peaks)))
    else:
        print(say("report.timeline.zb_chunk_held" if chunks > 1 else "report.timeline.zb_held",
                  peaks=peaks, plain_peaks=plain_peaks, chunks=chunks))
    return text_in(lang, "figure.timeline.zb_bubble", weight=t_weight, bubble=sim.bubble,
                   plain=plain.bubble, expression=expression)


def _traced(args, lang):
    with open(args.trace) as file:
        spans = json.load(file)
    rows = rows_from_trace(spans)
    bubble = bubble_from_rows(rows)
    for rank, row in enumerate(rows):
        compute = sum(end - start for start, end, kind, _ in row if kind != "comm")
        comm = sum(end - start for start, end, kind, _ in row if kind == "comm")
        print(say("report.timeline.rank", rank=rank, compute=compute, comm=comm))
    print(say("report.timeline.measured", bubble=bubble))
    title = text_in(lang, "figure.timeline.trace", path=args.trace, ranks=len(rows),
                    bubble=bubble)
    return (rows, title, "rank", text_in(lang, "figure.timeline.seconds"),
            chrome_trace.from_trace(spans, title))


def main(argv=None):
    """Draw a simulated schedule or a trace: 0 when written, 1 without matplotlib."""
    def msg(key):
        return say(f"cli.timeline.{key}")
    parser = ArgumentParser(prog="minimegatron timeline", description=msg("description"))
    parser.add_argument("--schedule", choices=list(SCHEDULES), default="gpipe",
                        help=msg("schedule"))
    parser.add_argument("--stages", type=stage_count, default=4, metavar="K",
                        help=msg("stages"))
    parser.add_argument("--micro-batches", type=micro_batch_count, default=8, metavar="M",
                        help=msg("micro_batches"))
    parser.add_argument("--chunks", type=chunk_count, default=None, metavar="V",
                        help=msg("chunks"))
    parser.add_argument("--t-forward", type=finite_positive_float, default=1.0, metavar="T",
                        help=msg("t_forward"))
    parser.add_argument("--t-backward", type=finite_positive_float, default=1.0, metavar="T",
                        help=msg("t_backward"))
    parser.add_argument("--t-weight", type=finite_nonnegative_float, default=None,
                        metavar="T", help=msg("t_weight"))
    parser.add_argument("--out", type=output_path, default="timeline.png", metavar="PNG",
                        help=msg("out"))
    parser.add_argument("--trace", type=existing_file, metavar="JSON", help=msg("trace"))
    parser.add_argument("--chrome-trace", type=output_path, default=None, metavar="JSON",
                        help=msg("chrome_trace"))
    args = parser.parse_args(argv)
    banner("timeline")
    # the picture in the reader's language; English (and a line why) with no Korean font
    lang = drawing_language(language()) if args.out else language()
    try:
        rows, title, row_name, xlabel, trace = (_traced if args.trace else _simulated)(args,
                                                                                      lang)
    except (TypeError, KeyError, IndexError, json.JSONDecodeError) as error:
        if not args.trace:                    # (JSONDecodeError is a ValueError: first here)
            raise                                          # a bug, not bad input: traceback
        parser.error(say("cli.timeline.bad_trace", path=repr(args.trace),
                               error=repr(error)))
    except ValueError as error:
        parser.error(str(error))
    if args.chrome_trace:
        print(say("cli.timeline.wrote_chrome",
                        path=chrome_trace.write(trace, args.chrome_trace)))
    if args.out:
        try:
            draw_timeline(rows, args.out, title, row_name, xlabel, lang)
        except ImportError as error:
            print(error, file=sys.stderr)
            return 1
        print(say("cli.wrote", path=args.out))
    return 0
