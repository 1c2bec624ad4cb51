"""Runs on every rank (tests/test_checkpoint.py): save on one grid, resume on others.

``check_all(directory)`` trains a 2x2x2 Trainer3D for 2 steps, saves, then for
each other grid (1x1x1, 1x2x4, 8x1x1; a grid smaller than the world runs on
sub-communicators, so every rank takes part) loads the file and trains 2 more
steps. Returns the max |loss diff| and |weight diff| against an uninterrupted
serial run of 4 steps, and what every rank saw for corrupt, truncated and
mismatched files and for a save that fails half-way.
"""
import dataclasses
import hashlib
import json
import os
import tempfile

import numpy as np

from minimegatron import comm
from minimegatron.checks.common import serial_reference
from minimegatron.data.demo import VERIFY_CONFIG, batch, make_optimizer
from minimegatron.nn import GPT
from minimegatron.optim import SGD
from minimegatron.parallel.data_parallel import Zero3
from minimegatron.parallel.grid import ProcessGrid
from minimegatron.parallel.tensor_parallel import shard_of
from minimegatron.parallel.threed import Trainer3D
from minimegatron.tools import checkpoint_format
from minimegatron.tools.checkpoint import (CheckpointError, load_checkpoint, read_checkpoint,
                                           save_checkpoint)

CONFIG, BATCH = VERIFY_CONFIG, 8


