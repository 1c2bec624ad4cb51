"""The shared demo setup: model sizes, the optimizer and the data every run uses.

Tutorials, benchmarks, ``Trainer3D`` and the checks all train the same tiny
GPTs on the same ``repeat_task`` batches with the same AdamW, so a parallel
run and one process start equal and can be compared step by step.
"""
from minimegatron.data.datasets import repeat_task
from minimegatron.nn import GPTConfig
from minimegatron.optim import AdamW

# Divisible by every tp in 1..8 (heads, d_model, ffn, vocab) and pp in 1..8 (layers).
VERIFY_CONFIG = GPTConfig(vocab_size=24, seq_len=8, n_layer=8, n_head=8, d_model=32, seed=0)
SMALL_CONFIG = GPTConfig(vocab_size=16, seq_len=8, n_layer=2, n_head=4, d_model=16, seed=0)
# Context parallelism: 16 tokens, so the zigzag split (2 cp chunks) reaches cp = 8.
CONTEXT_CONFIG = GPTConfig(vocab_size=16, seq_len=16, n_layer=2, n_head=4, d_model=16, seed=0)
# The demo GPT of tutorials/08_3d_parallel.py: every tp in 1, 2, 4 and pp in 1, 2, 4.
DEMO_CONFIG = GPTConfig(vocab_size=24, seq_len=8, n_layer=4, n_head=4, d_model=32, seed=0)
LR, WEIGHT_DECAY = 1e-2, 0.01


def make_optimizer(params):
    """The optimizer every run uses, serial and parallel alike."""
    return AdamW(params, lr=LR, weight_decay=WEIGHT_DECAY)


def batch(config, batch_size, step):
    """The mini-batch of a step: (inputs, targets), each (batch_size, seq_len)."""
    return repeat_task(batch_size, config.seq_len, config.vocab_size, seed=config.seed,
                       step=step)
