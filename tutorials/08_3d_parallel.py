"""Tutorial 8: 3D parallelism, a GPT trained on a dp x pp x tp grid of 8 ranks.

    minimegatron run -n 8 tutorials/08_3d_parallel.py                 # 2 x 2 x 2
    python -m minimegatron run -n 8 tutorials/08_3d_parallel.py --dp 1 --pp 2 --tp 4
    python tutorials/08_3d_parallel.py --dp 1 --pp 1 --tp 1        # one process

Every rank holds one tensor-parallel shard (tp) of one pipeline stage (pp) of
one data-parallel replica (dp): ParallelGPT inside PipelineStage, run by
PipelineEngine (--schedule, --micro-batches), gradients averaged over dp by
DDP (parallel/threed.py). Rank 0 first trains the same GPT alone on the same
batches; each step prints the 3D loss next to that serial loss. At the end:

1. the grid (which ranks share a tp, dp and pp group),
2. a table, one row per rank (dp,pp,tp coordinates): parameters, bytes of
   weights / grads / Adam state MEASURED from the arrays (tools/memory_measure.py)
   and bytes sent in the last step over dp, pp and tp (from the trace); below it
   the calculator's prediction for each stage (tools/memory.rank_report, float64),
3. (the per-rank rows are gathered to rank 0 and printed in rank order),
4. the loss table (3D vs serial, max difference),
5. a timeline PNG of the last step (forward/backward boxes per rank, tp, pp and
   dp traffic in three colours): --out/3d_timeline.png, and the same spans as a
   Chrome trace for https://ui.perfetto.dev: --out/3d_timeline.json,
6. the text the GPT writes before training (the serial model, on rank 0) and after
   (sampled on the grid, Trainer3D.generate), with the share of its words that are
   corpus words; the model is saved (--out/3d_gpt.npz) for ``minimegatron sample``.

The data is the character corpus shipped in the package (datasets.tiny_corpus):
random windows of 32 characters; the GPT learns to predict the next one.
MINIMEGATRON_LANG=ko prints the headings in Korean (minimegatron.i18n).
"""
import os
import sys
import time
from dataclasses import replace

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# ^ import the minimegatron beside tutorials/ (a student copy's own), not another install

from minimegatron import comm
from minimegatron.comm import trace
from minimegatron.commands.argtypes import positive_int
from minimegatron.data.datasets import CharTokenizer, known_words, text_batches, tiny_corpus
from minimegatron.data.demo import DEMO_CONFIG
from minimegatron.commands.entry import ArgumentParser, run, usage_error
from minimegatron.i18n import language, text
from minimegatron.nn import GPT
from minimegatron.optim import AdamW
from minimegatron.parallel.grid import ProcessGrid, grid_coordinates
from minimegatron.parallel.threed import Trainer3D
from minimegatron.tools.checkpoint import save_checkpoint
from minimegatron.tools.memory import rank_report
from minimegatron.tools.memory_measure import measure
from minimegatron.tools import chrome_trace
from minimegatron.tools.timeline import draw_timeline, rows_from_trace
from minimegatron.comm.trace import DIMENSIONS, comm_by_dimension


# The checks' demo GPT with 2 layers (4 heads, d_model 32) reading 32 characters of the
# corpus (36 distinct ones): in 300 steps the loss falls from log 36 = 3.58 to about 0.6 and
# the text it writes turns from random letters into the corpus's words (4 layers learn it
# more slowly: about 0.7 after 400 steps at twice the time per step).
TEXT = tiny_corpus()
TOKENIZER = CharTokenizer(TEXT)
CORPUS_IDS = TOKENIZER.encode(TEXT)
CONFIG = replace(DEMO_CONFIG, vocab_size=TOKENIZER.vocab_size, seq_len=32, n_layer=2)
PROMPT, CHARS, TEMPERATURE = "In ", 160, 0.8


def make_optimizer(params):
    """AdamW for both runs, the 3D one and the serial one on rank 0."""
    return AdamW(params, lr=1e-2, weight_decay=0.0)


def batch(batch_size, step):
    """The step's (inputs, targets): random windows of the corpus, the same on every rank."""
    return text_batches(CORPUS_IDS, batch_size, CONFIG.seq_len, seed=CONFIG.seed, step=step)


def write(generate):
    """The text a model writes after PROMPT, with a generate method (GPT or Trainer3D)."""
    ids = generate([TOKENIZER.encode(PROMPT)], CHARS, TEMPERATURE, seed=0)    # (1, 3 + CHARS)
    return TOKENIZER.decode(ids[0])


