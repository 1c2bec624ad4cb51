"""Chrome trace (Perfetto) export: a simulated schedule or a traced run as trace-event JSON.

Open the file at https://ui.perfetto.dev (or chrome://tracing): one track per
stage (simulation) or rank (trace), each compute step a box you can click.
The format is Chrome's Trace Event Format, JSON object form:

    {"traceEvents": [
      {"name": "process_name", "ph": "M", "pid": 0, "tid": 0, "args": {"name": "zb-h1"}},
      {"name": "thread_name", "ph": "M", "pid": 0, "tid": 2, "args": {"name": "stage 2"}},
      {"name": "F3", "cat": "forward", "ph": "X", "ts": 5000.0, "dur": 1000.0,
       "pid": 0, "tid": 2, "args": {"micro_batch": 3}}, ...],
     "displayTimeUnit": "ms"}

"X" is a complete event: start ``ts`` and duration ``dur`` in microseconds.
"M" events name the process and the tracks (``thread_sort_index`` keeps
stage 0 on top). A simulation's time unit (t_forward = 1) becomes
``us_per_unit`` microseconds, 1 ms by default. A traced run's spans (seconds,
``minimegatron.comm.trace``; dicts with "rank", as ``gather_timeline`` and
``timeline --trace`` read them) keep their own times, shifted so the earliest
starts at 0: compute steps are named F3 / B3 / W3 (F3c1 on model chunk 1),
collectives by op and group
("all_reduce tp0"), with their bytes in args.

    minimegatron timeline --schedule zb-h1 --stages 4 --micro-batches 8 --chrome-trace zb.json
    minimegatron timeline --trace trace.json --chrome-trace run.json
"""
import json
import re

COMPUTE = {"F": "forward", "B": "backward", "W": "weight"}
SPAN_ARGS = ("micro_batch", "group", "nbytes", "bytes_sent", "bytes_recv", "label")


def chunk_of(label):
    """"c1" from the label of a step on model chunk 1 ("mb3c1", engine.py), else ""."""
    found = re.search(r"c\d+$", str(label or ""))
    return found.group(0) if found else ""


def _metadata(process, tracks, row_name):
    """Name the process and one track per row, in row order."""
    events = [{"name": "process_name", "ph": "M", "pid": 0, "tid": 0,
               "args": {"name": process}}]
    for tid in range(tracks):
        events += [{"name": "thread_name", "ph": "M", "pid": 0, "tid": tid,
                    "args": {"name": f"{row_name} {tid}"}},
                   {"name": "thread_sort_index", "ph": "M", "pid": 0, "tid": tid,
                    "args": {"sort_index": tid}}]
    return events


def from_simulation(sim, us_per_unit=1000.0):
    """{"traceEvents": [...]} of a ``simulator.Simulation``: one "X" event per Slot."""
    events = _metadata(f"{sim.schedule}: {sim.num_stages} stages, "
                       f"{sim.num_micro_batches} micro-batches (simulated)",
                       sim.num_stages, "stage")
    for stage, row in enumerate(sim.slots):
        for slot in row:
            args = {"micro_batch": slot.micro_batch}
            if slot.chunk is not None:
                args["chunk"] = slot.chunk
            events.append({"name": str(slot), "cat": COMPUTE[slot.op], "ph": "X",
                           "ts": float(slot.start) * us_per_unit,
                           "dur": float(slot.end - slot.start) * us_per_unit,
                           "pid": 0, "tid": stage, "args": args})
    return {"traceEvents": events, "displayTimeUnit": "ms"}


def _get(span, name):
    return span.get(name) if isinstance(span, dict) else getattr(span, name, None)


def from_trace(spans, title="traced run"):
    """{"traceEvents": [...]} of traced spans (dicts or objects with rank, op, start, end).

    One "X" event per span on its rank's track; seconds become microseconds.
    """
    spans = list(spans)
    if not spans:
        raise ValueError("the trace has no spans")
    origin = min(float(_get(span, "start")) for span in spans)
    ranks = 1 + max(int(_get(span, "rank")) for span in spans)
    events = _metadata(title, ranks, "rank")
    for span in spans:
        op = str(_get(span, "op") or _get(span, "kind"))
        micro_batch, group = _get(span, "micro_batch"), _get(span, "group")
        if op in COMPUTE.values():
            name = (op[0].upper() + ("" if micro_batch is None else str(micro_batch))
                    + chunk_of(_get(span, "label")))
        else:
            name = op if group is None else f"{op} {group}"
        start, end = float(_get(span, "start")), float(_get(span, "end"))
        events.append({"name": name, "cat": op, "ph": "X", "ts": (start - origin) * 1e6,
                       "dur": (end - start) * 1e6, "pid": 0, "tid": int(_get(span, "rank")),
                       "args": {key: _get(span, key) for key in SPAN_ARGS
                                if _get(span, key) is not None}})
    return {"traceEvents": events, "displayTimeUnit": "ms"}


def spans_from(trace):
    """The spans of a trace written by ``from_trace`` (its "X" events), as ``rows_from_trace``
    reads them: a traced run drawn again later (docs/make_figures.py's Korean timelines)."""
    return [{"rank": event["tid"], "op": event["cat"], "start": event["ts"] / 1e6,
             "end": (event["ts"] + event["dur"]) / 1e6, **event["args"]}
            for event in trace["traceEvents"] if event["ph"] == "X"]


def write(trace, path):
    """Write a trace ({"traceEvents": [...]}) as JSON; returns the path."""
    with open(path, "w") as file:
        json.dump(trace, file)
    return path
