"""``minimegatron run -n N [--timeout S] script.py [args]``: launch on N MPI ranks.

What the launch adds to a bare ``mpiexec`` (the right mpiexec, the abort hook on
every rank, a job that always ends and names the rank that ended it, ``--timeout``
with where each rank waits, BLAS threads per rank) is
``minimegatron/runtime/launcher.py``; this is the command: its arguments, the
banner, and the one-line errors. A TARGET that is not a ``.py`` file is a
minimegatron command: ``minimegatron run -n 8 verify``.
"""
import argparse
import os
import sys

from minimegatron import i18n
from minimegatron.commands.argtypes import finite_positive_float, positive_int
from minimegatron.commands.entry import banner
from minimegatron.runtime import launcher


def main(argv=None):
    """`minimegatron run -n N [--timeout S] TARGET [ARGS]`: the job's exit code (2: usage)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = argparse.ArgumentParser(prog="minimegatron run",
                                     description="run a script (or command) on N MPI ranks",
                                     epilog=i18n.text("run.epilog"))
    parser.add_argument("-n", "--np", type=positive_int, required=True,
                        help="number of ranks")
    parser.add_argument("--timeout", type=finite_positive_float, default=None,
                        help="after S s, report where each rank waits (HANG), kill the job")
    parser.add_argument("target", help="script.py, or a minimegatron command such as verify")
    parser.add_argument("args", nargs=argparse.REMAINDER)
    opts = parser.parse_args(argv)
    if opts.target.endswith(".py") and not os.path.isfile(opts.target):
        parser.error(f"no such script: {opts.target}")
    banner("run")
    root = launcher.package_root(opts.target)
    if root != launcher.PACKAGE_ROOT:
        print(f"minimegatron run: the ranks import {os.path.join(root, 'minimegatron')} (beside "
              "the script)", flush=True)
    try:
        cmd = launcher.build_command(opts.np, opts.target, opts.args)
    except FileNotFoundError as err:              # no (matching) mpiexec: one line
        print(f"minimegatron run: error: {err}", file=sys.stderr, flush=True)
        return 2
    env = launcher.child_env(opts.np, root=root)
    return launcher.supervise(cmd, opts.np, timeout=opts.timeout, env=env)
