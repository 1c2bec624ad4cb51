"""The names of NumPy a student's block may use: an allow-list, read by ``static_read.py``.

An exercise block computes with arrays; it never reads or writes a file, unpickles,
maps raw memory or loads code. So the static read does not list what NumPy must
not do (that list is never complete: ``from numpy import savetxt, load`` read clean
when it was attribute names only); it lists what a block may use, and everything
else of NumPy is SUSPECT:

    modules    ``numpy`` (or ``xp``, the backend's proxy of it), ``numpy.linalg``,
               ``numpy.random``; never ``numpy.lib``, ``numpy.ctypeslib``,
               ``numpy.testing``, ``numpy.f2py``, ``numpy.core`` or any other
    names      every ufunc of NumPy (``exp``, ``maximum``, ``isfinite``...: elementwise
               arithmetic, no I/O by construction), every scalar type (``float32``,
               ``int64``...), and the functions and constants listed here by name:
               array creation from values, shape and index manipulation, reductions,
               products, comparisons, dtype queries, a seeded generator

Closed, whatever their module: ``load save savez savez_compressed savetxt loadtxt
genfromtxt fromfile fromregex tofile memmap open_memmap DataSource`` (files, pickles),
``frombuffer`` and ``ctypeslib`` (raw memory), ``vectorize frompyfunc
apply_along_axis`` and everything else not listed (NumPy calling back into code it was
handed is a door the lesson never needs). A name here is one a right answer may use;
``tests/test_static_read.py`` reads every reference block and every right answer
written another way, and proves no name listed here is a module or reads a file.
"""
import functools

MODULES = ("numpy", "numpy.linalg", "numpy.random")

FUNCTIONS = {
    "numpy": """
        array asarray asanyarray ascontiguousarray asfortranarray copy empty empty_like
        zeros zeros_like ones ones_like full full_like arange linspace logspace geomspace
        eye identity diag diagflat diagonal tri tril triu meshgrid indices fromiter
        reshape ravel transpose swapaxes moveaxis rollaxis expand_dims squeeze
        broadcast_to broadcast_arrays broadcast_shapes atleast_1d atleast_2d atleast_3d
        concatenate stack vstack hstack dstack column_stack split array_split hsplit vsplit
        tile repeat flip fliplr flipud roll rot90 pad take take_along_axis put_along_axis
        put place choose compress where select clip sort argsort lexsort partition
        argpartition argmax argmin nonzero flatnonzero argwhere searchsorted unique
        count_nonzero sum prod mean std var max min amax amin ptp cumsum cumprod all any
        average median percentile quantile nansum nanprod nanmax nanmin nanmean nanargmax
        nanargmin diff ediff1d bincount digitize histogram interp cross convolve
        dot vdot inner outer matmul tensordot einsum einsum_path kron trace
        allclose isclose array_equal array_equiv nan_to_num round around real imag
        dtype result_type promote_types can_cast finfo iinfo issubdtype ndim shape size
        errstate ndarray generic number integer signedinteger unsignedinteger floating
        inexact bool_ pi e inf nan newaxis euler_gamma
    """,
    "numpy.linalg": "norm inv solve det slogdet svd qr eigh eigvalsh cholesky pinv "
                    "matrix_rank lstsq",
    "numpy.random": "default_rng Generator PCG64 SeedSequence",
}
CLOSED = {"load", "save", "savez", "savez_compressed", "savetxt", "loadtxt", "genfromtxt",
          "fromfile", "fromregex", "tofile", "dump", "dumps", "memmap", "open_memmap",
          "DataSource", "frombuffer", "ctypeslib", "f2py", "testing", "npyio", "lib",
          "vectorize", "frompyfunc", "apply_along_axis", "apply_over_axes", "piecewise"}


@functools.lru_cache(maxsize=None)
def _listed(module):
    return frozenset(FUNCTIONS.get(module, "").split())


def numpy_name_allowed(module, name):
    """True if a block may use ``module.name`` (``module`` one of MODULES)."""
    if module not in MODULES or name in CLOSED or name.startswith("_"):
        return False
    if name in _listed(module):
        return True
    if module != "numpy":
        return False
    import numpy
    value = getattr(numpy, name, None)
    return isinstance(value, numpy.ufunc) or (
        isinstance(value, type) and issubclass(value, numpy.generic))
