"""Every exercise says what it teaches, and the grader judges exactly those points.

For each exercise: a Lesson of 2 to 5 points; each point's words (English and
Korean, ``i18n/*_lessons.py``) are listed in the exercise's page a student reads
(``exercises/<id>.md`` under "## What the grader checks", ``exercises/ko/<id>.md``
under "## 채점기가 확인하는 것") as ``- **name**: words``, and has a hint. The
judge never imports the copy under test (``judge.py`` reads JSON evidence only).
"""
import importlib
import os
import re

import pytest

from minimegatron.classroom.exercise_checks import EXERCISES
from minimegatron.i18n import CATALOGS, speaking

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HEADINGS = {"en": ("exercises/{id}.md", "## What the grader checks"),
            "ko": ("exercises/ko/{id}.md", "## 채점기가 확인하는 것")}


def lesson(ex):
    module = importlib.import_module(f"minimegatron.classroom.exercise_checks.{ex.module}")
    return module.LESSONS[ex.id]


def listed(ex, lang):
    """{name: words} of the bullet list under the page's heading."""
    pattern, heading = HEADINGS[lang]
    with open(os.path.join(ROOT, pattern.format(id=ex.id)), encoding="utf-8") as f:
        page = f.read()
    assert heading in page, f"{pattern.format(id=ex.id)} has no '{heading}'"
    section = page.split(heading, 1)[1].split("\n## ", 1)[0]
    return dict(re.findall(r"^- \*\*(\w+)\*\*: (.+)$", section, re.M))


@pytest.mark.parametrize("ex", EXERCISES, ids=[ex.id for ex in EXERCISES])
def test_each_exercise_teaches_two_to_five_points_and_its_page_lists_them(ex):
    points = lesson(ex).points
    assert 2 <= len(points) <= 5, [p.name for p in points]
    assert len({p.name for p in points}) == len(points)
    for lang in ("en", "ko"):
        pages = listed(ex, lang)
        with speaking(lang):
            want = {p.name: p.teaches(ex.id) for p in points}
            for p in points:
                assert p.hint(ex.id).strip()
        assert pages == want, f"{ex.id} ({lang}): the page lists {pages}, the grader {want}"


def test_every_point_key_exists_in_both_languages():
    keys = [k for k in CATALOGS["en"] if k.startswith("point.")]
    assert keys and set(keys) == {k for k in CATALOGS["ko"] if k.startswith("point.")}


@pytest.mark.parametrize("lang, page", [("en", "docs/teaching.md"), ("ko", "docs/teaching.ko.md")])
def test_the_teachers_page_lists_every_point_of_every_exercise(lang, page):
    with open(os.path.join(ROOT, page), encoding="utf-8") as f:
        rows = re.findall(r"^\| ([^|]*) \| `(\w+)` \| (.+) \|$", f.read(), re.M)
    listed, current = {}, None
    for first, name, words in rows:
        current = first.split()[0] if first.strip() else current
        listed.setdefault(current, {})[name] = words.replace("\\*", "*")   # * escaped in Markdown
    with speaking(lang):
        want = {ex.id: {p.name: p.teaches(ex.id).replace("|", "/") for p in lesson(ex).points}
                for ex in EXERCISES}
    assert listed == want
