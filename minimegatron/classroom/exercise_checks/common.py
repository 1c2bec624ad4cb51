"""What every exercise check uses: a failure type and messages a student can act on.

A failure names the rank (multi-rank checks), the value, and expected against
got: the whole array when it is small, else the worst entry and its index.
The words come from ``minimegatron.i18n`` (MINIMEGATRON_LANG=ko: Korean).
"""
import numpy as np

from minimegatron.backend import to_numpy
from minimegatron.i18n import text

SMALL = 16          # arrays with at most this many entries are printed whole


class CheckFailed(AssertionError):
    """A check's verdict: the message is shown to the student as is."""


def show(a):
    """A short text for an array: its values when small, else its shape."""
    a = np.asarray(to_numpy(a))
    if a.dtype.kind == "f" and np.isfinite(a).all() and (a == np.round(a)).all():
        a = a.astype(np.int64)                        # integers print as integers
    if a.size <= SMALL:
        return np.array2string(a, precision=6, separator=", ").replace("\n", "")
    return text("check.array_of_shape", shape=a.shape)


def expect_close(what, got, expected, atol=1e-9, rank=None):
    """CheckFailed unless got matches expected (shape, then every entry within atol)."""
    where = text("grader.rank", rank=rank) if rank is not None else ""
    if got is None:
        raise CheckFailed(text("check.got_none", where=where, what=what,
                               expected=show(expected)))
    got, expected = np.asarray(to_numpy(got)), np.asarray(to_numpy(expected))
    if got.shape != expected.shape:
        raise CheckFailed(text("check.wrong_shape", where=where, what=what, got=got.shape,
                               expected=expected.shape))
    err = np.abs(got - expected)
    if err.size and not (err <= atol).all():   # also catches NaN
        if got.size <= SMALL:
            raise CheckFailed(text("check.expected_got", where=where, what=what,
                                   expected=show(expected), got=show(got)))
        index = np.unravel_index(int(np.nan_to_num(err, nan=np.inf).argmax()), err.shape)
        raise CheckFailed(text("check.worst_entry", where=where, what=what,
                               index=tuple(int(i) for i in index),
                               expected=repr(expected[index]), got=repr(got[index]),
                               diff=err[index], atol=atol))
    return float(err.max()) if err.size else 0.0
