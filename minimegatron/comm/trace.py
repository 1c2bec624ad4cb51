"""One trace per rank: every collective and every compute step appends a span.

A span is a plain dict (JSON-able, so it can be gathered and saved)::

    {"kind": "comm" | "compute", "op": "all_reduce", "group": "tp0",
     "nbytes": 4096, "bytes_sent": 6144, "bytes_recv": 6144,
     "start": 0.0123, "end": 0.0131, "label": "mb3", "micro_batch": 3}

``comm/collectives.py`` records each collective itself. Compute steps are recorded with::

    with trace.span("forward", label="mb3", micro_batch=3):   # a compute span
        ...
    with trace.label("layer0"):                # collectives inside get label "layer0"
        ...

Times are ``time.perf_counter()`` seconds relative to a per-rank t0;
``comm.barrier(group)`` then ``reset()`` clears the spans so that every
rank's t0 is the same instant (up to the barrier's skew). This module
imports nothing from minimegatron: comm records into it, never the reverse.

Memory is bounded: the spans live in a ring (``Ring``: the oldest is dropped when full).

Byte model (per rank, payload n bytes = ``nbytes`` of the array argument,
N = group size; with N = 1 nothing moves, so every count is 0):

=================  ==============================  ==============================
op                 bytes_sent                      bytes_recv
=================  ==============================  ==============================
all_reduce         2(N-1)/N * n  (ring)            2(N-1)/N * n
all_gather         (N-1)/N * F, F = full output    (N-1)/N * F
reduce_scatter     (N-1)/N * F, F = full input     (N-1)/N * F
broadcast          root: (N-1) * n, else 0         root: 0, else n
scatter            root: (N-1)/N * F, else 0       root: 0, else F/N
gather             root: 0, else F/N (own chunk)   root: (N-1)/N * F, else 0
reduce             root: 0, else n                 root: (N-1) * n, else 0
all_to_all         (N-1)/N * n (keeps its chunk)   (N-1)/N * n
all_to_allv        n - own chunk                   result - own chunk
send / recv        n / 0                           0 / n
=================  ==============================  ==============================

The ring numbers are what a bandwidth-optimal algorithm moves; the rooted ops
use a FLAT model (the root talks to every other rank itself) so that the
root's extra load, the lesson of master-style data parallelism, shows up in
the counts. With uneven chunks "(N-1)/N * F" is F minus this rank's own chunk.
``nbytes`` is the array argument's size (the root's full array for scatter).
"""
import collections
import contextlib
import itertools
import os
import time

DEFAULT_MAX_SPANS = 100_000


class Ring(collections.deque):
    """A deque with a maxlen whose ``ring[a:b]`` returns a list, as a list's slice does.

    The trace's spans live in one of ``max_spans()`` entries (default
    ``DEFAULT_MAX_SPANS`` = 100,000, about 40 MB; ``set_max_spans(n)`` changes it,
    env ``MINIMEGATRON_TRACE_MAX_SPANS`` sets it at import). When it is full the
    oldest span is dropped and ``dropped()`` counts it, so a long run keeps the
    last steps, not all of them. ``spans()`` supports ``len``, iteration, indexing
    and slicing; after a drop, indexes taken earlier point one span later each.
    """

    def __getitem__(self, index):
        if isinstance(index, slice):
            start, stop, step = index.indices(len(self))
            if step != 1:
                return list(self)[index]
            return list(itertools.islice(self, start, max(start, stop)))
        return super().__getitem__(index)


def _ring(maxlen):
    if isinstance(maxlen, bool) or not isinstance(maxlen, int) or maxlen < 1:
        raise ValueError(f"the trace's max_spans must be an int >= 1, got {maxlen!r}")
    return Ring(maxlen=maxlen)


