"""What a reader reads to follow one scheme: every package function its tutorial reaches.

    python benchmarks/reading_paths.py                 # six schemes: measure, write the JSON
    python benchmarks/reading_paths.py --list          # ... and each path's files
    python benchmarks/reading_paths.py --docs          # rewrite the tables from the JSON

A path is measured by what runs, not listed by hand. Each tutorial runs on real
ranks (``minimegatron run -n N``) with a profile hook (``sys.setprofile``) in
EVERY process: each package function that starts while the tutorial's own code
runs is on the path (the layer's forward, the schedule, the last stage's half,
the collective, the optimizer...). What a reader does not read is left out:

- what runs while a package module is imported (decorators, tables);
- what runs behind the seam: the checked communicator (comm/checked.py) and
  everything it calls (the signature check, agreed steps, the yielding wait). A
  reader reads ``group.comm.Allreduce(...)`` as MPI's call, as a program wrapped by
  a PMPI tool reads as plain MPI (docs/architecture.md); the tool lists it apart.

A path's lines, per file: the union of its functions' lines (def to last line),
plus the file's module docstring. Three columns: the ENGINE (backend, autodiff,
nn, optim, data: read in lesson 00), the rest (the scheme, comm, mixed precision
and the lab the tutorial calls), and the LAB share of the rest (runtime, tools,
checks, classroom, i18n, commands). Targets (DESIGN.md): ``TARGETS`` for the rest,
the lab at most 10 %.

The figures go to ``reading_paths.json`` beside this file; the tables in README.md,
docs/index.md and docs/architecture.md (and their Korean twins) are rendered from it
between ``<!-- reading-paths -->`` and ``<!-- /reading-paths -->``, and
tests/test_reading_paths.py fails when a table drifts from the JSON.
"""
import argparse
import ast
import inspect
import json
import os
import re
import subprocess
import sys
import tempfile

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PACKAGE = os.path.join(REPO, "minimegatron")
JSON = os.path.join(REPO, "benchmarks", "reading_paths.json")
PATHS = {   # scheme: (tutorial, ranks, arguments)
    "TP": ("tutorials/04_megatron_gpt.py", 2, ["--steps", "1", "--layers", "1"]),
    "DDP": ("tutorials/05_data_parallel.py", 2, ["--steps", "1"]),
    "1F1B": ("tutorials/07_pipeline.py", 2, ["--repeats", "1", "--out", "{tmp}"]),
    "ZB": ("tutorials/13_zero_bubble.py", 2, ["--out", "{tmp}"]),
    "CP ring": ("tutorials/12_context_parallel.py", 2, ["--steps", "1", "--out", "{tmp}"]),
    "MoE": ("tutorials/14_mixture_of_experts.py", 4, ["--steps", "1", "--out", "{tmp}"]),
}
TARGETS = {"TP": (800, 10), "DDP": (900, 10), "1F1B": (1300, 15), "ZB": (1500, 16),
           "CP ring": (1500, 18), "MoE": (2000, 24)}     # (lines, files), engine excluded
TARGET_LAB = 0.10
ENGINE = ("backend.py", "autodiff/", "nn/", "optim/", "data/")
LAB = ("runtime/", "tools/", "checks/", "classroom/", "i18n/", "commands/")
SEAM = os.path.join(PACKAGE, "comm", "checked.py")
CO_OPTIMIZED = 0x1          # set on functions; not on module or class bodies


def trace_functions(tutorial, argv, out, package=PACKAGE, seam=SEAM):
    """Run ``tutorial`` in this process (one rank of the job) and write to ``out`` the
    functions of ``package`` that ran: {"read": rows, "behind": rows}, each row
    [file (relative to the package's parent), first line, last line, name]."""
    read, behind, depth = set(), set(), {"import": 0, "seam": 0}
    prefix = package + os.sep

    def hook(frame, event, arg):
        if event not in ("call", "return"):
            return
        code = frame.f_code
        path = code.co_filename
        if not path.startswith(prefix):
            return
        step = 1 if event == "call" else -1
        if code.co_name == "<module>":
            depth["import"] += step
        elif path == seam:
            depth["seam"] += step
        if event == "call" and not depth["import"] and code.co_flags & CO_OPTIMIZED:
            (behind if depth["seam"] else read).add(code)

    script = os.path.abspath(tutorial)
    with open(script) as f:
        top = compile(f.read(), script, "exec")
    sys.argv = [tutorial] + list(argv)
    sys.setprofile(hook)
    try:
        exec(top, {"__name__": "__main__", "__file__": script})
    finally:
        sys.setprofile(None)
    with open(out, "w") as f:
        json.dump({"read": rows(read, package), "behind": rows(behind, package)}, f)


