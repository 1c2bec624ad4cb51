"""Runs on 1 rank (tests/test_sample.py): save a GPT that was never trained on text."""
from minimegatron.data.demo import DEMO_CONFIG, make_optimizer
from minimegatron.parallel.grid import ProcessGrid
from minimegatron.parallel.threed import Trainer3D
from minimegatron.tools.checkpoint import save_checkpoint


def save_repeat_task_model(path):
    """The demo GPT of the repeat task (vocabulary 24, not the corpus's 36), saved at path."""
    grid = ProcessGrid(1, 1, 1)
    trainer = Trainer3D(DEMO_CONFIG, grid, optimizer_fn=make_optimizer)
    save_checkpoint(trainer, trainer.optimizer, path, grid)
    return DEMO_CONFIG.vocab_size
