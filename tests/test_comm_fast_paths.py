"""The comm layer's fast paths equal its readable paths.

``trace.record_comm`` (a span template built once per call shape, then copied) must
record exactly what ``trace.record`` with ``trace.bytes_moved`` records; the output
check's shortcut ``staging.overlaps`` (two owning arrays cannot overlap) must answer
as ``numpy.may_share_memory``, so ``out=`` that aliases x is still refused.
"""
import numpy as np
import pytest

from minimegatron.comm import staging, trace

CASES = [  # (op, nbytes, n, size, own, is_root)
    ("all_reduce", 4096, None, 4, None, False),
    ("all_gather", 1024, 4096, 4, 1024, False),
    ("all_gather", 1000, 3000, 3, 1000, False),           # uneven rows (Allgatherv)
    ("reduce_scatter", 4096, None, 4, 1024, False),
    ("all_to_all", 4096, None, 2, None, False),
    ("broadcast", 800, None, 4, None, True),
    ("broadcast", 800, None, 4, None, False),
    ("reduce", 800, None, 3, None, True),
    ("reduce", 800, None, 3, None, False),
    ("scatter", 4096, 4096, 4, 1024, True),
    ("scatter", 1024, 4096, 4, 1024, False),
    ("gather", 1024, 4096, 4, 1024, True),
    ("gather", 1024, 4096, 4, 1024, False),
    ("all_reduce", 4096, None, 1, None, False),          # a group of one moves nothing
]


@pytest.fixture
def fresh_trace():
    trace.reset()
    trace._templates.clear()
    yield
    trace.reset()
    trace._templates.clear()


@pytest.mark.parametrize("op, nbytes, n, size, own, is_root", CASES)
def test_record_comm_equals_record(fresh_trace, op, nbytes, n, size, own, is_root):
    with trace.label("layer3"):
        for _ in range(2):                                   # built once, then copied
            trace.record_comm(op, "tp1", nbytes, 1.5, 2.5, size, n=n, own=own,
                              is_root=is_root)
        trace.record(op, "tp1", nbytes, *trace.bytes_moved(
            op, nbytes if n is None else n, size, is_root=is_root, own=own), 1.5, 2.5)
    fast, again, readable = list(trace.spans())
    assert fast == readable == again
    assert fast is not again                                # a copy per call, not the template
    assert fast["label"] == "layer3"


def test_record_comm_spans_are_independent(fresh_trace):
    trace.record_comm("all_reduce", "dp0", 64, 0.0, 1.0, 2)
    trace.record_comm("all_reduce", "dp0", 64, 2.0, 3.0, 2)
    first, second = trace.spans()
    first["label"] = "changed"
    assert (first["start"], second["start"], second["label"]) == (0.0, 2.0, None)


def test_record_comm_disabled_and_template_bound(fresh_trace, monkeypatch):
    trace.disable()
    try:
        trace.record_comm("all_reduce", "dp0", 64, 0.0, 1.0, 2)
        assert len(trace.spans()) == 0
    finally:
        trace.enable()
    monkeypatch.setattr(trace, "MAX_TEMPLATES", 3)
    for nbytes in range(10):                                  # shapes that never repeat
        trace.record_comm("all_reduce", "dp0", 8 * (nbytes + 1), 0.0, 1.0, 2)
        assert len(trace._templates) <= 3
    assert [s["nbytes"] for s in trace.spans()] == [8 * (k + 1) for k in range(10)]
    assert [s["bytes_sent"] for s in trace.spans()] == [8 * (k + 1) for k in range(10)]


def test_overlaps_answers_as_may_share_memory():
    a, b = np.zeros(16), np.zeros(16)
    view, other_view = a[2:10], a[10:]
    pairs = [(a, a), (a, b), (a, view), (view, a), (view, other_view), (view, view[1:]),
             (a.reshape(4, 4), a), (a.reshape(4, 4)[:, 0], a[1:4]), (b, view)]
    for out, x in pairs:
        assert staging.overlaps(out, x) == bool(np.may_share_memory(out, x)), (out, x)


def test_output_refuses_an_aliasing_out():
    x = np.zeros(8, np.float32)
    with pytest.raises(ValueError, match="overlaps x"):
        staging.output(x, (8,), x.dtype, x, 0, "all_reduce")
    with pytest.raises(ValueError, match="overlaps x"):
        staging.output(x[:4], (4,), x.dtype, x[2:6], 0, "all_reduce")   # views that overlap
    out = np.zeros(8, np.float32)
    buf, finish = staging.output(out, (8,), x.dtype, x, 0, "all_reduce")
    assert buf is out and finish(buf) is out
    fresh, _ = staging.output(None, (8,), x.dtype, x, 0, "all_reduce")
    assert fresh.shape == (8,) and fresh is not x
