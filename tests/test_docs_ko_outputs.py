"""Every output sample on a Korean page is what the program prints under MINIMEGATRON_LANG=ko.

A Korean page marks such a sample (test_docs_i18n.py's OUTPUT_MARK before a ```text block);
SOURCES says, block by block, what prints it, and each is checked against that program's
Korean output:

- ``Cli``: a command run in this process (memory, timeline): the sample's lines are the
  output's, in order, as printed (``...`` elides the rest of a line; a line ``...``, lines);
- ``Run``: a tutorial's Korean run on its fewest ranks and steps, made once a session and
  shared with test_tutorials_ko.py (tests/korean_runs.py), so the page may show a longer
  run: every line of the sample is a line the run prints, numbers aside (a page's run has
  other losses, timings, steps), in the run's order;
- ``Translated``: a book's error, as the lab prints it (``book_errors.translate`` of the
  English page's message);
- ``Verify``: ``verify``'s table for the page's schemes and ranks, its rows planned and its
  SKIP reasons given by verify itself (numbers aside, as a run);
- ``Held``: checked by another test, named.

A sample's first lines ``$ command`` (a line ending in ``\\`` goes on) are the command that
prints it, and must be the source's. Every other unmarked ```text block of a Korean page is
a command, a drawing or a listing no single command prints (UNMARKED, with the reason).
An English sample planted on a Korean page fails (test_an_english_sample_fails).
"""
import collections
import io
import os
import re
import shlex
from contextlib import redirect_stdout

import pytest

from korean_runs import korean_run
from test_docs_i18n import DOCS, FENCE, OUTPUT_MARK, korean_outputs, read

Cli = collections.namedtuple("Cli", "argv")
Run = collections.namedtuple("Run", "ranks name args")
Translated = collections.namedtuple("Translated", "english_start")
Verify = collections.namedtuple("Verify", "schemes ranks")
Held = collections.namedtuple("Held", "test")

# the runs of test_tutorials_ko.py (the same arguments, so each runs once a session)
RUN00 = Run(1, "00_autodiff_and_gpt.py", ("--steps", "20"))
RUN06 = Run(2, "06_zero.py", ("--steps", "2"))
RUN08 = Run(8, "08_3d_parallel.py", ("--steps", "3", "--out", "OUT"))
RUN11 = Run(4, "11_mixed_precision.py", ("--steps", "4"))
RUN13 = Run(4, "13_zero_bubble.py", ("--out", "OUT"))
RUN14 = Run(8, "14_mixture_of_experts.py", ("--steps", "2", "--out", "OUT"))

TIMELINE_ZB = ("timeline", "--schedule", "zb-h1", "--stages", "4", "--micro-batches", "8")
GRID3D = ("memory", "--layers", "72", "--hidden", "3072", "--heads", "32", "--vocab", "51200",
          "--seq", "1024", "--dp", "2", "--pp", "4", "--tp", "2", "--micro-batch", "1",
          "--micro-batches", "8")

SOURCES = {
    "autodiff.ko.md": [RUN00],
    "exercises.ko.md": [Held("test_i18n.py::test_korean_grader_run")],
    "grid3d.ko.md": [RUN08, Cli(GRID3D)],
    "memory.ko.md": [Cli(("memory", "table1")), Cli(("memory", "zero")),
                     Cli(("memory", "scaling")), Cli(("memory", "scaling"))],
    "mixed_precision.ko.md": [RUN11, Cli(("memory", "mixed"))],
    "moe.ko.md": [RUN14, RUN14],
    "reliability.ko.md": [Translated("collective mismatch in group")],
    "threed_run.ko.md": [RUN08, RUN08],
    "zero.ko.md": [RUN06],
    "zero_bubble.ko.md": [Cli(TIMELINE_ZB), Cli(TIMELINE_ZB),
                          Verify(("pp-zb-h1", "pp-zb-h2", "pp-zbv"), 8),
                          Cli(("timeline", "--schedule", "dualpipe", "--stages", "8",
                               "--micro-batches", "20")), RUN13, RUN13],
}