def _env_max_spans():
    text = os.environ.get("MINIMEGATRON_TRACE_MAX_SPANS", str(DEFAULT_MAX_SPANS))
    try:
        return int(text)
    except ValueError:
        raise ValueError(f"MINIMEGATRON_TRACE_MAX_SPANS must be an int >= 1, got {text!r}") \
            from None


_state = {"enabled": True, "t0": time.perf_counter(), "labels": [], "dropped": 0,
          "spans": _ring(_env_max_spans())}


def now():
    """Seconds since this rank's t0."""
    return time.perf_counter() - _state["t0"]


def enable():
    _state["enabled"] = True


def disable():
    _state["enabled"] = False


def reset():
    """Forget every span and restart the clock (call ``comm.barrier(group)`` first to align)."""
    _state["spans"] = Ring(maxlen=_state["spans"].maxlen)
    _state["dropped"] = 0
    _state["t0"] = time.perf_counter()


def spans():
    """This rank's spans, oldest first (the live ring; copy it before changing it)."""
    return _state["spans"]


def max_spans():
    """How many spans the ring keeps."""
    return _state["spans"].maxlen


def set_max_spans(n):
    """Keep at most ``n`` spans (the newest ones, if there are more now)."""
    old = _state["spans"]
    _state["spans"] = _ring(n)
    _state["spans"].extend(old)
    _state["dropped"] += len(old) - len(_state["spans"])


def dropped():
    """Spans dropped from the full ring since the last ``reset``."""
    return _state["dropped"]


def current_label():
    return _state["labels"][-1] if _state["labels"] else None


def record(op, group, nbytes, bytes_sent, bytes_recv, start, end, kind="comm", label=None,
           micro_batch=None):
    """Append one span (``start``/``end`` are already relative to t0)."""
    if not _state["enabled"]:
        return
    labels = _state["labels"]
    _append({
        "kind": kind, "op": op, "group": group, "nbytes": int(nbytes),
        "bytes_sent": int(bytes_sent), "bytes_recv": int(bytes_recv),
        "start": start, "end": end,
        "label": label if label is not None else labels[-1] if labels else None,
        "micro_batch": micro_batch,
    })


@contextlib.contextmanager
def span(op, label=None, group=None, micro_batch=None):
    """Time a compute step: ``with trace.span("forward", label="mb3", micro_batch=3): ...``."""
    start = now()
    if label is not None:
        _state["labels"].append(label)
    try:
        yield
    finally:
        if label is not None:
            _state["labels"].pop()
        record(op, group, 0, 0, 0, start, now(), kind="compute", label=label,
               micro_batch=micro_batch)


@contextlib.contextmanager
def label(text):
    """Every span recorded inside gets ``label=text`` (innermost label wins)."""
    _state["labels"].append(text)
    try:
        yield
    finally:
        _state["labels"].pop()


def bytes_moved(op, n, size, is_root=False, own=None):
    """(bytes_sent, bytes_recv) of one rank under the model in the module docstring.

    ``n`` is the payload, or the FULL buffer for all_gather, reduce_scatter,
    scatter and gather; ``own`` is this rank's chunk of it (default n / size).
    """
    if size <= 1:
        return 0, 0
    own = n // size if own is None else own
    if op == "all_reduce":
        ring = 2 * (size - 1) * n // size
        return ring, ring
    if op in ("all_gather", "reduce_scatter", "all_to_all"):
        return n - own, n - own
    if op == "broadcast":
        return ((size - 1) * n, 0) if is_root else (0, n)
    if op == "scatter":
        return (n - own, 0) if is_root else (0, own)
    if op == "gather":
        return (0, n - own) if is_root else (own, 0)
    if op == "reduce":
        return (0, (size - 1) * n) if is_root else (n, 0)
    raise ValueError(f"no byte model for op {op!r}")


