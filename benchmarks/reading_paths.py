"""How far a reader walks from a tutorial's main to the MPI call, and how much is the lab.

    python benchmarks/reading_paths.py                  # six schemes, a table
    python benchmarks/reading_paths.py --list           # ... and each path's functions
    python benchmarks/reading_paths.py --json paths.json

A path is measured by what runs, not listed by hand. Each tutorial runs on real
ranks (``minimegatron run -n N``) with a profile hook (``sys.setprofile``) on
rank 0. Whenever a function whose own body calls mpi4py starts (``MPI_CALLS``:
``Allreduce``, ``Isend``, ``Wait``..., found by reading every module), the hook
takes the Python stack: the functions from the tutorial's ``main`` down to that
call. A reader also opens what the comm layer's functions on that stack call on
the way (staging, the trace, the checks, the wait), so their direct callees
count too. The path's lines are

    every line of each of those functions (the def to its last line), plus the
    module docstring of each file they live in (what a reader meets first);

its lab lines are those in the lab's folders (``LAB``: runtime, tools, checks,
classroom, i18n, commands). Target per scheme (DESIGN.md): at most 800 lines in
at most 10 files, the lab at most 20 % of them. Figures: docs/architecture.md.
"""
import argparse
import ast
import inspect
import json
import os
import subprocess
import sys
import tempfile

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PATHS = {   # scheme: (tutorial, ranks, arguments)
    "TP": ("tutorials/04_megatron_gpt.py", 2, ["--steps", "1", "--layers", "1"]),
    "DDP": ("tutorials/05_data_parallel.py", 2, ["--steps", "1"]),
    "1F1B": ("tutorials/07_pipeline.py", 2, ["--repeats", "1", "--out", "{tmp}"]),
    "ZB": ("tutorials/13_zero_bubble.py", 2, ["--out", "{tmp}"]),
    "CP ring": ("tutorials/12_context_parallel.py", 2, ["--steps", "1", "--out", "{tmp}"]),
    "MoE dispatch": ("tutorials/14_mixture_of_experts.py", 4, ["--steps", "1", "--out", "{tmp}"]),
}
LAB = ("runtime/", "tools/", "checks/", "classroom/", "i18n/", "commands/")
COMM_LAYER = "minimegatron/comm/"
TARGET_LINES, TARGET_FILES, TARGET_LAB = 800, 10, 0.20
MPI_CALLS = {name for base in ("Allreduce", "Allgather", "Allgatherv", "Bcast", "Reduce",
                               "Reduce_scatter", "Reduce_scatter_block", "Scatter", "Scatterv",
                               "Gather", "Gatherv", "Alltoall", "Alltoallv", "Send", "Recv",
                               "Barrier") for name in (base, "I" + base[0].lower() + base[1:])}
MPI_CALLS |= {"Sendrecv", "Wait", "Waitall", "Test", "Testall", "Start", "Allreduce_init",
              "bcast", "gather", "allgather", "alltoall"}


def mpi_functions():
    """{(file, first line)} of every function in minimegatron whose own body calls mpi4py
    (first line: the def's, and its decorators', as ``co_firstlineno`` may be either)."""
    found = set()
    for folder, _, names in os.walk(os.path.join(REPO, "minimegatron")):
        for name in (n for n in names if n.endswith(".py")):
            path = os.path.join(folder, name)
            with open(path) as f:
                tree = ast.parse(f.read())
            for node in ast.walk(tree):
                if not isinstance(node, ast.FunctionDef):
                    continue
                nested = {id(m) for n in ast.walk(node) if n is not node and
                          isinstance(n, (ast.FunctionDef, ast.Lambda)) for m in ast.walk(n)}
                if any(isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and
                       n.func.attr in MPI_CALLS and id(n) not in nested for n in ast.walk(node)):
                    found |= {(path, line) for line in
                              [node.lineno] + [d.lineno for d in node.decorator_list]}
    return found


def relative(path):
    path = os.path.abspath(path)
    return os.path.relpath(path, REPO) if path.startswith(REPO + os.sep) else None


