"""Tutorial 14: mixture of experts, E = 8 experts spread over ep = 4 ranks of dp = 8.

    minimegatron run -n 8 tutorials/14_mixture_of_experts.py
    (or: mpirun -n 8 python tutorials/14_mixture_of_experts.py)

The 2-layer GPT of data/demo.py (SMALL_CONFIG) with an MoE in every block (8 experts,
top-2, capacity factor 1.0: C = ceil(2 x 8 x 1.0 / 8) = 2 slots per expert and sequence),
from the real code (minimegatron/nn/moe/, minimegatron/parallel/expert_parallel/):

1. the training loop: MoETrainer (ep = 4 folded over dp = 8, ep groups {0..3}
   {4..7}; the padded dispatch and combine all-to-alls inside every MoE block) and
   one process's MoEGPT, the same --steps AdamW steps on the same batches; after
   each step the loss, every gradient and every weight a rank holds are compared
   with one process's (an expert weight: the rows of the experts the rank holds).
   The load at each step: assignments per expert (the whole batch) and the rows
   the experts of each rank computed, drawn into --out/14_mixture_of_experts.png (its
   numbers in 14_mixture_of_experts.json);
2. the router's choices for the first tokens of rank 0: the k experts, kept or dropped;
3. the tokens dropped at capacity factors 0.5, 1, 1.25, 2 and dropless (one process,
   the trained weights);
4. the bytes of dispatch and combine from the trace of the last step beside the formula
   (ep-1) x E/ep x C x h x b x itemsize; then the dropless dispatch by hand: block 0's
   trained router sends each token row to its expert's rank (dispatch_dropless: the
   counts, then all_to_allv), the E/ep local experts compute, combine_dropless brings
   the outputs back, next to one process's experts on the same rows, and its bytes from
   the token counts; then the step's bytes per dimension (ep, dp x cp, edp:
   trace.comm_by_dimension) beside theirs;
5. the expert and dense parameters of every rank and its dispatch buffer (the payload
   of the last step's dispatch, from the trace), measured in this run, beside the memory
   calculator (tools/memory_moe.py);
6. aux-loss-free balancing (DeepSeek-V3, nn/moe/balancing.py): the expert bias
   (gamma, no aux loss) trained on the grid next to one process, losses and biases
   compared; then three dropless one-process runs on the same 40 batches (one on each of
   ranks 0, 1 and 2): no balancing, the aux loss, the expert bias, and the spread of the load of each (the
   busiest expert over the mean, per block; 1.00 is even).

MINIMEGATRON_LANG=ko prints the headings in Korean (minimegatron.i18n).
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# ^ import the minimegatron beside tutorials/ (a student copy's own), not another install

import argparse
import dataclasses
import json

import numpy as np

from minimegatron import comm
from minimegatron.autodiff import functional as F
from minimegatron.autodiff.tensor import Tensor
from minimegatron.backend import asarray, to_numpy
from minimegatron.comm import trace
from minimegatron.data.demo import SMALL_CONFIG, batch, make_optimizer
from minimegatron.i18n import language, text
from minimegatron.i18n.columns import fit
from minimegatron.nn.moe import (MoEConfig, MoEGPT, balance_experts, gather_rows, moe_layers,
                                 route)
from minimegatron.parallel.expert_parallel import (MoETrainer, combine_dropless,
                                                   dispatch_dropless, dropless_bytes, is_expert,
                                                   padded_bytes)
from minimegatron.parallel.grid import ProcessGrid
from minimegatron.parallel.split import rows_of
from minimegatron.commands.entry import run
from minimegatron.tools.memory_moe import dispatch_buffer_bytes, moe_rank_params
from minimegatron.tools.moe_picture import draw_moe_load

MOE_CONFIG = SMALL_CONFIG                   # the 2-layer GPT: S = 8 tokens, h = 16
MOE = MoEConfig(num_experts=8, top_k=2, capacity_factor=1.0)    # C = ceil(2 x 8 x 1.0 / 8) = 2
EP, BATCH, SHOWN = 4, 8, 6
FACTORS = (0.5, 1.0, 1.25, 2.0, None)
GAMMA, GRID_STEPS = 0.005, 3               # part 6: the bias's step; steps on the grid
BALANCE_STEPS, BALANCE_BATCH = 40, 32      # and of the three one-process runs
LABELS = ("ep.dispatch", "ep.combine", "ep.dispatch.backward", "ep.combine.backward")


def worst(group, value):
    return float(comm.all_reduce(np.array([float(value)]), group, op="max")[0])


def max_diff(a, b):
    """max |a - b| of two arrays."""
    return float(abs(to_numpy(a) - to_numpy(b)).max())


def summed(plans, what):
    """(E,) the sum over MoE layers of each plan's load (before capacity) or kept_load."""
    return sum(to_numpy(getattr(p, what)(MOE.num_experts)) for p in plans)


