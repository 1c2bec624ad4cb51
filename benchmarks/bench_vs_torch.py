"""A training step of minimegatron vs PyTorch eager, in the same process: GPT and an MLP.

    pip install ".[bench]"          # PyTorch, for this script only
    python benchmarks/bench_vs_torch.py [--steps 30] [--threads 1] [--device cpu|gpu|all]

Both sides start from the same weights (minimegatron's, copied into torch
tensors) and take the same step: forward, loss, backward, optimizer. The
first loss of each pair is printed beside the ratio, as a check that they
compute the same thing. Steps alternate between the two sides, so a busy
machine slows both alike; each figure is the median step time.

    GPT  AdamW, 4 layers, vocab 256, batch 16; CPU: seq 64, d_model 64..512,
         GPU: seq 128, d_model 512 (as docs/performance.md). The torch side
         writes attention out (QK^T, mask, softmax, @V), as nanoGPT's eager
         path, not scaled_dot_product_attention.
    MLP  4 Linear layers 512 wide, ReLU, batch 64, mean squared error, SGD.

CPU: ``--threads`` BLAS threads for NumPy and torch alike. GPU (CuPy and a
CUDA torch): both sides wait for the GPU at the end of every step. The
library never imports torch; without it this script says so and exits 0.
"""
import argparse
import datetime
import platform
import statistics
import time

import numpy as np

import minimegatron as mm
from minimegatron import nn, optim
from minimegatron.comm import comm_check
from minimegatron.runtime import threads
from minimegatron.backend import asarray, to_numpy
from minimegatron.data.datasets import repeat_task
import minimegatron.autodiff.functional as F


def training_step(loss_fn, opt):
    """A closure for one step: loss, zero the gradients, backward, update; returns the loss.
    minimegatron's and torch's optimizers and tensors share these names, so it serves both."""
    def step():
        loss = loss_fn()
        opt.zero_grad()
        loss.backward()
        opt.step()
        return loss
    return step


def torch_weights(torch, model, device):
    """{minimegatron parameter name: a torch leaf tensor holding a copy of its values}."""
    return {name: torch.tensor(to_numpy(p.data), device=device, requires_grad=True)
            for name, p in model.named_parameters()}


def causal_mask(torch, seq, device):
    """(seq, seq) bool, True on and below the diagonal (where attention may look); seq must
    be the batch's sequence length."""
    return torch.ones(seq, seq, dtype=torch.bool, device=device).tril()


def torch_gpt_loss(torch, w, cfg, idx, targets, mask):
    """nn.GPT's mean cross entropy, written in torch ops on the weights ``w`` (a mapping
    from minimegatron's parameter names to torch tensors; idx, targets: (batch, seq))."""
    tf = torch.nn.functional
    d_model, heads = cfg.d_model, cfg.n_head
    hd = d_model // heads
    batch, steps = idx.shape
    x = w["wte.weight"][idx] + w["wpe.weight"][:steps]
    for i in range(cfg.n_layer):
        def p(n):
            return w[f"blocks.{i}.{n}"]
        h = tf.layer_norm(x, (d_model,), p("ln1.weight"), p("ln1.bias"))
        q, k, v = (h @ p("attn.qkv.weight") + p("attn.qkv.bias")).split(d_model, dim=-1)
        q, k, v = (t.view(batch, steps, heads, hd).transpose(1, 2) for t in (q, k, v))
        att = ((q @ k.transpose(-2, -1)) * hd ** -0.5).masked_fill(~mask, float("-inf"))
        y = (att.softmax(dim=-1) @ v).transpose(1, 2).reshape(batch, steps, d_model)
        x = x + y @ p("attn.proj.weight") + p("attn.proj.bias")
        h = tf.layer_norm(x, (d_model,), p("ln2.weight"), p("ln2.bias"))
        h = tf.gelu(h @ p("mlp.fc1.weight") + p("mlp.fc1.bias"), approximate="tanh")
        x = x + h @ p("mlp.fc2.weight") + p("mlp.fc2.bias")
    x = tf.layer_norm(x, (d_model,), w["ln_f.weight"], w["ln_f.bias"])
    logits = x @ w["head.weight"]
    return tf.cross_entropy(logits.view(-1, cfg.vocab_size), targets.view(-1))


