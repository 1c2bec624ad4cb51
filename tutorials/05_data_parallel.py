"""Tutorial 5: data parallelism two ways, master style and all-reduce, both = one process.

    minimegatron run -n 8 tutorials/05_data_parallel.py [--steps 20]

Each step trains three copies of tutorial 0's GPT on the same batch of 16:
  serial  one process, the whole batch (every rank computes it, rank 0 prints)
  DataParallel  rank 0 is the master: scatter inputs, gather outputs, loss on
          rank 0, scatter output grads, reduce grads, update, broadcast weights
  DDP     every rank: forward/backward on its 16/N rows, all-reduce (average)
          grads in buckets, overlapping backward, every rank updates
The three loss columns agree to ~1e-15. The table at the end counts, from the
trace, the bytes each rank sent and received per step: the master moves N-1
times what any other rank does; under DDP every rank moves 2(N-1)/N of the
gradient bytes. Code: minimegatron/parallel/data_parallel/master.py and
minimegatron/parallel/data_parallel/ddp.py.
MINIMEGATRON_LANG=ko prints the headings in Korean (minimegatron.i18n).
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# ^ import the minimegatron beside tutorials/ (a student copy's own), not another install


from minimegatron import comm, nn, optim
from minimegatron.autodiff import functional as F
from minimegatron.comm import trace
from minimegatron.backend import xp
from minimegatron.data.datasets import repeat_task
from minimegatron.commands.argtypes import positive_int
from minimegatron.commands.entry import ArgumentParser, run
from minimegatron.i18n import language, text
from minimegatron.parallel.data_parallel import DataParallel, DistributedDataParallel
from minimegatron.parallel.split import shard_batch
from minimegatron.tools.memory_measure import measure

CONFIG = nn.GPTConfig(vocab_size=10, seq_len=16, n_layer=2, n_head=2, d_model=32, seed=0)
BATCH, LR = 16, 3e-3


def adamw(model):
    return optim.AdamW(model.parameters(), lr=LR, weight_decay=0.0)


def bytes_by(prefix):
    """(sent, received) bytes of this rank's collectives whose label starts with prefix."""
    spans = [s for s in trace.spans() if (s["label"] or "").startswith(prefix)]
    return sum(s["bytes_sent"] for s in spans), sum(s["bytes_recv"] for s in spans)


def main(steps):
    language()                  # an unknown MINIMEGATRON_LANG: one line, before any collective
    group = comm.world()
    N, rank = group.size, group.rank
    comm.print0(text("t05.heading", n=N, batch=BATCH, rows=BATCH // N,
                     params=nn.GPT(CONFIG).num_parameters()))
    serial, dp_model, ddp_model = nn.GPT(CONFIG), nn.GPT(CONFIG), nn.GPT(CONFIG)
    serial_opt = adamw(serial)
    dp = DataParallel(dp_model, group, root=0)
    dp_opt = adamw(dp_model) if rank == 0 else None            # only the master updates
    ddp = DistributedDataParallel(ddp_model, group, bucket_bytes=16 * 1024, overlap=True)
    ddp_opt = adamw(ddp_model)
    comm.barrier(group)
    trace.reset()
    comm.print0(text("t05.head_losses"))
    for step in range(steps):
        x, y = repeat_task(BATCH, CONFIG.seq_len, CONFIG.vocab_size, seed=0, step=step)
        with trace.label("serial"):                             # one process, whole batch
            loss = serial.loss(x, y)
            serial_opt.zero_grad()
            loss.backward()
            serial_opt.step()
        dp_loss = dp.step(x if rank == 0 else None, y if rank == 0 else None,
                          F.cross_entropy, dp_opt)               # master style
        x_r, y_r = shard_batch(x, group), shard_batch(y, group)  # (B/N, T) each
        ddp_opt.zero_grad()
        local = F.cross_entropy(ddp(x_r), y_r)                   # mean over my rows
        ddp.backward(local)                                      # + bucketed all-reduce
        ddp_opt.step()
        with trace.label("print"):
            ddp_loss = comm.all_reduce(xp.asarray([local.item()]), group, op="mean")[0]
        comm.print0(f"{step:4d} {loss.item():10.6f} {dp_loss or 0.0:13.6f} {ddp_loss:10.6f}")

    comm.print_ranks(text("t05.rows", first=rank * BATCH // N,
                          last=(rank + 1) * BATCH // N - 1, loss=local.item()), group)
    dp_sent, dp_recv = bytes_by("dp.")
    ddp_sent, ddp_recv = bytes_by("ddp.")
    held = measure(dp_model.parameters(), dp_opt)
    row = [rank, dp_sent / steps, dp_recv / steps, ddp_sent / steps, ddp_recv / steps,
           held["grads"] + held["optimizer"]]
    rows = comm.gather_object(row, group)
    comm.print0(text("t05.bytes"))
    comm.print0(text("t05.head_bytes"))
    for r, *values in rows or []:
        comm.print0(f"{r:4d} " + " ".join(f"{v / 1e3:9.1f}k" for v in values[:4])
                    + f" {values[4] / 1e3:14.1f}k")
    if rows and N > 1:
        ratio = sum(rows[0][1:3]) / sum(rows[1][1:3])
        comm.print0(text("t05.summary", ratio=ratio, ddp=rows[0][3] / 1e3,
                         grads=8 * ddp_model.num_parameters() / 1e3))


if __name__ == "__main__":
    parser = ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=positive_int, default=20)
    run(main, "tutorials/05_data_parallel.py", parser.parse_args().steps)
