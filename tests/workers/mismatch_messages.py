"""Runs on 2 ranks (tests/test_book_errors.py): the CollectiveMismatch messages the book
raises, one case per pattern of i18n/en_errors.py that needs real ranks.

``messages()`` returns {case: the message this rank raised}; a send/recv mismatch raises on
the receiver only, so the test merges the ranks' dicts. Rank 1 makes the different call.
"""
import numpy as np

from minimegatron import comm
from minimegatron.comm import comm_check
from minimegatron.comm.agreement import agree_fields
from minimegatron.comm.mismatch import CollectiveMismatch


def raised(fn):
    try:
        fn()
    except CollectiveMismatch as error:
        return str(error)
    return None


def in_step(fields, fn):
    with comm_check.agreed_step("the step's inputs", fields):
        return fn()


def messages():
    g = comm.world()
    N, odd = g.size, g.rank == g.size - 1
    x4 = np.ones(4)
    cases = {
        "shape": lambda: comm.all_reduce(np.ones(8) if odd else x4, g),
        "collective": lambda: comm.broadcast(x4.copy(), g) if odd else comm.all_reduce(x4, g),
        "root": lambda: comm.broadcast(x4.copy(), g, root=N),
        "rows": lambda: comm.all_gather(np.ones((3 if odd else 2, 2)), g),
        "sizes_length": lambda: comm.all_gather(np.ones(2), g, sizes=[2] * (N + 1)),
        "sizes_rows": lambda: comm.all_gather(np.ones((5 if odd else 3, 2)), g, sizes=[3] * N),
        "counts": lambda: comm.all_to_allv(np.ones((N, 2)), g, [1] * N,
                                           [2 if odd else 1] + [1] * (N - 1)),
        "fields": lambda: agree_fields(g, "context parallelism", {
            "attention": "ring", "split": "contiguous" if odd else "zigzag"}),
        "fields_all": lambda: agree_fields(g, "the training plan",
                                           {"every": 2} if odd else {"capacity": 1.0}),
        "step": lambda: in_step({"step": int(odd)}, lambda: comm.all_reduce(x4, g)),
        "p2p": lambda: (comm.send(np.ones(4, np.float32), 1, g, tag=9) if g.rank == 0 else
                        comm.recv(np.empty(4), 0, g, tag=9) if g.rank == 1 else None),
    }
    out = {case: raised(call) for case, call in cases.items()}
    comm.barrier(g)
    return {case: said for case, said in out.items() if said is not None}