def rank_rows(grid, plans):
    """Real token rows the experts of each world rank computed (after capacity), all ranks."""
    per_expert = comm.all_reduce(summed(plans, "kept_load").astype(np.float64), grid.ep)
    local = MOE.num_experts // grid.ep_size
    mine = per_expert[grid.ep.rank * local:(grid.ep.rank + 1) * local].sum()   # my experts
    return [int(r) for r in comm.allgather_object(int(mine), grid.world)]


def train(grid, steps):
    """Part 1, the training loop: the grid's MoE GPT beside one process's, the same AdamW
    steps. Returns the serial model, the trainer, the loads per step and this rank's trace
    spans of the last step."""
    trainer = MoETrainer(MOE_CONFIG, MOE, grid, optimizer_fn=make_optimizer)
    serial = MoEGPT(MOE_CONFIG, MOE)                  # one process: every expert, whole batch
    opt = make_optimizer(serial.parameters())
    want = dict(serial.named_parameters())            # the trainer's names are the same

    def mine(name, full):
        """This rank's part of one process's array: its experts' rows, or all of it."""
        return rows_of(full, grid.ep.rank, grid.ep_size) if is_expert(name) else full

    comm.print0(text("t14.head_losses", ep=f"ep={grid.ep_size}"))
    loads, rows, same, spans = [], [], True, []
    diffs = {"loss": 0.0, "grad": 0.0, "weight": 0.0}
    for step in range(steps):
        x, y = batch(MOE_CONFIG, BATCH, step)                          # (B, S), every rank
        opt.zero_grad()
        serial_loss = serial.loss(x, y)                                # cross entropy + aux
        serial_loss.backward()
        if step == steps - 1:
            comm.barrier(grid.world)
            trace.reset()                      # parts 4 and 5 read the last step
        # my B/dp rows through both MoE blocks (the padded dispatch and combine all-to-alls
        # over ep), then the gradients: dense averaged over dp x cp, experts summed over edp
        loss = trainer.forward_backward(x, y)                          # the global mean loss
        grad = max(max_diff(p.grad, mine(n, want[n].grad)) for n, p in trainer.named_parameters())
        trainer.step()                         # AdamW on this rank's weights
        opt.step()
        spans = [s for s in trace.spans() if s["kind"] == "comm"]
        weight = max(max_diff(p.data, mine(n, want[n].data))
                     for n, p in trainer.named_parameters())
        step_diffs = {"loss": abs(loss - serial_loss.item()), "grad": grad, "weight": weight}
        diffs = {key: max(diffs[key], step_diffs[key]) for key in diffs}
        plans = [layer.last_plan for layer in moe_layers(trainer.stage)]
        load = comm.all_reduce(summed(plans, "load").astype(np.float64), grid.world)
        serial_load = summed([layer.last_plan for layer in moe_layers(serial)], "load")
        same = same and bool((load == serial_load).all())
        loads.append([int(n) for n in load])
        rows.append(rank_rows(grid, plans))
        comm.print0(f"{step:>4}{serial_loss.item():>14.6f}{loss:>14.6f}"
                    f"{abs(loss - serial_loss.item()):>10.1e}"
                    f"  {' '.join(str(n) for n in loads[-1]):<28}{' '.join(map(str, rows[-1]))}")
    comm.print0(text("t14.same_load", same=text("t14.yes" if same else "t14.no")))
    comm.print0(text("t14.check", steps=steps, loss=worst(grid.world, diffs["loss"]),
                     grad=worst(grid.world, diffs["grad"]),
                     weight=worst(grid.world, diffs["weight"])))
    return serial, trainer, loads, rows, spans


