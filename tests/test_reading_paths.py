"""The reading-path tables are the tool's: benchmarks/reading_paths.py, its JSON, the docs.

The tables in README.md, docs/index.md and docs/architecture.md (and the Korean twins)
are rendered from benchmarks/reading_paths.json; a table edited by hand, or a JSON
re-measured without ``--docs``, fails here. The tool itself runs on a tiny synthetic
tutorial (one process): what it reaches is on the path, def to last line, with the
module docstring; what runs behind the seam (comm/checked.py and the check it calls) and
at import is not; the engine is a column of its own.
"""
import ast
import inspect
import json
import os
import subprocess
import sys

import pytest

from minimegatron.comm import checked, collectives, comm_check, staging

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, "benchmarks"))
import reading_paths  # noqa: E402


@pytest.fixture(scope="module")
def measured():
    with open(reading_paths.JSON) as f:
        return json.load(f)


@pytest.mark.parametrize("page", sorted(reading_paths.PAGES))
def test_every_table_is_rendered_from_the_json(measured, page):
    with open(os.path.join(REPO, page)) as f:
        text = f.read()
    assert reading_paths.render(text, measured, reading_paths.PAGES[page]) == text, (
        f"{page}: its reading-path table differs from benchmarks/reading_paths.json; "
        "run python benchmarks/reading_paths.py --docs")


def test_every_scheme_is_measured(measured):
    assert list(measured) == list(reading_paths.PATHS)
    for scheme, parts in measured.items():
        row = reading_paths.summary(parts["read"])
        assert row["files"] > 5 and row["lines"] > 300 and row["engine_lines"] > 300, row
        assert any(name.startswith("minimegatron/parallel/") for name in parts["read"])


def test_a_table_edited_by_hand_is_caught(measured):
    with open(os.path.join(REPO, "docs/architecture.md")) as f:
        text = f.read()
    scheme = next(iter(measured))
    lines = reading_paths.summary(measured[scheme]["read"])["lines"]
    edited = text.replace(f"| {lines:,} |", f"| {lines - 1:,} |", 1)
    assert edited != text
    assert reading_paths.render(edited, measured, "en") != edited


def test_a_missed_target_says_by_how_much():
    row = {"files": 12, "lines": 1000, "lab": 150, "engine_files": 3, "engine_lines": 400}
    assert reading_paths.shortfall("TP", row, "en") == "+200 lines, +2 files, lab 15.0 % > 10 %"
    assert reading_paths.shortfall("TP", row, "ko") == "줄 +200, 파일 +2, lab 15.0 % > 10 %"
    row = {**row, "files": 10, "lines": 800, "lab": 80}
    assert reading_paths.met("TP", row) and reading_paths.shortfall("TP", row, "en") == ""
    assert reading_paths.shortfall("TP", {**row, "lab": 81}, "en") == "lab 10.1 % > 10 %"


TUTORIAL = '''
import numpy as np
from minimegatron import comm
from minimegatron.backend import get_backend


def main():
    g = comm.world()
    x = np.arange(6.0)
    comm.all_reduce(x, g)                    # one rank: the check returns at once
    comm.chunk_sizes(10, 3)
    get_backend()


main()
'''


def span(function):
    lines, first = inspect.getsourcelines(function)
    return [first, first + len(lines) - 1]


def test_the_tool_counts_what_a_tiny_tutorial_reaches(tmp_path):
    tutorial = tmp_path / "tiny.py"
    tutorial.write_text(TUTORIAL)
    out = tmp_path / "functions"
    env = {**os.environ, "PYTHONPATH": REPO}
    subprocess.run([sys.executable, reading_paths.__file__, "--trace", str(tutorial),
                    str(out)], check=True, env=env, cwd=REPO, timeout=120)
    with open(f"{out}0") as f:
        found = json.load(f)
    read = {row[3]: row for row in found["read"]}
    behind = {row[3]: row for row in found["behind"]}
    assert read["all_reduce"][1:3] == span(collectives.all_reduce), read["all_reduce"]
    assert read["chunk_sizes"][0] == "minimegatron/comm/collectives.py"
    assert read["output"][1:3] == span(staging.output)
    assert "get_backend" in read
    # behind the seam: the guard and the check it calls; the import's decorators: nowhere
    assert "guard" in behind and "check" in behind, sorted(behind)
    assert behind["check"][1:3] == span(comm_check.check)
    assert not {"guard", "check", "op_of"} & set(read), sorted(read)
    assert "waits.<locals>.mark" not in read and "<module>" not in read
    files = reading_paths.count(found["read"])
    functions = [r for r in found["read"] if r[0] == "minimegatron/comm/collectives.py"]
    lines = set()
    for _, first, last, _ in functions:
        lines.update(range(first, last + 1))
    with open(collectives.__file__) as f:
        first = ast.parse(f.read()).body[0]                            # the module docstring
    docstring = first.end_lineno - first.lineno + 1
    assert files["minimegatron/comm/collectives.py"] == len(lines) + docstring
    row = reading_paths.summary(files)
    assert reading_paths.part_of("minimegatron/backend.py") == "engine"
    assert row["engine_files"] == sum(reading_paths.part_of(n) == "engine" for n in files)
    assert row["lines"] == sum(v for n, v in files.items()
                               if reading_paths.part_of(n) != "engine")
    assert checked.__file__.endswith(os.path.join("comm", "checked.py"))


def test_the_parts_table_is_rendered_and_the_notes_claim_what_it_shows(measured):
    """architecture(.ko).md's notes say: without the lab, 1F1B and the ring meet their lines
    targets and no path its files target; the parts table under them is generated."""
    for page in ("docs/architecture.md", "docs/architecture.ko.md"):
        with open(os.path.join(REPO, page)) as f:
            text = f.read()
        assert reading_paths.PARTS_BEGIN in text, page
        table = reading_paths.parts_table(measured, reading_paths.PAGES[page])
        assert table in text, page
        edited = text.replace(table.splitlines()[2], table.splitlines()[2] + " ", 1)
        assert reading_paths.render(edited, measured, reading_paths.PAGES[page]) == text
    without = {scheme: reading_paths.split_parts(parts["read"])["without_lab"]
               for scheme, parts in measured.items()}
    lines_met = {s for s, (_, n) in without.items() if n <= reading_paths.TARGETS[s][0]}
    files_met = {s for s, (f, _) in without.items() if f <= reading_paths.TARGETS[s][1]}
    assert lines_met == {"1F1B", "CP ring"} and files_met == set(), (lines_met, files_met)