# the ```text (or plain ```) blocks of Korean pages that are no program's output, by page and
# first line: a command block has every line a command (COMMAND) and is not listed
UNMARKED = {
    ("grid3d.ko.md", "tp groups  [0,1] [2,3] [4,5]"): "the page's listing of 16 ranks' groups",
    ("megatron.ko.md", "embed              [2048]"): "count_all_reduces' labels, annotated",
    ("sequence_parallel.ko.md", "       sequence-parallel"): "a drawing",
    ("teaching.ko.md", "         1.1  1.2  1.3"): "gradebook.table, the same in both "
    "languages (test_docs_i18n.py::test_the_gradebook_example_is_the_real_table_of_...)",
    ("threed_run.ko.md", "ranks 0-3 (stage 0)  | F0"): "a drawing of the timeline",
    ("verification.ko.md", "dp x pp x tp   loss      grad"): "check_all_grids' numbers, "
    "tabled by the page (no words)",
}
COMMAND = re.compile(r"^(\$ )?(OPENBLAS_NUM_THREADS=1 )?(minimegatron|python|mpiexec) "
                     r"|^    [-[]|^\s*$")

NUMBER = re.compile(r"[+-]?\d[\d,]*(?:\.\d+)?(?:e[+-]?\d+)?")


def korean_pages():
    return sorted(n for n in os.listdir(DOCS) if n.endswith(".ko.md"))


def split_command(sample):
    """(the command of a sample's leading ``$`` lines or None, the sample's other lines)."""
    lines = sample.rstrip("\n").split("\n")
    if not lines[0].startswith("$ "):
        return None, lines
    command = [lines.pop(0)]
    while lines and command[-1].endswith("\\"):
        command.append(lines.pop(0))
    return " ".join(line.removeprefix("$ ").rstrip("\\").strip() for line in command), lines


def template(line, numbers):
    """A line as compared: numbers as #, runs of spaces as one (``numbers``: masked), the
    text a model wrote (after ``  | ``) left out; ``...`` stays (a sample's elision)."""
    if line.startswith("  | "):
        return "  | "
    if numbers:
        line = " ".join(NUMBER.sub("#", line).split())
    return line


def line_matches(sample_line, output_line, numbers):
    """Whether a sample's line is the output's (trailing spaces aside)."""
    pattern = ".*".join(re.escape(part)
                        for part in template(sample_line.rstrip(), numbers).split("..."))
    return re.fullmatch(pattern, template(output_line.rstrip(), numbers), re.S) is not None


def missing_lines(lines, output, exact):
    """The sample's lines the output does not print. ``exact``: each run of lines between
    ``...`` lines is consecutive output, as printed, after the previous run; otherwise each
    line is some output line, numbers aside, at or after the previous one's."""
    out = output.split("\n")
    chunks = [[]]
    for line in lines:
        if line.strip() == "...":
            chunks.append([])
        elif exact:
            chunks[-1].append(line)
        else:
            chunks.append([line])
    missing, at = [], 0
    for chunk in filter(None, chunks):
        found = next((start for start in range(at, len(out) - len(chunk) + 1)
                      if all(line_matches(s, o, not exact) for s, o in zip(chunk, out[start:]))),
                     None)
        if found is None:
            missing += chunk
        else:
            at = found + len(chunk) if exact else found      # a row may be printed once
    return missing


CLI_OUTPUTS = {}


def cli_output(argv, tmp_path):
    """What ``minimegatron ARGV`` prints to stdout in Korean, run in this process once a
    session (a timeline's picture into tmp_path)."""
    from minimegatron.commands import memory, timeline
    if argv not in CLI_OUTPUTS:
        main = {"memory": memory.main, "timeline": timeline.main}[argv[0]]
        args = list(argv[1:]) + (["--out", str(tmp_path / "t.png")]
                                 if argv[0] == "timeline" else [])
        buffer = io.StringIO()
        with redirect_stdout(buffer):
            assert main(args) in (0, 1, None)
        CLI_OUTPUTS[argv] = buffer.getvalue()
    return CLI_OUTPUTS[argv]


def verify_output(schemes, ranks):
    """verify's table for ``schemes`` on ``ranks``: its rows, each PASS with made-up numbers
    (compared as numbers aside) or SKIP with verify's own reason."""
    from minimegatron.checks import verify
    rows = []
    for scheme, dims in verify.plan_rows(list(schemes), ranks):
        note = verify.fit(scheme, dims)[1]
        rows.append(verify._row(scheme, dims, None if note else (0.0, 1e-15, 1e-14),
                                "SKIP" if note else "PASS", 0.0, note or "",
                                tol=None if note else 1e-9))
    return verify.table(rows, "float64")