def show_choices(grid, trainer, serial, step):
    """Part 2: rank 0's first tokens at the last step, their experts, kept or dropped; the
    same in one process."""
    plan = moe_layers(trainer.stage)[0].last_plan              # this rank's 1 sequence
    whole = moe_layers(serial)[0].last_plan                    # the global batch
    b = BATCH // grid.dp_size
    mine = slice(grid.dp_rank * b, (grid.dp_rank + 1) * b)
    differ = worst(grid.world, not (np.array_equal(to_numpy(plan.choice),
                                                  to_numpy(whole.choice)[mine]) and
                                   np.array_equal(to_numpy(plan.kept),
                                                  to_numpy(whole.kept)[mine])))
    x, _ = batch(MOE_CONFIG, BATCH, step)
    comm.print0(text("t14.head_tokens"))
    for t in range(SHOWN):
        choice, kept = to_numpy(plan.choice)[0, t], to_numpy(plan.kept)[0, t]
        marks = " ".join("yes" if k else "DROPPED" for k in kept)
        comm.print0(f"{t:>5}{int(x[0, t]):>4}  {str(list(map(int, choice))):<10}{marks}")
    comm.print0(text("t14.same_choices", same=text("t14.no" if differ else "t14.yes")))


def drops(serial):
    """Part 3: one process, the trained weights, each capacity factor."""
    x, y = batch(MOE_CONFIG, BATCH, 0)
    total = BATCH * MOE_CONFIG.seq_len * MOE.top_k * len(moe_layers(serial))
    comm.print0(text("t14.head_factor"))
    for factor in FACTORS:
        moe = dataclasses.replace(MOE, capacity_factor=factor)          # None: dropless
        model = MoEGPT(MOE_CONFIG, moe)
        model.load_state_dict(serial.state_dict())
        model.loss(x, y)
        plans = [layer.last_plan for layer in moe_layers(model)]
        dropped = sum(p.dropped for p in plans)
        lost = sum(int((~to_numpy(p.kept).any(axis=-1)).sum()) for p in plans)
        cap = moe.capacity(MOE_CONFIG.seq_len)
        comm.print0(f"{'dropless' if factor is None else factor:>8}{cap or '-':>4}"
                    f"{dropped:>6} of {total:<4}{lost:>17}")


