"""Tutorial 0: autodiff by hand, then a tiny GPT trained on one process.

    python tutorials/00_autodiff_and_gpt.py [--steps 300]

Part 1 checks one gradient against the chain rule written out by hand.
Part 2 trains a 2-layer GPT on the repeat task (datasets.py): each sequence is
a random 4-token pattern repeated, so after 4 tokens the next one is known.
The loss starts near log(10) = 2.30 and falls toward the floor 3/16 log 10 = 0.43
(the first tokens of a pattern cannot be predicted). Every parallel tutorial
that follows trains this same model and must print the same losses.
"""
import argparse
import math

import minimegatron as mm
from minimegatron import nn, optim
from minimegatron.datasets import repeat_task


def autodiff_by_hand():
    print("Part 1: y = sum(tanh(x @ w)); dy/dw = x^T (1 - tanh^2(x @ w))")
    x = mm.Tensor(mm.xp.asarray([[1.0, 2.0], [3.0, 4.0]]))
    w = mm.Tensor(mm.xp.asarray([[0.1], [-0.2]]), requires_grad=True)
    (x @ w).tanh().sum().backward()
    by_hand = x.data.T @ (1 - mm.xp.tanh(x.data @ w.data) ** 2)
    print("  autodiff:", mm.to_numpy(w.grad).ravel(), " by hand:", mm.to_numpy(by_hand).ravel())


def train(steps, lr=3e-3):
    cfg = nn.GPTConfig(vocab_size=10, seq_len=16, n_layer=2, n_head=2, d_model=32, seed=0)
    model = nn.GPT(cfg)
    opt = optim.AdamW(model.parameters(), lr=lr, weight_decay=0.0)
    print(f"\nPart 2: GPT with {model.num_parameters():,} parameters, {steps} AdamW steps")
    print(f"  start near log(10) = {math.log(10):.2f}; floor 3/16 log(10) = "
          f"{3 / 16 * math.log(10):.2f}")
    for step in range(steps):
        x, y = repeat_task(16, cfg.seq_len, cfg.vocab_size, seed=0, step=step)
        loss = model.loss(x, y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 20 == 0 or step == steps - 1:
            bar = "#" * int(loss.item() * 20)
            print(f"  step {step:4d}  loss {loss.item():.4f}  {bar}")
    return loss.item()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=300)
    args = parser.parse_args()
    autodiff_by_hand()
    train(args.steps)
