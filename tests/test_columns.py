"""Terminal tables line up by display width (East Asian Width: a Hangul syllable takes two
columns), in both languages: ``minimegatron.i18n.columns`` pads every table cell.

``starts`` and ``ends`` read a printed line as a terminal shows it, so a table is aligned
when every row's cells start or end at the same display columns.
"""
import re
import string

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


# whole-line headers (i18n catalogs) above the rows of a table; the rows print the same in
# both languages, so each Korean cell ends where the English one does, or, in a column of
# left-aligned lists (LEFT: the cells' indices), starts where it does
LEFT = {"t07.head_table": {8, 9}, "t11.columns": {2}, "t12.head_tokens": {1, 2},
        "t14.head_balance": {4}, "t14.head_losses": {4, 5}, "t14.head_tokens": {2, 3}}
HEADERS = ("t04.columns", "t05.head_losses", "t05.head_bytes", "t06.head_losses",
           "t07.head_table", "t08.head_bytes", "t08.head_losses", "t09.columns", "t10.columns",
           "t11.columns", "t12.head_tokens", "t12.head_variants", "t12.head_bytes",
           "t12.head_steps", "t13.head_table", "t14.head_balance", "t14.head_losses",
           "t14.head_tokens", "t14.head_factor", "t14.head_a2a", "t14.head_memory")


NOTE = re.compile(r"\s*\([^()]*\{[^()]*\}[^()]*\)\s*$")     # "(batch {ep})" closing a header


def cell_ends(header):
    """The display columns where the cells of a header end: the first (a left-aligned label)
    and a closing note in parentheses aside."""
    header = NOTE.sub("", header)
    return [width(header[:m.end()]) for m in re.finditer(r"\S+(?: \S+)*", header)][1:]


def cell_edges(header, left=()):
    """Each cell of a whole-line header (2+ spaces apart) as a terminal shows it: where it
    starts (index in ``left``) or ends (every other cell), the first cell by where it ends
    when it is indented (right-aligned) and by where it starts when not."""
    header = header.lstrip("\n")
    spans = [(width(header[:m.start()]), width(header[:m.end()]))
             for m in re.finditer(r"\S+(?: \S+)*", header)]
    return [start if i in left or (i == 0 and start == 0) else end
            for i, (start, end) in enumerate(spans)]


# English writes "total peak gathered" (two columns) with one space: tutorial 06's Korean run
# holds that header (test_tutorials_ko.py's HEADED)
UNPAIRED = {"t06.head_memory"}


def filled(message, lang):
    """A header with its {fields} filled in as a tutorial prints it (``ep=4``, tutorial 04's
    "loss tp=2" in the header's language)."""
    names = [name for _, name, _, _ in string.Formatter().parse(message) if name]
    values = {name: "ep=4" for name in names}
    if "loss_tp" in values:
        values["loss_tp"] = i18n.CATALOGS[lang]["t04.loss_tp"].format(tp=2)
    return message.format(**values)


@pytest.mark.parametrize("key", HEADERS)
def test_korean_headers_end_their_cells_where_the_english_do(key):
    en, ko = (filled(NOTE.sub("", i18n.CATALOGS[lang][key]), lang) for lang in ("en", "ko"))
    left = LEFT.get(key, ())
    assert len(cell_edges(en)) >= 2 and cell_edges(ko, left) == cell_edges(en, left), (en, ko)


def test_every_whole_line_header_is_held():
    """Every tutorial header of the catalogs (a key ``tNN.head_*`` or ``tNN.columns``) is in
    HEADERS, and the comparison fails on a Korean header one column off."""
    heads = {key for key in i18n.CATALOGS["en"]
             if re.match(r"t\d\d\.(head_|columns$)", key)}
    assert heads - UNPAIRED == set(HEADERS), heads ^ set(HEADERS)
    en = i18n.CATALOGS["en"]["t05.head_bytes"]
    assert cell_edges(en) != cell_edges(en.replace("   DDP recv", "    DDP recv"))
    assert cell_edges(en) != cell_edges(en.replace("DP grads+optim", "DP gradient+optim"))
    ko = i18n.CATALOGS["ko"]["t14.head_tokens"]
    assert cell_edges(ko, {2, 3}) != cell_edges(ko.replace("  expert", "   expert"), {2, 3})


def test_the_scaling_tables_line_up_in_korean(monkeypatch):
    """`memory scaling`'s two tables (fit() columns): every cell of the English header ends
    where a cell of the Korean header and of every Korean row ends."""
    from minimegatron.tools import scaling

    def tables(lang):
        monkeypatch.setenv("MINIMEGATRON_LANG", lang)
        lines = scaling.report().split("\n")
        heads = [i for i, line in enumerate(lines) if re.match(r"^ *\S+ +(\S+ +)?tp ", line)]
        assert len(heads) == 2, lines
        return [[lines[i]] + [row for row in lines[i + 1:i + 9]
                              if re.match(r"^ *[\d.]+B? ", row)] for i in heads]

    for (en, *_), (ko, *rows) in zip(tables("en"), tables("ko")):
        want = {width(en[:m.end()]) for m in re.finditer(r"\S+(?: \S+)*", en)}
        assert len(rows) >= 6 and want <= set(ends(ko)), "\n".join([en, ko])
        for row in rows:                                   # a row may leave its last cell empty
            assert {end for end in want if end <= width(row.rstrip())} <= set(ends(row)), \
                "\n".join([en, ko, row])
