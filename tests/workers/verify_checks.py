"""Runs on every rank (tests/test_verify.py): ``verify.run_rows`` must FAIL a broken scheme.

Each case breaks one collective on purpose, runs the DDP and tensor-parallel
rows, and returns the rows (status per row), then repairs it (so the other
scheme's rows show that only the broken one fails):

- "ddp_no_grad_all_reduce": DistributedDataParallel's bucket all-reduce does
  nothing, so each replica steps with its own B/N-row gradient;
- "tp_no_g": Megatron's g (ReduceFromTP, all-reduce in forward) returns its
  input, so each tp rank sees only its partial sums;
- "raises": every rank's check raises ValueError: an ERROR row, and the next
  row still runs (no hang, no abort);
- "nan_on_rank_1": rank 1 alone measures a NaN gradient difference: the row
  FAILs on every rank (MPI's max could drop the NaN; verify sends a flag).
"""
from mpi4py import MPI

from minimegatron import comm
from minimegatron.checks import verify
from minimegatron.parallel.data_parallel import ddp
from minimegatron.parallel.tensor_parallel import mappings
import minimegatron.runtime  # noqa: E402

minimegatron.runtime.setup()      # a script of one's own under plain mpirun: the abort hook


class _CommWithoutGradAllReduce:
    """The comm module, except that iall_reduce (the exercise-4.1 form of DDP's bucket
    all-reduce) runs over a group of ONE rank (MPI.COMM_SELF): still traced, but nothing
    is summed."""

    def __init__(self, alone):
        self.alone = alone

    def __getattr__(self, name):
        return getattr(comm, name)

    def iall_reduce(self, x, group, op="sum", inplace=False):
        return comm.iall_reduce(x, self.alone, op, inplace)


def _rows(schemes, dtype="float64"):
    return [{k: r[k] for k in ("scheme", "grid", "status", "loss", "grad", "weight", "note",
                               "vs64")}
            for r in verify.run_rows(schemes, dtype=dtype, steps=2)]


def check_broken(schemes=("ddp", "tp"), dtype="float64"):
    """Every case of the module docstring; ``dtype="float16"`` (verify --precision
    mixed): the two broken collectives only."""
    out = broken_collectives(schemes, dtype)
    return out if dtype != "float64" else _more_cases(out)


def broken_collectives(schemes, dtype):
    out = {}
    # DDP binds each bucket's all-reduce once (bound.py); bind it over ONE rank instead, and
    # the comm.iall_reduce form too, so the planted bug is there whichever DDP calls.
    alone = comm.Group(MPI.COMM_SELF, "self")
    real_comm, real_bind = ddp.comm, ddp.bind_all_reduce
    ddp.comm = _CommWithoutGradAllReduce(alone)
    ddp.bind_all_reduce = lambda x, group, **kw: real_bind(x, alone, **kw)
    try:
        out["ddp_no_grad_all_reduce"] = _rows(schemes, dtype)
    finally:
        ddp.comm, ddp.bind_all_reduce = real_comm, real_bind
    real_forward = mappings.ReduceFromTP.forward
    mappings.ReduceFromTP.forward = staticmethod(lambda ctx, x, group: x)
    try:
        out["tp_no_g"] = _rows(schemes, dtype)
    finally:
        mappings.ReduceFromTP.forward = real_forward
    return out


def _more_cases(out):
    real_check = verify.run_check

    def raising_check(scheme, *args):
        raise ValueError(f"deliberate failure in {scheme}")
    verify.run_check = raising_check
    try:
        out["raises"] = _rows(["ddp"])
    finally:
        verify.run_check = real_check

    def nan_on_rank_1(scheme, group, *args):
        diffs = dict(real_check(scheme, group, *args))
        if comm.world().rank == 1:
            diffs["grad"] = float("nan")
        return diffs
    verify.run_check = nan_on_rank_1
    try:
        out["nan_on_rank_1"] = _rows(["ddp"])
    finally:
        verify.run_check = real_check
    out["bad_dtype"] = _raises(lambda: verify.run_rows(["ddp"], dtype="int8"))
    out["bad_scheme"] = _raises(lambda: verify.run_rows(["nope"]))
    return out


def _raises(fn):
    try:
        fn()
    except ValueError as err:
        return str(err)
    return ""


def partial_failure():
    """Only rank 1's check raises; rank 0 waits inside DDP's collectives for it. Rank 1
    must print its traceback and abort the job after ABORT_AFTER_S (here 2 s)."""
    verify.ABORT_AFTER_S = 2
    real_check = verify.run_check

    def check(scheme, group, *args):
        if comm.world().rank == 1:
            raise RuntimeError("only rank 1 fails")
        return real_check(scheme, group, *args)
    verify.run_check = check
    verify.run_rows(["ddp"], steps=1)
    print("not reached: the job should have been aborted", flush=True)


if __name__ == "__main__":
    partial_failure()
