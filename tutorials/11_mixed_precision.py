"""Tutorial 11: mixed precision: float16 weights, float32 masters, a dynamic loss scale.

    minimegatron run -n 4 tutorials/11_mixed_precision.py [--steps 8]

Every rank trains a float16 GPT with ZeRO-2 (the float32 master weights and
AdamW's m and v are sharded over the ranks). Backward starts from S x loss, S
the loss scale. At step 2 one gradient element of rank 1 is set to inf after
the reduce-scatter, so only rank 1 sees it: the found-inf flag is all-reduced
(MAX) over every rank, every rank skips that step and halves S, and after 3
clean steps S doubles. Then the bytes per parameter each kind takes, measured
from the real arrays of one process, and the same function turning them into
the ZeRO paper's 7.5B-parameter example (N = 64).
Code: minimegatron/mixed_precision/.
MINIMEGATRON_LANG=ko prints the headings in Korean (minimegatron.i18n).
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# ^ import the minimegatron beside tutorials/ (a student copy's own), not another install


import numpy as np

from minimegatron import comm
from minimegatron.checks.mixed import run_mixed
from minimegatron.commands.entry import ArgumentParser, run
from minimegatron.i18n import language, text
from minimegatron.tools.memory import sharded_state_bytes
from minimegatron.tools.memory_measure import per_param_bytes

OVERFLOW_STEP, GROWTH_INTERVAL = 2, 3


def main(steps):
    language()                  # an unknown MINIMEGATRON_LANG: one line, before any collective
    world = comm.world()
    zero2 = run_mixed(world, "zero2", steps, overflow=(OVERFLOW_STEP, min(1, world.size - 1)),
                      growth_interval=GROWTH_INTERVAL)
    flags = np.array([float(r["skipped"]) for r in zero2["records"]])
    skipped = comm.all_gather(flags, world)                     # (ranks * steps,)
    comm.print0(text("t11.heading", n=world.size, rank=min(1, world.size - 1),
                     step=OVERFLOW_STEP, interval=GROWTH_INTERVAL))
    comm.print0(text("t11.columns"))
    for step, record in enumerate(zero2["records"]):
        ranks = [r for r in range(world.size) if skipped[r * steps + step]]
        comm.print0(f"{step:4d} {record['scale']:10.0f} {record['loss']:8.4f}  "
                    f"{ranks if ranks else '-'}"
                    + (text("t11.overflow") if ranks else ""))
    comm.print0(text("t11.skipped", count=zero2["mixed"].skipped_steps, steps=steps))
    serial = run_mixed(None, "serial", 2)
    params = serial["model"].num_parameters()
    per_param = per_param_bytes(serial["memory"], params)
    comm.print0(text("t11.bytes", params=params, total=sum(per_param.values()),
                     kinds=", ".join(f"{k} {v:g}" for k, v in per_param.items())))
    totals = [sharded_state_bytes(per_param, 7.5e9, 64, z)["total"] / 1e9 for z in range(4)]
    comm.print0(text("t11.zero", totals=", ".join(f"ZeRO-{z} {t:.1f}"
                                                  for z, t in enumerate(totals))))


if __name__ == "__main__":
    parser = ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=8)
    run(main, "tutorials/11_mixed_precision.py", parser.parse_args().steps)
