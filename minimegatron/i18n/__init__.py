"""Messages in English or Korean: ``text(key, **fields)``, the language from MINIMEGATRON_LANG.

    MINIMEGATRON_LANG=ko minimegatron grade 3.2 --path DIR      (unset or "en": English)

A message is a ``str.format`` template in a plain dict: ``en.py`` and ``ko.py``, then one
pair per topic (``en_tutorials.py`` / ``ko_tutorials.py``, ``en_cli.py``: the command line,
argparse's own words included, ``en_launcher.py``...: ``CATALOGS`` below lists them), with
the same keys and {fields} (tests/test_i18n.py). The Korean uses the lecture notes' terms
(docs/glossary.md, tests/test_ko_vocabulary.py) and writes a particle after a field in its
first form ("{tp}으로", "{name}을"): ``josa`` fits it to the value. The book's errors are
read back from their English (``book_errors.py``); the exercises' titles and hints are
English data (``exercise_checks``) that ``exercise_text`` shows in the current language.
"""
import contextlib
import os

from minimegatron.i18n import (en, en_agree, en_checkpoint, en_cli, en_lessons, en_sandbox,
                               en_static, en_tables, en_tutorials, ko, ko_agree, ko_checkpoint,
                               ko_cli, ko_lessons, ko_sandbox, ko_static, ko_tables, ko_tutorials)
from minimegatron.i18n import (en_checkpoint_errors, en_launcher, en_reports,
                               ko_checkpoint_errors, ko_launcher, ko_reports)
from minimegatron.i18n import en_composition, en_figures, ko_composition, ko_figures, josa

ENV = "MINIMEGATRON_LANG"
# one catalog per language: the base texts, then each topic's own module (same keys and fields)
CATALOGS = {"en": {**en.MESSAGES, **en_lessons.MESSAGES, **en_tutorials.MESSAGES,
                   **en_tables.MESSAGES, **en_cli.MESSAGES, **en_static.MESSAGES,
                   **en_checkpoint.MESSAGES, **en_sandbox.MESSAGES, **en_agree.MESSAGES,
                   **en_checkpoint_errors.MESSAGES, **en_reports.MESSAGES,
                   **en_launcher.MESSAGES, **en_figures.MESSAGES,
                   **en_composition.MESSAGES},
            "ko": {**ko.MESSAGES, **ko_lessons.MESSAGES, **ko_tutorials.MESSAGES,
                   **ko_tables.MESSAGES, **ko_cli.MESSAGES, **ko_static.MESSAGES,
                   **ko_checkpoint.MESSAGES, **ko_sandbox.MESSAGES, **ko_agree.MESSAGES,
                   **ko_checkpoint_errors.MESSAGES, **ko_reports.MESSAGES,
                   **ko_launcher.MESSAGES, **ko_figures.MESSAGES,
                   **ko_composition.MESSAGES}}


def language():
    """"en" or "ko"; ValueError (one line) for any other value of MINIMEGATRON_LANG."""
    lang = os.environ.get(ENV, "").strip().lower() or "en"
    if lang not in CATALOGS:
        raise ValueError(f"{ENV}={lang!r} is not a language minimegatron speaks: "
                         f"use one of {', '.join(CATALOGS)} (unset means en)")
    return lang


def text(key, /, **fields):
    """The message ``key`` in the current language, its {fields} filled in (a field may
    itself be called ``key``: the first argument is positional only). In Korean, a particle
    after a field takes the form its value asks for (``josa``: "tp=3으로", "tp=2로")."""
    lang = language()
    return fill(CATALOGS[lang][key], lang, **fields)


def fill(template, lang, /, **fields):
    """``template`` with its {fields}: ``str.format``, and Korean particles fitted (``josa``)."""
    return josa.format(template, **fields) if lang == "ko" else template.format(**fields)


def text_in(lang, key, /, **fields):
    """The message ``key`` in ``lang`` ("en" or "ko") whatever MINIMEGATRON_LANG says: a
    figure for the site is drawn in both languages (docs/make_figures.py)."""
    return fill(CATALOGS[lang][key], lang, **fields)


def text_or_english(key, /, **fields):
    """``text``, but English when MINIMEGATRON_LANG is unknown: what must be said anyway (a
    rank's abort, the launcher's report), where a ValueError would hide it."""
    try:
        return text(key, **fields)
    except ValueError:
        return fill(CATALOGS["en"][key], "en", **fields)


def exercise_text(exercise, field):
    """exercise.title, .hint or .note (field) in the current language."""
    if language() == "en":
        return getattr(exercise, field)
    return ko.EXERCISES[exercise.id][field]


def chapter_text(chapter):
    """A chapter's why (``exercise_checks.CHAPTERS``) in the current language."""
    if language() == "en":
        return chapter.why
    return ko.CHAPTERS[chapter.id]


@contextlib.contextmanager
def speaking(lang):
    """Messages in ``lang`` inside the block (the grader judges once, shows in both)."""
    saved = os.environ.get(ENV)
    os.environ[ENV] = lang
    try:
        yield
    finally:
        if saved is None:
            del os.environ[ENV]
        else:
            os.environ[ENV] = saved
