"""Sampling on real ranks: every grid of the world writes the serial model's tokens.

``check_all()`` (via tests/mpi_harness.run_mpi, 4 ranks) builds the serial GPT,
gives it scrambled weights (sharp logits, so a wrong logit moves a token), loads
the same weights into each grid's shards (shards.shard_of) and samples from
every grid: tensor parallel alone (ParallelGPT.generate on a tp group that is a
strict subset of the world), and Trainer3D.generate on dp x pp x tp grids.
"""
import numpy as np

from minimegatron.backend import asarray, host_rng, to_numpy
from minimegatron.nn import GPT, GPTConfig
from minimegatron.parallel.grid import ProcessGrid
from minimegatron.parallel.tensor_parallel import ParallelGPT, shard_of
from minimegatron.parallel.threed import Trainer3D
from minimegatron.data.demo import make_optimizer

# vocab 13: padded to 14 on tp 2 and 16 on tp 4; seq_len 6 < prompt + new: the window slides
CONFIG = GPTConfig(vocab_size=13, seq_len=6, n_layer=4, n_head=4, d_model=16, seed=0)
PROMPT = np.array([[1, 2, 3], [7, 0, 12]])                           # (B=2, T=3)
SAMPLING = {"max_new_tokens": 10, "temperature": 0.9, "top_k": 8, "seed": 5}
GRIDS = [(1, 1, 4), (1, 4, 1), (2, 1, 2), (1, 2, 2), (2, 2, 1), (4, 1, 1)]


def scrambled():
    """A serial GPT whose every weight is N(0, 0.5^2), the same on every rank."""
    model = GPT(CONFIG)
    for name, p in model.named_parameters():
        p.data[...] = asarray(0.5 * host_rng(11, name).standard_normal(p.shape))
    return model


def load(named, full, tp_rank, tp_size):
    for name, p in named:
        p.data[...] = shard_of(name, full[name], tp_rank, tp_size)


def _error(fn):
    try:
        fn()
    except ValueError as err:
        return str(err)
    return None


def check_all():
    serial = scrambled()
    full = {name: p.data for name, p in serial.named_parameters()}
    want = serial.generate(PROMPT, **SAMPLING)
    out = {"serial": want.tolist(), "other_seed": serial.generate(
        PROMPT, **dict(SAMPLING, seed=6)).tolist(), "grids": {}}
    grid = ProcessGrid(2, 1, 2)                                       # tp group [0,1] or [2,3]
    tp_model = ParallelGPT(CONFIG, grid.tp)
    load(tp_model.named_parameters(), full, grid.tp_rank, 2)
    x = asarray(PROMPT)
    out["tp_logits_diff"] = float(np.abs(to_numpy(
        tp_model.last_logits(tp_model.blocks[0](tp_model.embed(x))) -
        serial.last_logits(serial.blocks[0](serial.embed(x))))).max())
    out["grids"]["tp2 ParallelGPT"] = tp_model.generate(PROMPT, **SAMPLING).tolist()
    trainers = {}
    for dims in GRIDS:
        grid = ProcessGrid(*dims)
        trainers[dims] = trainer = Trainer3D(CONFIG, grid, optimizer_fn=make_optimizer)
        load(trainer.named_parameters(), full, grid.tp_rank, grid.tp_size)
        out["grids"]["x".join(map(str, dims))] = trainer.generate(PROMPT, **SAMPLING).tolist()
    trainer = trainers[(1, 2, 2)]                                      # errors on pp 2 x tp 2
    out["errors"] = {"top_k": _error(lambda: trainer.generate(PROMPT, 3, top_k=0)),
                     "vocab": _error(lambda: trainer.generate(PROMPT + 10, 3)),
                     "temperature": _error(lambda: trainer.generate(PROMPT, 3, temperature=0))}
    sp = Trainer3D(CONFIG, ProcessGrid(1, 2, 2), sequence_parallel=True,
                   optimizer_fn=make_optimizer)
    chunked = Trainer3D(CONFIG, ProcessGrid(1, 2, 2), schedule="interleaved", chunks=2,
                        micro_batches=2, optimizer_fn=make_optimizer)
    out["errors"]["sequence_parallel"] = _error(lambda: sp.generate(PROMPT, 3))
    out["errors"]["interleaved"] = _error(lambda: chunked.generate(PROMPT, 3))
    out["after_errors"] = trainer.generate(PROMPT, **SAMPLING).tolist()   # no rank left behind
    return out