def english_blocks(page):
    """The English twin's ```text / plain blocks, in order."""
    return [m.group(4) for m in FENCE.finditer(read(os.path.join(DOCS, page[:-6] + ".md")))
            if m.group(3).strip() in ("text", "")]


def output_of(source, page, tmp_path):
    """(the Korean output of ``source``, exact comparison?, its command or None)."""
    if isinstance(source, Cli):
        return cli_output(source.argv, tmp_path), True, "minimegatron " + " ".join(source.argv)
    if isinstance(source, Run):
        code, out, err = korean_run(source.ranks, source.name, list(source.args))
        assert code == 0, err
        return out, False, None
    if isinstance(source, Translated):
        from minimegatron.i18n.book_errors import translate
        english, = [b for b in english_blocks(page) if b.startswith(source.english_start)]
        return translate(english.rstrip("\n"), "ko"), True, None
    if isinstance(source, Verify):
        command = f"minimegatron run -n {source.ranks} verify --schemes {','.join(source.schemes)}"
        return verify_output(source.schemes, source.ranks), False, command
    raise AssertionError(source)


def check(sample, source, page, tmp_path):
    """Why ``sample`` is not what ``source`` prints in Korean ([] when it is)."""
    if isinstance(source, Held):
        return []
    output, exact, command = output_of(source, page, tmp_path)
    shown, lines = split_command(sample)
    problems = []
    if shown is not None and " ".join(shlex.split(shown)) != " ".join(shlex.split(command)):
        problems.append(f"the sample's command `{shown}` is not its source's `{command}`")
    problems += [f"not printed: {line!r}" for line in missing_lines(lines, output, exact)]
    return problems


CASES = [(page, i, source) for page, sources in SOURCES.items()
         for i, source in enumerate(sources)]


@pytest.mark.parametrize("page, index, source", CASES,
                         ids=[f"{p[:-6]}-{i}" for p, i, _ in CASES])
def test_the_korean_sample_is_what_the_program_prints(page, index, source, tmp_path):
    monkeypatch = pytest.MonkeyPatch()
    monkeypatch.setenv("MINIMEGATRON_LANG", "ko")
    try:
        sample = korean_outputs(read(os.path.join(DOCS, page)))[index]
        problems = check(sample, source, page, tmp_path)
    finally:
        monkeypatch.undo()
    assert not problems, f"docs/{page}, output sample {index + 1}:\n" + "\n".join(problems)


def test_every_marked_block_has_its_source_and_every_output_is_marked():
    for page in korean_pages():
        text = read(os.path.join(DOCS, page))
        assert len(korean_outputs(text)) == len(SOURCES.get(page, [])), page
        for m in FENCE.finditer(text):
            body = m.group(4)
            if m.group(3).strip() not in ("text", "") or body in korean_outputs(text):
                continue
            if all(COMMAND.match(line) for line in body.split("\n")):
                continue
            assert any(key[0] == page and body.startswith(key[1]) for key in UNMARKED), \
                f"docs/{page}: an unmarked block shows output; mark it ({OUTPUT_MARK}) " \
                f"with the Korean output and give its source in SOURCES:\n{body[:300]}"


@pytest.mark.parametrize("page", sorted(p for p in SOURCES if p != "exercises.ko.md"))
def test_an_english_sample_fails(page, tmp_path, monkeypatch):
    """Each Korean sample that differs from its English twin's block fails when the English
    block is planted in its place (and a line the program never prints fails anyway)."""
    monkeypatch.setenv("MINIMEGATRON_LANG", "ko")
    text = read(os.path.join(DOCS, page))
    english = english_blocks(page)
    blocks = [m.group(4) for m in FENCE.finditer(text) if m.group(3).strip() in ("text", "")]
    samples = korean_outputs(text)
    planted = 0
    for sample, source in zip(samples, SOURCES[page]):
        twin = english[blocks.index(sample)]
        if twin != sample and split_command(twin)[1] != split_command(sample)[1]:
            assert check(twin, source, page, tmp_path), (page, twin)
            planted += 1
        assert check(sample + "이 줄은 어떤 프로그램도 출력하지 않습니다\n", source, page, tmp_path) \
            or isinstance(source, Held)
    assert planted, f"{page}: no sample differs from the English"
