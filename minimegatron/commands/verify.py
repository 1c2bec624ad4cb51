"""``minimegatron verify``: every parallel scheme, on every grid that fits, against one process.

The checks and the table are ``minimegatron/checks/verify.py`` (its docstring has the
tolerances); this is the command: its arguments, the banner, the abort hook, the printing.

    mpirun -n 8 python -m minimegatron verify        (or: minimegatron run -n 8 verify)
    minimegatron run -n 4 verify --schemes ddp,tp --dtype float32 --steps 2
    minimegatron run -n 8 verify --precision mixed --steps 2
    minimegatron verify --matrix       (which axes and features compose, and why not)
    minimegatron run -n 4 verify --matrix    (the same, each cell trained against one process)
"""
import time

from minimegatron import comm, i18n
from minimegatron.backend import use_backend
from minimegatron.checks import verify
from minimegatron.commands.argtypes import positive_int
from minimegatron.commands.entry import ArgumentParser, banner, usage_error
from minimegatron.runtime import setup


def main(argv=None):
    """Parse, run every row, print the table: 0 all pass, 1 a FAIL or ERROR row, 2 usage."""
    parser = ArgumentParser(prog="minimegatron verify",
                            description="check every parallel scheme against one process "
                                        "(run under mpirun -n N)")
    parser.add_argument("--schemes", default=",".join(verify.SCHEMES),
                        help=f"comma list from {','.join(verify.SCHEMES)} (default: all)")
    parser.add_argument("--dtype", choices=sorted(verify.FLOOR), default="float64")
    parser.add_argument("--precision", choices=["full", "mixed"], default="full",
                        help="mixed: float16 model, float32 masters, loss scale, SGD "
                             "(= --dtype float16; see the docstring)")
    parser.add_argument("--backend", choices=["numpy", "cupy"], default=None)
    parser.add_argument("--steps", type=positive_int, default=2,
                        help="AdamW steps per row (default 2)")
    parser.add_argument("--matrix", action="store_true",
                        help="print the composition table (axes x features: PASS, or refused "
                             "and why; checks/composition.py) and exit")
    opts = parser.parse_args(argv)
    if opts.matrix:
        return print_matrix()
    schemes = [s.strip() for s in opts.schemes.split(",") if s.strip()]
    unknown = [s for s in schemes if s not in verify.SCHEMES]
    if unknown or not schemes:
        parser.error(f"unknown scheme(s) {unknown}; choose from {','.join(verify.SCHEMES)}")
    if opts.precision == "mixed":
        opts.dtype = "float16"
    banner("verify")
    if opts.backend:
        use_backend(opts.backend)
    world = comm.world()
    rule = "mixed-precision SGD" if opts.dtype == "float16" else "AdamW"
    comm.print0(f"minimegatron verify: {world.size} ranks, {opts.dtype}, {opts.steps} {rule} "
                f"steps per row, schemes {','.join(schemes)}")
    start = time.time()
    rows = verify.run_rows(schemes, opts.dtype, opts.steps, progress=True)
    if not rows:
        comm.print0(f"no grid of these schemes fits {world.size} rank(s): 3D needs two axes "
                    "> 1, so at least 4 ranks")
        return 2
    for r in rows:
        if r["status"] == "ERROR":
            comm.print0(f"--- {r['label']} {r['grid']}: ERROR ---\n{r['traceback']}")
    comm.print0("\n" + verify.table(rows, opts.dtype) + f"\n({time.time() - start:.1f} s)")
    if all(r["status"] == "SKIP" for r in rows):
        usage_error(i18n.text("verify.none_ran", n=world.size, schemes=",".join(schemes)))
    return 1 if any(r["status"] in ("FAIL", "ERROR") for r in rows) else 0


def print_matrix():
    """The composition table (checks/composition.py); on 4k ranks each cell is trained: 0 if
    every one passes, 1 if one fails."""
    from minimegatron.checks import composition
    world = comm.world()
    if world.size % 4:
        comm.print0(composition.matrix_table())
        return 0
    setup()                                  # one failing rank ends the job, named
    measured = composition.train_matrix(world)
    comm.print0(composition.matrix_table(measured))
    return 1 if any(v != "PASS" for v in measured.values()) else 0