def text_report(before, after, serial_after, steps, checkpoint):
    """The samples before and after training, their share of corpus words, the checkpoint."""
    lines = [text("t08.writes", prompt=PROMPT, chars=CHARS, temperature=TEMPERATURE)]
    for when, sample in ((text("t08.before"), before), (text("t08.after", steps=steps), after)):
        found, total = known_words(sample, TEXT)
        lines.append(text("t08.words", when=when, found=found, total=total,
                          percent=100 * found / max(total, 1)))
        lines += ["  | " + line for line in sample.splitlines()]
    same = text("t08.yes" if serial_after == after else "t08.no")
    lines.append(text("t08.same", same=same))
    lines.append(text("t08.saved", checkpoint=checkpoint))
    return "\n".join(lines)


def parse(argv):
    ap = ArgumentParser(description=__doc__.splitlines()[0])
    for flag, default in (("dp", 2), ("pp", 2), ("tp", 2), ("steps", 300),
                          ("micro-batches", 2), ("batch", 16)):
        ap.add_argument(f"--{flag}", type=positive_int, default=default)
    ap.add_argument("--schedule", choices=["naive", "gpipe", "1f1b"], default="1f1b")
    ap.add_argument("--out", default="out", help="directory for the timeline PNG and the model")
    return ap.parse_args(argv)


