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
    int_between(lo, hi)        factory: lo <= int <= hi, e.g. type=int_between(1, 64)
    stage_count(s)             int, 1 .. MAX_STAGES         (--stages, --pp)
    micro_batch_count(s)       int, 1 .. MAX_MICRO_BATCHES  (the timeline's --micro-batches)
    chunk_count(s)             int, 1 .. MAX_CHUNKS         (--chunks)
    existing_file(s)           str, a path to an existing regular file
    output_path(s)             str, '' or a path whose directory exists and that
                               is not itself a directory (checked before any work)

Bounds (``int_between``): a pipeline schedule is enumerated action by action (the
timeline, and the memory calculator's schedules without a formula) and a table has a row
per stage, so ``--stages``/``--pp`` stop at MAX_STAGES = 64 and the timeline's
``--micro-batches`` at MAX_MICRO_BATCHES = 128, ``--chunks`` at MAX_CHUNKS = 8: about 10 s
at the corner on a laptop, where ``--stages 100000 --micro-batches 100000`` ran out of
memory.

Each raises ``argparse.ArgumentTypeError``, which argparse turns into the
one-line error above, in the reader's language (i18n keys ``cli.type.*``). The
function ``__name__`` is what argparse prints when the string is not a number at
all, so it is kept readable.
"""
import argparse
import math
import os

from minimegatron.commands.parser import say

MAX_STAGES, MAX_MICRO_BATCHES, MAX_CHUNKS = 64, 128, 8


def _must_be(what, s, **fields):
    """The one-line error: "must be a positive integer, got '0'" (in the reader's language)."""
    return argparse.ArgumentTypeError(
        say("cli.type.must_be", what=say(f"cli.type.{what}", **fields), value=repr(s)))


def _int(s, what, **fields):
    try:
        return int(s)
    except (TypeError, ValueError):
        raise _must_be(what, s, **fields) from None


def _float(s, what):
    try:
        value = float(s)
    except (TypeError, ValueError):
        raise _must_be(what, s) from None
    if not math.isfinite(value):
        raise _must_be(what, s)
    return value


def int_at_least(lo):
    """Return a type callable accepting integers >= ``lo``."""

    def parse(s):
        value = _int(s, "int_at_least", lo=lo)
        if value < lo:
            raise _must_be("int_at_least", s, lo=lo)
        return value
    parse.__name__ = f"int_at_least({lo})"
    return parse


def int_between(lo, hi):
    """Return a type callable accepting integers ``lo`` .. ``hi`` (both included)."""

    def parse(s):
        value = _int(s, "int_between", lo=lo, hi=hi)
        if not lo <= value <= hi:
            raise _must_be("int_between", s, lo=lo, hi=hi)
        return value
    parse.__name__ = f"int_between({lo}, {hi})"
    return parse


stage_count = int_between(1, MAX_STAGES)
micro_batch_count = int_between(1, MAX_MICRO_BATCHES)
chunk_count = int_between(1, MAX_CHUNKS)


def positive_int(s):
    """An integer >= 1 (sizes, counts, steps)."""
    value = _int(s, "positive_int")
    if value < 1:
        raise _must_be("positive_int", s)
    return value


def nonnegative_int(s):
    """An integer >= 0 (seeds, offsets, optional counts)."""
    value = _int(s, "nonnegative_int")
    if value < 0:
        raise _must_be("nonnegative_int", s)
    return value


def finite_positive_float(s):
    """A float that is finite and > 0 (times, rates, timeouts)."""
    value = _float(s, "positive_float")
    if value <= 0:
        raise _must_be("positive_float", s)
    return value


def finite_nonnegative_float(s):
    """A float that is finite and >= 0 (weight decay, fractions that may be 0)."""
    value = _float(s, "nonnegative_float")
    if value < 0:
        raise _must_be("nonnegative_float", s)
    return value


def existing_file(s):
    """A path to an existing regular file (an input: --hardware, --trace)."""
    if not os.path.isfile(s):
        raise argparse.ArgumentTypeError(say("cli.type.no_file", path=repr(s)))
    return s


def output_path(s):
    """'' (no output) or a file path in an existing directory, not a directory itself."""
    if s == "":
        return s
    folder = os.path.dirname(s) or "."
    if os.path.isdir(s):
        raise argparse.ArgumentTypeError(say("cli.type.is_dir", path=repr(s)))
    if not os.path.isdir(folder):
        raise argparse.ArgumentTypeError(say("cli.type.no_dir", path=repr(s)))
    return s
