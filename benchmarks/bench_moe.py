"""A mixture of experts: against a dense MLP with the same active parameters, and ep ranks
against one process.

    python benchmarks/bench_moe.py                      # one process: MoE vs dense
    minimegatron run -n 4 benchmarks/bench_moe.py       # + ep = 4 against one process

One measurement is a forward and a backward of sum(layer(x) * W) on (B, S, D) tokens,
float32; the best of ``--repeats`` after one warm-up is reported (on a shared machine
the best is the least disturbed), the two sides of a comparison run in turns.

1. MoE against dense, one process (rank 0). The MoE layer (nn/moe: E experts of D -> 4D
   -> D, top-k, capacity factor f or dropless) uses per token k experts: k x 8D^2
   weights; the dense MLP D -> 4kD -> D has the same active weights (the router's D x E
   aside). The MoE holds E/k times the parameters and does the routing on top: the
   gather and scatter of token rows, the top-k sort, the capacity queue, the padding.
   Then a whole AdamW training step of a 2-layer GPT (vocabulary 64): MoEGPT against the
   GPT whose MLPs are D -> 4kD -> D (the same active parameters).
2. ep ranks against one process (with N > 1 ranks, ep = N): rank 0 first times the
   serial layer on all B sequences while the others wait; then every rank times
   ExpertParallelMoE on its B/N sequences (two all-to-alls forward, two backward). The
   time is the slowest rank's, waits inside the collectives included; with more ranks
   than cores (2 here) the ranks share them, so it is the weak figure. Not a timed test.
"""
import argparse
import time

import numpy as np

from minimegatron import comm
from minimegatron.comm import comm_check
from minimegatron.backend import asarray
from minimegatron.autodiff import functional as F
from minimegatron.data.demo import SMALL_CONFIG, batch, make_optimizer
from minimegatron.nn import GPT, Linear, Module
from minimegatron.nn.moe import MoE, MoEConfig, MoEGPT, init_by_name
from minimegatron.parallel.expert_parallel import ExpertParallelMoE
from minimegatron.autodiff.tensor import Tensor


def pass_of(layer, x, weight):
    """One forward + backward of sum(layer(x) * weight)."""
    return lambda: (layer(Tensor(x, requires_grad=True)) * Tensor(weight)).sum().backward()


def paired_best(fns, repeats):
    """Best seconds of each function, run in turns (a busy machine slows both alike);
    one warm-up round first."""
    times = [[] for _ in fns]
    for _ in range(repeats + 1):
        for fn, record in zip(fns, times):
            start = time.perf_counter()
            fn()
            record.append(time.perf_counter() - start)
    return [min(t[1:]) for t in times]


class WideMLP(Module):
    """The dense MLP with the MoE's active weights: D -> 4kD -> D."""

    def __init__(self, d_model, top_k, dtype):
        super().__init__()
        self.fc1 = Linear(d_model, 4 * top_k * d_model, dtype=dtype)
        self.fc2 = Linear(4 * top_k * d_model, d_model, dtype=dtype)

    def forward(self, x):
        return self.fc2(F.gelu(self.fc1(x)))


def step_times(config, moe, batch_size, repeats):
    """[(best seconds, parameters)] of one AdamW training step: MoEGPT, and the GPT whose
    MLPs are WideMLPs, in turns."""
    moe_model = MoEGPT(config, moe)
    dense = GPT(config)
    for block in dense.blocks:
        block.mlp = WideMLP(config.d_model, moe.top_k, config.dtype)
    x, y = batch(config, batch_size, 0)

    def step_of(model):
        opt = make_optimizer(model.parameters())

        def step():
            opt.zero_grad()
            model.loss(x, y).backward()
            opt.step()
        return step
    best = paired_best([step_of(moe_model), step_of(dense)], repeats)
    return [(t, m.num_parameters()) for t, m in zip(best, (moe_model, dense))]


def main():
    comm_check.disable()      # benchmarks time the collectives alone (docs/notes_comm.md)
    parser = argparse.ArgumentParser()
    parser.add_argument("--d-model", type=int, default=128)
    parser.add_argument("--seq", type=int, default=64)
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--experts", type=int, default=8)
    parser.add_argument("--top-k", type=int, default=2)
    parser.add_argument("--capacity-factor", type=float, default=1.25, help="0: dropless")
    parser.add_argument("--repeats", type=int, default=5)
    a = parser.parse_args()
    world = comm.world()
    moe = MoEConfig(a.experts, a.top_k, a.capacity_factor or None)
    config = SMALL_CONFIG.__class__(vocab_size=64, d_model=a.d_model, n_head=4,
                                    seq_len=a.seq, n_layer=2, dtype="float32")
    rng = np.random.default_rng(0)
    x = asarray(rng.normal(size=(a.batch, a.seq, a.d_model)).astype("float32"))
    weight = asarray(rng.normal(size=x.shape).astype("float32"))
    serial = MoE(a.d_model, moe, "float32")
    init_by_name(serial, "blocks.0.mlp", config)
    if world.rank == 0:
        dense = WideMLP(a.d_model, a.top_k, "float32")
        t_moe, t_dense = paired_best([pass_of(serial, x, weight), pass_of(dense, x, weight)],
                                     a.repeats)
        print(f"D={a.d_model} S={a.seq} B={a.batch} E={a.experts} top-{a.top_k} "
              f"capacity {a.capacity_factor or 'dropless'}, float32, fwd+bwd, best of "
              f"{a.repeats}")
        print(f"one process: MoE {t_moe * 1e3:.1f} ms ({serial.num_parameters():,d} params)"
              f", dense MLP D->{4 * a.top_k}D->D {t_dense * 1e3:.1f} ms "
              f"({dense.num_parameters():,d} params): MoE / dense = {t_moe / t_dense:.2f}")
        (t_step, p_moe), (t_wide, p_wide) = step_times(config, moe, a.batch, a.repeats)
        print(f"one process, AdamW step of the {config.n_layer}-layer GPT: MoE "
              f"{t_step * 1e3:.1f} ms ({p_moe:,d} params), dense with D->{4 * a.top_k}D->D "
              f"MLPs {t_wide * 1e3:.1f} ms ({p_wide:,d} params): MoE / dense = "
              f"{t_step / t_wide:.2f}")
    if world.size == 1:
        return
    comm.barrier(world)
    layer = ExpertParallelMoE(a.d_model, moe, world, "float32")
    layer.load_full("blocks.0.mlp", config)
    share = a.batch // world.size
    mine = slice(world.rank * share, (world.rank + 1) * share)
    comm.barrier(world)
    (t_ep,) = paired_best([pass_of(layer, x[mine], weight[mine])], a.repeats)
    slowest = comm.all_reduce(np.array([t_ep]), world, op="max")[0]
    if world.rank == 0:
        print(f"ep={world.size}: {slowest * 1e3:.1f} ms on the slowest rank "
              f"({share} sequences, {a.experts // world.size} experts each) against one "
              f"process {t_moe * 1e3:.1f} ms: speed-up {t_moe / slowest:.2f}x")


if __name__ == "__main__":
    import minimegatron.runtime
    minimegatron.runtime.setup()      # as every tutorial: heap kept, BLAS threads, abort hook
    main()
