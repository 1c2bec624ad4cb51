"""Agreement: what the sizes of messages cannot show is agreed before the first step.

Checking mode (comm_check.py) compares every call's shapes and dtypes, and a send
its element count. Some choices move messages of the SAME sizes yet change the
numbers: the cp split (zigzag on one rank, contiguous on another), the attention
variant, an MoE's capacity factor or ``every``, the pipeline schedule, the ep
layout. Ranks that disagree on them train a wrong loss and exit 0. So a scheme
names these fields once, at construction, and every rank of the group agrees:

    fast   one ``Allgather`` of an int64 per rank: crc32 of "name=value; ..."
    slow   (only on a mismatch) one ``Allgather`` of [crc32(names), crc32(value_1), ...,
           crc32(value_F)] per rank, so every rank finds the same differing fields;
           then mismatch.raise_on_every_rank swaps each rank's values of THOSE fields
           and every rank raises the same CollectiveMismatch, naming both sides:

    collective mismatch in group 'cp0' (context parallelism differs in: split; ...
      rank 0 (world 0): split='zigzag' at ...
      rank 1 (world 1): split='contiguous' at ...

Cost: 8 bytes per rank, once per construction; always on (not only in checking
mode), as ``comm_check.agree`` is for DDP's buckets.
"""
import zlib

import numpy as np

from minimegatron.comm.mismatch import call_site, raise_on_every_rank
from minimegatron.comm.waits import waits

MAX_FIELDS = 32


def _crc(text):
    return zlib.crc32(text.encode())


def field_text(fields):
    """'name=value, ...' of a {name: value} dict, values by repr (the same on every rank)."""
    return ", ".join(f"{name}={value!r}" for name, value in fields.items())


@waits("configuration agreement")
def agree_fields(group, what, fields, why="agreed before the first step, since messages "
                 "of the same size cannot show it"):
    """Raise the same CollectiveMismatch on every rank of ``group`` unless every rank holds
    the same ``fields`` ({name: value}); the message names the fields that differ and each
    side's values of them, then ``why``."""
    if group.size == 1:
        return
    if len(fields) >= MAX_FIELDS:
        raise ValueError(f"agree_fields: at most {MAX_FIELDS - 1} fields, got {len(fields)}")
    table = np.empty(group.size, np.int64)
    group.mpi.Allgather(np.array([_crc(field_text(fields))], np.int64), table)
    if (table == table[0]).all():
        return
    mine = np.zeros(MAX_FIELDS, np.int64)                 # [names, value_1, ..., value_F]
    mine[0] = _crc(",".join(fields))
    mine[1:len(fields) + 1] = [_crc(repr(value)) for value in fields.values()]
    rows = np.empty((group.size, MAX_FIELDS), np.int64)
    group.mpi.Allgather(mine, rows)
    if (rows[:, 0] != rows[0, 0]).any():                  # not even the same fields
        reason, differing = f"{what} differs in its fields", dict(fields)
    else:
        columns = (rows[:, 1:] != rows[0, 1:]).any(axis=0)
        names = [name for name, bad in zip(fields, columns) if bad]
        reason = f"{what} differs in: {', '.join(names)}"
        differing = {name: fields[name] for name in names}
    raise_on_every_rank(group, f"{reason}; {why}", f"{field_text(differing)} at {call_site()}")
