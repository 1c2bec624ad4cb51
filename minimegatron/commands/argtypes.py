"""argparse ``type=`` callables that reject nonsense with a one-line message.

Every command-line number goes through one of these, so ``--layers 0`` or
``--timeout nan`` ends with argparse's usual two lines (usage, then
``error: argument --layers: must be a positive integer, got '0'``) and exit
status 2, never a traceback or a silently wrong run::

    ap.add_argument("--layers", type=positive_int, default=24)
    ap.add_argument("--timeout", type=finite_positive_float, default=60.0)

The API (each takes the raw string and returns the parsed value):

    positive_int(s)            int,   s >= 1
    nonnegative_int(s)         int,   s >= 0
    finite_positive_float(s)   float, finite and > 0   (rejects nan, inf)
    finite_nonnegative_float(s) float, finite and >= 0
    int_at_least(lo)           factory: int >= lo, e.g. type=int_at_least(2)
    existing_file(s)           str, a path to an existing regular file
    output_path(s)             str, '' or a path whose directory exists and that
                               is not itself a directory (checked before any work)

Each raises ``argparse.ArgumentTypeError``, which argparse turns into the
one-line error above. The function ``__name__`` is what argparse prints when
the string is not a number at all, so it is kept readable.
"""
import argparse
import math
import os


def _int(s, what):
    try:
        return int(s)
    except (TypeError, ValueError):
        raise argparse.ArgumentTypeError(f"must be {what}, got {s!r}") from None


def _float(s, what):
    try:
        value = float(s)
    except (TypeError, ValueError):
        raise argparse.ArgumentTypeError(f"must be {what}, got {s!r}") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"must be {what}, got {s!r}")
    return value


def int_at_least(lo):
    """Return a type callable accepting integers >= ``lo``."""
    what = f"an integer >= {lo}"

    def parse(s):
        value = _int(s, what)
        if value < lo:
            raise argparse.ArgumentTypeError(f"must be {what}, got {s!r}")
        return value
    parse.__name__ = f"int_at_least({lo})"
    return parse


def positive_int(s):
    """An integer >= 1 (sizes, counts, steps)."""
    value = _int(s, "a positive integer")
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {s!r}")
    return value


def nonnegative_int(s):
    """An integer >= 0 (seeds, offsets, optional counts)."""
    value = _int(s, "a non-negative integer")
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be a non-negative integer, got {s!r}")
    return value


def finite_positive_float(s):
    """A float that is finite and > 0 (times, rates, timeouts)."""
    value = _float(s, "a finite positive number")
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be a finite positive number, got {s!r}")
    return value


def finite_nonnegative_float(s):
    """A float that is finite and >= 0 (weight decay, fractions that may be 0)."""
    value = _float(s, "a finite non-negative number")
    if value < 0:
        raise argparse.ArgumentTypeError(
            f"must be a finite non-negative number, got {s!r}")
    return value


def existing_file(s):
    """A path to an existing regular file (an input: --hardware, --trace)."""
    if not os.path.isfile(s):
        raise argparse.ArgumentTypeError(f"no such file: {s!r}")
    return s


def output_path(s):
    """'' (no output) or a file path in an existing directory, not a directory itself."""
    if s == "":
        return s
    folder = os.path.dirname(s) or "."
    if os.path.isdir(s):
        raise argparse.ArgumentTypeError(f"{s!r} is a directory, expected a file path")
    if not os.path.isdir(folder):
        raise argparse.ArgumentTypeError(f"the directory of {s!r} does not exist")
    return s
