"""The Korean house style's examples (docs/glossary.md, "How Korean is written here") are
what the program prints: each is a real error the book raises, said in Korean by
``i18n/book_errors.py`` with its particles fitted by ``i18n/josa.py``. A page that shows a
particle the program does not choose ("tp=3로"), or a program that stops choosing it, fails.
"""
import os
from types import SimpleNamespace

import numpy as np
import pytest

from minimegatron.i18n import book_errors
from minimegatron.parallel.split import check_divisible
from minimegatron.parallel.tensor_parallel import linear, shards

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PAGES = ("docs/glossary.md", "docs/glossary.ko.md")


def korean_error(fn, *args):
    """The Korean line a student sees for the ValueError ``fn(*args)`` raises."""
    with pytest.raises(ValueError) as raised:
        fn(*args)
    return book_errors.translate(str(raised.value), "ko")


def examples():
    return [
        korean_error(linear._full_weights, "row", 32, 16, 3, True, None, None, 0, None),
        korean_error(linear._full_weights, "column", 32, 30, 4, True, None, None, 0, None),
        korean_error(shards._chunk, np.zeros((2, 10)), 1, 0, 4),
        korean_error(check_divisible, 6, SimpleNamespace(size=4, name="dp0")),
    ]


def style_section(page):
    with open(os.path.join(ROOT, page), encoding="utf-8") as f:
        text = f.read()
    return text[text.index("\n## ", text.index("| zigzag")):]          # after the table


@pytest.mark.parametrize("page", PAGES)
def test_every_example_on_the_style_section_is_what_the_program_prints(page):
    section = style_section(page)
    shown = [line.strip()[3:-1] for line in section.splitlines()
             if line.strip().startswith("- `")]
    assert shown == examples(), (shown, examples())


def test_the_examples_are_particles_chosen_by_the_value():
    said = examples()
    assert "in_features=32가 tp=3으로" in said[0] and "out_features=30이 tp=4로" in said[1]
    assert "축 1이 tp=4로" in said[2] and "4로 나누어떨어지는" in said[3]
    for line in said:                          # no placeholder, no semicolon, Korean
        assert "(를)" not in line and "(가)" not in line and ";" not in line, line
        assert any("\uac00" <= ch <= "\ud7a3" for ch in line), line


def test_a_planted_wrong_particle_on_the_page_fails():
    section = style_section(PAGES[1]).replace("tp=3으로", "tp=3로")
    shown = [line.strip()[3:-1] for line in section.splitlines()
             if line.strip().startswith("- `")]
    assert shown != examples()
