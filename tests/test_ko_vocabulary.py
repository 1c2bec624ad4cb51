"""One vocabulary in Korean: the lecture notes' own.

The Korean lecture notes (shared/seeds/) keep the technical terms in English inside Korean
sentences ("Forward -> Backward로 gradient를 계산하고", "Micro-batch로 학습을 진행합니다"),
and docs/glossary.md promises the same of every Korean surface. So a Korean calque of such a
term ("랭크", "기울기", "순전파") is a second vocabulary the student must map back to the
notes. This file scans every Korean surface (docs/*.ko.md, exercises/ko/, the program's
Korean strings in minimegatron/i18n/ko*.py and the glossary's Korean column) for the calques
of BANNED and names each file:line that uses one.

English and the notes' term keep the same particles: "rank" is read 랭크, "gradient"
그래디언트, "stage" 스테이지, "group" 그룹, so "랭크가" becomes "rank가" with no other change.
"""
import glob
import os
import re

from minimegatron.i18n import ko

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SEEDS = os.path.join(os.path.dirname(ROOT), "shared", "seeds")

# calque (a regular expression) -> the term the notes write
BANNED = {
    "랭크": "rank", "기울기": "gradient", "그래디언트": "gradient", "순전파": "forward",
    "역전파": "backward", "마이크로 ?배치": "micro-batch", "미니 ?배치": "mini-batch",
    "스테이지": "stage", "파라미터": "parameter", "매개변수": "parameter", "가중치": "weight",
    "옵티마이저": "optimizer", "그룹": "group", "텐서": "tensor", "활성값": "activation",
    "파이프라인": "pipeline", "스케줄": "schedule", "개더": "gather", "올리듀스": "all-reduce",
    "버블": "bubble", "인터리브드": "interleaved", "디스패치": "dispatch", "컴바인": "combine",
    "드롭리스": "dropless", "지그재그": "zigzag", "라우터": "router", "워밍업": "warm-up",
    "쿨다운": "cool-down", "버킷": "bucket", "샤드": "shard", "체크포인트": "checkpoint",
    "소프트맥스": "softmax", "어텐션": "attention", "청크": "chunk", "토큰": "token",
    "시퀀스": "sequence",
}
CALQUE = re.compile("|".join(f"(?:{c})" for c in BANNED))
# the glossary rows whose Korean column must be the notes' term itself
NOTES_TERMS = {"rank": "rank", "gradient": "gradient", "forward pass": "forward",
               "backward pass": "backward", "micro-batch": "micro-batch",
               "mini-batch": "mini-batch", "stage": "stage", "activation": "activation"}


def korean_surfaces():
    """Every file a Korean reader sees text of, relative to the repository."""
    paths = (glob.glob(os.path.join(ROOT, "docs", "*.ko.md"))
             + glob.glob(os.path.join(ROOT, "exercises", "ko", "*.md"))
             + glob.glob(os.path.join(ROOT, "minimegatron", "i18n", "ko*.py")))
    return sorted(os.path.relpath(p, ROOT) for p in paths)


def calques(text):
    """[(line number, the calque, the notes' term)] for every banned word of ``text``."""
    found = []
    for number, line in enumerate(text.splitlines(), 1):
        for match in CALQUE.finditer(line):
            term = next(t for c, t in BANNED.items() if re.fullmatch(c, match.group(0)))
            found.append((number, match.group(0), term))
    return found


def glossary_korean_column(path):
    """{English term: its Korean column}, from a glossary page's table."""
    rows = {}
    with open(os.path.join(ROOT, path), encoding="utf-8") as f:
        for line in f:
            cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
            if len(cells) == 4 and cells[0] not in ("English", "영어") and cells[0] != "---":
                rows[cells[0]] = cells[1]
    return rows


def test_the_scanner_finds_a_planted_calque_with_its_particle():
    planted = "모든 랭크가 기울기를 받습니다\nrank 0의 gradient\n마이크로 배치마다 순전파(forward)"
    assert calques(planted) == [(1, "랭크", "rank"), (1, "기울기", "gradient"),
                                (3, "마이크로 배치", "micro-batch"), (3, "순전파", "forward")]
    assert calques("rank 0: micro-batch 3의 stage 1 forward, group의 weight") == []


def test_the_notes_never_use_a_banned_word_and_write_its_term_in_english():
    text = ""
    for path in sorted(glob.glob(os.path.join(SEEDS, "*.txt"))):
        with open(path, encoding="utf-8") as f:
            text += f.read()
    assert "Micro-batch로 학습을 진행합니다" in text and "gradient를 계산하고" in text
    assert calques(text) == [], "a banned word is the notes' own: take it off BANNED"
    for term in ("gradient", "forward", "backward", "micro-batch", "mini-batch", "weight",
                 "parameter", "optimizer", "tensor", "activation", "pipeline", "gather",
                 "all-reduce", "bubble"):
        assert term in text.lower(), f"the notes never write {term}"


def test_no_korean_surface_uses_a_calque():
    surfaces = korean_surfaces()
    assert len(surfaces) > 60 and "minimegatron/i18n/ko_errors.py" in surfaces
    bad = []
    for path in surfaces:
        with open(os.path.join(ROOT, path), encoding="utf-8") as f:
            bad += [f"{path}:{n}: {word} -> {term}" for n, word, term in calques(f.read())]
    assert not bad, "the notes write these terms in English:\n" + "\n".join(bad)


def test_the_glossary_korean_column_is_the_notes_own_word():
    for page in ("docs/glossary.md", "docs/glossary.ko.md"):
        rows = glossary_korean_column(page)
        assert len(rows) > 60, page
        bad = {term: korean for term, korean in rows.items() if CALQUE.search(korean)}
        assert not bad, f"{page}: calques in the Korean column: {bad}"
        for english, term in NOTES_TERMS.items():
            assert rows[english] == term, f"{page}: {english} is {rows[english]!r}, not {term}"


def seeds_text():
    """The notes' words, as a reader sees them: links as their text, no table debris, one space
    between words."""
    text = ""
    for path in sorted(glob.glob(os.path.join(SEEDS, "*.txt"))):
        with open(path, encoding="utf-8") as f:
            text += f.read() + "\n"
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)          # [ZeRO](https://...) -> ZeRO
    text = re.sub(r" \| \|+", " ", text)
    return re.sub(r"\s+", " ", text)


def quoted(note):
    """The spans of ``note`` in double quotes."""
    return [re.sub(r"\s+", " ", span) for span in re.findall(r'"([^"]+)"', note)]


def test_the_graders_korean_notes_quote_the_notes_or_say_they_summarise():
    seeds = seeds_text()
    back_translated = '"연산자 f와 g는 켤레(conjugate)입니다: f는 forward에서 항등"'
    assert quoted(back_translated)[0] not in seeds                # what this test catches
    quotes = 0
    for ex_id, entry in ko.EXERCISES.items():
        note = entry["note"]
        assert quoted(note) or note.startswith("(요약) "), f"{ex_id}: quote the notes or say (요약)"
        for span in quoted(note):
            assert span in seeds, f"{ex_id}: not the notes' own words: {span}"
            quotes += 1
    assert quotes >= 8, quotes
