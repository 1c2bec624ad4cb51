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
from minimegatron.tools import calibrate


def main(argv=None):
    """`minimegatron calibrate [--out hardware.json] [--ranks N] [--no-mpi]`; returns 0."""
    ap = argparse.ArgumentParser(prog="minimegatron calibrate", description=calibrate.__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=output_path, default="hardware.json",
                    help="JSON path ('' to only print)")
    ap.add_argument("--ranks", type=positive_int, default=2,
                    help="ranks for the collective run when started alone (default 2)")
    ap.add_argument("--no-mpi", action="store_true", help="GEMM only, no MPI launch")
    ap.add_argument("--collectives-only", action="store_true", help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    from minimegatron.runtime.threads import world_size_from_env
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
            print(f"wrote {a.out} (read it with --hardware {a.out})")
    return 0
