"""One training step of a 4-layer MLP: minimegatron vs plain NumPy, same process.

    python benchmarks/bench_autodiff.py [--steps 200]

MLP: 4 Linear layers of width 512 with ReLU between them, batch 64, float32,
mean squared error, plain SGD. The NumPy version writes its backward by hand.
Prints the median step time of each (the two take turns, step by step) and the ratio
(target: at most 1.15x), then
the time per step of one GPT block (d_model 256, 4 heads, seq 64, batch 8).
"""
import argparse
import statistics
import time

import numpy as np

import minimegatron as mm
from minimegatron import nn, optim
import minimegatron.autodiff.functional as F

WIDTH, BATCH, LAYERS, LR = 512, 64, 4, 1e-3


def median_time(step, steps):
    for _ in range(5):
        step()
    times = []
    for _ in range(steps):
        t0 = time.perf_counter()
        step()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def paired_median_times(steps_by_name, steps):
    """Median step time of each side, the sides taking turns step by step, so that a load
    that comes and goes on a shared machine slows both alike."""
    for step in steps_by_name.values():
        for _ in range(5):
            step()
    times = {name: [] for name in steps_by_name}
    for _ in range(steps):
        for name, step in steps_by_name.items():
            t0 = time.perf_counter()
            step()
            times[name].append(time.perf_counter() - t0)
    return {name: statistics.median(t) for name, t in times.items()}


def numpy_step_fn(weights, biases, x, y):
    def step():
        acts, h = [x], x
        for i, (w, b) in enumerate(zip(weights, biases)):
            h = h @ w + b
            if i < LAYERS - 1:
                h = np.maximum(h, 0)
            acts.append(h)
        grad = 2 * (h - y) / h.size                       # d mean((h - y)^2) / dh
        for i in reversed(range(LAYERS)):
            if i < LAYERS - 1:
                grad = grad * (acts[i + 1] > 0)
            gw, gb = acts[i].T @ grad, grad.sum(axis=0)
            grad = grad @ weights[i].T
            weights[i] -= LR * gw
            biases[i] -= LR * gb
    return step


def minimegatron_step_fn(x, y):
    layers = [nn.Linear(WIDTH, WIDTH, seed=i, dtype="float32") for i in range(LAYERS)]
    params = [p for layer in layers for p in layer.parameters()]
    opt = optim.SGD(params, lr=LR)
    xt, yt = mm.Tensor(x), mm.Tensor(y)

    def step():
        h = xt
        for i, layer in enumerate(layers):
            h = layer(h)
            if i < LAYERS - 1:
                h = F.relu(h)
        diff = h - yt
        loss = (diff * diff).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    return step, layers


def gpt_block_step_fn():
    cfg = nn.GPTConfig(vocab_size=64, seq_len=64, n_layer=1, n_head=4, d_model=256,
                       dtype="float32")
    block = nn.Block(cfg)
    opt = optim.SGD(block.parameters(), lr=LR)
    x = mm.Tensor(np.random.default_rng(0).standard_normal((8, 64, 256)).astype("float32"))

    def step():
        loss = (block(x) ** 2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    return step


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=200)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    x = rng.standard_normal((BATCH, WIDTH)).astype("float32")
    y = rng.standard_normal((BATCH, WIDTH)).astype("float32")
    mm_step, layers = minimegatron_step_fn(x, y)
    weights = [layer.weight.data.copy() for layer in layers]
    biases = [layer.bias.data.copy() for layer in layers]
    medians = paired_median_times({"numpy": numpy_step_fn(weights, biases, x, y),
                                   "minimegatron": mm_step}, args.steps)
    t_np, t_mm = medians["numpy"], medians["minimegatron"]
    print(f"MLP step (4 x {WIDTH}, batch {BATCH}, float32), median of {args.steps}:")
    print(f"  plain NumPy   {t_np * 1e3:8.3f} ms")
    print(f"  minimegatron  {t_mm * 1e3:8.3f} ms")
    print(f"  ratio         {t_mm / t_np:8.2f}x   (target <= 1.15x)")
    t_block = median_time(gpt_block_step_fn(), max(args.steps // 10, 5))
    print(f"GPT block step (d_model 256, 4 heads, seq 64, batch 8): {t_block * 1e3:.1f} ms")


if __name__ == "__main__":
    import minimegatron.runtime
    minimegatron.runtime.setup()      # as every tutorial: heap kept, BLAS threads, abort hook
    main()
