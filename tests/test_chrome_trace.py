"""Chrome trace (Perfetto) export: the file follows the Trace Event Format and holds every step."""
import json
from fractions import Fraction

import pytest

from minimegatron.comm import trace
from minimegatron.parallel.pipeline_parallel import get_schedule, simulate
from minimegatron.tools import chrome_trace
from minimegatron.commands.timeline import main


def check_chrome_trace(document):
    """AssertionError unless ``document`` (JSON text) is a valid Chrome trace; its "X" events.

    An object with a "traceEvents" list; every event has a str name, ph "X" or
    "M", int pid and tid; "X" events a str cat, numeric ts >= 0 and dur >= 0
    (microseconds) and dict args; "M" events name the process or a track; and
    every track that holds an event is named, tracks numbered 0, 1, ... in one process.
    """
    data = json.loads(document)
    assert isinstance(data, dict) and isinstance(data["traceEvents"], list)
    complete, named = [], set()
    for event in data["traceEvents"]:
        assert isinstance(event["name"], str) and event["ph"] in ("X", "M"), event
        assert all(isinstance(event[key], int) for key in ("pid", "tid")), event
        assert isinstance(event["args"], dict), event
        if event["ph"] == "X":
            assert isinstance(event["cat"], str), event
            for key in ("ts", "dur"):
                assert isinstance(event[key], (int, float)) and event[key] >= 0, event
            complete.append(event)
        elif event["name"] == "thread_name":
            assert isinstance(event["args"]["name"], str)
            named.add(event["tid"])
        else:
            assert event["name"] in ("process_name", "thread_sort_index"), event
    tracks = {event["tid"] for event in complete}
    assert tracks <= named == set(range(len(named))), (tracks, named)
    assert {event["pid"] for event in data["traceEvents"]} == {0}
    return complete


@pytest.mark.parametrize("name", ["1f1b", "zb-h1", "zb-h2", "interleaved", "zbv"])
def test_simulation_export_matches_the_simulation(name):
    K, M = 4, 8
    chunks = 2 if name in ("interleaved", "zbv") else 1
    sim = simulate(name, K, M, Fraction(1), Fraction(2), chunks, t_weight=Fraction(1))
    events = check_chrome_trace(json.dumps(chrome_trace.from_simulation(sim)))
    expected = {(stage, str(slot), float(slot.start) * 1000, float(slot.end - slot.start) * 1000)
                for stage, row in enumerate(sim.slots) for slot in row}
    assert {(e["tid"], e["name"], e["ts"], e["dur"]) for e in events} == expected
    programs = [get_schedule(name, chunks)(K, M, stage) for stage in range(K)]
    steps = sum(a.op in ("forward", "backward", "weight") for p in programs for a in p)
    assert len(events) == steps == K * M * chunks * (3 if name.startswith("zb") else 2)
    if name == "zbv":                                    # both chunks on every track
        assert {(e["tid"], e["args"]["chunk"]) for e in events} == {
            (stage, c) for stage in range(K) for c in (0, 1)}
    assert {e["tid"] for e in events} == set(range(K))
    for event in events:
        assert event["args"]["micro_batch"] == int(event["name"][1:].split("c")[0])
        assert event["cat"] == {"F": "forward", "B": "backward", "W": "weight"}[
            event["name"][0]]
    assert {e["cat"] for e in events} == (
        {"forward", "backward", "weight"} if name.startswith("zb") else {"forward", "backward"})