def sub_grid(dims):
    """A ProcessGrid of dp*pp*tp ranks; the world is split into world/size copies of it."""
    world, size = comm.world(), int(np.prod(dims))
    sub = world.split(color=world.rank // size)
    return ProcessGrid(*dims, comm=sub.comm)


def weight_diff(trainer, weights):
    grid = trainer.grid
    return max(float(np.abs(p.data - shard_of(n, weights[n], grid.tp_rank, grid.tp_size)).max())
               for n, p in trainer.named_parameters())


def sha(path):
    return hashlib.sha256(open(path, "rb").read()).hexdigest() if os.path.exists(path) else ""


def rejected(fn):
    """The CheckpointError message on this rank ("" if nothing was raised)."""
    try:
        fn()
    except CheckpointError as err:
        return str(err)
    return ""


def check_all(directory):
    path = os.path.join(directory, "ckpt.npz")
    ref = serial_reference(CONFIG, steps=4, batch_size=BATCH)
    out = {}
    grid = ProcessGrid(2, 2, 2)
    trainer = Trainer3D(CONFIG, grid, "1f1b", micro_batches=2, optimizer_fn=make_optimizer)
    losses = [trainer.train_step(*batch(CONFIG, BATCH, s)) for s in range(2)]
    save_checkpoint(trainer, trainer.optimizer, path, grid, rng_state={"next_step": 2})
    out["saved_step_loss"] = max(abs(a - b) for a, b in zip(losses, ref["loss"]))
    for dims, schedule, m in (((1, 1, 1), "naive", 1), ((1, 2, 4), "gpipe", 4),
                              ((8, 1, 1), "1f1b", 1)):
        g = sub_grid(dims)
        resumed = Trainer3D(CONFIG, g, schedule, micro_batches=m, optimizer_fn=make_optimizer)
        meta = load_checkpoint(resumed, resumed.optimizer, path, g)
        start = meta["rng"]["user"]["next_step"]
        more = [resumed.train_step(*batch(CONFIG, BATCH, s)) for s in range(start, start + 2)]
        key = "x".join(map(str, dims))
        out[f"loss_{key}"] = max(abs(a - b) for a, b in zip(losses + more, ref["loss"]))
        out[f"weight_{key}"] = weight_diff(resumed, ref["weights"][3])
        out[f"step_{key}"] = [meta["step"], resumed.optimizer.step_count]
    out.update(check_bad_files(directory, path, grid, trainer))
    return out


def rewrite(source, target, edit):
    """Rank 0: ``target`` = ``source`` with ``edit(arrays, meta)`` applied (a valid .npz)."""
    arrays, meta = read_checkpoint(source)
    edit(arrays, meta)
    np.savez(target, meta=np.array(json.dumps(meta)), **arrays)


def fix_crc(arrays, meta, key):
    meta["arrays"][key]["crc32"] = checkpoint_format.crc32(arrays[key])


def edits():
    """{case: edit} of files that are valid zips but must be refused before any weight moves."""
    def edited(a, m):                      # the array no longer fits its crc32
        a["param/head.weight"] = a["param/head.weight"] + 1e-3

    def bad_meta(a, m):                    # the old loader set every weight, then failed here
        m["optimizer"]["step_count"] = "two"

    def bad_dropout(a, m):
        m["rng"]["dropout"][sorted(m["rng"]["dropout"])[0]] = {"bit_generator": "PCG64"}

    def nan(a, m):
        a["param/blocks.3.mlp.fc1.bias"][5] = np.nan
        fix_crc(a, m, "param/blocks.3.mlp.fc1.bias")

    def shape_lie(a, m):                   # a listing that would allocate 8 TB if believed
        m["arrays"]["param/head.weight"]["shape"] = [10**6, 10**6]
    return {"edited": edited, "bad_meta": bad_meta, "bad_dropout": bad_dropout, "nan": nan,
            "shape_lie": shape_lie}


def check_stale_temps(directory, path, grid, trainer):
    """A save removes temp files a killed save of the same target left, and only those."""
    names = {}
    if comm.world().rank == 0:
        fd, stale = tempfile.mkstemp(prefix=".ckpt.npz.", suffix=".tmp", dir=directory)
        os.write(fd, b"PK\x03\x04 what a SIGKILL left")
        os.close(fd)
        other = os.path.join(directory, ".other.npz.abcd1234.tmp")
        open(other, "wb").write(b"another target's save")
        names = {"stale": os.path.basename(stale), "other": os.path.basename(other)}
    save_checkpoint(trainer, trainer.optimizer, path, grid, rng_state={"next_step": 2})
    names = comm.bcast_object(names, comm.world(), root=0)
    left = set(os.listdir(directory))
    comm.barrier(comm.world())
    if comm.world().rank == 0:
        os.remove(os.path.join(directory, names["other"]))
    comm.barrier(comm.world())
    return {"stale_removed": names["stale"] not in left, "other_kept": names["other"] in left}


def check_bad_files(directory, path, grid, trainer):
    """Corrupt, truncated, mismatched, ZeRO-3 and half-written checkpoints."""
    out = check_stale_temps(directory, path, grid, trainer)
    good = sha(path)
    corrupt, short = os.path.join(directory, "corrupt.npz"), os.path.join(directory, "short.npz")
    if comm.world().rank == 0:
        data = bytearray(open(path, "rb").read())
        middle = len(data) // 2
        data[middle:middle + 16] = bytes(b ^ 0xFF for b in data[middle:middle + 16])
        open(corrupt, "wb").write(bytes(data))
        open(short, "wb").write(bytes(data[:len(data) // 3]))
        for case, edit in edits().items():
            rewrite(path, os.path.join(directory, f"{case}.npz"), edit)
    comm.barrier(comm.world())
    before = trainer.stage.state_dict()
    for case in edits():
        out[case] = rejected(lambda: load_checkpoint(
            trainer, trainer.optimizer, os.path.join(directory, f"{case}.npz"), grid))
    out["corrupt"] = rejected(lambda: load_checkpoint(trainer, trainer.optimizer, corrupt, grid))
    out["truncated"] = rejected(lambda: load_checkpoint(trainer, trainer.optimizer, short, grid))
    out["missing"] = rejected(lambda: load_checkpoint(
        trainer, trainer.optimizer, os.path.join(directory, "nope.npz"), grid))
    out["empty_load"] = rejected(lambda: load_checkpoint(trainer, trainer.optimizer, "", grid))
    after = trainer.stage.state_dict()
    out["model_untouched"] = max(float(np.abs(before[k] - after[k]).max()) for k in before)

    other = dataclasses.replace(CONFIG, seed=1)
    mismatched = Trainer3D(other, grid, "1f1b", micro_batches=2, optimizer_fn=make_optimizer)
    out["mismatch"] = rejected(lambda: load_checkpoint(mismatched, mismatched.optimizer,
                                                       path, grid))
    serial, dp8 = GPT(CONFIG), ProcessGrid(8, 1, 1)    # the right model, SGD instead of AdamW
    out["wrong_optimizer"] = rejected(lambda: load_checkpoint(
        serial, SGD(serial.parameters(), lr=0.1), path, dp8))
    serial.wte.weight.data[3, 4] = np.inf
    out["nan_save"] = rejected(lambda: save_checkpoint(serial, SGD(serial.parameters()), path,
                                                       dp8))
    out["empty_save"] = rejected(lambda: save_checkpoint(trainer, trainer.optimizer, "", grid))

    model = GPT(CONFIG)
    zero3 = Zero3(model, comm.world(), make_optimizer(model.parameters()))
    out["zero"] = rejected(lambda: save_checkpoint(model, zero3, path, dp8))

    real_write = np.lib.format.write_array

    def broken_write(f, array, **kw):    # writes part of an entry, then the disk "fills up"
        f.write(b"\x93NUMPY half an array")
        raise OSError(28, "No space left on device")
    np.lib.format.write_array = broken_write
    try:
        out["failed_save"] = rejected(lambda: save_checkpoint(trainer, trainer.optimizer, path,
                                                              grid))
    finally:
        np.lib.format.write_array = real_write
    comm.barrier(comm.world())
    out["old_file_kept"] = sha(path) == good and sha(path) != ""
    out["temp_files_left"] = sorted(f for f in os.listdir(directory) if f.endswith(".tmp"))
    out["still_loads"] = rejected(lambda: load_checkpoint(trainer, trainer.optimizer, path, grid))
    return out


def check_serial(directory):
    """One process, no MPI grid beyond itself: save, load into a fresh GPT, continue."""
    path = os.path.join(directory, "serial.npz")
    ref = serial_reference(CONFIG, steps=4, batch_size=BATCH)
    grid = sub_grid((1, 1, 1))
    losses, model = [], GPT(CONFIG)
    opt = make_optimizer(model.parameters())
    for step in range(4):
        if step == 2:
            if comm.world().rank == 0:
                save_checkpoint(model, opt, path, grid)
            comm.barrier(comm.world())
            model = GPT(CONFIG)
            opt = make_optimizer(model.parameters())
            load_checkpoint(model, opt, path, grid)
        x, y = batch(CONFIG, BATCH, step)
        loss = model.loss(x, y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return {"loss": max(abs(a - b) for a, b in zip(losses, ref["loss"]))}
