"""Runs on every rank (tests/test_checkpoint.py): damaged checkpoints must fail as one.

``fuzz(directory, cases, seed)`` trains a tiny GPT on a 1x1x2 grid (tp=2, so
each rank holds other slices) for one AdamW step and saves it. First a zip
bomb: the small file with one entry replaced by a deflated 48 MB array. Then
``cases`` times, rank 0 writes a damaged copy (bytes flipped, biased towards
the zip headers and directory, a run of 0xff over a header field, or a
truncation), every rank fills its weights, optimizer state, step count and
dropout streams with a sentinel, and every rank loads the copy. Each case
must end, on every rank, in exactly one of:

- CheckpointError (the test checks the message is the same on every rank), and
  everything still equal to the sentinel: nothing was touched;
- a clean load (the damage hit a byte nothing reads, e.g. a zip timestamp), and
  everything exactly equal to what was saved.

Any other exception aborts the launch (the harness then fails the test), and a
hang is killed by the harness's timeout.
"""
import io
import os
import resource
import struct
import time
import zipfile

import numpy as np

from minimegatron import comm
from minimegatron.nn import GPTConfig
from minimegatron.parallel.grid import ProcessGrid
from minimegatron.parallel.threed import Trainer3D
from minimegatron.tools.checkpoint import CheckpointError, load_checkpoint, save_checkpoint
from minimegatron.data.demo import make_optimizer

CONFIG = GPTConfig(vocab_size=10, seq_len=4, n_layer=1, n_head=2, d_model=8, dropout=0.1)
BOMB_BYTES = 48 * 2**20


def snapshot(trainer):
    """Everything a load may set on this rank: weights, optimizer state, step, dropout streams."""
    opt = trainer.optimizer
    index = {id(p): i for i, p in enumerate(opt.params)}
    arrays = {}
    for name, p in trainer.named_parameters():
        arrays[name] = p.data.copy()
        for k, v in opt.state[index[id(p)]].items():
            arrays[f"{name}/{k}"] = v.copy()
    return arrays, opt.step_count, {n: m.rng.bit_generator.state for n, m in dropouts(trainer)}


def dropouts(trainer):
    """The replicated dropout streams (a checkpoint restores these, not tp-sharded ones)."""
    return [(n, m) for n, m in trainer.stage.named_modules()
            if hasattr(m, "rng") and not getattr(m, "sharded", False)]


def fill(trainer, value):
    """Set everything ``snapshot`` reads to a sentinel derived from ``value``."""
    opt = trainer.optimizer
    for p, state in zip(opt.params, opt.state):
        p.data[...] = value
        for v in state.values():
            v[...] = -value
    opt.step_count = -int(value)
    for _, m in dropouts(trainer):
        m.rng.bit_generator.state = np.random.PCG64(int(value)).state


def same(a, b):
    return (a[0].keys() == b[0].keys() and all(np.array_equal(a[0][k], b[0][k]) for k in a[0])
            and a[1:] == b[1:])


def structure(good):
    """[(start, end)] byte ranges of zip and .npy headers and the central directory."""
    with zipfile.ZipFile(io.BytesIO(good)) as zf:
        infos, start_dir = zf.infolist(), zf.start_dir
    ranges = []
    for info in infos:
        o = info.header_offset
        name_len, extra_len = struct.unpack("<HH", good[o + 26:o + 30])
        ranges.append((o, o + 30 + name_len + extra_len + 128))    # local + .npy header
    return ranges + [(start_dir, len(good))]


def damage(good, ranges, rng):
    """(damaged bytes, what was done): a flip, a run of 0xff or a truncation."""
    data, kind = bytearray(good), rng.choice(["flip", "flip", "flip", "run", "truncate"])
    lengths = np.array([e - s for s, e in ranges], float)

    def position():
        if rng.random() < 0.3:
            return int(rng.integers(len(data)))
        start, end = ranges[rng.choice(len(ranges), p=lengths / lengths.sum())]
        return int(rng.integers(start, min(end, len(data))))
    if kind == "truncate":
        n = int(rng.integers(len(data)))
        return bytes(data[:n]), f"truncate to {n}"
    if kind == "run":
        at = position()
        data[at:at + 4] = b"\xff\xff\xff\x7f"
        return bytes(data[:len(good)]), f"0xff run at {at}"
    spots = [position() for _ in range(int(rng.integers(1, 5)))]
    for at in spots:
        data[at] ^= int(rng.integers(1, 256))
    return bytes(data), f"flip {spots}"


