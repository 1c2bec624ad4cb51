"""Korean prose is punctuated as Korean: no semicolons, no chains of colons.

An English sentence strings clauses with ";" and labels with ":" ("stage 1: 4P; stage 2: 2P;
total: 16P"); a Korean instructor ends the sentence (다.) or joins with a connective (고, 며,
므로, 이고). So in the prose of docs/*.ko.md:

- no line holds a semicolon;
- no line holds three colons or more (one or two: a label, "예: ...").

Prose is what a reader reads as Korean text: a paragraph (lines between blank lines) with a
Hangul syllable in it, without its code (fenced blocks, indented code, `code spans`, even
across lines), maths ($...$, $$...$$), tables (lines that start with |), link targets and
URLs, HTML comments and entities, and a colon between digits (12:30, 1:2). So an English
paragraph of a Korean page (a generated table's caption, a figure's alt text) is left alone.
"""
import glob
import os
import re

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HANGUL = re.compile("[\uac00-\ud7a3]")
FENCE = re.compile(r"^( *)(```+|~~~+)[^\n]*\n.*?^\1\2[ \t]*$", re.M | re.S)
NOT_PROSE = re.compile(r"`[^`]*`|\$\$.*?\$\$|\$[^$\n]*\$|\]\([^)]*\)|https?://\S+|<!--.*?-->"
                       r"|&#?\w+;|(?<=\d):(?=\d)"
                       r'|"[^"\uac00-\ud7a3]*"'       # a quote in English (the notes'), not prose
                       r"|\[[^\]\n]*;[^\]\n]*\]", re.S)  # a matrix's rows: [A_1; ...; A_p]


def blank_out(match):
    """Text that is not prose, as spaces (its line breaks kept, so line numbers hold)."""
    return re.sub(r"[^\n]", " ", match.group(0))


def prose_lines(text):
    """[(line number, line)] of the Korean prose of a Markdown page."""
    text = FENCE.sub(blank_out, text)
    written, lines = text.split("\n"), NOT_PROSE.sub(blank_out, text).split("\n")
    found, start = [], 0
    for i in range(len(lines) + 1):
        if i < len(lines) and lines[i].strip():
            continue
        paragraph = [(n + 1, lines[n]) for n in range(start, i)      # indented code, tables
                     if not written[n].startswith("    ") and not written[n].startswith("|")]
        if any(HANGUL.search(line) for _, line in paragraph):
            found += paragraph
        start = i + 1
    return found


def faults(text):
    """[(line number, what is wrong, the line)] of the Korean prose of ``text``."""
    bad = []
    for number, line in prose_lines(text):
        if ";" in line:
            bad.append((number, "a semicolon", line.strip()))
        if line.count(":") >= 3:
            bad.append((number, f"{line.count(':')} colons", line.strip()))
    return bad


def korean_pages():
    pages = (glob.glob(os.path.join(ROOT, "docs", "*.ko.md"))
             + glob.glob(os.path.join(ROOT, "exercises", "ko", "*.md")))
    return sorted(os.path.relpath(p, ROOT) for p in pages)


@pytest.mark.parametrize("page", korean_pages())
def test_korean_prose_has_no_semicolon_and_no_colon_chain(page):
    with open(os.path.join(ROOT, page), encoding="utf-8") as f:
        bad = faults(f.read())
    assert not bad, f"{page}: write these as Korean sentences (end with 다., or join with " \
        "고, 며, 이고):\n" + "\n".join(f"  {n}: {why}: {line}" for n, why, line in bad)


def test_a_planted_line_fails_and_code_tables_urls_and_english_do_not():
    page = "# 제목\n\n문장 하나입니다. 다음 문장입니다.\n"
    assert faults(page) == []
    assert [why for _, why, _ in faults(page + "\ngradient를 모읍니다; 그다음 나눕니다.\n")] == \
        ["a semicolon"]
    assert [why for _, why, _ in faults(page + "\n배치: 16, 단계: 3, 결과: 통과\n")] == \
        ["3 colons"]
    assert faults(page + "\n예: `a; b`, 시각 12:30, 비율 1:2, 정의: 값이 둘\n") == []
    assert faults(page + "\n한국어 문단의 코드 `x = {'a': 1,\n'b': 2; 'c': 3}`입니다.\n") == []
    assert faults(page + "\n| 칸; 하나 | a: b: c: d |\n|---|---|\n") == []
    assert faults(page + "\n[링크](https://a.org/x;y:z:w:v)와 $a;b$, &nbsp;\n") == []
    assert faults(page + "\n66 PASS, 4 refused (axis = 2; grids: plan; PASS: trained)\n") == []
    assert faults(page + "\n```text\n단계: 1: 2: 3; 끝\n```\n") == []
    continued = page + "\n파일 목록입니다 (`a.py`,\n`b.py`; `c.py`).\n"
    assert [n for n, _, _ in faults(continued)] == [6]      # a line of a Korean paragraph


def test_an_english_quote_of_the_notes_and_a_matrix_are_not_korean_prose():
    quoted = ('**수식.** "f is identity in forward and all-reduce in backward;\n'
              'g is all-reduce in forward." (f는 forward에서 항등입니다.)\n'
              'A = [A_1; ...; A_p]로 나눕니다.\n')
    assert faults(quoted) == []
    assert [n for n, _, _ in faults(quoted.replace("항등입니다.)", "항등; g는 반대)"))] == [2]
