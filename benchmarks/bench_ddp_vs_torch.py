"""A DDP step of minimegatron vs PyTorch's DistributedDataParallel (gloo), in the same job.

    pip install ".[bench]"          # PyTorch, for this script only
    python -m minimegatron run -n 2 benchmarks/bench_ddp_vs_torch.py [--steps 20] [--d-model 64]

Every MPI rank runs both sides in one process, on the same GPT (4 layers,
vocab 256, seq 64, a global batch of 16 split by ``shard_batch``: the same
rows per rank on both sides) from the same weights, with the same AdamW:

    minimegatron  DistributedDataParallel (parallel/data_parallel/ddp.py) over
                  MPI, with overlap (the default) and without
    torch         torch.nn.parallel.DistributedDataParallel over gloo (TCP on
                  127.0.0.1), buckets of 25 MiB (its default) and of 1 MiB;
                  the model is bench_vs_torch.py's torch GPT, its weights in a
                  ParameterDict so that DDP can hook them

Each side's step is: zero the gradients, forward and loss, backward (with
the gradient all-reduce), optimizer step. Two more sides take the same step
with no DDP (each rank on its own rows, no communication): the difference is
what each DDP costs. The sides take turns, step by step, each step after a
barrier, so a busy machine slows all alike. Printed:
the median step time (max over ranks), each side over torch's default, the
first loss of each side and the largest loss difference over all steps (the
check that they compute the same thing: about 1e-6 in float32). One BLAS/OMP
thread per rank on both sides. The library never imports torch; without it
this script says so and exits 0.
"""
import argparse
import socket
import statistics
import time

import numpy as np

from minimegatron import comm, nn, optim
from minimegatron.comm import comm_check
from minimegatron.runtime import threads
from minimegatron.backend import to_numpy, xp
from minimegatron.data.datasets import repeat_task
from minimegatron.parallel.data_parallel import DistributedDataParallel
from minimegatron.parallel.split import shard_batch

from bench_vs_torch import causal_mask, cpu_name, torch_gpt_loss, torch_weights

BATCH, SEQ, VOCAB, LAYERS = 16, 64, 256, 4
TORCH = "torch DDP gloo, 25 MiB buckets"          # the side every ratio divides by
LOCAL = "no DDP (local step), "


def init_gloo(torch, group):
    """torch.distributed over gloo with the MPI ranks: rank 0 picks a free port."""
    port = None
    if group.rank == 0:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
    port = comm.bcast_object(port, group)
    torch.distributed.init_process_group("gloo", rank=group.rank, world_size=group.size,
                                         init_method=f"tcp://127.0.0.1:{port}")


def minimegatron_side(cfg, group, overlap):
    """step(x, y) -> loss: minimegatron's DDP, buckets of DEFAULT_BUCKET_BYTES (1 MiB), each
    all-reduce bound once (``bound=True``, bound.py). ``overlap=None``: no DDP at all, the
    same step on this rank's rows alone."""
    model = nn.GPT(cfg)
    ddp = None if overlap is None else DistributedDataParallel(model, group, overlap=overlap,
                                                               bound=True)
    opt = optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.01)

    def step(x, y):
        opt.zero_grad()
        loss = model.loss(x, y)
        loss.backward() if ddp is None else ddp.backward(loss)
        opt.step()
        return float(loss.item())
    return step


def torch_side(torch, cfg, bucket_mb):
    """step(x, y) -> loss: torch DDP on the same GPT (nn.GPT(cfg)'s weights) and AdamW.
    ``bucket_mb=None``: no DDP at all, the same step on this rank's rows alone."""
    class TorchGPT(torch.nn.Module):
        def __init__(self, weights):
            super().__init__()
            # ParameterDict keys may not contain ".": "blocks.0.ln1.weight" -> "blocks_0_..."
            self.names = {name: name.replace(".", "_") for name in weights}
            self.weights = torch.nn.ParameterDict(
                {key: torch.nn.Parameter(weights[name].detach())
                 for name, key in self.names.items()})
            self.mask = causal_mask(torch, cfg.seq_len, "cpu")

        def forward(self, idx, targets):
            w = {name: self.weights[key] for name, key in self.names.items()}
            return torch_gpt_loss(torch, w, cfg, idx, targets, self.mask)

    module = TorchGPT(torch_weights(torch, nn.GPT(cfg), "cpu"))
    ddp = module if bucket_mb is None else torch.nn.parallel.DistributedDataParallel(
        module, bucket_cap_mb=bucket_mb)
    opt = torch.optim.AdamW(module.parameters(), lr=1e-3, weight_decay=0.01)

    def step(x, y):
        opt.zero_grad()
        loss = ddp(x, y)
        loss.backward()
        opt.step()
        return float(loss.item())
    return step


