"""The performance page is written for a reader: a glance table first, every figure dated.

docs/performance.md (and its Korean twin) opens with "The performance targets at a glance":
one row per target with what is measured, the command, the target, the latest figure, the
machine and the date ("not measured yet" where no machine could take it). The sections
after it go by topic. What a logbook leaves behind is refused: "(this change)", commit
hashes, a command naming a file that does not exist, a benchmark that no section names.
Each check is also run on a synthetic bad page, so it can fail.
"""
import os
import re

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DOCS = os.path.join(ROOT, "docs")
PAGES = ["performance.md", "performance.ko.md"]
DATE = re.compile(r"^20\d\d-\d\d-\d\d$")
NOT_YET = ("not measured yet", "아직 재지 않음")
HASH = re.compile(r"\b(?=[0-9a-f]*[a-f])(?=[0-9a-f]*[0-9])[0-9a-f]{7,40}\b")
NAMED_FILE = re.compile(r"\b((?:benchmarks|tutorials|tests)/[\w./-]+\.(?:py|sh))\b")


def read(name):
    with open(os.path.join(DOCS, name), encoding="utf-8") as file:
        return file.read()


def glance_rows(text):
    """[[cells]] of the first table after the first "## " heading (the glance table)."""
    first = re.search(r"^## .*$", text, re.M)
    assert first, "the page has no section"
    rows = []
    for line in text[first.end():].split("\n"):
        if line.startswith("|"):
            rows.append([cell.strip() for cell in line.strip().strip("|").split("|")])
        elif rows:
            break
    return rows[2:]                                    # header and |---| left out


def faults(text):
    """What keeps a page from being a reader's page (empty: none)."""
    found = []
    first = re.search(r"^## (.*)$", text, re.M)
    if not first or not re.search(r"at a glance|한눈에", first.group(1)):
        found.append("the first section is not the glance table")
    rows = glance_rows(text)
    if len(rows) < 10:
        found.append(f"the glance table has {len(rows)} rows")
    for cells in rows:
        if len(cells) != 6:
            found.append(f"a glance row has {len(cells)} cells, not 6: {cells[:1]}")
        elif not DATE.match(cells[5]) and not any(n in cells[3] for n in NOT_YET):
            found.append(f"a glance row has no date: {cells[0]}")
    if "(this change)" in text or "이번 변경" in text:
        found.append("(this change)")
    found += [f"a commit hash: {h}" for h in HASH.findall(re.sub(r"`[^`]*`", "", text))]
    for path in NAMED_FILE.findall(text):
        if not os.path.exists(os.path.join(ROOT, path.rstrip("/"))):
            found.append(f"names a file that does not exist: {path}")
    return found


@pytest.mark.parametrize("page", PAGES)
def test_the_performance_page_is_written_for_a_reader(page):
    assert faults(read(page)) == []


def test_every_benchmark_is_named_on_the_page():
    text = read("performance.md")
    benchmarks = sorted(n for n in os.listdir(os.path.join(ROOT, "benchmarks"))
                        if n.startswith("bench_") and n.endswith(".py"))
    missing = [n for n in benchmarks if n not in text]
    assert len(benchmarks) >= 15 and not missing, f"no section names: {missing}"


def test_the_korean_twin_has_the_same_glance_rows():
    english, korean = (glance_rows(read(page)) for page in PAGES)
    assert len(english) == len(korean)
    for en, ko in zip(english, korean):
        assert en[5] == ko[5], f"dates differ: {en[0]} / {ko[0]}"
        numbers = [sorted(re.findall(r"\d+(?:[.,]\d+)*", cells[3])) for cells in (en, ko)]
        assert numbers[0] == numbers[1], f"figures differ: {en[3]} / {ko[3]}"


BAD = [
    ("the first section is not the glance table", "## Intro\n\ntext\n\n"),
    ("(this change)", "(this change)"),
    ("a commit hash: 88c0eec", "main at 88c0eec"),
    ("names a file that does not exist: benchmarks/bench_nothing.py",
     "`benchmarks/bench_nothing.py`"),
    ("a glance row has no date: x", None),
]


@pytest.mark.parametrize("fault, insert", BAD, ids=[f for f, _ in BAD])
def test_each_check_can_fail(fault, insert):
    good = read("performance.md")
    assert faults(good) == []
    if insert is None:                                 # blank one row's date
        bad = re.sub(r"(\n\| )[^|\n]*(\|(?:[^|\n]*\|){4}) 20\d\d-\d\d-\d\d \|",
                     r"\1x \2  |", good, count=1)
    elif insert.startswith("## "):
        bad = good.replace("\n## ", "\n" + insert + "## ", 1)
    else:
        bad = good + "\n" + insert + "\n"
    assert any(found.startswith(fault) for found in faults(bad)), faults(bad)
