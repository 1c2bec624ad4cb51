"""What reaches the teacher: a student's words made inert for a terminal and a spreadsheet.

A student chooses the text of an error message, the name of a class folder and the
names of files in a copy; the grader and the gradebook print them on the teacher's
terminal and write them into the teacher's CSV. Two ways that text could act:

- on a terminal, a control character is a command: ``ESC [ 2 J`` clears the screen,
  ``ESC ] 8 ;; URL`` makes a link, ``\\r`` writes a line over the verdict before it,
  U+202E turns the rest of a line around. ``terminal(text)`` shows each one as its
  escape (``\\x1b``, ``\\r``, ``\\u202e``); a newline stays a newline (``line`` escapes
  that too, for a name printed inside one line), and every printable character,
  Korean included, stays as it is.
- in a spreadsheet, a cell that begins with ``=``, ``+``, ``-``, ``@``, a tab or a
  carriage return is a formula (``=HYPERLINK(...)``: CSV injection). ``cell(value)``
  follows OWASP's rule: such a text gets a single quote in front, so it is shown as
  the text it is (its control characters escaped too); numbers stay numbers.

    print(terminal(verdict_line))       # a student's message, escapes shown
    print(line(folder_name))            # one line, whatever the name holds
    writer.writerow([cell(v) for v in row])
"""
import unicodedata

FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
BIDI = {chr(c) for c in (*range(0x202A, 0x202F), *range(0x2066, 0x206A), 0x200E, 0x200F,
                         0x061C)}


def _escape(char):
    if char == "\n":
        return "\\n"
    if char == "\r":
        return "\\r"
    if char == "\t":
        return "\\t"
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def _active(char):
    """A character a terminal acts on: C0 and C1 controls, DEL, the bidirectional marks."""
    return unicodedata.category(char) == "Cc" or char in BIDI


def terminal(text, keep="\n"):
    """``text`` with every control character shown as its escape; those in ``keep``
    (a newline) stay."""
    text = str(text)
    if not any(_active(c) and c not in keep for c in text):
        return text
    return "".join(_escape(c) if _active(c) and c not in keep else c for c in text)


def line(text):
    """``text`` on one line: every control character escaped, the newline too."""
    return terminal(text, keep="")


def cell(value):
    """A CSV cell a spreadsheet shows as text (and ``cat`` shows as it is): one that begins
    with ``= + - @``, a tab or a carriage return gets a single quote in front (OWASP), and
    its control characters are escaped; numbers are left as they are."""
    if not isinstance(value, str):
        return value
    return ("'" if value.startswith(FORMULA_START) else "") + line(value)
