"""The GPT training step on CuPy vs NumPy, and the GEMM rate against the GPU's peak.

    python benchmarks/bench_cupy.py [--steps 20] [--peak-tflops 67]

Runs in one process: the same GPT (d_model 512, 8 heads, 4 layers, seq 128,
batch 16, float32 and float64) is stepped with AdamW on each backend from the
same seed, and the median step times and their ratio are printed. Then a large
matmul on the GPU measures the GEMM rate reached, printed against the peak you
give (H200 defaults: 67 TFLOP/s for float64 and float32 without tensor cores;
the numbers are parameters, not truths). Without CuPy or a GPU it says so and
exits 0, so it can run anywhere.
"""
import argparse
import statistics
import time

import minimegatron as mm
from minimegatron import nn, optim
from minimegatron.comm import comm_check
from minimegatron.data.datasets import repeat_task


def step_time(backend, dtype, steps):
    mm.use_backend(backend)
    cfg = nn.GPTConfig(vocab_size=256, seq_len=128, n_layer=4, n_head=8, d_model=512,
                       dtype=dtype)
    model = nn.GPT(cfg)
    opt = optim.AdamW(model.parameters(), lr=1e-3)
    x, y = repeat_task(16, cfg.seq_len, cfg.vocab_size)
    times = []
    for i in range(steps + 10):
        t0 = time.perf_counter()
        loss = model.loss(x, y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        mm.sync()
        if i >= 10:     # after warm-up: kernel compiles, the memory pool, GPU clocks
            times.append(time.perf_counter() - t0)
    return statistics.median(times), loss.item()


def gemm_tflops(dtype, n=8192, repeats=10):
    import cupy
    a = cupy.random.default_rng(0).standard_normal((n, n)).astype(dtype)
    b = a.copy()
    a @ b
    cupy.cuda.get_current_stream().synchronize()
    t0 = time.perf_counter()
    for _ in range(repeats):
        a @ b
    cupy.cuda.get_current_stream().synchronize()
    return 2 * n ** 3 * repeats / (time.perf_counter() - t0) / 1e12


def main():
    comm_check.disable()      # benchmarks time the collectives alone (docs/notes_comm.md)
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--peak-tflops", type=float, default=67.0)
    args = parser.parse_args()
    try:
        import cupy
        cupy.cuda.runtime.getDeviceCount()
    except Exception as err:
        print(f"no CuPy/GPU here ({type(err).__name__}: {err}); nothing to measure")
        return 0
    print(f"GPT step (d_model 512, 4 layers, seq 128, batch 16), median of {args.steps}:")
    for dtype in ("float32", "float64"):
        t_np, loss_np = step_time("numpy", dtype, max(args.steps // 4, 3))
        t_cp, loss_cp = step_time("cupy", dtype, args.steps)
        print(f"  {dtype}: numpy {t_np * 1e3:8.1f} ms  cupy {t_cp * 1e3:8.1f} ms  "
              f"speed-up {t_np / t_cp:6.1f}x  |loss diff| {abs(loss_np - loss_cp):.2e}")
    for dtype in ("float32", "float64"):
        rate = gemm_tflops(dtype)
        print(f"GEMM {dtype}: {rate:7.1f} TFLOP/s = {100 * rate / args.peak_tflops:5.1f}% "
              f"of the {args.peak_tflops:.0f} TFLOP/s peak given")
    return 0


if __name__ == "__main__":
    import minimegatron.runtime
    minimegatron.runtime.setup()      # as every tutorial: heap kept, BLAS threads, abort hook
    raise SystemExit(main())
