"""Collect a pipeline's compute spans from every rank, for tools/timeline.py.

``gather_timeline(group)`` is one ``gather_object`` (small metadata, pickled)
of each rank's forward / backward / weight (W) / recv spans onto the group's rank 0, in
the format of ``timeline.rows_from_trace`` and its ``--trace`` file.
"""
import time

from minimegatron import comm
from minimegatron.comm import trace


def gather_timeline(group, root=0, ops=("forward", "backward", "weight", "recv"),
                    same_host=True):
    """This rank's traced spans of ``ops`` on ``root`` as dicts with "rank", else None.

    Ranks are group ranks (stages); each span keeps op, start, end, label and micro_batch,
    the format of ``tools.timeline.rows_from_trace`` and its ``--trace`` file.
    Each rank's trace clock starts at its own ``trace.reset``; with
    ``same_host`` the spans are moved onto ``time.perf_counter``, the
    system-wide monotonic clock on Linux, so ranks on one machine line up
    exactly. Otherwise call ``comm.barrier(group)`` and ``trace.reset()`` before the step.
    """
    origin = time.perf_counter() - trace.now() if same_host else 0.0   # this rank's t0
    mine = [{"op": s["op"], "start": s["start"] + origin, "end": s["end"] + origin,
             "label": s["label"], "micro_batch": s["micro_batch"]}
            for s in trace.spans() if s["op"] in ops]
    every = comm.gather_object(mine, group, root=root)
    if every is None:
        return None
    return [dict(span, rank=rank) for rank, spans in enumerate(every) for span in spans]
