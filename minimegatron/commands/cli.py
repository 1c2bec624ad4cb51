"""The ``minimegatron`` command: one line per subcommand, each in its own module.

    minimegatron run -n 8 [--timeout S] script.py [args]   launch under mpiexec
    minimegatron run -n 8 verify                            every scheme vs one process
    minimegatron verify                                     (inside mpirun) the same table
    minimegatron memory ...                                 memory / FLOPs / scaling calculator
    minimegatron calibrate                                  measure GEMM rate and bandwidth here
    minimegatron timeline ...                               pipeline schedule -> Gantt PNG + text
    minimegatron exercises make DIR                         student copy with blanks
    minimegatron grade [EXERCISE] [--path DIR]              check a student copy
    minimegatron sample --checkpoint FILE [--prompt TEXT]   a trained GPT writes text

Each module has ``main(argv) -> int``; the import happens only for the chosen
command, so ``minimegatron memory`` never starts MPI.
"""
import importlib
import sys

COMMANDS = {
    "run": ("minimegatron.runtime.launcher", "launch a script (or 'verify') on N MPI ranks"),
    "verify": ("minimegatron.checks.verify", "check every parallel scheme against one process"),
    "memory": ("minimegatron.tools.memory_cli", "parameters, memory, FLOPs and scaling model"),
    "calibrate": ("minimegatron.tools.calibrate", "measure this machine's GEMM and MPI rates"),
    "timeline": ("minimegatron.tools.timeline", "draw a pipeline schedule or a traced run"),
    "exercises": ("minimegatron.classroom.exercises", "make a student copy of the package"),
    "grade": ("minimegatron.classroom.grader", "grade a student copy"),
    "sample": ("minimegatron.commands.sample", "load a checkpoint and let the GPT write text"),
}


def usage():
    lines = ["usage: minimegatron COMMAND [args]", "", "commands:"]
    lines += [f"  {name:<10} {text}" for name, (_, text) in COMMANDS.items()]
    return "\n".join(lines)


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help", "help"):
        print(usage())
        return 0
    name, rest = argv[0], argv[1:]
    if name not in COMMANDS:
        print(f"minimegatron: unknown command {name!r}\n\n{usage()}", file=sys.stderr)
        return 2
    module = importlib.import_module(COMMANDS[name][0])
    return module.main(rest) or 0


if __name__ == "__main__":
    sys.exit(main())
