"""What a pipeline schedule is made of: actions, and the steps every schedule builds on.

An ``Action`` is one step of one stage: an op on a micro-batch (and, where a
stage holds several model chunks, on a chunk). A schedule (schedules.py,
zero_bubble.py) is a list of them per stage; the engine runs the list, the
simulator times it. Around each compute step go its messages:

    forward_actions(K, k, i)    recv_act i (k > 0), forward i, send_act i (k < K - 1)
    backward_actions(K, k, i)   recv_grad i (k < K - 1), backward i, send_grad i (k > 0)

so an activation goes down the stages and its gradient comes back up, one send
and one receive per micro-batch and stage boundary.
"""
from dataclasses import dataclass

OPS = {"recv_act": "RA", "forward": "F", "send_act": "SA",
       "recv_grad": "RG", "backward": "B", "send_grad": "SG", "weight": "W"}


@dataclass(frozen=True)
class Action:
    """One step of a stage: op in OPS, on micro-batch ``micro_batch``. str: "F3", "RG3".

    "weight" ("W3"): the weight gradient alone, in a schedule that splits the
    backward (zero_bubble.py); its "backward" is then the input gradient only.

    ``chunk``: None for a stage that holds one piece of the model, else which of
    its model chunks the step runs on (``interleaved``); str then "F3c1".
    """
    op: str
    micro_batch: int
    chunk: int = None

    def __post_init__(self):
        if self.op not in OPS:
            raise ValueError(f"unknown op {self.op!r}; valid ops: {', '.join(OPS)}")

    def __str__(self):
        return f"{OPS[self.op]}{self.micro_batch}" + chunk_suffix(self.chunk)


def chunk_suffix(chunk):
    """"" for a stage of one piece, else "c1" for chunk 1: "F3" or "F3c1"."""
    return "" if chunk is None else f"c{chunk}"


def check_stage(num_stages, num_micro_batches, stage):
    """ValueError unless K >= 1, M >= 1 and 0 <= stage < K (every schedule checks first)."""
    if num_stages < 1 or num_micro_batches < 1 or not 0 <= stage < num_stages:
        raise ValueError(f"need num_stages >= 1, num_micro_batches >= 1 and "
                         f"0 <= stage < num_stages; got num_stages={num_stages}, "
                         f"num_micro_batches={num_micro_batches}, stage={stage}")


def forward_actions(num_stages, stage, i, chunk=None):
    """recv_act i (not on the first stage), forward i, send_act i (not on the last)."""
    actions = [Action("recv_act", i, chunk)] if stage > 0 else []
    actions.append(Action("forward", i, chunk))
    if stage < num_stages - 1:
        actions.append(Action("send_act", i, chunk))
    return actions


def backward_actions(num_stages, stage, i, chunk=None):
    """recv_grad i (not on the last stage), backward i, send_grad i (not on the first)."""
    actions = [Action("recv_grad", i, chunk)] if stage < num_stages - 1 else []
    actions.append(Action("backward", i, chunk))
    if stage > 0:
        actions.append(Action("send_grad", i, chunk))
    return actions