def serial_losses(steps, batch_size):
    """The same GPT trained on one process (rank 0): its loss at every step, and the model."""
    model = GPT(CONFIG)
    opt = make_optimizer(model.parameters())
    losses = []
    for step in range(steps):
        x, y = batch(batch_size, step)
        loss = model.loss(x, y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses, model


COLUMNS = ("params", "weights", "grads", "optimizer", "dp", "pp", "tp")
WIDTHS = (8, 11, 10, 12, 11, 11, 11)


def table_line(label, row):
    return f"{label:<16}" + "".join(f"{int(row[k]):>{w},}" for k, w in zip(COLUMNS, WIDTHS))


def rank_row(trainer, spans):
    """This rank's measured numbers: parameters, bytes held, bytes sent in the last step by
    dimension (trace.comm_by_dimension), and all it sent (every group)."""
    held = measure(trainer.parameters(), trainer.optimizer)
    sent = comm_by_dimension(spans)
    return dict({k: held[k] for k in ("weights", "grads", "optimizer")}, **sent,
                params=sum(p.size for p in trainer.parameters()),
                total=sum(s["bytes_sent"] for s in spans if s["kind"] == "comm"))


def predicted_row(grid, args, micro_batches, stage):
    """The calculator's numbers for a rank of ``stage`` (tools/memory.rank_report, float64)."""
    report = rank_report(CONFIG, args.batch // (grid.dp_size * micro_batches), micro_batches,
                         grid.dp_size, grid.pp_size, grid.tp_size, stage=stage,
                         precision="float64")
    return dict({k: report[k] for k in ("params", "weights", "grads", "optimizer")},
                **{k: report["comm"][k] for k in ("dp", "pp", "tp")})


def bytes_table(rows, grid, args, micro_batches):
    """Measured rows (one per rank), then the predicted row of each stage."""
    lines = [text("t08.bytes"), text("t08.head_bytes")]
    for rank, row in enumerate(rows):
        d, p, t = grid_coordinates(rank, grid.dp_size, grid.tp_size)
        lines.append(table_line(f"rank {rank} ({d},{p},{t})", row))
    if CONFIG.n_layer % grid.pp_size:
        lines.append(text("t08.no_prediction", n_layer=CONFIG.n_layer, pp=grid.pp_size))
        return "\n".join(lines)
    lines.append(text("t08.predicted"))
    lines += [table_line(f"stage {stage}", predicted_row(grid, args, micro_batches, stage))
              for stage in range(grid.pp_size)]
    lines.append(text("t08.traffic"))
    others = max(row[k] for row in rows for k in ("cp", "ep", "dp_cp", "edp"))
    counted = all(sum(row[k] for k in DIMENSIONS) == row["total"] for row in rows)
    lines.append(text("t08.other_dimensions", others=others,
                      counted=text("t08.yes" if counted else "t08.no")))
    return "\n".join(lines)


def save_timeline(spans_by_rank, path, title):
    """Gantt chart of every rank: F/B boxes, and its traffic coloured by group kind.

    Its Chrome trace (every span, bytes in args) goes beside it first: ``.json``,
    written without matplotlib too (``minimegatron/tools/chrome_trace.py``).

    tp all-reduces run INSIDE the forward/backward boxes: drawn as strips along
    their bottom edge. pp receives (waits for a neighbour), the pp broadcast of
    the loss and the dp all-reduces (gradients, loss) run between boxes. A pp
    send is nonblocking: its span only says the message was in flight until the
    step's end, so it is left out (the receive on the other side is drawn).
    """
    spans = [dict(s, rank=rank) for rank, mine in enumerate(spans_by_rank) for s in mine
             if s["op"] not in ("barrier", "send")]
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    json_path = path[:-len(".png")] + ".json"
    chrome_trace.write(chrome_trace.from_trace(spans, title), json_path)
    print(text("t08.chrome", path=json_path))
    draw_timeline(rows_from_trace(spans), path, title, row_name="rank", xlabel="time (s)")
    return path


def main(argv=None):
    args = parse(argv)
    language()                  # an unknown MINIMEGATRON_LANG: one line, before any collective
    world = comm.world()
    if args.dp * args.pp * args.tp != world.size:       # every rank, before any collective
        usage_error(text("t08.ranks", dp=args.dp, pp=args.pp, tp=args.tp, n=world.size,
                         product=args.dp * args.pp * args.tp))
    grid = ProcessGrid(args.dp, args.pp, args.tp)
    trainer = Trainer3D(CONFIG, grid, schedule=args.schedule, micro_batches=args.micro_batches,
                        optimizer_fn=make_optimizer)
    trainer.check_batch(args.batch)
    comm.print0(text("t08.heading", n=world.size, dp=args.dp, pp=args.pp, tp=args.tp,
                     schedule=args.schedule, m=trainer.micro_batches,
                     size=args.batch // (args.dp * trainer.micro_batches), batch=args.batch,
                     steps=args.steps))
    start = time.perf_counter()
    serial, serial_model = serial_losses(args.steps, args.batch) if world.rank == 0 \
        else (None, None)
    comm.print0(text("t08.serial", steps=args.steps, seconds=time.perf_counter() - start))
    losses, times = [], []
    for step in range(args.steps):
        x, y = batch(args.batch, step)
        comm.barrier(world)
        trace.reset()                                    # every rank starts together
        start = time.perf_counter()
        losses.append(trainer.train_step(x, y))
        times.append(time.perf_counter() - start)
        if world.rank == 0:                              # the serial losses live here
            print(text("t08.step_line", step=step, loss=losses[-1], serial=serial[step],
                       diff=abs(losses[-1] - serial[step]), ms=1e3 * times[-1]), flush=True)
    last_step = list(trace.spans())
    comm.print0("\n" + grid.describe(group=text("t08.group")))
    rows = comm.gather_object(rank_row(trainer, last_step), world)
    every = comm.gather_object(list(trace.spans()), world, root=0)
    after = write(trainer.generate)
    checkpoint = os.path.join(args.out, "3d_gpt.npz")
    os.makedirs(args.out, exist_ok=True)
    save_checkpoint(trainer, trainer.optimizer, checkpoint, grid)     # gathered: one full file
    if world.rank == 0:
        print("\n" + bytes_table(rows, grid, args, trainer.micro_batches))
        diffs = [abs(a - b) for a, b in zip(losses, serial)]
        print(text("t08.head_losses"))
        for step in sorted(set(range(0, args.steps, 10)) | {args.steps - 1}):  # every 10th
            print(f"{step:>4} {losses[step]:>12.8f} {serial[step]:>12.8f} {diffs[step]:>9.1e}")
        print(text("t08.max", steps=args.steps, worst=max(diffs),
                   ms=1e3 * sorted(times)[len(times) // 2]))
        title = (f"3D parallel, last step: dp {args.dp} x pp {args.pp} x tp {args.tp}, "
                 f"{args.schedule}, M={trainer.micro_batches} (rank = pp*{args.dp * args.tp} "
                 f"+ dp*{args.tp} + tp); strips: traffic inside F/B")
        try:
            path = save_timeline(every, os.path.join(args.out, "3d_timeline.png"), title)
            print(text("t08.timeline", path=path))
        except ImportError as err:      # no matplotlib: the numbers still come, one line says why
            print(err)
        before = write(GPT(CONFIG).generate)             # the untrained weights, on one rank
        print(text_report(before, after, write(serial_model.generate), args.steps, checkpoint))
    return 0


if __name__ == "__main__":
    sys.exit(run(main, "tutorials/08_3d_parallel.py"))
