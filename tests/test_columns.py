"""Terminal tables line up by display width (East Asian Width: a Hangul syllable takes two
columns), in both languages: ``minimegatron.i18n.columns`` pads every table cell.

``starts`` and ``ends`` read a printed line as a terminal shows it, so a table is aligned
when every row's cells start or end at the same display columns.
"""
import re

import pytest

from minimegatron import i18n

from minimegatron.classroom.gradebook import table
from minimegatron.commands.exercises import main as exercises_main
from minimegatron.i18n.columns import fit, width


def ends(line):
    """The display columns where each cell of ``line`` ends (a non-space before a space)."""
    return [width(line[:i + 1]) for i, c in enumerate(line)
            if c != " " and (i + 1 == len(line) or line[i + 1] == " ")]


def right_aligned(rows, ref, cells=slice(-2, None)):
    """True if every row has a cell ending at each display column where the ``cells`` of row
    ``ref`` end (right-aligned numbers: the last two, unless told), header rows included."""
    want = ends(rows[ref])[cells]
    return bool(want) and all(set(want) <= set(ends(row)) for row in rows)


def test_fit_counts_hangul_as_two_columns():
    assert fit("weights", 8) == " weights" and fit("가중치", 8) == "  가중치"
    assert width("rank당 (tp=2)") == 13 and fit("합계", 3, "<") == "합계"


@pytest.mark.parametrize("lang", ["en", "ko"])
def test_exercises_list_columns_line_up(lang, capsys, monkeypatch):
    monkeypatch.setenv("MINIMEGATRON_LANG", lang)
    assert exercises_main(["list"]) == 0
    lines = capsys.readouterr().out.split("\n\n")[0].splitlines()     # the table
    where = {width(line[:line.index(" minimegatron/")]) for line in lines}
    assert len(lines) > 20 and len(where) == 1, "\n".join(lines)
    if lang == "en":                                     # English as it always was
        assert lines[0].startswith("1.1   MatMul backward" + " " * 33 + " minimegatron/"), lines


def test_gradebook_table_lines_up_with_hangul_names():
    cell = {"result": "PASS"}
    book = {"김민수": {"1.1": cell, "3.2": {"result": "FAIL"}},
            "alice": {"1.1": cell, "3.2": cell},
            "이서연_2": {"1.1": {"result": "TODO"}, "3.2": cell}}
    rows = table(book).splitlines()
    assert [row.split()[0] for row in rows[1:]] == list(book)
    assert right_aligned(rows, 0, slice(-3, -1)), "\n".join(rows)     # the exercise columns
    assert {width(row[:row.rindex("  ")]) for row in rows} == {width(rows[0]) - 6}


# whole-line headers (i18n catalogs) above right-aligned number columns; the rows print
# the same in both languages, so each Korean cell ends where the English one does
HEADERS = ("t05.head_losses", "t06.head_losses", "t08.head_losses", "t10.columns",
           "t12.head_variants", "t12.head_bytes", "t12.head_steps")


def cell_ends(header):
    """The display columns where the cells of a header end: the first (a left-aligned label)
    and a closing note in parentheses aside."""
    header = re.sub(r"\s*\([^()]*\{[^()]*\}[^()]*\)\s*$", "", header)
    return [width(header[:m.end()]) for m in re.finditer(r"\S+(?: \S+)*", header)][1:]


@pytest.mark.parametrize("key", HEADERS)
def test_korean_headers_end_their_cells_where_the_english_do(key):
    en, ko = i18n.CATALOGS["en"][key], i18n.CATALOGS["ko"][key]
    assert len(cell_ends(en)) >= 2 and cell_ends(ko) == cell_ends(en), (en, ko)
