"""``minimegatron memory``: the calculator (memory.py) and the scaling model (scaling.py).

    minimegatron memory --layers 72 --hidden 3072 --heads 32 --dp 64 --tp 8 --zero 1
    minimegatron memory table1 | table2 | zero | scaling [--hardware calib.json]
    minimegatron memory --tp 8 --sequence-parallel
    minimegatron memory --cp 4 --attention ring     (context parallel: s/cp tokens per rank)
    minimegatron memory mixed        (bytes per parameter measured vs formula: memory_mixed.py)
    minimegatron memory moe --experts 8 --top-k 2 --ep 4   (mixture of experts: memory_moe.py)

The figures are plain functions of ``minimegatron/tools/`` (memory.py, scaling.py,
memory_mixed.py, memory_moe.py); this is the command: its arguments, the checks that
fail in one line before any work, and the printing.
"""
import argparse

from minimegatron.commands.argtypes import existing_file, positive_int
from minimegatron.tools import memory, scaling


def main(argv=None):
    """`minimegatron memory [config | table1 | table2 | zero | scaling] [flags]`; returns 0."""
    ap = argparse.ArgumentParser(prog="minimegatron memory", description=memory.__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("view", nargs="?", default="config",
                    choices=["config", "table1", "zero", "scaling", "table2", "mixed", "moe"])
    for flag, default in [("layers", 72), ("hidden", 3072), ("heads", 32), ("vocab", 51200),
                          ("seq", 1024), ("dp", 1), ("pp", 1), ("tp", 1), ("cp", 1),
                          ("micro-batch", 8), ("micro-batches", 1)]:
        ap.add_argument(f"--{flag}", type=positive_int, default=default)
    ap.add_argument("--zero", type=int, choices=[0, 1, 2, 3], default=0)
    ap.add_argument("--schedule", choices=["1f1b", "gpipe"], default="1f1b")
    ap.add_argument("--checkpoint", action="store_true", help="activation checkpointing")
    ap.add_argument("--precision", choices=list(memory.PRECISIONS), default=memory.MIXED)
    ap.add_argument("--sequence-parallel", action="store_true",
                    help="split LayerNorm/dropout activations by tokens over tp (Table 2)")
    ap.add_argument("--attention", choices=list(memory.ATTENTION), default="ring",
                    help="the context-parallel variant when --cp > 1 (what a layer keeps)")
    moe = ap.add_argument_group(
        "mixture of experts",
        "view moe: total and active parameters, expert parameters per rank under ep, the "
        "dispatch buffer (tools/memory_moe.py), e.g. minimegatron memory moe --experts 8 "
        "--top-k 2 --ep 4 --dp 8")
    moe.add_argument("--experts", type=positive_int, default=8, help="E experts per MoE layer")
    moe.add_argument("--top-k", type=positive_int, default=2, help="experts per token")
    moe.add_argument("--ep", type=positive_int, default=1,
                     help="expert-parallel ranks, folded over dp x cp (must divide both)")
    moe.add_argument("--moe-every", type=positive_int, default=1,
                     help="MoE in blocks i with (i+1) %% every == 0 (2: every other)")
    moe.add_argument("--capacity-factor", type=float, default=1.0,
                     help="C = ceil(k s f / E) per sequence; 0 = dropless")
    ap.add_argument("--hardware", type=existing_file,
                    help="JSON from `minimegatron calibrate` (default DGX-2H)")
    a = ap.parse_args(argv)
    try:
        hw = scaling.Hardware.from_json(a.hardware) if a.hardware else scaling.Hardware()
    except (OSError, ValueError, KeyError, TypeError) as error:   # not calibrate's JSON
        ap.error(f"argument --hardware: cannot read {a.hardware!r}: {error!r}")
    if a.view == "config":
        if a.layers % a.pp or a.hidden % a.tp or a.heads % a.tp:   # before any work
            ap.error(f"--layers {a.layers} must divide by --pp {a.pp}, and --hidden "
                     f"{a.hidden} and --heads {a.heads} by --tp {a.tp}")
        parts = a.cp if a.attention == "ulysses" else 2 * a.cp        # zigzag: 2cp chunks
        if a.cp > 1 and a.seq % parts:
            ap.error(f"--cp {a.cp}: --seq {a.seq} must divide into {parts} equal chunks")
        if a.cp > 1 and a.attention == "ulysses" and (a.heads // a.tp) % a.cp:
            ap.error(f"--attention ulysses: the {a.heads // a.tp} heads of a tp rank must "
                     f"divide by --cp {a.cp}")
        if a.sequence_parallel and (a.seq // a.cp) % a.tp:
            ap.error(f"--sequence-parallel: --seq {a.seq} / --cp {a.cp} must divide by "
                     f"--tp {a.tp}")
        print(memory.config_text(a))
        g = memory.GPTShape(a.vocab, a.seq, a.layers, a.hidden, a.heads)
        t = scaling.step_time(g, hw, a.dp, a.tp, a.pp, a.micro_batch, a.micro_batches,
                              a.checkpoint, memory.PRECISIONS[a.precision])
        print(f"predicted step on {hw.name} (scaling.step_time, ZeRO and cp ignored): "
              f"{t['total']:.3g} s = compute {t['compute']:.3g} + tp {t['tp']:.3g} + dp "
              f"{t['dp']:.3g} + pp {t['pp']:.3g}; efficiency {t['efficiency']:.0%}")
    elif a.view == "table2":
        print(memory.table2_text())
    elif a.view == "moe":
        from minimegatron.tools.memory_moe import moe_text
        if a.experts % a.ep or (a.dp * a.cp) % a.ep or a.top_k > a.experts:
            ap.error(f"--ep {a.ep} must divide --experts {a.experts} and dp x cp = "
                     f"{a.dp * a.cp}, and --top-k {a.top_k} <= --experts")
        print(moe_text(a))
    elif a.view == "mixed":
        from minimegatron.checks.mixed import measured_per_param
        from minimegatron.tools.memory_mixed import mixed_text
        print(mixed_text(*measured_per_param()))
    else:
        print(scaling.report(hw) if a.view == "scaling"
              else memory.table1_text() if a.view == "table1" else memory.zero_text())
    return 0
