"""How far a reader walks from a tutorial to the MPI call, and how much of it is infrastructure.

    python benchmarks/reading_paths.py                  # the three paths, a table
    python benchmarks/reading_paths.py --json paths.json

A path is measured, not listed by hand: the tutorial runs on real ranks
(``minimegatron run -n N``) with a profile hook (``sys.setprofile``) on rank 0.
Whenever a function that calls mpi4py (its source calls ``Allreduce``,
``Isend``, ``Wait``... : ``MPI_CALLS``, found by reading every module) starts,
the hook takes the Python stack. The path's files are

    the files of minimegatron on those stacks (from the tutorial's line down to
    the function that calls MPI), plus the files that the comm layer's
    functions on them call into on the way (staging, trace, checking, waiting)

and the tutorial itself. Lines: every line of those files (``wc -l``), as a
reader meets them. Infrastructure: the files whose job is to check, wait,
abort or report (``INFRASTRUCTURE``: checking mode, waiting, the abort and
hang machinery, non-finite guards), not to compute or to communicate; their
share is their lines over all the path's lines. Figures: docs/architecture.md.
"""
import argparse
import ast
import json
import os
import subprocess
import sys
import tempfile

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PATHS = {   # name: (tutorial, ranks, arguments)
    "tensor parallel": ("tutorials/04_megatron_gpt.py", 2, ["--steps", "1", "--layers", "1"]),
    "1F1B": ("tutorials/07_pipeline.py", 2, ["--repeats", "1", "--out", "{tmp}"]),
    "DDP": ("tutorials/05_data_parallel.py", 2, ["--steps", "1"]),
}
INFRASTRUCTURE = ("comm/comm_check.py", "comm/checking.py", "comm/mismatch.py",
                  "comm/polling.py", "comm/waiting.py", "autodiff/guards.py", "nn/watch.py",
                  "runtime/")
COMM_LAYER = ("minimegatron/comm/", "minimegatron/runtime/")
MPI_CALLS = {name for base in ("Allreduce", "Allgather", "Allgatherv", "Bcast", "Reduce",
                               "Reduce_scatter", "Reduce_scatter_block", "Scatter", "Scatterv",
                               "Gather", "Gatherv", "Alltoall", "Alltoallv", "Send", "Recv",
                               "Barrier") for name in (base, "I" + base[0].lower() + base[1:])}
MPI_CALLS |= {"Sendrecv", "Wait", "Waitall", "Test", "Testall", "Start", "Allreduce_init",
              "bcast", "gather", "allgather", "alltoall"}


def mpi_functions():
    """{(file, first line)} of every function in minimegatron whose own body calls mpi4py
    (first line: the def's, and its first decorator's, as ``co_firstlineno`` may be)."""
    found = set()
    for folder, _, names in os.walk(os.path.join(REPO, "minimegatron")):
        for name in names:
            if not name.endswith(".py"):
                continue
            path = os.path.join(folder, name)
            with open(path) as f:
                tree = ast.parse(f.read())
            for node in ast.walk(tree):
                if not isinstance(node, (ast.FunctionDef, ast.Lambda)):
                    continue
                inner = [n for n in ast.walk(node) if n is not node and
                         isinstance(n, (ast.FunctionDef, ast.Lambda))]
                nested = {id(m) for n in inner for m in ast.walk(n)}
                if any(isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and
                       n.func.attr in MPI_CALLS and id(n) not in nested
                       for n in ast.walk(node)):
                    lines = [node.lineno] + [d.lineno for d in
                                             getattr(node, "decorator_list", [])]
                    found |= {(path, line) for line in lines}
    return found


def relative(path):
    path = os.path.abspath(path)
    return os.path.relpath(path, REPO) if path.startswith(REPO + os.sep) else None


def trace_files(tutorial, argv, out):
    """Run ``tutorial`` here (one rank of the job) and, on rank 0, write its path's files."""
    on_stack, calls, callers_of_mpi = set(), {}, mpi_functions()

    def hook(frame, event, arg):
        if event != "call":
            return
        code, caller = frame.f_code, frame.f_back
        if caller is not None:
            calls.setdefault(caller.f_code, set()).add(code.co_filename)
        if (code.co_filename, code.co_firstlineno) in callers_of_mpi:
            f, stack = frame, []
            while f is not None:                 # up to the tutorial's own module frame
                stack.append(f.f_code)
                if f.f_code is top:
                    on_stack.update(stack)
                    break
                f = f.f_back
    script = os.path.abspath(tutorial)
    with open(script) as f:
        top = compile(f.read(), script, "exec")     # the tutorial's module code, run below
    sys.argv = [tutorial] + argv
    sys.setprofile(hook)
    try:
        exec(top, {"__name__": "__main__", "__file__": script})
    finally:
        sys.setprofile(None)
    files = {relative(code.co_filename) for code in on_stack}
    tutorial = relative(script)
    for code in on_stack:                 # what the comm layer's functions call on the way
        if (relative(code.co_filename) or "").startswith(COMM_LAYER):
            files |= {relative(name) for name in calls.get(code, ())}
    files = sorted(f for f in files if f and (f.startswith("minimegatron/") or f == tutorial))
    from mpi4py import MPI
    if MPI.COMM_WORLD.Get_rank() == 0:
        with open(out, "w") as f:
            json.dump(files, f)


def count(files):
    """{file: lines}, total lines, infrastructure lines."""
    lines = {}
    for name in files:
        with open(os.path.join(REPO, name)) as f:
            lines[name] = sum(1 for _ in f)
    infra = sum(n for name, n in lines.items()
                if name.startswith("minimegatron/") and
                name[len("minimegatron/"):].startswith(INFRASTRUCTURE))
    return lines, sum(lines.values()), infra


def measure(name, timeout=600):
    tutorial, ranks, argv = PATHS[name]
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "files.json")
        argv = [a.replace("{tmp}", tmp) for a in argv]
        env = {**os.environ, "PYTHONPATH": REPO, "MPLBACKEND": "Agg"}
        done = subprocess.run([sys.executable, "-m", "minimegatron", "run", "-n", str(ranks),
                               os.path.abspath(__file__), "--trace", tutorial, out, *argv],
                              cwd=REPO, env=env, capture_output=True, text=True,
                              timeout=timeout)
        if done.returncode != 0 or not os.path.exists(out):
            raise RuntimeError(f"{name}: the traced tutorial failed:\n{done.stderr[-3000:]}")
        with open(out) as f:
            return json.load(f)


def main(argv=None):
    if argv is None and sys.argv[1:2] == ["--trace"]:
        return trace_files(sys.argv[2], sys.argv[4:], sys.argv[3])
    parser = argparse.ArgumentParser()
    parser.add_argument("--json", help="write {path: {file: lines}} here")
    parser.add_argument("--list", action="store_true", help="print each path's files")
    opts = parser.parse_args(argv)
    table = {}
    print(f"{'path':<16}{'files':>6}{'lines':>7}{'infrastructure':>16}")
    for name in PATHS:
        lines, total, infra = count(measure(name))
        table[name] = lines
        print(f"{name:<16}{len(lines):>6}{total:>7}{infra:>9} ({100 * infra / total:.0f} %)")
        if opts.list:
            print("\n".join(f"    {n:>5}  {f}" for f, n in lines.items()))
    if opts.json:
        with open(opts.json, "w") as f:
            json.dump(table, f, indent=1)


if __name__ == "__main__":
    main()