def test_trace_export_keeps_every_span_with_its_bytes():
    trace.reset()
    with trace.span("forward", label="mb0", micro_batch=0):
        trace.record("all_reduce", "tp0", 4096, 6144, 6144, trace.now(), trace.now(),
                     micro_batch=0)
    with trace.span("backward", label="mb0", micro_batch=0):
        pass
    trace.record("recv", "pp0", 2048, 0, 2048, trace.now(), trace.now() + 0.001,
                 micro_batch=1)
    mine = list(trace.spans())
    spans = [dict(span, rank=rank) for rank in (0, 1) for span in mine]
    events = check_chrome_trace(json.dumps(chrome_trace.from_trace(spans)))
    assert len(events) == len(spans) == 8 and {e["tid"] for e in events} == {0, 1}
    origin = min(span["start"] for span in spans)
    for span, event in zip(spans, events):
        assert event["tid"] == span["rank"] and event["cat"] == span["op"]
        assert event["ts"] == pytest.approx((span["start"] - origin) * 1e6)
        assert event["dur"] == pytest.approx((span["end"] - span["start"]) * 1e6)
        assert event["args"]["micro_batch"] == span["micro_batch"]
    assert [e["name"] for e in events[:4]] == ["all_reduce tp0", "F0", "B0", "recv pp0"]
    assert events[0]["args"]["nbytes"] == 4096 and events[0]["args"]["bytes_sent"] == 6144
    assert events[3]["args"]["bytes_recv"] == 2048 and events[3]["args"]["group"] == "pp0"
    with pytest.raises(ValueError, match="no spans"):
        chrome_trace.from_trace([])
    # read back (make_figures redraws tutorial 07's runs in Korean from them): the same rows
    from minimegatron.tools.timeline import rows_from_trace
    back = chrome_trace.spans_from(json.loads(json.dumps(chrome_trace.from_trace(spans))))
    for row, again in zip(rows_from_trace(spans), rows_from_trace(back), strict=True):
        assert [box[2:] for box in row] == [box[2:] for box in again]
        assert [t for box in row for t in box[:2]] == pytest.approx(
            [t for box in again for t in box[:2]], abs=1e-9)
    assert rows_from_trace(spans) != rows_from_trace(back[:-1])             # a span lost shows


def test_the_format_check_catches_broken_files():
    good = chrome_trace.from_simulation(simulate("gpipe", 2, 2))
    check_chrome_trace(json.dumps(good))

    def broken(change):
        data = json.loads(json.dumps(good))
        change(data["traceEvents"])
        return json.dumps(data)
    last = -1                                    # a complete event
    for change in [lambda events: events[last].pop("dur"),
                   lambda events: events[last].update(dur=-1.0),
                   lambda events: events[last].update(ts="0"),
                   lambda events: events[last].update(tid=5),         # a track with no name
                   lambda events: events[last].update(ph="B"),
                   lambda events: events.pop(1)]:                     # stage 0's name
        with pytest.raises((AssertionError, KeyError)):
            check_chrome_trace(broken(change))
    with pytest.raises(json.JSONDecodeError):
        check_chrome_trace("{\"traceEvents\": [")


def test_cli_writes_chrome_traces(tmp_path, capsys):
    out = tmp_path / "zb.json"
    assert main(["--schedule", "zb-h1", "--stages", "4", "--micro-batches", "8", "--out", "",
                 "--chrome-trace", str(out)]) == 0
    assert "Chrome trace" in capsys.readouterr().out
    events = check_chrome_trace(out.read_text())
    assert len(events) == 4 * 8 * 3
    spans = [{"rank": r, "op": op, "start": r + b, "end": r + b + 1, "micro_batch": 0,
              "group": None if op != "recv" else "pp0"}
             for r in range(2) for b, op in [(0, "forward"), (1, "recv"), (2, "backward")]]
    path = tmp_path / "trace.json"
    path.write_text(json.dumps(spans))
    out = tmp_path / "run.json"
    assert main(["--trace", str(path), "--out", "", "--chrome-trace", str(out)]) == 0
    events = check_chrome_trace(out.read_text())
    assert [(e["tid"], e["name"], e["ts"]) for e in events] == [
        (0, "F0", 0.0), (0, "recv pp0", 1e6), (0, "B0", 2e6),
        (1, "F0", 1e6), (1, "recv pp0", 2e6), (1, "B0", 3e6)]
