"""Messages in English or Korean: ``text(key, **fields)``, the language from MINIMEGATRON_LANG.

    MINIMEGATRON_LANG=ko minimegatron grade 3.2 --path DIR      (unset or "en": English)

A message is a ``str.format`` template in a plain dict, one module per
language (``en.py``, ``ko.py``; tutorials 03-11 in ``en_tutorials.py``,
``ko_tutorials.py``; the exercises' lesson points in ``en_lessons.py``,
``ko_lessons.py``; the tutorials' table headers in ``en_tables.py``, ``ko_tables.py``;
the command line, argparse's own words included, in ``en_cli.py``, ``ko_cli.py``; a
checkpoint's errors in ``en_checkpoint_errors.py``; the memory and timeline commands'
tables in ``en_reports.py``; ``minimegatron run``'s own lines and each rank's reports
(the job's summary, HANG, where each rank waits) in ``en_launcher.py``; the book's errors,
read back from its English, in ``book_errors.py`` with ``en_errors.py``, ``ko_errors.py``), with
the same keys and the same {fields} (tests/test_i18n.py checks both). Numbers, code
names and commands are fields or stay in the template as they are; the Korean uses the terms of
docs/glossary.md, the lecture notes' own (tests/test_ko_vocabulary.py), and writes a particle
after a field in its first form ("{tp}으로", "{name}을"): ``josa`` fits it to the value.
The exercises' titles, hints and source notes are English data in ``exercise_checks`` (a
student copy raises the English hint, which ``exercises.is_blank`` compares), so
``exercise_text`` picks the Korean ones
by exercise id when the grader shows them (``classroom/blank.py`` turns a blank
block's English hint into the current language's).
"""
import contextlib
import os

from minimegatron.i18n import (en, en_agree, en_checkpoint, en_cli, en_lessons, en_sandbox,
                               en_static, en_tables, en_tutorials, ko, ko_agree, ko_checkpoint,
                               ko_cli, ko_lessons, ko_sandbox, ko_static, ko_tables, ko_tutorials)
from minimegatron.i18n import (en_checkpoint_errors, en_launcher, en_reports,
                               ko_checkpoint_errors, ko_launcher, ko_reports)
from minimegatron.i18n import josa

ENV = "MINIMEGATRON_LANG"
# one catalog per language: the base texts, then each topic's own module (same keys and fields)
CATALOGS = {"en": {**en.MESSAGES, **en_lessons.MESSAGES, **en_tutorials.MESSAGES,
                   **en_tables.MESSAGES, **en_cli.MESSAGES, **en_static.MESSAGES,
                   **en_checkpoint.MESSAGES, **en_sandbox.MESSAGES, **en_agree.MESSAGES,
                   **en_checkpoint_errors.MESSAGES, **en_reports.MESSAGES,
                   **en_launcher.MESSAGES},
            "ko": {**ko.MESSAGES, **ko_lessons.MESSAGES, **ko_tutorials.MESSAGES,
                   **ko_tables.MESSAGES, **ko_cli.MESSAGES, **ko_static.MESSAGES,
                   **ko_checkpoint.MESSAGES, **ko_sandbox.MESSAGES, **ko_agree.MESSAGES,
                   **ko_checkpoint_errors.MESSAGES, **ko_reports.MESSAGES,
                   **ko_launcher.MESSAGES}}


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