def main():
    comm_check.disable()      # benchmarks time the collectives alone (docs/notes_comm.md)
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--d-model", type=int, default=64)
    parser.add_argument("--warm-up", type=int, default=3)
    args = parser.parse_args()
    group = comm.world()
    try:
        import torch
        import torch.distributed                                     # noqa: F401
    except ImportError:
        comm.print0("PyTorch is not installed (pip install '.[bench]'); nothing to compare")
        return 0
    torch.set_num_threads(1)
    threads.set_loaded_blas_threads(1)
    init_gloo(torch, group)
    cfg = nn.GPTConfig(vocab_size=VOCAB, seq_len=SEQ, n_layer=LAYERS,
                       n_head=max(1, args.d_model // 64), d_model=args.d_model,
                       dtype="float32")
    batches = []                                      # this rank's rows, both sides' forms
    for i in range(4):
        x, y = (shard_batch(a, group) for a in repeat_task(BATCH, SEQ, VOCAB, step=i))
        batches.append(((x, y), tuple(torch.from_numpy(np.ascontiguousarray(to_numpy(a)))
                                      for a in (x, y))))
    sides = {TORCH: (torch_side(torch, cfg, 25), 1),                  # the reference
             "torch DDP gloo, 1 MiB buckets": (torch_side(torch, cfg, 1), 1),
             "minimegatron DDP, overlap": (minimegatron_side(cfg, group, True), 0),
             "minimegatron DDP, no overlap": (minimegatron_side(cfg, group, False), 0),
             LOCAL + "torch": (torch_side(torch, cfg, None), 1),
             LOCAL + "minimegatron": (minimegatron_side(cfg, group, None), 0)}
    times = {name: [] for name in sides}
    losses = {name: [] for name in sides}
    for i in range(args.warm_up + args.steps):
        for name, (step, form) in sides.items():
            x, y = batches[i % len(batches)][form]
            comm.barrier(group)
            start = time.perf_counter()
            losses[name].append(step(x, y))
            if i >= args.warm_up:
                times[name].append(time.perf_counter() - start)
    medians = comm.all_reduce(xp.asarray([statistics.median(t) for t in times.values()]),
                              group, op="max")                         # max over ranks
    comm.print0(f"{cpu_name()}, {threads.cores()} cores; {group.size} ranks, numpy "
                f"{np.__version__}, torch {torch.__version__}; GPT d_model {args.d_model}, "
                f"{LAYERS} layers, seq {SEQ}, batch {BATCH} ({BATCH // group.size} per rank), "
                f"float32, {sum(p.data.size for p in nn.GPT(cfg).parameters()):,} parameters; "
                f"median of {args.steps} steps, max over ranks")
    base = float(medians[0])
    for (name, loss), seconds in zip(losses.items(), medians):
        diffs = [abs(a - b) for a, b in zip(loss, losses[TORCH])]
        check = (f"max |loss - torch DDP's| {max(diffs):.1e}" if not name.startswith(LOCAL)
                 else "(trains on this rank's rows alone)")
        comm.print0(f"  {name:<34} {float(seconds) * 1e3:8.2f} ms  {float(seconds) / base:5.2f}x"
                    f"  first loss {loss[0]:.6f}  {check}")
    torch.distributed.destroy_process_group()
    return 0


if __name__ == "__main__":
    import minimegatron.runtime
    minimegatron.runtime.setup()      # as every tutorial: heap kept, BLAS threads, abort hook
    raise SystemExit(main())