def dropless_by_hand(grid, trainer, serial):
    """Part 4, dropless, the dispatch called here: block 0's trained router picks the top-k
    experts of this rank's tokens with no capacity; the rows travel to the ranks of their
    experts and back (dispatch.py); one process runs every expert on the same rows.

    Returns max |out - one process|, the bytes each all-to-all sent (trace) and formulas."""
    group, E, k, h = grid.ep, MOE.num_experts, MOE.top_k, MOE_CONFIG.d_model
    one, ep_layer = moe_layers(serial)[0], moe_layers(trainer.stage)[0]   # E and E/ep experts
    rng = np.random.default_rng(7 + grid.world.rank)
    x = Tensor(asarray(rng.standard_normal((2, MOE_CONFIG.seq_len, h))))   # (b, T, h) mine
    probs = F.softmax(one.router(x), axis=-1)                             # (b, T, E)
    plan = route(probs.data, k, None)                                     # dropless: keep all
    rows = gather_rows(x.reshape(-1, h), plan.token)           # (b T k, h), expert-major
    comm.barrier(group)
    trace.reset()
    mine, counts, back = dispatch_dropless(rows, plan.counts, group)   # counts, all_to_allv
    out = combine_dropless(ep_layer.experts(mine, counts), group, back)   # my E/ep experts
    diff = max_diff(out.data, one.experts(rows, plan.counts).data)   # one process: every expert
    sent = {}
    for s in trace.spans():
        if s["kind"] == "comm" and (s["label"] or "").startswith("ep."):
            sent[s["label"]] = sent.get(s["label"], 0) + s["bytes_sent"]
    every = comm.allgather_object([int(c) for c in plan.counts], group)   # small metadata
    local = slice(group.rank * E // group.size, (group.rank + 1) * E // group.size)
    received = sum(sum(c[local]) for q, c in enumerate(every) if q != group.rank)
    formula = {"ep.counts": (group.size - 1) * (E // group.size) * 8,       # (ep-1) E/ep ints
               "ep.dispatch": dropless_bytes(plan.counts, group.rank, group.size, h, 8),
               "ep.combine": received * h * 8}       # combine sends back what dispatch brought
    return diff, sent, formula, [int(c) for c in plan.counts]


def bytes_table(grid, trainer, serial, spans):
    """Part 4: the last training step's all-to-alls (trace) against the formula; the dropless
    dispatch by hand."""
    cap = MOE.capacity(MOE_CONFIG.seq_len)
    b = BATCH // grid.dp_size
    want = padded_bytes(grid.ep_size, MOE.num_experts, cap, MOE_CONFIG.d_model, b, 8)
    comm.print0(text("t14.head_a2a"))
    off = 0.0
    for label in LABELS:
        sent = [s["bytes_sent"] for s in spans if s["label"] == label]
        off = max(off, max(abs(n - want) for n in sent))
        comm.print0(f"{label:<22}{len(sent):>6}{sent[0]:>20,d}{want:>9,d}")
    comm.print0(text("t14.bytes_padded", off=worst(grid.world, off), ep=grid.ep_size,
                     local=MOE.num_experts // grid.ep_size, cap=cap, h=MOE_CONFIG.d_model,
                     b=b, want=want))
    diff, sent, formula, counts = dropless_by_hand(grid, trainer, serial)
    comm.print0(text("t14.by_hand", tokens=2 * MOE_CONFIG.seq_len, diff=worst(grid.world, diff)))
    off = max(abs(sent.get(label, 0) - n) for label, n in formula.items())
    comm.print0(text("t14.bytes_dropless", counts=counts, sent=sent["ep.dispatch"],
                     want=formula["ep.dispatch"], off=worst(grid.world, off)))


def dimension_table(grid, trainer, spans):
    """Part 4, per dimension: the last step's bytes by group (trace.comm_by_dimension) beside
    the formulas: the all-to-alls over ep, the dense gradients and the loss over dp x cp
    (here dp: cp = 1), the expert gradients over edp (a ring all-reduce: 2(n-1)/n x bytes)."""
    by = trace.comm_by_dimension(spans)
    named = list(trainer.named_parameters())
    dense = sum(p.size for n, p in named if not is_expert(n))
    experts = sum(p.size for n, p in named if is_expert(n))
    cap, b = MOE.capacity(MOE_CONFIG.seq_len), BATCH // grid.dp_size
    each = padded_bytes(grid.ep_size, MOE.num_experts, cap, MOE_CONFIG.d_model, b, 8)
    blocks = len(moe_layers(trainer.stage))
    ring = lambda n, size: trace.bytes_moved("all_reduce", n, size)[0]   # noqa: E731
    rows = [("ep", by["ep"], len(LABELS) * blocks * each,
             text("t14.how_ep", calls=len(LABELS), blocks=blocks, each=each)),
            ("dp x cp", by["dp"] + by["dp_cp"],
             ring(8 * dense, grid.dp_cp.size) + ring(8, grid.dp_cp.size),
             text("t14.how_dp_cp", dense=dense, n=grid.dp_cp.size)),
            ("edp", by["edp"], ring(8 * experts, grid.edp.size),
             text("t14.how_edp", experts=experts, n=grid.edp.size)),
            ("cp, tp, pp", by["cp"] + by["tp"] + by["pp"], 0, text("t14.dim_none"))]
    comm.print0(text("t14.by_dimension"))
    comm.print0(text("t14.dim_head"))
    for name, got, want, how in rows:
        comm.print0(f"{name:<12}{got:>14,d}{want:>10,d}  {how}")
    off = max(abs(got - want) for _, got, want, _ in rows)
    comm.print0(text("t14.by_dimension_off", off=worst(grid.world, off)))


def memory_table(grid, trainer, spans):
    """Part 5: what this rank holds in the tutorial's run (its parameters, the payload of the
    last step's dispatch from the trace), beside tools/memory_moe.py."""
    named = list(trainer.named_parameters())
    measured = {"experts": sum(p.size for n, p in named if is_expert(n)),
                "dense": sum(p.size for n, p in named if not is_expert(n))}
    predicted = moe_rank_params(MOE_CONFIG, MOE.num_experts, MOE.every, grid.ep_size)
    buffers = [s["nbytes"] for s in spans if s["label"] == "ep.dispatch"]
    buffer = dispatch_buffer_bytes(MOE_CONFIG, MOE.num_experts, MOE.top_k,
                                   MOE.capacity_factor, BATCH // grid.dp_size, "float64")
    comm.print0(text("t14.head_memory"))
    for key, name in (("experts", "t14.expert_params"), ("dense", "t14.dense_params")):
        comm.print0(f"{fit(text(name), 26, '<')}{measured[key]:>10,d}{predicted[key]:>12,d}")
    comm.print0(f"{fit(text('t14.dispatch_buffer'), 26, '<')}{buffers[0]:>10,d}{buffer:>12,d}")
    off = max([abs(measured[k] - predicted[k]) for k in measured] +
              [abs(n - buffer) for n in buffers])
    comm.print0(text("t14.memory", off=worst(grid.world, off), dp=grid.dp_size,
                     ep=grid.ep_size))


def spread(model):
    """Each MoE block's load this step, busiest expert / mean, averaged over the blocks."""
    return float(np.mean([(lambda load: load.max() / load.mean())(to_numpy(
        layer.last_plan.load(MOE.num_experts))) for layer in moe_layers(model)]))


def balancing(grid):
    """Part 6: the expert bias trained on the grid beside one process (losses and biases),
    then one process three ways (ranks 0, 1, 2, one way each; rank 0 prints): no balancing,
    the aux loss, the expert bias."""
    dropless = dataclasses.replace(MOE, capacity_factor=None)
    runs = {"none": dataclasses.replace(dropless, aux_loss_coeff=0.0), "aux": dropless,
            "bias": dataclasses.replace(dropless, aux_loss_coeff=0.0, bias_update_rate=GAMMA)}
    trainer = MoETrainer(MOE_CONFIG, runs["bias"], grid, optimizer_fn=make_optimizer)
    serial = MoEGPT(MOE_CONFIG, runs["bias"])
    opt, off = make_optimizer(serial.parameters()), 0.0
    for step in range(GRID_STEPS):
        x, y = batch(MOE_CONFIG, BALANCE_BATCH, step)
        loss = trainer.train_step(x, y)        # loads summed over dp x cp, biases nudged
        opt.zero_grad()
        serial_loss = serial.loss(x, y)
        serial_loss.backward()
        balance_experts(serial)                # one process's bias update
        opt.step()
        off = max([off, abs(loss - serial_loss.item())] + [
            max_diff(mine.expert_bias, theirs.expert_bias)
            for mine, theirs in zip(moe_layers(trainer.stage), moe_layers(serial))])
    comm.print0(text("t14.balance_check", steps=GRID_STEPS, off=worst(grid.world, off)))
    names = list(runs)                              # one process three ways: ranks 0, 1, 2
    mine = names[grid.world.rank] if grid.world.rank < len(names) else None
    spreads = comm.gather_object(three_ways(runs[mine]) if mine else None, grid.world)
    if grid.world.rank == 0:
        print(text("t14.head_balance"))
        for step in range(4, BALANCE_STEPS, 5):
            print(f"{step:>4}" + "".join(f"{spreads[i][0][step]:>12.2f}"
                                         for i in range(len(names))) + "   "
                  + " ".join(f"{b:+.3f}" for b in spreads[2][1][step]))
        late = [float(np.mean(spreads[i][0][BALANCE_STEPS // 2:])) for i in range(len(names))]
        print(text("t14.balance", steps=BALANCE_STEPS - BALANCE_STEPS // 2, gamma=GAMMA,
                   none=late[0], aux=late[1], bias=late[2]))


def three_ways(moe):
    """One process, one way of balancing, the part's batches: (spread per step, block 0's
    biases per step)."""
    model = MoEGPT(MOE_CONFIG, moe)
    opt = make_optimizer(model.parameters())
    spreads, biases = [], []
    for step in range(BALANCE_STEPS):
        x, y = batch(MOE_CONFIG, BALANCE_BATCH, step)
        opt.zero_grad()
        model.loss(x, y).backward()
        balance_experts(model)                 # only the bias run has a bias to move
        opt.step()
        spreads.append(spread(model))
        bias = moe_layers(model)[0].expert_bias
        biases.append([0.0] * MOE.num_experts if bias is None else to_numpy(bias).tolist())
    return spreads, biases


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=4)
    parser.add_argument("--out", default="out", help="folder for the picture")
    opts = parser.parse_args()
    language()                  # an unknown MINIMEGATRON_LANG: one line, before any collective
    world = comm.world()
    grid = ProcessGrid(dp=world.size, ep=EP)           # the same ValueError on every rank
    local, cap = MOE.num_experts // grid.ep_size, MOE.capacity(MOE_CONFIG.seq_len)
    layers = sum(MOE.is_moe_layer(i) for i in range(MOE_CONFIG.n_layer))
    padded = layers * local * grid.ep_size * (BATCH // grid.dp_size) * cap
    uniform = layers * MOE.top_k * BATCH * MOE_CONFIG.seq_len / MOE.num_experts
    comm.print0(text("t14.part1", experts=MOE.num_experts, k=MOE.top_k, dp=grid.dp_size,
                     ep=grid.ep_size, steps=opts.steps, batch=BATCH, cap=cap,
                     uniform=uniform, padded=padded))
    serial, trainer, loads, rows, spans = train(grid, opts.steps)
    if world.rank == 0:
        try:
            os.makedirs(opts.out, exist_ok=True)
            with open(os.path.join(opts.out, "14_mixture_of_experts.json"), "w") as f:
                json.dump({"loads": loads, "rows": rows, "uniform": uniform, "padded": padded},
                          f, default=int)      # the picture's numbers (docs/make_figures.py)
            path = draw_moe_load(loads, rows, uniform, padded,
                                 os.path.join(opts.out, "14_mixture_of_experts.png"))
            print(text("t14.picture", path=path))
        except ImportError as err:      # no matplotlib: the numbers still come, one line says why
            print(err)
    comm.print0(text("t14.part2", shown=SHOWN))
    show_choices(grid, trainer, serial, opts.steps - 1)
    comm.print0(text("t14.part3"))
    drops(serial)
    comm.print0(text("t14.part4"))
    bytes_table(grid, trainer, serial, spans)
    dimension_table(grid, trainer, spans)
    comm.print0(text("t14.part5"))
    memory_table(grid, trainer, spans)
    comm.print0(text("t14.part6", gamma=GAMMA))
    balancing(grid)


if __name__ == "__main__":
    run(main, "tutorials/14_mixture_of_experts.py")
