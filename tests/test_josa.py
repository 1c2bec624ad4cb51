"""Korean particles fitted to the word before them (minimegatron/i18n/josa.py).

A Korean message writes "tp=3으로" but "tp=2로", "4를" but "3을": the particle's form depends on
whether the value's last syllable, as read aloud, ends in a consonant. The catalogs write the
consonant form after a {field}; i18n.text fits it to the value, and no template shows a
placeholder such as 을(를).
"""
import glob
import os
import re

import pytest

from minimegatron import i18n
from minimegatron.commands import parser as cli_parser
from minimegatron.i18n import book_errors, josa

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PLACEHOLDER = re.compile(r"을\(를\)|를\(을\)|이\(가\)|가\(이\)|은\(는\)|는\(은\)|와\(과\)|과\(와\)|"
                         r"\(으\)로|\(이\)|\(을\)|\(은\)")

# n: (as read, 을/를, 으로/로)
NUMBERS = {0: ("영", "을", "으로"), 1: ("일", "을", "로"), 2: ("이", "를", "로"),
           3: ("삼", "을", "으로"), 4: ("사", "를", "로"), 5: ("오", "를", "로"),
           6: ("육", "을", "으로"), 7: ("칠", "을", "로"), 8: ("팔", "을", "로"),
           9: ("구", "를", "로"), 10: ("십", "을", "으로"), 100: ("백", "을", "으로"),
           1000: ("천", "을", "으로"), 12: ("십이", "를", "로"), 26: ("이십육", "을", "으로"),
           10000: ("만", "을", "으로")}


@pytest.mark.parametrize("n", sorted(NUMBERS))
def test_a_number_takes_the_particle_of_its_korean_reading(n):
    _, object_form, toward = NUMBERS[n]
    assert josa.particle(str(n), "을") == object_form
    assert josa.particle(str(n), "으로") == toward
    assert josa.particle(f"tp={n}", "이") == {"을": "이", "를": "가"}[object_form]


def assert_read(vowel, consonant):
    """Each word of ``vowel`` read with no 받침, each of ``consonant`` with its own, and every
    particle in the form that reading asks for (ㄹ takes 로, as a vowel does)."""
    for word in vowel:
        assert josa.final_consonant(word) == "", word
        assert [josa.particle(word, p) for p in ("은", "과", "을", "이", "으로")] == \
            ["는", "와", "를", "가", "로"], word
    for word, final in consonant.items():
        assert josa.final_consonant(word) == final, word
        assert [josa.particle(word, p) for p in ("은", "과", "을", "이")] == \
            ["은", "과", "을", "이"], word
        assert josa.particle(word, "으로") == ("로" if final == "ㄹ" else "으로"), word


def test_english_names_take_the_particle_of_their_english_reading():
    vowel = ["rank", "gradient", "forward", "backward", "stage", "all-reduce", "weight",
             "tp", "dp", "GPU", "MLP", "'h.0.attn.qkv.weight'", "(B, T)", "x", "1.5"]
    consonant = {"group": "ㅂ", "step": "ㅂ", "token": "ㄴ", "string": "ㅇ", "model": "ㄹ",
                 "L": "ㄹ", "M": "ㅁ", "N": "ㄴ", "3.0": "ㅇ"}
    assert_read(vowel, consonant)
    assert josa.particle("model", "으로") == "로" and josa.particle("group", "으로") == "으로"
    assert josa.particle("가", "이") == "가" and josa.particle("각", "이") == "이"


def test_format_fits_each_particle_after_a_field_and_leaves_the_rest():
    template = "tp={tp}으로 나누면 {n}을 {name}이 받고, {path!r}은 {other}과 {k}로서 {k}이며"
    assert josa.format(template, tp=3, n=4, name="rank", path="a.npz", other="group", k=2) == (
        "tp=3으로 나누면 4를 rank가 받고, 'a.npz'는 group과 2로서 2이며")
    assert josa.format(template, tp=2, n=3, name="group", path="b", other="rank", k=7) == (
        "tp=2로 나누면 3을 group이 받고, 'b'는 rank와 7로서 7이며")
    assert josa.format("{a:>4}를 {{x}}을 '{b}'을", a=10, b="c") == "  10을 {x}을 'c'를"


def test_argparse_templates_fit_their_particles_too():
    assert josa.percent("인자 %s과 함께") % "--foo" == "인자 --foo와 함께"
    assert josa.percent("'%(filename)s'을 열 수 없습니다: %(error)s") % {
        "filename": "a.txt", "error": "e"} == "'a.txt'를 열 수 없습니다: e"
    assert type(josa.percent("usage: %s")) is str                 # English: argparse's own


