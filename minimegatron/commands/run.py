"""``minimegatron run -n N [--timeout S] script.py [args]``: launch on N MPI ranks.

What the launch adds to a bare ``mpiexec`` (the right mpiexec, the abort hook on
every rank, a job that always ends and names the rank that ended it, ``--timeout``
with where each rank waits, BLAS threads per rank) is
``minimegatron/runtime/launcher.py``; this is the command: its arguments, the
banner, and the one-line errors. A TARGET that is not a ``.py`` file is a
minimegatron command: ``minimegatron run -n 8 verify``.

Refused in one line, exit 2, before any rank starts: a script that does not exist, a
command that does not (said once here, not once per rank), and more ranks than the
machine holds (runtime/capacity.py: the limit, what sets it, MINIMEGATRON_MAX_RANKS).
"""
import argparse
import difflib
import os
import sys

from minimegatron.commands.argtypes import finite_positive_float, positive_int
from minimegatron.commands.cli import COMMANDS
from minimegatron.commands.entry import banner
from minimegatron.commands.parser import ArgumentParser, say
from minimegatron.runtime import capacity, launcher


def check_ranks(parser, n):
    """parser.error (one line, exit 2) when ``n`` ranks are more than this machine holds."""
    try:
        most, why = capacity.max_ranks()
    except ValueError as bad:
        parser.error(say("cli.run.bad_max", env=capacity.MAX_RANKS_ENV, value=repr(str(bad))))
    if n <= most:
        return
    if "override" in why:
        parser.error(say("cli.run.over_override", n=n, most=most, env=capacity.MAX_RANKS_ENV))
    memory = "?" if why["memory_mb"] is None else why["memory_mb"]
    parser.error(say("cli.run.too_many", n=n, most=most, cores=why["cores"],
                     per_core=capacity.RANKS_PER_CORE, memory=memory,
                     rank_mb=capacity.RANK_MB, files=why["files"],
                     per_rank=capacity.FILES_PER_RANK, env=capacity.MAX_RANKS_ENV))


def main(argv=None):
    """`minimegatron run -n N [--timeout S] TARGET [ARGS]`: the job's exit code (2: usage)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = ArgumentParser(prog="minimegatron run", description=say("cli.run.description"),
                            epilog=say("run.epilog") + ". " + say("cli.run.alternative"))
    parser.add_argument("-n", "--np", type=positive_int, required=True, metavar="N",
                        help=say("cli.run.np"))
    parser.add_argument("--timeout", type=finite_positive_float, default=None, metavar="S",
                        help=say("cli.run.timeout"))
    parser.add_argument("target", help=say("cli.run.target"))
    parser.add_argument("args", nargs=argparse.REMAINDER, help=say("cli.run.args"))
    opts = parser.parse_args(argv)
    if opts.target.endswith(".py") and not os.path.isfile(opts.target):
        parser.error(say("cli.run.no_script", path=opts.target))
    if not opts.target.endswith(".py") and opts.target not in (*COMMANDS, "help"):
        close = difflib.get_close_matches(opts.target, COMMANDS, n=1)
        parser.error(say("cli.run.no_command", name=opts.target, commands=", ".join(COMMANDS))
                     + (say("cli.run.did_you_mean", name=close[0]) if close else ""))
    check_ranks(parser, opts.np)
    banner("run")
    root = launcher.package_root(opts.target)
    if root != launcher.PACKAGE_ROOT:
        print(say("cli.run.beside", path=os.path.join(root, "minimegatron")), flush=True)
    try:
        cmd = launcher.build_command(opts.np, opts.target, opts.args)
    except FileNotFoundError as err:              # no (matching) mpiexec: one line
        print(say("cli.run.error", message=err), file=sys.stderr, flush=True)
        return 2
    env = launcher.child_env(opts.np, root=root)
    return launcher.supervise(cmd, opts.np, timeout=opts.timeout, env=env)
