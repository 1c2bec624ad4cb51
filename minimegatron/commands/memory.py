"""``minimegatron memory``: the calculator (memory.py) and the scaling model (scaling.py).

    minimegatron memory --layers 72 --hidden 3072 --heads 32 --dp 64 --tp 8 --zero 1
    minimegatron memory table1 | table2 | zero | scaling [--hardware calib.json]
    minimegatron memory --tp 8 --sequence-parallel
    minimegatron memory --cp 4 --attention ring     (context parallel: s/cp tokens per rank)
    minimegatron memory mixed        (bytes per parameter measured vs formula: memory_mixed.py)
    minimegatron memory moe --experts 8 --top-k 2 --ep 4   (mixture of experts: memory_moe.py)

The figures are plain functions of ``minimegatron/tools/`` (memory.py, scaling.py,
memory_mixed.py, memory_moe.py); this is the command: its arguments (each a checked
type of argtypes.py, --schedule any schedule of the pipeline registry), the checks
that fail in one line before any work, and the printing.
"""
from minimegatron.commands.argtypes import (MAX_MICRO_BATCHES, existing_file,
                                            finite_nonnegative_float, nonnegative_int,
                                            positive_int, stage_count)
from minimegatron.commands.parser import ArgumentParser, say
from minimegatron.parallel.pipeline_parallel.schedules import SCHEDULES
from minimegatron.tools import memory, scaling

SIZES = [("layers", 72, "L"), ("hidden", 3072, "H"), ("heads", 32, "A"),
         ("vocab", 51200, "V"), ("seq", 1024, "S"), ("dp", 1, "N"), ("pp", 1, "K"),
         ("tp", 1, "T"), ("cp", 1, "C"), ("micro-batch", 8, "B"), ("micro-batches", 1, "M")]


def parser():
    """The argument parser: every flag a checked type, every flag a help text."""
    def msg(key, **fields):
        return say(f"cli.memory.{key}", **fields)
    ap = ArgumentParser(prog="minimegatron memory", description=msg("description"))
    ap.add_argument("view", nargs="?", default="config", help=msg("view"),
                    choices=["config", "table1", "zero", "scaling", "table2", "mixed", "moe"])
    for flag, default, metavar in SIZES:
        kind = stage_count if flag == "pp" else positive_int      # --pp: a row per stage
        ap.add_argument(f"--{flag}", type=kind, default=default, metavar=metavar,
                        help=msg(flag.replace("-", "_")))
    ap.add_argument("--zero", type=nonnegative_int, choices=[0, 1, 2, 3], default=0,
                    help=msg("zero"))
    ap.add_argument("--schedule", choices=list(SCHEDULES), default="1f1b",
                    help=msg("schedule"))
    ap.add_argument("--checkpoint", action="store_true", help=msg("checkpoint"))
    ap.add_argument("--precision", choices=list(memory.PRECISIONS), default=memory.MIXED,
                    help=msg("precision"))
    ap.add_argument("--sequence-parallel", action="store_true", help=msg("sequence_parallel"))
    ap.add_argument("--attention", choices=list(memory.ATTENTION), default="ring",
                    help=msg("attention"))
    moe = ap.add_argument_group(msg("moe_title"), msg("moe_description"))
    moe.add_argument("--experts", type=positive_int, default=8, metavar="E",
                     help=msg("experts"))
    moe.add_argument("--top-k", type=positive_int, default=2, metavar="K", help=msg("top_k"))
    moe.add_argument("--ep", type=positive_int, default=1, help=msg("ep"))
    moe.add_argument("--moe-every", type=positive_int, default=1, metavar="N",
                     help=msg("moe_every"))
    moe.add_argument("--capacity-factor", type=finite_nonnegative_float, default=1.0,
                     metavar="F", help=msg("capacity_factor"))
    ap.add_argument("--hardware", type=existing_file, metavar="JSON", help=msg("hardware"))
    return ap


def check_config(ap, a):
    """The grid must split the model: one line (ap.error) before any work."""
    if a.hidden % a.heads:
        ap.error(say("cli.memory.heads_split", hidden=a.hidden, heads=a.heads))
    if a.layers % a.pp or a.hidden % a.tp or a.heads % a.tp:
        ap.error(say("cli.memory.split", layers=a.layers, pp=a.pp, hidden=a.hidden,
                           heads=a.heads, tp=a.tp))
    if a.schedule not in ("gpipe", "1f1b") and a.micro_batches > MAX_MICRO_BATCHES:
        ap.error(say("cli.memory.enumerated", schedule=a.schedule, most=MAX_MICRO_BATCHES,
                     micro=a.micro_batches))
    parts = a.cp if a.attention == "ulysses" else 2 * a.cp        # zigzag: 2cp chunks
    if a.cp > 1 and a.seq % parts:
        ap.error(say("cli.memory.cp_chunks", cp=a.cp, seq=a.seq, parts=parts))
    if a.cp > 1 and a.attention == "ulysses" and (a.heads // a.tp) % a.cp:
        ap.error(say("cli.memory.ulysses", heads=a.heads // a.tp, cp=a.cp))
    if a.sequence_parallel and (a.seq // a.cp) % a.tp:
        ap.error(say("cli.memory.sp", seq=a.seq, cp=a.cp, tp=a.tp))
    try:                                   # the schedule's own rule (M, K, chunks)
        [memory.in_flight(a.pp, a.micro_batches, stage, a.schedule) for stage in range(a.pp)]
    except ValueError as error:
        ap.error(f"--schedule {a.schedule}: {error}")


def main(argv=None):
    """`minimegatron memory [config | table1 | table2 | zero | scaling] [flags]`; returns 0."""
    ap = parser()
    a = ap.parse_args(argv)
    try:
        hw = scaling.Hardware.from_json(a.hardware) if a.hardware else scaling.Hardware()
    except (OSError, ValueError, KeyError, TypeError) as error:   # not calibrate's JSON
        ap.error(say("cli.memory.cannot_read", path=repr(a.hardware), error=repr(error)))
    if a.view == "config":
        check_config(ap, a)
        print(memory.config_text(a))
        g = memory.GPTShape(a.vocab, a.seq, a.layers, a.hidden, a.heads)
        t = scaling.step_time(g, hw, a.dp, a.tp, a.pp, a.micro_batch, a.micro_batches,
                              a.checkpoint, memory.PRECISIONS[a.precision])
        print(say("report.config.predicted", hardware=hw.name, total=t["total"],
                  compute=t["compute"], tp=t["tp"], dp=t["dp"], pp=t["pp"],
                  efficiency=t["efficiency"]))
    elif a.view == "table2":
        print(memory.table2_text())
    elif a.view == "moe":
        from minimegatron.tools.memory_moe import moe_text
        if a.experts % a.ep or (a.dp * a.cp) % a.ep or a.top_k > a.experts:
            ap.error(say("cli.memory.moe", ep=a.ep, experts=a.experts, dpcp=a.dp * a.cp,
                               top_k=a.top_k))
        print(moe_text(a))
    elif a.view == "mixed":
        from minimegatron.checks.mixed import measured_per_param, measured_precisions
        from minimegatron.tools.memory_mixed import mixed_text, precision_text
        print(precision_text(measured_precisions()) + "\n")       # bf16 and fp8 beside float16
        print(mixed_text(*measured_per_param()))
    else:
        print(scaling.report(hw) if a.view == "scaling"
              else memory.table1_text() if a.view == "table1" else memory.zero_text())
    return 0