def summary(span_list=None):
    """{op: {"count", "bytes_sent", "bytes_recv", "seconds"}} over the given spans."""
    table = {}
    for s in spans() if span_list is None else span_list:
        row = table.setdefault(s["op"], {"count": 0, "bytes_sent": 0, "bytes_recv": 0,
                                         "seconds": 0.0})
        row["count"] += 1
        row["bytes_sent"] += s["bytes_sent"]
        row["bytes_recv"] += s["bytes_recv"]
        row["seconds"] += s["end"] - s["start"]
    return table


DIMENSIONS = ("dp", "pp", "tp", "cp", "ep", "dp_cp", "edp")


def dimension_of(group_name):
    """The grid dimension a group belongs to, by its name: "tp3" -> "tp", "dp_cp1" ->
    "dp_cp" (dp x cp), "edp0" -> "edp"; None for "world" and groups of no dimension."""
    kind = (group_name or "").rstrip("0123456789")
    return kind if kind in DIMENSIONS else None


def comm_by_dimension(span_list=None):
    """{dimension: bytes sent} summed over this rank's spans, by the group's name: dp, pp,
    tp, cp, ep, dp_cp (dp x cp: the gradients when cp > 1; with cp = 1 the grid's dp x cp
    group IS its dp group, named dp) and edp (the expert gradients)."""
    out = dict.fromkeys(DIMENSIONS, 0)
    for s in spans() if span_list is None else span_list:
        kind = dimension_of(s.get("group"))
        if s["kind"] == "comm" and kind is not None:
            out[kind] += s["bytes_sent"]
    return out


def format_summary(table):
    """A text table of ``summary()``."""
    lines = [f"{'op':<16}{'count':>7}{'sent (B)':>14}{'recv (B)':>14}{'time (s)':>10}"]
    for op, row in sorted(table.items()):
        lines.append(f"{op:<16}{row['count']:>7}{row['bytes_sent']:>14}"
                     f"{row['bytes_recv']:>14}{row['seconds']:>10.4f}")
    return "\n".join(lines)


def template(op, group, nbytes, bytes_sent, bytes_recv):
    """A comm span with all but start, end and label filled in, for ``record_from``."""
    return {"kind": "comm", "op": op, "group": group, "nbytes": int(nbytes),
            "bytes_sent": int(bytes_sent), "bytes_recv": int(bytes_recv),
            "start": 0.0, "end": 0.0, "label": None, "micro_batch": None}


_templates = {}          # (op, group, nbytes, n, size, own, is_root) -> template
MAX_TEMPLATES = 4096


def record_comm(op, group, nbytes, start, end, size, n=None, own=None, is_root=False):
    """``record`` of one collective whose bytes follow the byte model: the same span as
    ``record(op, group, nbytes, *bytes_moved(op, n, size, is_root, own), start, end)``
    (``n`` defaults to ``nbytes``). The fixed part is built once per call shape and
    copied (``record_from``): about 0.3 us per call against 0.55 us."""
    if not _state["enabled"]:
        return
    key = (op, group, nbytes, n, size, own, is_root)
    span = _templates.get(key)
    if span is None:
        if len(_templates) >= MAX_TEMPLATES:        # shapes that never repeat: start over
            _templates.clear()
        moved = bytes_moved(op, nbytes if n is None else n, size, is_root, own)
        span = _templates[key] = template(op, group, nbytes, *moved)
    span, labels, ring = span.copy(), _state["labels"], _state["spans"]
    span["start"], span["end"], span["label"] = start, end, labels[-1] if labels else None
    if len(ring) == ring.maxlen:                # _append, inlined: the collectives' hot path
        _state["dropped"] += 1
    ring.append(span)


def record_from(span, start, end, label):
    """``record`` of a ``template`` built once (bound.py, every step): one dict copy,
    about 0.2 us against record's 1 us."""
    if not _state["enabled"]:
        return
    span = span.copy()
    span["start"], span["end"], span["label"] = start, end, label
    _append(span)


def _append(span):
    ring = _state["spans"]
    if len(ring) == ring.maxlen:
        _state["dropped"] += 1
    ring.append(span)
