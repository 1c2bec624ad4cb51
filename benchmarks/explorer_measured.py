"""The explorer page's "measured" data: verify's grids trained and traced, beside the calculator.

    mpiexec -n 8 python benchmarks/explorer_measured.py [--out docs/assets/explorer/measured.js]

Every row ``minimegatron verify`` runs on these N ranks whose configuration the explorer can
set is trained for one traced step (checks/measured.py: the same grid, model, batch and
micro-batches as the verify row, with the 3D trainer; pipelines with emulated device time,
T_B = 2 T_F); rank 0 writes, for each, the bytes each dimension sent per stage and the idle
fraction, measured and predicted (tools/memory.rank_report, the simulator), and the rows the
page cannot set with the reason. The page (docs/assets/explorer/verify_runs.js) shows them
beside its own numbers; tests/test_explorer_measured.py holds the file to the code and
measures three rows again. About 90 s on 8 ranks on a busy 2-core machine.
"""
import argparse

from minimegatron import comm
from minimegatron.checks.measured import (OUT, explorer_rows, measure_row, problems, read,
                                          render)
from minimegatron.comm import comm_check


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=OUT)
    opts = parser.parse_args()
    comm_check.disable()              # the step's own traffic only (docs/notes_comm.md)
    world = comm.world()
    rows, others = explorer_rows(world.size)
    split_cache, measured = {}, []
    for scheme, dims in rows:
        row = measure_row(scheme, dims, world, split_cache)
        if row is not None:
            measured.append(row)
            print(f"{scheme:<14} {dims}  idle {row['measured']['idle']}", flush=True)
    if world.rank == 0:
        text = render(world.size, measured, others)
        with open(opts.out, "w", encoding="utf-8") as file:
            file.write(text)
        print(f"{len(measured)} rows measured, {len(others)} not on the page: {opts.out}")
        for problem in problems(read(opts.out)):
            print("PROBLEM:", problem)


if __name__ == "__main__":
    main()
