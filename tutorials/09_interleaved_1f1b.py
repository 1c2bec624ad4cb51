"""Tutorial 9: the interleaved 1F1B schedule (Megatron-LM 2021), on real ranks.

    minimegatron run -n 4 tutorials/09_interleaved_1f1b.py [--chunks 2] [--micro-batches 8]
    (or: mpirun -n 4 python tutorials/09_interleaved_1f1b.py)

Plain 1F1B gives rank k one run of consecutive layers. Interleaved 1F1B cuts
the L layers into K*v groups and gives rank k v of them, groups k, k+K, ..,
k+(v-1)K (its model chunks): a micro-batch now visits every rank v times,
so each visit is 1/v of the work and the pipeline fills and drains v times
faster. Each rank warms up with min(2(K-k-1) + (v-1)K, M*v) chunk forwards,
then alternates, then drains (minimegatron/parallel/pipeline_parallel/schedules.py,
``interleaved``). This script

1. prints every rank's schedule as a text grid (one column per chunk step),
   simulated from the same action lists the executor runs;
2. prints the simulated bubble next to the paper's (1/v)(K-1)/M and plain
   1F1B's (K-1)/M (idle / busy), and the messages per step, 2M(Kv-1) vs 2M(K-1);
3. trains the 8-layer GPT of ``minimegatron verify`` for 2 AdamW steps with
   the interleaved engine (``train``: ChunkedStage holds this rank's v chunks,
   PipelineEngine runs their schedule) and, in the same loop, the whole GPT on
   one process; prints both losses per step and the largest loss, gradient and
   weight differences over every rank.

MINIMEGATRON_LANG=ko prints the headings in Korean (minimegatron.i18n).
"""
import os
import sys
from fractions import Fraction

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# ^ import the minimegatron beside tutorials/ (a student copy's own), not another install

from minimegatron import comm
from minimegatron.backend import to_numpy
from minimegatron.commands import entry
from minimegatron.data.demo import VERIFY_CONFIG, batch, make_optimizer
from minimegatron.i18n import language, text
from minimegatron.nn import GPT
from minimegatron.parallel.pipeline_parallel import ChunkedStage, PipelineEngine
from minimegatron.parallel.pipeline_parallel.schedules import (check_interleaved, interleaved,
                                                               one_f_one_b, peak_in_flight)
from minimegatron.parallel.pipeline_parallel.simulator import simulate
from minimegatron.tools.timeline import text_grid

CONFIG, STEPS, TOLERANCE = VERIFY_CONFIG, 2, 1e-10   # float64: the sums only reorder (~1e-15)


def sends(programs):
    return sum(a.op.startswith("send") for actions in programs for a in actions)


def schedule_report(K, M, v):
    """The grid, the bubble against both formulas, the messages and the activations held."""
    sim = simulate("interleaved", K, M, Fraction(1), Fraction(1), v)
    plain = simulate("1f1b", K, M, Fraction(1), Fraction(1))
    print(text("t09.heading", K=K, v=v, M=M))
    print(text_grid(sim))
    print(text("t09.bubble", sim=sim.bubble_ratio, formula=Fraction(K - 1, v * M),
               plain=plain.bubble_ratio))
    print(text("t09.fraction", sim=sim.bubble_fraction, sim_pct=float(sim.bubble_fraction),
               plain=plain.bubble_fraction, plain_pct=float(plain.bubble_fraction)))
    chunked = [interleaved(K, M, k, v) for k in range(K)]
    print(text("t09.messages", chunked=sends(chunked),
               plain=sends([one_f_one_b(K, M, k) for k in range(K)])))
    held = [Fraction(peak_in_flight(actions), v) for actions in chunked]
    plain_held = [peak_in_flight(one_f_one_b(K, M, k)) for k in range(K)]
    print(text("t09.held", held=" ".join(map(str, held)),
               plain=" ".join(map(str, plain_held))))


def max_diff(a, b):
    return float(abs(to_numpy(a) - to_numpy(b)).max())


def train(group, M, v):
    """STEPS of AdamW with the interleaved engine, next to one process on this rank.

    Returns [(pipeline loss, one process's loss)] per step and this rank's largest
    {"loss", "grad", "weight"} differences over the parameters its chunks hold.
    """
    stage = ChunkedStage(GPT(CONFIG), group.rank, group.size, v)   # blocks of chunks k, k+K..
    engine = PipelineEngine(stage, group, schedule="interleaved", num_micro_batches=M)
    opt = make_optimizer(stage.parameters())
    serial = GPT(CONFIG)                        # one process: the same seed, the same weights
    serial_opt = make_optimizer(serial.parameters())
    whole = dict(serial.named_parameters())     # a chunk's parameters keep the GPT's names
    losses, diffs = [], {"loss": 0.0, "grad": 0.0, "weight": 0.0}
    for step in range(STEPS):
        inputs, targets = batch(CONFIG, 2 * M, step)        # (2M, T): M micro-batches of 2
        opt.zero_grad()
        loss = engine.train_step(inputs, targets)           # this rank's F and B of every chunk
        serial_opt.zero_grad()
        ref = serial.loss(inputs, targets)                  # the whole batch, all 8 layers
        ref.backward()
        losses.append((loss, ref.item()))
        diffs["loss"] = max(diffs["loss"], abs(loss - ref.item()))
        for name, p in stage.named_parameters():
            diffs["grad"] = max(diffs["grad"], max_diff(p.grad, whole[name].grad))
        opt.step()
        serial_opt.step()
        for name, p in stage.named_parameters():
            diffs["weight"] = max(diffs["weight"], max_diff(p.data, whole[name].data))
    return losses, diffs


def main():
    parser = entry.ArgumentParser(description="interleaved 1F1B on real ranks")
    parser.add_argument("--chunks", type=int, default=2, help="model chunks per rank, v")
    parser.add_argument("--micro-batches", type=int, default=None,
                        help="M, a multiple of the ranks (default 2 x ranks)")
    args = parser.parse_args()
    language()                  # an unknown MINIMEGATRON_LANG: one line, before any collective
    group = comm.world()
    M = args.micro_batches or 2 * group.size
    try:
        check_interleaved(group.size, M, args.chunks)     # same answer on every rank
    except ValueError as error:
        parser.error(str(error))
    if group.rank == 0:
        schedule_report(group.size, M, args.chunks)
    losses, diffs = train(group, M, args.chunks)
    worst = comm.gather_object(diffs, group)
    if group.rank == 0:
        print(text("t09.columns"))
        for step, (loss, ref) in enumerate(losses):
            print(f"{step:>4} {loss:>18.15f} {ref:>18.15f} {abs(loss - ref):>9.1e}")
        worst = {key: max(d[key] for d in worst) for key in diffs}
        ok = all(value < TOLERANCE for value in worst.values())
        print(text("t09.check", tol=TOLERANCE, verdict=text("t09.pass" if ok else "t09.fail"),
                   diffs=", ".join(f"max|{key} diff| {value:.1e}"
                                   for key, value in worst.items())))


if __name__ == "__main__":
    entry.run(main, "tutorials/09_interleaved_1f1b.py")
