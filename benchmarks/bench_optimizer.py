"""The optimizer step with flat parameters (optim/optimizers.py, flat=True) vs parameter by parameter.

    python benchmarks/bench_optimizer.py [--steps 40] [--threads 1] [--d-models 64,128,256]

GPT of 4 layers, vocab 256, seq 64, batch 16, float32, NumPy. Two copies of
the same model, one per side, and the two sides timed in turns, so a busy
machine slows both alike; each figure is a median.

    step()     ``optimizer.step()`` alone, on gradients kept from one backward
               (AdamW, and SGD with momentum and weight decay);
    GPT step   forward, loss, backward, ``zero_grad`` and the AdamW step.

The ratio is per-parameter / flat: above 1, the flat update is faster.
"""
import argparse
import datetime
import statistics
import time

import minimegatron as mm
from minimegatron import nn, optim
from minimegatron.comm import comm_check
from minimegatron.runtime import threads
from minimegatron.data.datasets import repeat_task

from bench_vs_torch import training_step

RULES = {"AdamW": lambda params, flat: optim.AdamW(params, lr=1e-3, flat=flat),
         "SGD momentum": lambda params, flat: optim.SGD(params, lr=1e-2, momentum=0.9,
                                                        weight_decay=0.01, flat=flat)}


def sides(d_model, rule):
    """Two (model, optimizer) of one GPT: per-parameter (flat=False) and flat."""
    cfg = nn.GPTConfig(vocab_size=256, seq_len=64, n_layer=4, n_head=max(1, d_model // 64),
                       d_model=d_model, dtype="float32")
    pairs = []
    for flat in (False, True):
        model = nn.GPT(cfg)
        pairs.append((model, RULES[rule](model.parameters(), flat)))
    return pairs, repeat_task(16, cfg.seq_len, cfg.vocab_size)


def alternate(step_a, step_b, steps, warm_up=3):
    """Median seconds per call of a and of b, timed in turns after ``warm_up`` calls each."""
    times = ([], [])
    for i in range(steps + warm_up):
        for side, step in enumerate((step_a, step_b)):
            t0 = time.perf_counter()
            step()
            if i >= warm_up:
                times[side].append(time.perf_counter() - t0)
    return statistics.median(times[0]), statistics.median(times[1])


def line(name, t_ref, t_flat):
    print(f"  {name:<34} per-parameter {t_ref * 1e3:8.3f} ms  flat {t_flat * 1e3:8.3f} ms  "
          f"ratio {t_ref / t_flat:5.2f}x", flush=True)


def main():
    comm_check.disable()
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--d-models", default="64,128,256")
    args = parser.parse_args()
    mm.use_backend("numpy")
    threads.set_loaded_blas_threads(args.threads)
    print(f"{datetime.date.today()}  {threads.cores()} cores, {args.threads} BLAS thread(s), "
          f"float32, median of {args.steps}:")
    for d in (int(v) for v in args.d_models.split(",")):
        for rule in RULES:
            pairs, (idx, targets) = sides(d, rule)
            for model, _ in pairs:
                model.loss(idx, targets).backward()                  # gradients to step on
            n = sum(p.size for p in pairs[0][0].parameters())
            line(f"step() {rule}, d {d} ({n:,} values)",
                 *alternate(pairs[0][1].step, pairs[1][1].step, args.steps * 4))
        pairs, (idx, targets) = sides(d, "AdamW")

        def gpt_step(model, opt):
            return training_step(lambda: model.loss(idx, targets), opt)
        line(f"GPT step AdamW, d {d}", *alternate(gpt_step(*pairs[0]), gpt_step(*pairs[1]),
                                                  args.steps))
    return 0


if __name__ == "__main__":
    import minimegatron.runtime
    minimegatron.runtime.setup()      # as every tutorial: heap kept, BLAS threads, abort hook
    raise SystemExit(main())
