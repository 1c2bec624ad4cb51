"""``minimegatron verify``: every parallel scheme, on every grid that fits, against one process.

The checks and the table are ``minimegatron/checks/verify.py`` (its docstring has the
tolerances); this is the command: its arguments, the banner, the abort hook, the printing.

    minimegatron run -n 8 verify
    minimegatron run -n 4 verify --schemes ddp,tp --dtype float32 --steps 2
    minimegatron run -n 8 verify --precision mixed --steps 2
    minimegatron verify --matrix       (which axes and features compose, and why not)
    minimegatron run -n 4 verify --matrix    (the same, each cell trained against one process)

On one rank (plain ``minimegatron verify``) every row runs with groups of one, so the
table checks only that each scheme's one-rank case equals one process; the last line
says that nothing parallel ran and how to start it on N ranks.
"""
import time

from minimegatron import comm, i18n
from minimegatron.backend import use_backend
from minimegatron.checks import verify
from minimegatron.commands.argtypes import positive_int
from minimegatron.commands.entry import ArgumentParser, banner, usage_error
from minimegatron.runtime import setup
from minimegatron.commands.parser import say


def main(argv=None):
    """Parse, run every row, print the table: 0 all pass, 1 a FAIL or ERROR row, 2 usage."""
    names = ",".join(verify.SCHEMES)
    parser = ArgumentParser(prog="minimegatron verify",
                            description=say("cli.verify.description"))
    parser.add_argument("--schemes", default=names, metavar="LIST",
                        help=say("cli.verify.schemes", schemes=", ".join(verify.SCHEMES)))
    parser.add_argument("--dtype", choices=sorted(verify.FLOOR), default="float64",
                        help=say("cli.verify.dtype"))
    parser.add_argument("--precision", choices=["full", "mixed"], default="full",
                        help=say("cli.verify.precision"))
    parser.add_argument("--backend", choices=["numpy", "cupy"], default=None,
                        help=say("cli.verify.backend"))
    parser.add_argument("--steps", type=positive_int, default=2,
                        help=say("cli.verify.steps"))
    parser.add_argument("--matrix", action="store_true", help=say("cli.verify.matrix"))
    opts = parser.parse_args(argv)
    if opts.matrix:
        return print_matrix()
    schemes = [s.strip() for s in opts.schemes.split(",") if s.strip()]
    unknown = [s for s in schemes if s not in verify.SCHEMES]
    if unknown or not schemes:
        parser.error(say("cli.verify.unknown", unknown=unknown, schemes=names))
    if opts.precision == "mixed":
        opts.dtype = "float16"
    banner("verify")
    if opts.backend:
        try:
            use_backend(opts.backend)
        except ImportError:                  # no CuPy here: one line on every rank, no traceback
            usage_error(say("cli.verify.no_cupy"))
    world = comm.world()
    rule = "mixed-precision SGD" if opts.dtype in verify.TWIN else "AdamW"
    comm.print0(say("cli.verify.header", n=world.size, dtype=opts.dtype, steps=opts.steps,
                          rule=rule, schemes=",".join(schemes)))
    start = time.time()
    rows = verify.run_rows(schemes, opts.dtype, opts.steps, progress=True)
    if not rows:
        comm.print0(say("cli.verify.no_grid", n=world.size))
        return 2
    for r in rows:
        if r["status"] == "ERROR":
            comm.print0(f"--- {r['label']} {r['grid']}: ERROR ---\n{r['traceback']}")
    comm.print0("\n" + verify.table(rows, opts.dtype) + f"\n({time.time() - start:.1f} s)")
    if all(r["status"] == "SKIP" for r in rows):
        usage_error(i18n.text("verify.none_ran", n=world.size, schemes=",".join(schemes)))
    if world.size == 1:
        comm.print0(say("cli.verify.one_rank"))
    return 1 if any(r["status"] in ("FAIL", "ERROR") for r in rows) else 0


def print_matrix():
    """The composition table (checks/composition.py); on 4k ranks each cell that fits is
    trained (a bigger one says how many ranks it needs): 0 if none fails, 1 if one fails."""
    from minimegatron.checks import composition
    world = comm.world()
    if world.size % 4:
        comm.print0(composition.matrix_table())
        return 0
    setup()                                  # one failing rank ends the job, named
    measured = composition.train_matrix(world)
    comm.print0(composition.matrix_table(measured))
    return 1 if any(v == "FAIL" for v in measured.values()) else 0