def write_bomb(good_path, bomb_path):
    """The good file with param/wte.weight.npy replaced by a deflated BOMB_BYTES array."""
    with zipfile.ZipFile(good_path) as good, zipfile.ZipFile(bomb_path, "w") as bomb:
        for info in good.infolist():
            if info.filename != "param/wte.weight.npy":
                bomb.writestr(info.filename, good.read(info))
                continue
            bomb.compression, bomb.compresslevel = zipfile.ZIP_DEFLATED, 1   # this entry only
            with bomb.open(info.filename, "w", force_zip64=True) as f:
                np.lib.format.write_array_header_1_0(f, {"descr": "<f8", "fortran_order": False,
                                                         "shape": (BOMB_BYTES // 8,)})
                zeros = bytes(2**20)
                for _ in range(BOMB_BYTES // len(zeros)):
                    f.write(zeros)
            bomb.compression = zipfile.ZIP_STORED


def check_bomb(directory, path, trainer, grid):
    """Every rank refuses the bomb; rank 0's peak memory and time stay small."""
    bomb = os.path.join(directory, "bomb.npz")
    if comm.world().rank == 0:
        write_bomb(path, bomb)
    comm.barrier(comm.world())
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss          # KiB on Linux
    start = time.perf_counter()
    try:
        load_checkpoint(trainer, trainer.optimizer, bomb, grid)
        error = ""
    except CheckpointError as err:
        error = str(err)
    return {"bomb_error": error, "bomb_s": time.perf_counter() - start,
            "bomb_file_mb": os.path.getsize(bomb) / 2**20,
            "bomb_rss_growth_mb": (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - peak)
            / 1024}


def fuzz(directory, cases, seed):
    grid, rank = ProcessGrid(1, 1, 2), comm.world().rank
    trainer = Trainer3D(CONFIG, grid, "naive", micro_batches=1, optimizer_fn=make_optimizer)
    x = np.arange(8).reshape(2, 4) % CONFIG.vocab_size
    trainer.train_step(x, (x + 1) % CONFIG.vocab_size)
    path, bad = os.path.join(directory, "small.npz"), os.path.join(directory, "bad.npz")
    save_checkpoint(trainer, trainer.optimizer, path, grid, rng_state={"next": 1})
    saved, saved_meta = snapshot(trainer), load_checkpoint(trainer, trainer.optimizer, path, grid)
    out = check_bomb(directory, path, trainer, grid)
    good = open(path, "rb").read()
    ranges, rng = structure(good), np.random.default_rng(seed)
    outcomes, loaded, wrong, slowest = [], [], [], 0.0
    start = time.perf_counter()
    for case in range(cases):
        if rank == 0:
            data, what = damage(good, ranges, rng)
            open(bad, "wb").write(data)
        fill(trainer, case + 0.5)
        sentinel = snapshot(trainer)
        t = time.perf_counter()
        try:
            meta = load_checkpoint(trainer, trainer.optimizer, bad, grid)
            outcomes.append("ok")
            ok = same(snapshot(trainer), saved) and meta == saved_meta
            if rank == 0:
                loaded.append(what)
        except CheckpointError as err:
            outcomes.append(f"error: {err}")
            ok = same(snapshot(trainer), sentinel)
        slowest = max(slowest, time.perf_counter() - t)
        if not ok:
            wrong.append(case)
    out.update({"outcomes": outcomes, "loaded": loaded, "wrong": wrong, "slowest_s": slowest,
                "fuzz_s": time.perf_counter() - start, "file_bytes": len(good)})
    return out
