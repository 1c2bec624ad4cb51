"""The order a chapter's (a week's) work follows: in ``exercises list`` and on every exercise
page, in both languages, from one table (``exercise_checks.CHAPTERS``).

No exercise must be done first any more (tests/test_exercise_alone.py): the order is the
one the ideas build in, with its why, and each page marks its own exercise in it.
"""
import os

import pytest

from minimegatron.classroom.exercise_checks import CHAPTERS, EXERCISES
from minimegatron.classroom.exercises import REPO_ROOT, order_line
from minimegatron.commands.exercises import main as exercises_main
from minimegatron.i18n import chapter_text, ko, speaking, text


def _flat(words):
    return " ".join(words.split())


def test_every_exercise_is_in_its_chapters_order_once():
    assert sorted(i for chapter in CHAPTERS for i in chapter.order) == \
        sorted(ex.id for ex in EXERCISES)
    for chapter in CHAPTERS:
        assert {i.split(".")[0] for i in chapter.order} == {chapter.id}, chapter
    assert set(ko.CHAPTERS) == {chapter.id for chapter in CHAPTERS}


@pytest.mark.parametrize("lang", ["en", "ko"])
def test_exercises_list_shows_each_chapters_order_and_why(lang, capsys, monkeypatch):
    monkeypatch.setenv("MINIMEGATRON_LANG", lang)
    assert exercises_main(["list"]) == 0
    table, order = capsys.readouterr().out.split("\n\n")
    assert order.startswith(text("cli.exercises.order") + "\n"), order
    lines = order.splitlines()[1:]
    assert len(lines) == 2 * len(CHAPTERS), order
    for chapter, (ids, why) in zip(CHAPTERS, zip(lines[::2], lines[1::2])):
        assert ids.split() == [chapter.id] + " -> ".join(chapter.order).split(), ids
        assert why.strip() == chapter_text(chapter), why
    assert len(table.splitlines()) == len(EXERCISES)


@pytest.mark.parametrize("lang", ["en", "ko"])
def test_every_exercise_page_gives_its_chapters_order_with_itself_marked(lang):
    for ex in EXERCISES:
        page = os.path.join(REPO_ROOT, "exercises", *(["ko"] if lang == "ko" else []),
                            f"{ex.id}.md")
        with open(page, encoding="utf-8") as f:
            words = _flat(f.read())
        with speaking(lang):
            line = _flat(order_line(ex.id))
        assert words.count(line) == 1, (page, line)
        assert f"**{ex.id}**" in line, line
