"""A fresh student copy carries its own README, in English and Korean, not the teacher's.

The teacher's README says to run pytest and read docs/, and neither is in a copy. The
student's (minimegatron/classroom/handout/) says how to set the copy up (README's own venv
line, without the demo), how to work, how to grade and how to ask for help; every path and
command it names is in the copy.
"""
import os
import re

import pytest

from minimegatron.classroom import exercises
from minimegatron.commands.cli import COMMANDS
from test_quick_start import install_line

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SECTIONS = {"README.md": ["## Set it up once", "## How to work", "## How to grade your work",
                          "## How to ask for help"],
            "README.ko.md": ["## 처음 한 번 설치하기", "## 공부하는 순서", "## 스스로 채점하기",
                             "## 도움 청하기"]}


@pytest.fixture(scope="module")
def copy(tmp_path_factory):
    dest = str(tmp_path_factory.mktemp("handout") / "ana")
    exercises.make(dest)
    return dest


def read(*parts):
    with open(os.path.join(*parts), encoding="utf-8") as f:
        return f.read()


def test_a_fresh_copy_has_the_students_readme_in_both_languages_not_the_teachers(copy):
    teacher = read(ROOT, "README.md")
    for name, sections in SECTIONS.items():
        mine = read(copy, name)
        assert mine == read(exercises.HANDOUT_DIR, name) and mine != teacher
        assert "pytest" not in mine and "docs/" not in mine and "## Quick start" not in mine
        assert [line for line in mine.splitlines() if line.startswith("## ")] == sections
        assert install_line() in mine.splitlines(), name      # README's line, no demo
        assert "minimegatron grade 3.2" in mine and "minimegatron exercises list" in mine
    assert "[한국어](README.ko.md)" in read(copy, "README.md")
    assert "[English](README.md)" in read(copy, "README.ko.md")
    assert exercises.changed_outside(copy) == []         # handing it back is not a change


def test_every_path_and_command_the_readme_names_is_in_the_copy(copy):
    for name in SECTIONS:
        text = read(copy, name)
        paths = {p.rstrip("/") for p in re.findall(r"[`\s]((?:exercises|tutorials|minimegatron)"
                                                    r"/[\w./-]*)", text)}
        assert {"exercises/ko/3.2.md" if ".ko." in name else "exercises/3.2.md",
                "tutorials/03_tensor_parallel_mlp.py"} <= paths, paths
        assert [p for p in paths if not os.path.exists(os.path.join(copy, p))] == [], name
        named = set(re.findall(r"(?:`|^|=ko )minimegatron (\w+)", text, re.M))   # typed ones
        assert named and named <= set(COMMANDS), named