def trace_functions(tutorial, argv, out):
    """Run ``tutorial`` here (one rank of the job); on rank 0 write the path's functions as
    [file, first line, last line, name]."""
    chain, callees, mpi = set(), {}, mpi_functions()
    script = os.path.abspath(tutorial)

    def hook(frame, event, arg):
        if event != "call":
            return
        code, caller = frame.f_code, frame.f_back
        if caller is not None and (relative(caller.f_code.co_filename) or "").startswith(
                COMM_LAYER):
            callees.setdefault(caller.f_code, set()).add(code)
        if (code.co_filename, code.co_firstlineno) in mpi:
            f, stack = frame, []
            while f is not None:              # up to the tutorial's main (or its module)
                stack.append(f.f_code)
                if f.f_code.co_filename == script:
                    if f.f_code.co_name == "<module>":
                        stack.pop()           # a flat tutorial: its code is not a function
                    chain.update(stack)
                    break
                f = f.f_back

    with open(script) as f:
        top = compile(f.read(), script, "exec")
    sys.argv = [tutorial] + argv
    sys.setprofile(hook)
    try:
        exec(top, {"__name__": "__main__", "__file__": script})
    finally:
        sys.setprofile(None)
    codes = set(chain)
    for code in chain:                        # what the comm layer's functions call on the way
        codes |= callees.get(code, set())
    rows = []
    for code in codes:
        name = relative(code.co_filename)
        if not name or not (name.startswith("minimegatron/") or name == relative(script)):
            continue
        try:
            lines, first = inspect.getsourcelines(code)
        except (OSError, TypeError):
            continue
        rows.append([name, first, first + len(lines) - 1, code.co_qualname])
    from mpi4py import MPI
    if MPI.COMM_WORLD.Get_rank() == 0:
        with open(out, "w") as f:
            json.dump(sorted(rows), f)


def docstring_lines(name):
    """Lines of the module docstring of ``name`` (0 if it has none)."""
    with open(os.path.join(REPO, name)) as f:
        tree = ast.parse(f.read())
    first = tree.body[0] if tree.body else None
    if isinstance(first, ast.Expr) and isinstance(getattr(first, "value", None), ast.Constant) \
            and isinstance(first.value.value, str):
        return first.end_lineno - first.lineno + 1
    return 0


def count(rows):
    """{file: lines} (functions, overlaps once, + the module docstring), total, lab lines."""
    spans = {}
    for name, first, last, _ in rows:
        spans.setdefault(name, set()).update(range(first, last + 1))
    lines = {name: len(span) + docstring_lines(name) for name, span in sorted(spans.items())}
    lab = sum(n for name, n in lines.items()
              if name.startswith("minimegatron/") and name[13:].startswith(LAB))
    return lines, sum(lines.values()), lab


def measure(scheme, timeout=900):
    tutorial, ranks, argv = PATHS[scheme]
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "functions.json")
        argv = [a.replace("{tmp}", tmp) for a in argv]
        env = {**os.environ, "PYTHONPATH": REPO, "MPLBACKEND": "Agg"}
        done = subprocess.run([sys.executable, "-m", "minimegatron", "run", "-n", str(ranks),
                               os.path.abspath(__file__), "--trace", tutorial, out, *argv],
                              cwd=REPO, env=env, capture_output=True, text=True,
                              timeout=timeout)
        if done.returncode != 0 or not os.path.exists(out):
            raise RuntimeError(f"{scheme}: the traced tutorial failed:\n{done.stderr[-3000:]}")
        with open(out) as f:
            return json.load(f)


def main(argv=None):
    if argv is None and sys.argv[1:2] == ["--trace"]:
        return trace_functions(sys.argv[2], sys.argv[4:], sys.argv[3])
    parser = argparse.ArgumentParser(description="reading paths from each tutorial's main "
                                                 "to the MPI calls")
    parser.add_argument("--json", help="write {scheme: {file: lines}} here")
    parser.add_argument("--list", action="store_true", help="print each path's functions")
    parser.add_argument("--schemes", default=",".join(PATHS),
                        help=f"comma-separated, from {','.join(PATHS)}")
    opts = parser.parse_args(argv)
    table = {}
    print(f"{'scheme':<14}{'files':>6}{'lines':>7}{'lab':>6}{'lab %':>7}  target "
          f"(<= {TARGET_LINES} lines, <= {TARGET_FILES} files, lab <= "
          f"{100 * TARGET_LAB:.0f} %)")
    for scheme in opts.schemes.split(","):
        rows = measure(scheme)
        lines, total, lab = count(rows)
        table[scheme] = lines
        met = total <= TARGET_LINES and len(lines) <= TARGET_FILES and lab <= TARGET_LAB * total
        print(f"{scheme:<14}{len(lines):>6}{total:>7}{lab:>6}{100 * lab / total:>6.0f}%  "
              f"{'met' if met else 'not met'}", flush=True)
        if opts.list:
            for name, n in lines.items():
                print(f"    {n:>5}  {name}")
                for row in rows:
                    if row[0] == name:
                        print(f"             {row[3]} ({row[1]}-{row[2]})")
    if opts.json:
        with open(opts.json, "w") as f:
            json.dump(table, f, indent=1)


if __name__ == "__main__":
    main()
