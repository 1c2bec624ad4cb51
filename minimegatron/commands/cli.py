"""The ``minimegatron`` command: one line per subcommand, each in its own module.

    minimegatron run -n 8 [--timeout S] script.py [args]   launch under mpiexec
    minimegatron run -n 8 verify                            every scheme vs one process
    minimegatron verify                                     one rank: says how to run on N
    minimegatron memory ...                                 memory / FLOPs / scaling calculator
    minimegatron calibrate                                  measure GEMM rate and bandwidth here
    minimegatron timeline ...                               pipeline schedule -> Gantt PNG + text
    minimegatron exercises make DIR                         student copy with blanks
    minimegatron grade [EXERCISE] [--path DIR]              check a student copy
    minimegatron sample --checkpoint FILE [--prompt TEXT]   a trained GPT writes text

Each module has ``main(argv) -> int``; the import happens only for the chosen
command, so ``minimegatron memory`` never starts MPI. The texts are i18n keys
(``cli.NAME``, i18n/en_cli.py and ko_cli.py), so MINIMEGATRON_LANG=ko lists them in Korean.
"""
import difflib
import importlib
import sys

from minimegatron import i18n
from minimegatron.commands.parser import say

COMMANDS = {name: (f"minimegatron.commands.{name}", f"cli.{name}")
            for name in ("run", "verify", "memory", "calibrate", "timeline", "exercises",
                         "grade", "sample")}


def usage():
    """The dispatcher's help: usage, one line per command, how to start a parallel run."""
    lines = [say("cli.usage"), "", say("cli.commands")]
    lines += [f"  {name:<10} {say(key)}" for name, (_, key) in COMMANDS.items()]
    return "\n".join(lines + ["", say("cli.start")])


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        i18n.language()
    except ValueError as err:                   # MINIMEGATRON_LANG=xx: one line, no traceback
        print(f"error: {err}", file=sys.stderr)
        return 2
    if not argv or argv[0] in ("-h", "--help", "help"):
        print(usage())
        return 0
    name, rest = argv[0], argv[1:]
    if name not in COMMANDS:                    # "grde": "did you mean 'grade'?"
        close = difflib.get_close_matches(name, COMMANDS, n=1)
        hint = say("cli.run.did_you_mean", name=close[0]) if close else ""
        print(f"{say('cli.unknown', name=repr(name))}{hint}\n\n{usage()}", file=sys.stderr)
        return 2
    module = importlib.import_module(COMMANDS[name][0])
    return module.main(rest) or 0


if __name__ == "__main__":
    sys.exit(main())
