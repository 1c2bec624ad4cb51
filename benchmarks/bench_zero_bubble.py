"""Zero-bubble step time: 1F1B, ZB-H1, ZB-H2 and ZBV on real ranks with emulated device time.

    mpirun -n 4 python benchmarks/bench_zero_bubble.py [--micro-batches 8] [--repeats 3]
        [--t-forward 20] [--t-backward 20] [--t-weight 20]        (milliseconds)

Each forward lasts T_F, each B T_B and each W T_W of emulated device time
(parallel/pipeline_parallel/device_time.py: the real compute of a small GPT,
~1 ms, then a sleep that gives the core back; 1F1B's whole backward lasts
T_B + T_W), so 4 stages on 2 cores measure the schedule, not the OS. For each
schedule, the median over ``--repeats`` traced steps (checks/zero_bubble.py
``emulated_run``) of the step's wall time, its makespan (first compute to last)
and its bubble (the paper's: the most a stage idles between its first and
last step), each next to ``simulate`` with the same times. Step time / 1F1B's
is the speed-up. Expect, at T_F = T_B = T_W = T, K = 4, M = 8, makespans 1F1B
33 T, ZB-H1 27 T, ZB-H2 27 T (no stage idles, but stage k starts k T late),
ZBV 25.5 T (each chunk's step T/2); bubbles 9 T, 3 T, 0, 0. A busy machine
adds its wake-up delays (device_time.py): choose longer times there.
"""
import argparse
import statistics

from minimegatron import comm
from minimegatron.checks.zero_bubble import emulated_run
from minimegatron.comm import comm_check

SCHEDULES = ("1f1b", "zb-h1", "zb-h2", "zbv")


def main():
    comm_check.disable()      # benchmarks time the schedule alone (docs/notes_comm.md)
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--micro-batches", type=int, default=8)
    parser.add_argument("--repeats", type=int, default=3)
    for name in ("forward", "backward", "weight"):
        parser.add_argument(f"--t-{name}", type=float, default=20.0, help="milliseconds")
    args = parser.parse_args()
    group = comm.world()
    times = (args.t_forward / 1e3, args.t_backward / 1e3, args.t_weight / 1e3)
    rows = {}
    for name in SCHEDULES:
        runs = [emulated_run(group, name, args.micro_batches, times)
                for _ in range(args.repeats)]
        if group.rank == 0:
            rows[name] = {key: statistics.median(r["measured"][key] for r in runs)
                          for key in ("makespan", "bubble", "idle_fraction")}
            rows[name].update(step=statistics.median(r["step_time"] for r in runs),
                              simulated=runs[0]["simulated"],
                              compute=max(max(r["slowest"].values()) for r in runs))
    if group.rank != 0:
        return
    print(f"{group.size} stages, M={args.micro_batches}, emulated T_F {args.t_forward:g} ms, "
          f"T_B {args.t_backward:g} ms, T_W {args.t_weight:g} ms; median of {args.repeats}; "
          f"longest real compute of a step {1e3 * max(r['compute'] for r in rows.values()):.1f}"
          " ms")
    print(f"{'schedule':<9}{'step ms':>9}{'vs 1f1b':>9}{'makespan ms':>13}{'simulated':>11}"
          f"{'bubble ms':>11}{'simulated':>11}{'idle':>8}{'simulated':>11}")
    for name, r in rows.items():
        sim = r["simulated"]
        print(f"{name:<9}{1e3 * r['step']:>9.1f}{rows['1f1b']['step'] / r['step']:>8.2f}x"
              f"{1e3 * r['makespan']:>13.1f}{1e3 * sim['makespan']:>11.1f}"
              f"{1e3 * r['bubble']:>11.1f}{1e3 * sim['bubble']:>11.1f}"
              f"{r['idle_fraction']:>8.1%}{sim['idle_fraction']:>11.1%}")


if __name__ == "__main__":
    import minimegatron.runtime
    minimegatron.runtime.setup()      # as every tutorial: heap kept, BLAS threads, abort hook
    main()
