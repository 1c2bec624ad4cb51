"""The project speaks of itself, not of its history: no file names a tracker issue number.

A reader of the docs, the code, a tutorial or a benchmark cannot open the tracker, so
"issue" followed by a number tells them nothing: say what the thing is instead. The scan
reads every file under the trees below (as ``grep -rniE`` would, bytes included) and
fails on "issue", optional spaces, then a digit, in any case. It also checks that every
``benchmarks/*.sh`` script that README.md or docs/ name exists, so a renamed script
cannot leave a stale command behind.
"""
import os
import re

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TREES = ("README.md", "docs", "minimegatron", "tutorials", "benchmarks", "tests", "exercises")
ISSUE_NUMBER = re.compile(rb"issue *[0-9]", re.IGNORECASE)
SCRIPT = re.compile(r"benchmarks/[\w.-]+\.sh")


def files_under(tree):
    """Every file under tree (a file or a folder below ROOT), byte-compiled caches left out."""
    path = os.path.join(ROOT, tree)
    if os.path.isfile(path):
        return [path]
    found = []
    for folder, subfolders, names in os.walk(path):
        subfolders[:] = [name for name in subfolders if name != "__pycache__"]
        found += [os.path.join(folder, name) for name in names]
    return sorted(found)


def issue_mentions(text):
    """[(line number, line)] for each line of text (bytes) that names an issue number."""
    return [(number, line.decode("utf-8", "replace").strip())
            for number, line in enumerate(text.splitlines(), 1) if ISSUE_NUMBER.search(line)]


def test_the_scanner_catches_an_issue_number():
    """Built from pieces, so this file holds no such mention itself."""
    text = ("intro\n## " + "Iss" + "ue 15 at a glance\nsee ISS" + "UE18 and is" + "sue  7\n"
            "an issue with no number, tissue, issues\n").encode()
    assert issue_mentions(text) == [(2, "## " + "Iss" + "ue 15 at a glance"),
                                    (3, "see ISS" + "UE18 and is" + "sue  7")]
    assert issue_mentions(b"The performance targets at a glance") == []


def test_no_file_names_an_issue_number():
    found = []
    for tree in TREES:
        for path in files_under(tree):
            with open(path, "rb") as file:
                mentions = issue_mentions(file.read())
            found += [f"{os.path.relpath(path, ROOT)}:{n}: {line[:80]}" for n, line in mentions]
    assert len(files_under("minimegatron")) > 50 and len(files_under("docs")) > 10
    assert not found, "say what the thing is, not its issue number:\n" + "\n".join(found)


def test_every_named_benchmark_script_exists():
    texts = [open(path, encoding="utf-8").read()
             for path in files_under("README.md") + files_under("docs") if path.endswith(".md")]
    named = {script for text in texts for script in SCRIPT.findall(text)}
    assert "benchmarks/run_all.sh" in named, named
    missing = sorted(s for s in named if not os.path.isfile(os.path.join(ROOT, s)))
    assert not missing, f"README.md or docs/ name scripts that do not exist: {missing}"
