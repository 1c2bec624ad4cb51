"""Where a rank waits for the others: marks the hang report reads, not file names.

``@waits("all_reduce")`` over a function records its code object in ``WAITS``
and returns the function unchanged (marking costs nothing per call). The hang
report (hang_report.py) walks a rank's stack and names the innermost marked frame:
``op`` if given, else the frame's ``self.op`` or its local ``op``; the group is
its local ``group`` (or ``self.group``), the peer its ``dest`` / ``source``.
The comm layer marks its blocking calls with it (comm/collectives.py, ...);
``tests/test_waits_marked.py`` checks every blocking MPI call sits in a marked
function. The table belongs to comm (the book); the hang report in the lab reads
it from ``sys.modules`` once comm is loaded, so it never imports the MPI layer.
"""
WAITS = {}                # code object -> the op a rank waits in there (None: read the frame)


def waits(op=None):
    """Decorator: mark a function where a rank may wait for the others of its group."""
    def mark(function):
        WAITS[function.__code__] = op
        return function
    return mark
