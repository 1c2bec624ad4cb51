"""The trace is a ring: its span count never exceeds max_spans, and old readers still work."""
import pytest

from minimegatron.comm import trace


@pytest.fixture
def small_ring():
    """A 50-span ring for the test; the default size and an empty trace afterwards."""
    saved = trace.max_spans()
    trace.reset()
    trace.set_max_spans(50)
    yield 50
    trace.set_max_spans(saved)
    trace.reset()


def _record(i):
    trace.record("all_reduce", "tp0", 8 * i, i, i, float(i), float(i) + 0.5, label=f"s{i}")


def test_span_count_stays_bounded_after_many_records(small_ring):
    for i in range(10_000):
        _record(i)
        assert len(trace.spans()) <= small_ring
    assert len(trace.spans()) == small_ring
    assert trace.dropped() == 10_000 - small_ring
    # the ring keeps the NEWEST spans, oldest first
    assert [s["label"] for s in trace.spans()] == [f"s{i}" for i in range(9950, 10_000)]


def test_compute_spans_are_bounded_too(small_ring):
    for i in range(200):
        with trace.span("forward", label=f"mb{i}"):
            pass
    assert len(trace.spans()) == small_ring
    assert trace.spans()[-1]["label"] == "mb199" and trace.spans()[0]["label"] == "mb150"


def test_readers_slice_index_and_summarise(small_ring):
    for i in range(60):
        _record(i)
    spans = trace.spans()
    first = len(spans) - 5
    tail = spans[first:]                         # checks/data.py slices the live trace
    assert isinstance(tail, list) and [s["label"] for s in tail] == [
        "s55", "s56", "s57", "s58", "s59"]
    assert spans[-1]["label"] == "s59" and spans[0]["label"] == "s10"
    assert spans[::10][1]["label"] == "s20" and spans[70:] == []
    table = trace.summary()
    assert table["all_reduce"]["count"] == small_ring
    assert table["all_reduce"]["bytes_sent"] == sum(range(10, 60))


def test_reset_keeps_the_size_and_clears_the_drop_count(small_ring):
    for i in range(80):
        _record(i)
    trace.reset()
    assert len(trace.spans()) == 0 and trace.dropped() == 0
    assert trace.max_spans() == small_ring


def test_shrinking_keeps_the_newest(small_ring):
    for i in range(40):
        _record(i)
    trace.set_max_spans(10)
    assert [s["label"] for s in trace.spans()] == [f"s{i}" for i in range(30, 40)]
    assert trace.dropped() == 30


@pytest.mark.parametrize("bad", [0, -1, 2.5, True, "10"])
def test_bad_sizes_are_rejected(bad):
    with pytest.raises(ValueError, match="max_spans must be an int >= 1"):
        trace.set_max_spans(bad)


def test_default_is_bounded():
    assert trace.DEFAULT_MAX_SPANS == 100_000
    assert 1 <= trace.max_spans() <= 10_000_000
