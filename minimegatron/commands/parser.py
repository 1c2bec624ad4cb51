"""argparse in the reader's language: every command's parser, ``--help`` and usage errors.

argparse writes its own words ("usage:", "options:", "error:", "invalid choice: ...",
"the following arguments are required: ...") through ``gettext``: the module
calls ``argparse._(msgid)`` (and ``argparse.ngettext``) when it builds a parser,
formats a help text or reports a mistake. ``ArgumentParser`` below formats and parses
with ``argparse._`` pointing at the i18n catalogue, for the length of the call only
(what it built in English is translated when shown), so the screen speaks MINIMEGATRON_LANG::

    MINIMEGATRON_LANG=ko minimegatron memory --layers 0
    사용법: minimegatron memory [-h] [view] [--layers N] ...
    minimegatron memory: 오류: 인자 --layers: 양의 정수여야 합니다, 받은 값 '0'

The catalogue keys are ``argparse.*`` (i18n/en_cli.py, ko_cli.py); ``MSGIDS``
maps argparse's English text to them (the English catalogue holds argparse's
own text, so English output is argparse's, byte for byte). A text argparse
gains in a later Python and the catalogue lacks stays English. Every other
command-line text goes through ``say`` (i18n keys ``cli.*``), which speaks
English when MINIMEGATRON_LANG is unknown: the command reports that once, itself.
"""
import argparse
import contextlib
import difflib
import re
import sys
import textwrap

from minimegatron import i18n
from minimegatron.i18n import book_errors, josa

MSGIDS = {
    "usage: ": "argparse.usage",
    "options": "argparse.options",
    "positional arguments": "argparse.positionals",
    "show this help message and exit": "argparse.help",
    "%(prog)s: error: %(message)s\n": "argparse.error",
    "the following arguments are required: %s": "argparse.required",
    "unrecognized arguments: %s": "argparse.unrecognized",
    "argument %(argument_name)s: %(message)s": "argparse.argument",
    "invalid choice: %(value)r (choose from %(choices)s)": "argparse.choice",
    "invalid %(type)s value: %(value)r": "argparse.invalid",
    "expected one argument": "argparse.one",
    "expected at least one argument": "argparse.at_least_one",
    "expected at most one argument": "argparse.at_most_one",
    "expected %s argument": "argparse.n1",
    "expected %s arguments": "argparse.n",
    "ambiguous option: %(option)s could match %(matches)s": "argparse.ambiguous",
    "one of the arguments %s is required": "argparse.one_of",
    "not allowed with argument %s": "argparse.not_allowed",
    "ignored explicit argument %r": "argparse.ignored",
    "unknown parser %(parser_name)r (choices: %(choices)s)": "argparse.unknown_parser",
    "can't open '%(filename)s': %(error)s": "argparse.cannot_open",
}


def say(key, /, **fields):
    """A command-line text: ``i18n.text``, but English when MINIMEGATRON_LANG is unknown
    (the command says that once, in one line; its --help and usage stay readable)."""
    try:
        return i18n.text(key, **fields)
    except ValueError:
        with i18n.speaking("en"):
            return i18n.text(key, **fields)


def translate(msgid):
    """argparse's ``msgid`` in the current language (itself when the catalogue lacks it); a
    Korean %-template fits its particles to the values argparse puts in (``josa.Percent``)."""
    key = MSGIDS.get(msgid)
    return msgid if key is None else josa.percent(say(key))


def _ngettext(singular, plural, n):
    return translate(singular if n == 1 else plural)


@contextlib.contextmanager
def speaking_argparse():
    """argparse's own words in the current language inside the block."""
    saved = argparse._, argparse.ngettext
    argparse._, argparse.ngettext = translate, _ngettext
    try:
        yield
    finally:
        argparse._, argparse.ngettext = saved


