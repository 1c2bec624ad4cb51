"""The book's error messages in the reader's language, translated where the lab prints them.

    MINIMEGATRON_LANG=ko minimegatron timeline --schedule interleaved --micro-batches 6
    minimegatron timeline: 오류: minimegatron timeline: interleaved schedule에는 micro-batch 수가
    pipeline stage 수의 배수여야 합니다: M=6, K=4

The book raises in English and never imports the lab (tests/test_layers.py), so
``translate`` reads the message back: each pattern of ``en_errors.py`` is the English text
with {fields}; the first that matches the whole message (or what follows a prefix such as
"minimegatron timeline: ") gives the Korean sentence of ``ko_errors.py``, its fields filled
with the English text they matched, each itself translated when a pattern matches it (a
field of several lines, line by line: a CollectiveMismatch's line per rank) or when it is
one of the names ranks agree on (``en_errors.NAMES``: "the training plan" -> "학습 계획",
so "the training plan differs in: ..." reads "학습 계획이 다음 항목에서 다릅니다: ...").
A message no pattern matches stays as it is, in English.
"""
import re
import string

from minimegatron.i18n import en_errors, josa, ko_errors

TRANSLATIONS = {"ko": ko_errors.MESSAGES}
TRANSLATED_NAMES = {"ko": ko_errors.NAMES}


def _regex(template):
    """The pattern of an English template: literal text, each {field} a named group."""
    parts, seen = [], set()
    for literal, field, _, _ in string.Formatter().parse(template):
        parts.append(re.escape(literal))
        if field is None:
            continue
        if field in seen:
            parts.append(f"(?P={field})")
        else:
            seen.add(field)
            parts.append(f"(?P<{field}>{en_errors.FIELDS.get(field, '.*?')})")
    return re.compile("".join(parts), re.S)


PATTERNS = {key: _regex(template) for key, template in en_errors.PATTERNS.items()}
NAMES = {key: _regex(template) for key, template in en_errors.NAMES.items()}


def match(message, lang, used, depth=2):
    """The ``lang`` text of ``message`` when a pattern matches all of it, else None; the keys
    of the patterns matched (the message's and its fields') are appended to ``used``."""
    for key, pattern in PATTERNS.items():
        found = pattern.fullmatch(message)
        if found:
            used.append(key)
            fields = {name: _field(value, lang, used, depth - 1) if depth else value
                      for name, value in found.groupdict().items()}
            return josa.format(TRANSLATIONS[lang][key], **fields)
    return None


def name(value, lang, used):
    """The ``lang`` text of an agreement's name (``en_errors.NAMES``), else None."""
    for key, pattern in NAMES.items():
        found = pattern.fullmatch(value)
        if found:
            used.append(key)
            return josa.format(TRANSLATED_NAMES[lang][key], **found.groupdict())
    return None


def _field(value, lang, used, depth):
    """A field's text translated when a pattern or an agreement's name matches it; a field
    of several lines that none matches whole (a CollectiveMismatch's line per rank), line
    by line."""
    found = match(value, lang, used, depth)
    found = name(value, lang, used) if found is None else found
    if found is None and "\n" in value:
        return "\n".join(match(line, lang, used, depth) or line for line in value.split("\n"))
    return value if found is None else found


def translate(message, lang, used=None):
    """``message`` in ``lang`` ("en": as it is); a prefix ending in ": " is kept."""
    if lang not in TRANSLATIONS:
        return message
    used = [] if used is None else used
    start = 0
    while start >= 0:
        found = match(message[start:], lang, used)
        if found is not None:
            return message[:start] + found
        start = message.find(": ", start)
        start = start + 2 if start >= 0 else -1
    return message
