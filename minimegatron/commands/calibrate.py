"""``minimegatron calibrate``: measure this machine's GEMM, engine and all-reduce rates.

The measuring is ``minimegatron/tools/calibrate.py`` (its docstring has the model);
this is the command: its arguments, the MPI world when started under mpiexec, the
summary and the JSON file.

    minimegatron calibrate --out hardware.json
    minimegatron run -n 4 calibrate --out hardware.json
"""
import argparse
import json

from minimegatron.commands.argtypes import output_path, positive_int
from minimegatron.commands.parser import ArgumentParser, say
from minimegatron.tools import calibrate


def main(argv=None):
    """`minimegatron calibrate [--out hardware.json] [--ranks N] [--no-mpi]`; returns 0."""
    ap = ArgumentParser(prog="minimegatron calibrate",
                        description=say("cli.calibrate.description"))
    ap.add_argument("--out", type=output_path, default="hardware.json", metavar="JSON",
                    help=say("cli.calibrate.out"))
    ap.add_argument("--ranks", type=positive_int, default=2, metavar="N",
                    help=say("cli.calibrate.ranks"))
    ap.add_argument("--no-mpi", action="store_true", help=say("cli.calibrate.no_mpi"))
    ap.add_argument("--collectives-only", action="store_true", help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    from minimegatron.runtime.rank_setup import world_size_from_env
    group = None
    if world_size_from_env() > 1 and not a.no_mpi:
        from minimegatron import comm
        group = comm.world()
    if a.collectives_only:
        m = calibrate.collectives(group) if group is not None else {}
    else:
        m = calibrate.measure(group, a.ranks, use_mpi=not a.no_mpi)
    if group is not None and group.rank != 0:
        return 0
    if not a.collectives_only:
        print(calibrate.summary(m))
    if a.out:
        with open(a.out, "w") as f:
            json.dump(m, f, indent=1)
        if not a.collectives_only:
            print(say("cli.calibrate.wrote", path=a.out))
    return 0