class HelpFormatter(argparse.HelpFormatter):
    """argparse's formatter that never breaks a line inside a name (pp-gpipe, all-reduce)."""

    def _split_lines(self, text, width):
        text = re.sub(r"\s+", " ", text).strip()
        return textwrap.wrap(text, width, break_on_hyphens=False)

    def _fill_text(self, text, width, indent):
        text = re.sub(r"\s+", " ", text).strip()
        return textwrap.fill(text, width, initial_indent=indent, subsequent_indent=indent,
                             break_on_hyphens=False)


class RawDescriptionHelpFormatter(argparse.RawDescriptionHelpFormatter, HelpFormatter):
    """The description and epilog as written (examples in columns); option help wrapped."""


@contextlib.contextmanager
def built_words(parser):
    """The words argparse wrote while the parser was built, in English (the "options" and
    "positional arguments" headings, -h's help), in the current language inside the block."""
    fields = ([(group, "title") for group in parser._action_groups]
              + [(action, "help") for action in parser._actions])
    saved = [(owner, name, getattr(owner, name)) for owner, name in fields]
    for owner, name, value in saved:
        if isinstance(value, str) and value in MSGIDS:
            setattr(owner, name, translate(value))
    try:
        yield
    finally:
        for owner, name, value in saved:
            setattr(owner, name, value)


class ArgumentParser(argparse.ArgumentParser):
    """``argparse.ArgumentParser`` whose own words follow MINIMEGATRON_LANG.

    Parsing (every error message) and formatting (``--help``, "usage:") run inside
    ``speaking_argparse``; the words argparse wrote while building the parser are
    translated when a help text shows them (``built_words``), so a parser that only
    parses good arguments, every tutorial's, never reaches the catalogue. Sub-parsers
    (``add_subparsers``) are of the same class. No text is changed in English.
    """

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("formatter_class", HelpFormatter)
        super().__init__(*args, **kwargs)

    def parse_args(self, args=None, namespace=None):
        """``parse_known_args``, then argparse's own "unrecognized arguments" in the reader's
        language too (argparse builds it after the wrapped call returned), with the options a
        misspelt one was likely meant to be: "--layer; did you mean --layers?"."""
        self._argv = list(sys.argv[1:] if args is None else args)
        args, unknown = self.parse_known_args(args, namespace)
        if unknown:
            self.error(translate("unrecognized arguments: %s") % " ".join(unknown))
        return args

    def _did_you_mean(self, words):
        """"; did you mean --x?" for the options among ``words`` that this parser lacks (not
        even as an abbreviation) and that are close to one of its own."""
        known = [option for option in self._option_string_actions if option.startswith("--")]
        end = words.index("--") if "--" in words else len(words)    # after "--": no options
        typed = [word.split("=")[0] for word in words[:end]]
        close = [match for word in typed if word.startswith("--")
                 and not any(option.startswith(word) for option in known)
                 for match in difflib.get_close_matches(word, known, n=1)]
        return say("cli.did_you_mean", options=", ".join(close)) if close else ""

    def hinted(self, message):
        """``message`` and, when the command line holds a misspelt option, the one it was
        likely meant to be: "--layer; did you mean --layers?", also when argparse stops
        first at a required argument the misspelling left out ("--chekpoint")."""
        return message + self._did_you_mean(getattr(self, "_argv", []))

    def parse_known_args(self, args=None, namespace=None):
        with speaking_argparse():
            return super().parse_known_args(args, namespace)

    def format_usage(self):
        with speaking_argparse():
            return super().format_usage()

    def format_help(self):
        with speaking_argparse(), built_words(self):
            return super().format_help()

    def error(self, message):
        """Usage and "PROG: error: MESSAGE"; a message the book raised in English (a schedule
        that cannot run, passed on by the command) in the reader's language too."""
        try:
            message = book_errors.translate(message, i18n.language())
        except ValueError:                 # an unknown MINIMEGATRON_LANG: English
            pass
        with speaking_argparse():
            super().error(self.hinted(message))