def gpt_pair(torch, device, d_model, seq, dtype):
    """(minimegatron step, torch step, (loss mm, loss torch)) for one GPT configuration."""
    cfg = nn.GPTConfig(vocab_size=256, seq_len=seq, n_layer=4, n_head=max(1, d_model // 64),
                       d_model=d_model, dtype=dtype)
    model = nn.GPT(cfg)
    opt = optim.AdamW(model.parameters(), lr=1e-3)
    idx, targets = repeat_task(16, seq, cfg.vocab_size)

    mm_step = training_step(lambda: model.loss(idx, targets), opt)
    weights = torch_weights(torch, model, device)
    t_idx, t_targets = (torch.tensor(to_numpy(a), device=device) for a in (idx, targets))
    t_opt = torch.optim.AdamW(weights.values(), lr=1e-3, weight_decay=0.01)
    mask = causal_mask(torch, seq, device)

    def torch_loss():
        return torch_gpt_loss(torch, weights, cfg, t_idx, t_targets, mask)

    torch_step = training_step(torch_loss, t_opt)

    with torch.no_grad():
        first = (float(model.loss(idx, targets).item()), float(torch_loss().item()))
    return mm_step, torch_step, first


def mlp_pair(torch, device, dtype, width=512, batch=64, layers=4, lr=1e-3):
    rng = np.random.default_rng(0)
    x, y = (rng.standard_normal((batch, width)).astype(dtype) for _ in range(2))
    linears = [nn.Linear(width, width, seed=i, dtype=dtype) for i in range(layers)]
    opt = optim.SGD([p for layer in linears for p in layer.parameters()], lr=lr)
    xt, yt = mm.Tensor(asarray(x)), mm.Tensor(asarray(y))

    def mm_loss():
        h = xt
        for i, layer in enumerate(linears):
            h = layer(h)
            h = F.relu(h) if i < layers - 1 else h
        return ((h - yt) * (h - yt)).mean()

    mm_step = training_step(mm_loss, opt)

    params = [torch.tensor(to_numpy(p.data), device=device, requires_grad=True)
              for layer in linears for p in layer.parameters()]
    t_opt = torch.optim.SGD(params, lr=lr)
    tx, ty = (torch.tensor(a, device=device) for a in (x, y))

    def torch_loss():
        h = tx
        for i in range(layers):
            h = h @ params[2 * i] + params[2 * i + 1]
            h = h.relu() if i < layers - 1 else h
        return ((h - ty) ** 2).mean()

    torch_step = training_step(torch_loss, t_opt)

    with torch.no_grad():
        first = (float(mm_loss().item()), float(torch_loss().item()))
    return mm_step, torch_step, first


def alternate(step_a, step_b, steps, wait, warm_up):
    """Median seconds per step of a and of b, timed in turns after ``warm_up`` steps each."""
    times = ([], [])
    for i in range(steps + warm_up):
        for side, step in enumerate((step_a, step_b)):
            t0 = time.perf_counter()
            step()
            wait()
            if i >= warm_up:
                times[side].append(time.perf_counter() - t0)
    return statistics.median(times[0]), statistics.median(times[1])


def report(name, pair, steps, wait, warm_up=3):
    """A GPU needs ~10 warm-up steps (kernel compiles, memory pool, clocks): with 3, the
    first dtype measured in a process looked slower than the second."""
    mm_step, torch_step, (loss_mm, loss_torch) = pair
    t_mm, t_torch = alternate(mm_step, torch_step, steps, wait, warm_up)
    print(f"  {name:<34} minimegatron {t_mm * 1e3:8.2f} ms  torch {t_torch * 1e3:8.2f} ms  "
          f"ratio {t_mm / t_torch:5.2f}x  |first loss diff| {abs(loss_mm - loss_torch):.1e}",
          flush=True)


def gemm_floor(torch, steps, rows=1024, d=512):
    """NumPy's BLAS against torch's on one GEMM of the GPT's MLP: the ratio no autodiff
    engine on NumPy can beat by itself."""
    a, b = (np.random.default_rng(0).standard_normal(s).astype("float32")
            for s in ((rows, d), (d, 4 * d)))
    ta, tb = torch.from_numpy(a), torch.from_numpy(b)
    t_np, t_torch = alternate(lambda: a @ b, lambda: ta @ tb, steps, lambda: None, 3)
    print(f"  {'GEMM (1024, 512) @ (512, 2048)':<34} numpy        {t_np * 1e3:8.2f} ms  "
          f"torch {t_torch * 1e3:8.2f} ms  ratio {t_np / t_torch:5.2f}x", flush=True)


def cpu_name():
    try:
        with open("/proc/cpuinfo") as info:
            for line in info:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def main():
    comm_check.disable()
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--device", choices=("cpu", "gpu", "all"), default="all")
    parser.add_argument("--d-models", default="64,128,256,512")
    args = parser.parse_args()
    try:
        import torch
    except ImportError:
        print("PyTorch is not installed (pip install '.[bench]'); nothing to compare")
        return 0
    print(f"{datetime.date.today()}  {cpu_name()}, {threads.cores()} cores; "
          f"numpy {np.__version__}, torch {torch.__version__}")
    if args.device in ("cpu", "all"):
        mm.use_backend("numpy")
        torch.set_num_threads(args.threads)
        threads.set_loaded_blas_threads(args.threads)
        print(f"CPU, {args.threads} BLAS thread(s), median of {args.steps} steps:")
        report("MLP 4 x 512, batch 64, float32", mlp_pair(torch, "cpu", "float32"),
               args.steps * 4, lambda: None)
        gemm_floor(torch, args.steps * 4)
        for d in (int(v) for v in args.d_models.split(",")):
            report(f"GPT d {d}, seq 64, float32", gpt_pair(torch, "cpu", d, 64, "float32"),
                   args.steps, lambda: None)
    if args.device in ("gpu", "all"):
        try:
            import cupy
            cupy.cuda.runtime.getDeviceCount()
            assert torch.cuda.is_available(), "torch has no CUDA"
        except Exception as err:
            print(f"no CuPy/CUDA GPU here ({type(err).__name__}: {err}); GPU part skipped")
            return 0
        mm.use_backend("cupy")
        print(f"GPU {torch.cuda.get_device_name()}, CuPy {cupy.__version__}, "
              f"median of {args.steps} steps:")

        def wait():
            cupy.cuda.get_current_stream().synchronize()
            torch.cuda.synchronize()
        report("MLP 4 x 512, batch 64, float32", mlp_pair(torch, "cuda", "float32"),
               args.steps * 4, wait, warm_up=10)
        for dtype in ("float32", "float64"):
            report(f"GPT d 512, seq 128, {dtype}", gpt_pair(torch, "cuda", 512, 128, dtype),
                   args.steps, wait, warm_up=10)
    return 0


if __name__ == "__main__":
    import minimegatron.runtime
    minimegatron.runtime.setup()      # as every tutorial: heap kept, BLAS threads, abort hook
    raise SystemExit(main())
