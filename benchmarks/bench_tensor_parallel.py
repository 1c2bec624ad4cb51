"""Time and bytes per training step: the tp=N GPT against the serial GPT (not a timed test).

    minimegatron run -n 8 benchmarks/bench_tensor_parallel.py [--steps 5] [--d-model 64]

Every rank runs ``--steps`` tensor-parallel AdamW steps (after one warm-up);
the trace gives, per step and rank, the number of all-reduces, the bytes sent
(ring model: 2(N-1)/N of each buffer) and the seconds spent inside
collectives. Rank 0 then times the serial GPT alone. On a laptop with fewer
cores than ranks the tp step is SLOWER than serial: 8 processes share the
cores and every block waits for 4 all-reduces; the byte count, 4 * L * b*s*h
values per step plus the embedding and loss, is the machine-independent part.
"comm s" is wall time inside collectives, including the wait for the slowest
rank to arrive, so with oversubscribed cores it is most of the step.
"""
import argparse
import statistics
import time

from minimegatron import comm, nn
from minimegatron.comm import comm_check, trace
from minimegatron.data.demo import batch, make_optimizer
from minimegatron.parallel.tensor_parallel import ParallelGPT


def train_steps(model, config, steps, batch_size):
    """Seconds per step (median) and the trace spans of the timed steps."""
    opt = make_optimizer(model.parameters())
    times = []
    for step in range(steps + 1):
        x, y = batch(config, batch_size, step)
        if step == 1:
            trace.reset()
        t0 = time.perf_counter()
        loss = model.loss(x, y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step >= 1:
            times.append(time.perf_counter() - t0)
    return statistics.median(times), list(trace.spans())


def main():
    comm_check.disable()      # benchmarks time the collectives alone (docs/notes_comm.md)
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--d-model", type=int, default=64)
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--batch", type=int, default=8)
    opts = parser.parse_args()
    group = comm.world()
    config = nn.GPTConfig(vocab_size=64, seq_len=32, n_layer=opts.layers, n_head=8,
                          d_model=opts.d_model)
    comm.barrier(group)
    tp_time, spans = train_steps(ParallelGPT(config, group), config, opts.steps, opts.batch)
    reduces = [s for s in spans if s["op"] == "all_reduce"]
    comm_s = sum(s["end"] - s["start"] for s in reduces) / opts.steps
    sent = sum(s["bytes_sent"] for s in reduces) / opts.steps
    rows = comm.gather_object((tp_time, comm_s, sent, len(reduces) / opts.steps), group)
    comm.barrier(group)
    if group.rank != 0:
        return
    serial_time, _ = train_steps(nn.GPT(config), config, opts.steps, opts.batch)
    act = opts.batch * config.seq_len * config.d_model * 8
    print(f"GPT L={config.n_layer} d={config.d_model} heads={config.n_head} "
          f"V={config.vocab_size} b={opts.batch} s={config.seq_len}, float64, tp={group.size}")
    print(f"{'rank':>4} {'s/step':>9} {'comm s':>9} {'comm %':>7} {'sent B/step':>12} "
          f"{'all-reduces':>12}")
    for rank, (t, c, b, n) in enumerate(rows):
        print(f"{rank:>4} {t:>9.4f} {c:>9.4f} {100 * c / t:>6.1f}% {b:>12.0f} {n:>12.0f}")
    print(f"serial {serial_time:>7.4f} s/step; tp={group.size} / serial = "
          f"{rows[0][0] / serial_time:.2f}x\n"
          f"per block: 4 all-reduces of b*s*h*8 = {act} bytes "
          f"(ring: {2 * (group.size - 1) * act // max(group.size, 1)} bytes sent each)")


if __name__ == "__main__":
    import minimegatron.runtime
    minimegatron.runtime.setup()      # as every tutorial: heap kept, BLAS threads, abort hook
    main()