def rows(codes, package):
    """[file, first line, last line, qualified name] of each code object, sorted."""
    found = []
    for code in codes:
        try:
            lines, first = inspect.getsourcelines(code)
        except (OSError, TypeError):
            continue
        name = os.path.relpath(code.co_filename, os.path.dirname(package))
        found.append([name, first, first + len(lines) - 1, code.co_qualname])
    return sorted(found)


def docstring_lines(path):
    """Lines of the module docstring of the file at ``path`` (0 if it has none)."""
    with open(path) as f:
        tree = ast.parse(f.read())
    first = tree.body[0] if tree.body else None
    if isinstance(first, ast.Expr) and isinstance(getattr(first, "value", None), ast.Constant) \
            and isinstance(first.value.value, str):
        return first.end_lineno - first.lineno + 1
    return 0


def part_of(name):
    """"engine", "lab" or "book" for a file named relative to the package's parent."""
    inside = name.split("/", 1)[1] if "/" in name else name
    return "engine" if inside.startswith(ENGINE) else "lab" if inside.startswith(LAB) \
        else "book"


def count(found, root=REPO):
    """{file: lines} from rows: each file's function lines (overlaps once) + its docstring."""
    spans = {}
    for name, first, last, _ in found:
        spans.setdefault(name, set()).update(range(first, last + 1))
    return {name: len(span) + docstring_lines(os.path.join(root, name))
            for name, span in sorted(spans.items())}


def summary(files):
    """The row of one scheme: files and lines of the engine, of the rest, and its lab lines."""
    rest = {n: v for n, v in files.items() if part_of(n) != "engine"}
    engine = {n: v for n, v in files.items() if part_of(n) == "engine"}
    return {"files": len(rest), "lines": sum(rest.values()),
            "lab": sum(v for n, v in rest.items() if part_of(n) == "lab"),
            "engine_files": len(engine), "engine_lines": sum(engine.values())}


def measure(scheme, timeout=1800):
    """{"read": {file: lines}, "behind": {file: lines}} of one scheme, every rank merged."""
    tutorial, ranks, argv = PATHS[scheme]
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "functions")
        argv = [a.replace("{tmp}", tmp) for a in argv]
        env = {**os.environ, "PYTHONPATH": REPO, "MPLBACKEND": "Agg"}
        done = subprocess.run([sys.executable, "-m", "minimegatron", "run", "-n", str(ranks),
                               os.path.abspath(__file__), "--trace", tutorial, out, *argv],
                              cwd=REPO, env=env, capture_output=True, text=True,
                              timeout=timeout)
        files = [os.path.join(tmp, n) for n in os.listdir(tmp) if n.startswith("functions")]
        if done.returncode != 0 or len(files) != ranks:
            raise RuntimeError(f"{scheme}: the traced tutorial failed:\n{done.stderr[-3000:]}")
        merged = {"read": [], "behind": []}
        for path in files:
            with open(path) as f:
                for part, found in json.load(f).items():
                    merged[part] += found
    return {part: count(found) for part, found in merged.items()}


def met(scheme, row):
    lines, files = TARGETS[scheme]
    return row["lines"] <= lines and row["files"] <= files and \
        row["lab"] <= TARGET_LAB * row["lines"]


# --- the tables in the docs -------------------------------------------------------------------

HEADERS = {
    "en": ("| scheme (tutorial, ranks) | files | lines | lab | target (lines / files) | "
           "engine, read in lesson 00 (files / lines) | behind the seam (lines) |"),
    "ko": ("| 방식 (tutorial, rank 수) | 파일 | 줄 | lab | 목표 (줄 / 파일) | "
           "engine, lesson 00에서 읽음 (파일 / 줄) | seam 뒤 (줄) |"),
}
MET = {"en": ("met", "not met"), "ko": ("달성", "미달")}
OVER = {"en": ("{n:+,} lines", "{n:+} files", "lab {n:.1f} % > 10 %"),
        "ko": ("줄 {n:+,}", "파일 {n:+}", "lab {n:.1f} % > 10 %")}
BEGIN, END = "<!-- reading-paths -->", "<!-- /reading-paths -->"
PAGES = {"README.md": "en", "docs/index.md": "en", "docs/index.ko.md": "ko",
         "docs/architecture.md": "en", "docs/architecture.ko.md": "ko"}


def shortfall(scheme, row, lang):
    """By how much ``row`` misses its targets: "+222 lines, +7 files, lab 18 %"."""
    lines, files = TARGETS[scheme]
    over = [(row["lines"] - lines, 0), (row["files"] - files, 1),
            (100 * row["lab"] / row["lines"], 2)]
    return ", ".join(OVER[lang][i].format(n=n) for n, i in over
                     if n > (100 * TARGET_LAB if i == 2 else 0))