def test_live_korean_errors_take_the_right_particle(monkeypatch):
    monkeypatch.setenv("MINIMEGATRON_LANG", "ko")
    for tp, toward in ((3, "3으로"), (2, "2로"), (6, "6으로"), (4, "4로")):
        english = f"tensor parallel: n_head=5 is not divisible by tp={tp}"
        assert f"tp={toward} 나누어떨어지지" in book_errors.translate(english, "ko")
    assert i18n.text("grader.needs_first", id="3.2", message="m").startswith("먼저 연습 문제 3.2가 ")
    assert i18n.text("reaper.killed_by_signal", number=9) == "시그널 9로 끝남"
    assert i18n.text("reaper.killed_by_signal", number=15) == "시그널 15로 끝남"
    assert i18n.text("reaper.killed_by_signal", number=6) == "시그널 6으로 끝남"
    with cli_parser.speaking_argparse():
        allowed = cli_parser.translate("not allowed with argument %s")
        assert allowed % "--a" == "인자 --a와 함께 쓸 수 없습니다"


def test_no_korean_template_shows_a_particle_placeholder():
    assert PLACEHOLDER.search("rank {rank}을(를) 받습니다")          # the scan finds one
    bad = []
    for path in sorted(glob.glob(os.path.join(ROOT, "minimegatron", "i18n", "ko*.py"))):
        with open(path, encoding="utf-8") as f:
            for number, line in enumerate(f, 1):
                if PLACEHOLDER.search(line):
                    bad.append(f"{os.path.relpath(path, ROOT)}:{number}: {line.strip()}")
    assert not bad, "write the particle after a {field}; josa fits it:\n" + "\n".join(bad)


def test_a_silent_e_leaves_the_consonant_before_it():
    """sample 샘플, file 파일, timeline 타임라인, engine 엔진, name 네임: "혹시 'sample'을"."""
    for word, final in {"sample": "ㄹ", "file": "ㄹ", "module": "ㄹ", "timeline": "ㄴ",
                        "engine": "ㄴ", "name": "ㅁ", "'timeline'": "ㄴ"}.items():
        assert josa.final_consonant(word) == final, word
    for word in ("stage", "grade", "calibrate", "exercises", "core"):
        assert josa.final_consonant(word) == "", word
    assert josa.format("혹시 {name}을 뜻했나요?", name="'sample'") == "혹시 'sample'을 뜻했나요?"


def test_a_file_takes_the_particle_of_its_extension_and_an_option_of_its_word():
    """png 피엔지, npz 엔피지, md 엠디 (no 받침); json 제이슨, html 에이치티엠엘, zip 집 (받침); an
    option by its last word: timeout 타임아웃, out 아웃 (ㅅ), steps 스텝스, seed 시드 (none)."""
    no_final = ["timeline.png", "'ckpt.npz'", "docs/index.md", "run.log", "make_figures.py",
                "--steps", "--seed", "--micro-batches", "--layers", "--dtype"]
    final = {"out/trace.json": "ㄴ", "page.html": "ㄹ", "weights.zip": "ㅂ", "'a.jsonl'": "ㄹ",
             "--timeout": "ㅅ", "--student-timeout": "ㅅ", "--out": "ㅅ", "--json": "ㄴ",
             "--schedule": "ㄹ", "--attention": "ㄴ", "-n": "ㄴ"}
    assert_read(no_final, final)
    assert josa.format("{path}을 저장했습니다", path="timeline.png") == "timeline.png를 저장했습니다"
    assert josa.format("{flag}를 늘리세요", flag="--timeout") == "--timeout을 늘리세요"
    assert josa.format("{path}으로 씁니다", path="out/trace.json") == "out/trace.json으로 씁니다"
    # a dotted name that is no file is read by its last word, as before
    assert josa.final_consonant("'h.0.attn.qkv.weight'") == ""
    assert josa.final_consonant("model.ln_f.bias") == ""


def test_english_endings_read_with_a_final_consonant():
    """-ock, -ack 블록, 스택 (ㄱ); -out, -put, -set, -lit 레이아웃, 아웃풋, 오프셋, 스플릿 (ㅅ); while
    weight 웨이트, gradient 그래디언트, check 체크 keep no 받침."""
    assert_read(["weight", "gradient", "check", "rank", "forward", "bit"],
                {"block": "ㄱ", "stack": "ㄱ", "traceback": "ㄱ", "layout": "ㅅ", "output": "ㅅ",
                 "offset": "ㅅ", "split": "ㅅ", "limit": "ㅅ", "dataset": "ㅅ"})
