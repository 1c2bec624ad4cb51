"""Tutorial 0: autodiff by hand, then a tiny GPT trained on one process.

    python tutorials/00_autodiff_and_gpt.py [--steps 300]

Part 1 checks one gradient against the chain rule written out by hand.
Part 2 trains a 2-layer GPT on the repeat task (datasets.py): each sequence is
a random 4-token pattern repeated, so after 4 tokens the next one is known.
The loss starts near log(10) = 2.30 and falls toward the floor 3/16 log 10 = 0.43
(the first tokens of a pattern cannot be predicted). Tutorials 05 and 06
train this same model data-parallel and print the same losses; the others
train their own small GPTs, each next to one process.
MINIMEGATRON_LANG=ko prints the explanations in Korean (minimegatron.i18n).
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# ^ import the minimegatron beside tutorials/ (a student copy's own), not another install

import math

import minimegatron as mm
from minimegatron import nn, optim
from minimegatron.data.datasets import repeat_task
from minimegatron.commands.entry import ArgumentParser, run
from minimegatron.i18n import language, text
from minimegatron.runtime.rank_setup import rank_from_env, world_size_from_env


def autodiff_by_hand():
    print(text("t00.part1"))
    x = mm.Tensor(mm.xp.asarray([[1.0, 2.0], [3.0, 4.0]]))
    w = mm.Tensor(mm.xp.asarray([[0.1], [-0.2]]), requires_grad=True)
    (x @ w).tanh().sum().backward()
    by_hand = x.data.T @ (1 - mm.xp.tanh(x.data @ w.data) ** 2)
    print(text("t00.compare", autodiff=mm.to_numpy(w.grad).ravel(),
               hand=mm.to_numpy(by_hand).ravel()))


def train(steps, lr=3e-3):
    cfg = nn.GPTConfig(vocab_size=10, seq_len=16, n_layer=2, n_head=2, d_model=32, seed=0)
    model = nn.GPT(cfg)
    opt = optim.AdamW(model.parameters(), lr=lr, weight_decay=0.0)
    print(text("t00.part2", params=model.num_parameters(), steps=steps))
    print(text("t00.start", start=math.log(10), floor=3 / 16 * math.log(10)))
    for step in range(steps):
        x, y = repeat_task(16, cfg.seq_len, cfg.vocab_size, seed=0, step=step)
        loss = model.loss(x, y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 20 == 0 or step == steps - 1:
            bar = "#" * int(loss.item() * 20)
            print(text("t00.step", step=step, loss=loss.item(), bar=bar))
    return loss.item()


def main():
    parser = ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=300)
    args = parser.parse_args()
    language()                  # an unknown MINIMEGATRON_LANG: one line
    if rank_from_env() != 0:        # started on N ranks: this lesson is one process
        return
    if world_size_from_env() > 1:
        print(text("t00.mpi_note", n=world_size_from_env()))
    autodiff_by_hand()
    train(args.steps)


if __name__ == "__main__":
    run(main, "tutorials/00_autodiff_and_gpt.py")