def table(measured, lang):
    """The markdown table of ``measured`` ({scheme: {"read": ..., "behind": ...}})."""
    lines = [HEADERS[lang], "|---|---|---|---|---|---|---|"]
    for scheme, parts in measured.items():
        tutorial, ranks, _ = PATHS[scheme]
        row, target = summary(parts["read"]), TARGETS[scheme]
        verdict = (MET[lang][0] if met(scheme, row)
                   else f"{MET[lang][1]} ({shortfall(scheme, row, lang)})")
        lines.append(f"| {scheme} (`{tutorial}`, {ranks}) | {row['files']} | "
                     f"{row['lines']:,} | {100 * row['lab'] / row['lines']:.0f} % | "
                     f"{target[0]:,} / {target[1]}: {verdict} | {row['engine_files']} / "
                     f"{row['engine_lines']:,} | {sum(parts['behind'].values()):,} |")
    return "\n".join(lines)


PARTS_HEADERS = {
    "en": ("| scheme | the scheme's own (files / lines) | comm | the lab it calls | "
           "without the lab |"),
    "ko": "| 방식 | 방식 자신 (파일 / 줄) | comm | tutorial이 부르는 lab | lab 없이 |",
}
PARTS_BEGIN, PARTS_END = "<!-- reading-paths-parts -->", "<!-- /reading-paths-parts -->"


def split_parts(files):
    """{"scheme", "comm", "lab", "without_lab"}: (files, lines) of each part of a path, the
    engine left out ("scheme": the rest of the book, mixed precision included)."""
    def kind(name):
        part = part_of(name)
        return "comm" if part == "book" and name.startswith("minimegatron/comm/") else part
    parts = {}
    for key in ("book", "comm", "lab"):
        chosen = [v for n, v in files.items() if kind(n) == key]
        parts["scheme" if key == "book" else key] = (len(chosen), sum(chosen))
    rest = [v for n, v in files.items() if kind(n) in ("book", "comm")]
    parts["without_lab"] = (len(rest), sum(rest))
    return parts


def parts_table(measured, lang):
    """The markdown table of where each path's lines live (the notes under it cite it)."""
    lines = [PARTS_HEADERS[lang], "|---|---|---|---|---|"]
    for scheme, found in measured.items():
        parts = split_parts(found["read"])
        cells = [f"{n} / {v:,}" for n, v in (parts[k] for k in
                                               ("scheme", "comm", "lab", "without_lab"))]
        lines.append(f"| {scheme} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def render(text, measured, lang):
    """``text`` with the block between BEGIN and END replaced by the table (and, where the
    page has one, the block between PARTS_BEGIN and PARTS_END by the parts table)."""
    pattern = re.compile(re.escape(BEGIN) + ".*?" + re.escape(END), re.S)
    if not pattern.search(text):
        raise ValueError(f"no {BEGIN} ... {END} block")
    text = pattern.sub(lambda _: f"{BEGIN}\n{table(measured, lang)}\n{END}", text)
    parts = re.compile(re.escape(PARTS_BEGIN) + ".*?" + re.escape(PARTS_END), re.S)
    return parts.sub(lambda _: f"{PARTS_BEGIN}\n{parts_table(measured, lang)}\n{PARTS_END}",
                     text)


def write_docs(measured, root=REPO):
    for page, lang in PAGES.items():
        path = os.path.join(root, page)
        with open(path) as f:
            text = render(f.read(), measured, lang)
        with open(path, "w") as f:
            f.write(text)


def main(argv=None):
    if argv is None and sys.argv[1:2] == ["--trace"]:
        from mpi4py import MPI
        out = f"{sys.argv[3]}{MPI.COMM_WORLD.Get_rank()}"
        return trace_functions(sys.argv[2], sys.argv[4:], out)
    parser = argparse.ArgumentParser(description="what a reader reads: every package "
                                                 "function each tutorial reaches")
    parser.add_argument("--list", action="store_true", help="print each path's files")
    parser.add_argument("--docs", action="store_true",
                        help="only rewrite the docs' tables from the JSON")
    parser.add_argument("--schemes", default=",".join(PATHS),
                        help=f"comma-separated, from {','.join(PATHS)}")
    opts = parser.parse_args(argv)
    if not opts.docs:
        measured = {}
        if os.path.exists(JSON):
            with open(JSON) as f:
                measured = json.load(f)
        for scheme in opts.schemes.split(","):
            measured[scheme] = measure(scheme)
            row = summary(measured[scheme]["read"])
            print(f"{scheme:<8} {row}", flush=True)
            if opts.list:
                for part, files in measured[scheme].items():
                    for name, n in files.items():
                        print(f"    {part:<6} {part_of(name):<6} {n:>5}  {name}")
        measured = {s: measured[s] for s in PATHS if s in measured}
        with open(JSON, "w") as f:
            json.dump(measured, f, indent=1)
            f.write("\n")
    with open(JSON) as f:
        write_docs(json.load(f))
    with open(JSON) as f:
        print(table(json.load(f), "en"))


if __name__ == "__main__":
    main()
