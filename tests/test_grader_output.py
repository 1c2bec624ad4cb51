"""What reaches the teacher is inert: no control character acts on the terminal, no cell
of the CSV is a formula (``classroom/inert.py``).

A student chooses an error message and the name of a class folder. Escapes in them
(clear the screen, a hidden link, ``\\r`` over the verdict, U+202E turning a line
around) are shown escaped on every line ``grade --path`` and ``grade --class`` print,
in English and in Korean; a folder named ``=HYPERLINK(...)`` (or beginning with ``+ - @``,
a tab, a carriage return) is text in the CSV, with OWASP's single quote in front.
"""
import csv
import io
import os
import subprocess
import sys

import pytest

from minimegatron.classroom import exercises, gradebook, grader, inert

ACTIVE = ("\x1b", "\r", "\x9b", "\x07", "\u202e", "\x00")
EVIL_MESSAGE = "\x1b[2J\x1b]8;;http://evil.example\x07click\x1b]8;;\x07\rPASS\u202eevil"
FOLDERS = ["=HYPERLINK(\"evil.example\",\"grades\")", "+1+2", "-2+3", "@SUM(A1)",
           "\tTab", "\rCR", "\x1b[31mred", "new\nline", "학생_김"]


def _clean(text):
    return not any(char in text for char in ACTIVE)


def test_terminal_escapes_every_control_character_and_keeps_the_rest():
    shown = inert.terminal(EVIL_MESSAGE + "\n한국어 rank 0: ok\t")
    assert _clean(shown)
    assert "\\x1b[2J" in shown and "\\r" in shown and "\\u202e" in shown and "\\x07" in shown
    assert shown.endswith("\n한국어 rank 0: ok\\t")
    assert inert.terminal("plain text, 한국어\nsecond line") == "plain text, 한국어\nsecond line"
    assert inert.line("a\nb\x9bc") == "a\\nb\\x9bc"


@pytest.mark.parametrize("value", ["=1+1", "+1", "-1", "@A1", "\tx", "\rx"])
def test_a_cell_that_would_be_a_formula_gets_a_quote(value):
    shown = inert.cell(value)
    assert shown.startswith("'") and _clean(shown)


def test_other_cells_stay_as_they_are():
    assert [inert.cell(v) for v in ("alice", "1.2", "PASS", "학생", 3.5, "")] == \
           ["alice", "1.2", "PASS", "학생", 3.5, ""]


def test_without_the_quote_the_csv_holds_a_formula(monkeypatch):
    """The mutant (the CSV as it was written before): the folder name is a formula."""
    book = {FOLDERS[0]: {"1.2": {"result": "ERROR", "missed": ["error"], "lines": [],
                                 "seconds": None, "sandbox": ""}}}
    monkeypatch.setattr(inert, "cell", lambda value: value)
    rows = list(csv.reader(io.StringIO(gradebook.csv_text(book))))
    assert rows[1][0].startswith("=HYPERLINK")


@pytest.mark.parametrize("lang", ["en", "ko"])
def test_a_students_error_message_and_folder_name_print_escaped(tmp_path, monkeypatch, lang):
    monkeypatch.setenv("MINIMEGATRON_LANG", lang)
    copy = tmp_path / "\x1b[2Jcopy\r"
    exercises.make(str(copy))
    exercises.put_block(str(copy), "1.2", [f"        raise RuntimeError({EVIL_MESSAGE!r})\n"])
    out = io.StringIO()
    grader.grade(str(copy), "1.2", timeout=30, out=out, seed=grader.SEED)
    text = out.getvalue()
    assert _clean(text), text
    assert "\\x1b[2Jcopy\\r" in text, text
    assert "\\x1b]8;;http://evil.example\\x07click" in text, text
    if lang == "ko":
        assert "실패" in text or "오류" in text, text


@pytest.mark.parametrize("lang", ["en", "ko"])
def test_a_class_of_hostile_folder_names_prints_and_writes_inert(tmp_path, lang):
    """Folders that hold no copy: each cell ERROR at once, so only the names are tested."""
    class_dir = tmp_path / "class"
    for name in FOLDERS:
        (class_dir / name).mkdir(parents=True)
    env = {**os.environ, "MINIMEGATRON_LANG": lang}
    proc = subprocess.run([sys.executable, "-m", "minimegatron", "grade", "1.2", "--class",
                           str(class_dir), "--csv", str(tmp_path / "book.csv"), "--json",
                           str(tmp_path / "book.json"), "--jobs", "4"], env=env,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    assert _clean(proc.stdout) and _clean(proc.stderr), proc.stdout + proc.stderr
    assert "\\x1b[31mred" in proc.stdout and "new\\nline" in proc.stdout, proc.stdout
    assert "학생_김" in proc.stdout
    with open(tmp_path / "book.csv", encoding="utf-8", newline="") as f:
        rows = list(csv.reader(f))[1:]
    students = [row[0] for row in rows]
    for name in FOLDERS:
        shown = inert.line(name)
        expected = ("'" + shown) if name.startswith(inert.FORMULA_START) else shown
        assert expected in students, (name, students)
    assert all(not s.startswith(("=", "+", "-", "@", "\t", "\r")) for s in students)
    assert all(_clean(cell) for row in rows for cell in row)
