"""Is the trace's memory bounded? RSS over 10,000 training steps, ring vs unbounded.

Before the ring (trace.py), every span stayed: one rank of a 3D run grew by
about 15 MB per 1,000 steps. Now the trace keeps the newest ``max_spans``
spans, so RSS rises while the ring fills and then stays flat.

Two loops, each in a fresh child process (so one does not inherit the other's
heap), both through the real ``trace.record`` / ``trace.span`` API:

    spans  (default) each step records what one rank of a 2x2x2 3D step does,
           about 40 spans: 36 collectives (labelled "blocks.i" like the tp
           layers, "dp.grads", ...) and forward/backward/optimizer compute spans;
    train  a tiny serial GPT really trains (forward, backward, AdamW), each phase
           a compute span: 3 spans per step, so pass a small --max-spans to see
           the ring fill (about 10 ms per step: 10,000 steps take minutes).

    python benchmarks/bench_trace_memory.py [--mode spans|train] [--steps 10000]
                                            [--max-spans 100000]

It prints RSS every tenth of the run for the ring and for an unbounded trace
(max_spans = 10^9), and the growth over the second half of the run, which a
bounded trace keeps near 0 (the ring is full by then).
"""
import argparse
import subprocess
import sys

from minimegatron.commands.argtypes import positive_int

SPANS_PER_STEP = 40
UNBOUNDED = 10 ** 9


def rss_mb():
    """This process's resident set size in MB (Linux /proc)."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS in /proc/self/status (Linux only)")


def spans_step(step, trace):
    """About one 3D rank's spans: 2 micro-batches x (forward, backward) + 36 collectives."""
    for mb in range(2):
        with trace.span("forward", label=f"mb{mb}"):
            for block in range(8):
                trace.record("all_reduce", "tp0", 4096, 4096, 4096, trace.now(), trace.now(),
                             label=f"blocks.{block}")
        with trace.span("backward", label=f"mb{mb}"):
            for block in range(8):
                trace.record("all_reduce", "tp0", 4096, 4096, 4096, trace.now(), trace.now(),
                             label=f"blocks.{block}.backward")
    trace.record("all_reduce", "dp0", 65536, 65536, 65536, trace.now(), trace.now(),
                 label="dp.grads")
    trace.record("all_reduce", "dp0", 8, 8, 8, trace.now(), trace.now(), label="dp.loss")
    with trace.span("optimizer", label=f"step{step}"):
        pass


def make_train_step():
    from minimegatron import nn, optim
    from minimegatron.comm import trace
    from minimegatron.data.demo import batch
    config = nn.GPTConfig(vocab_size=8, seq_len=4, n_layer=1, n_head=1, d_model=8, seed=0)
    model = nn.GPT(config)
    opt = optim.AdamW(model.parameters(), lr=1e-3)
    x, y = batch(config, 2, 0)

    def step(i, trace=trace):
        with trace.span("forward", label=f"step{i}"):
            loss = model.loss(x, y)
        with trace.span("backward", label=f"step{i}"):
            opt.zero_grad()
            loss.backward()
        with trace.span("optimizer", label=f"step{i}"):
            opt.step()
    return step


def child(mode, steps, max_spans):
    """One run: 'rss_mb,step' lines every steps/10, then 'spans N dropped D'."""
    from minimegatron.comm import trace
    trace.set_max_spans(max_spans)
    trace.reset()
    step = make_train_step() if mode == "train" else (lambda i: spans_step(i, trace))
    print(f"{rss_mb():.1f},0", flush=True)
    for i in range(1, steps + 1):
        step(i)
        if i % max(1, steps // 10) == 0:
            print(f"{rss_mb():.1f},{i}", flush=True)
    print(f"spans {len(trace.spans())} dropped {trace.dropped()}", flush=True)


def run(mode, steps, max_spans):
    out = subprocess.run([sys.executable, __file__, "--child", "--mode", mode, "--steps",
                          str(steps), "--max-spans", str(max_spans)],
                         check=True, capture_output=True, text=True).stdout.splitlines()
    points = [(int(s), float(r)) for r, s in (line.split(",") for line in out[:-1])]
    return points, out[-1]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mode", choices=["spans", "train"], default="spans")
    ap.add_argument("--steps", type=positive_int, default=10_000)
    ap.add_argument("--max-spans", type=positive_int, default=100_000)
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.child:
        return child(a.mode, a.steps, a.max_spans)
    runs = {f"ring {a.max_spans}": run(a.mode, a.steps, a.max_spans),
            "unbounded": run(a.mode, a.steps, UNBOUNDED)}
    print(f"mode {a.mode}, {a.steps} steps: RSS (MB) of one process")
    print(f"{'step':>8}" + "".join(f"{name:>16}" for name in runs))
    for k, (step, _) in enumerate(next(iter(runs.values()))[0]):
        print(f"{step:>8}" + "".join(f"{points[k][1]:>16.1f}" for points, _ in runs.values()))
    for name, (points, tail) in runs.items():
        half = next(r for s, r in points if s >= a.steps // 2)
        print(f"{name}: {tail}; growth over the second half "
              f"{points[-1][1] - half:+.1f} MB")


if __name__ == "__main__":
    import minimegatron.runtime
    minimegatron.runtime.setup()      # as every tutorial: heap kept, BLAS threads, abort hook
    sys.exit(main())
