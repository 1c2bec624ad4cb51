"""Checkpoints: save ONE full (serial-named) file from any grid, load it onto any other grid.

The idea. Every parallel form of the GPT keeps the serial parameter names
(shards.py says which slice of ``blocks.3.mlp.fc1.weight`` a tp rank holds; a
pipeline stage owns whole names). So a checkpoint can be the *serial* model:
gather the shards into full arrays when saving, slice them again when
loading, and the grid of the loading job need not be the grid that saved.

Saving, on a dp x pp x tp grid (every rank of ``grid.world`` calls it)::

    1. dp rank 0 of each tp group: gather(flat shards, grid.tp) -> tp rank 0    (Igatherv)
       tp rank 0 unshards them (shards.unshard): the full arrays of its stage
    2. dp rank 0, tp rank 0 of each stage: gather(flat stage, grid.pp) -> rank 0 (Igatherv)
    3. rank 0 writes the file atomically; its verdict is broadcast (bcast_object)

    bytes: each tp group sends its stage's parameters + optimizer state
    (3 x params for AdamW) once; rank 0 receives the whole model once.

Loading: rank 0 reads and validates the file (checksums, config, every rank's
names and shard shapes, gathered with gather_object) and broadcasts the
verdict, so a truncated, corrupt or mismatched file raises the SAME ValueError
on every rank before any array moves. Then rank 0 cuts every rank's slice
(shards.shard_of for its tp rank, only its stage's names) and sends it (Isend
/ Irecv, one flat buffer per rank).

File format (``numpy.savez``, see docs/checkpoints.md)::

    param/<name>           full weight, serial name and shape
    optim/<name>/<key>     optimizer state of that weight (AdamW: m, v), full shape
    meta                   0-d str array: JSON {format, version, config, step,
                           optimizer, rng, arrays: {key: {shape, dtype, crc32}}}

Writes are atomic: a temporary file in the same directory, fsync, os.replace,
so a failed save never clobbers the previous checkpoint. ZeRO-partitioned
optimizer state is not supported (a clear ValueError). Usage, on every rank::

    save_checkpoint(trainer, trainer.optimizer, "ckpt.npz", grid, rng_state={"step": 2})
    meta = load_checkpoint(other_trainer, other_trainer.optimizer, "ckpt.npz", other_grid)

tests/test_checkpoint.py saves on 2x2x2 and resumes on 1x1x1, 1x2x4 and 8x1x1.
"""
import dataclasses
import json
import os
import tempfile
import zipfile
import zlib

import numpy as np

from minimegatron import comm
from minimegatron.backend import asarray, to_numpy
from minimegatron.optim import Optimizer
from minimegatron.parallel.data import unflatten
from minimegatron.parallel.shards import shard_of, unshard

FORMAT, VERSION = "minimegatron-checkpoint", 1


class CheckpointError(ValueError):
    """A checkpoint that cannot be written, read, or loaded onto this model."""


# --- what this rank holds -------------------------------------------------------------------

def _config_of(model, config):
    config = config if config is not None else getattr(model, "config", None)
    if config is None:
        raise CheckpointError("checkpoint: pass config=GPTConfig(...) (the model has no .config)")
    return config


def _local(model, optimizer):
    """[(name, param)] in model order and [state keys], after checking the optimizer."""
    named = list(model.named_parameters())
    if not isinstance(optimizer, Optimizer) or not hasattr(optimizer, "state"):
        raise CheckpointError(
            f"checkpoint: optimizer {type(optimizer).__name__} is not supported; only plain "
            "per-parameter optimizers (AdamW, SGD) can be saved (ZeRO-partitioned state is "
            "not supported: gather it or checkpoint without ZeRO)")
    owned = {id(p) for _, p in named}
    if any(id(p) not in owned for p in optimizer.params) or len(optimizer.params) != len(named):
        raise CheckpointError("checkpoint: the optimizer's parameters are not exactly the "
                              "model's parameters")
    keys = sorted({k for s in optimizer.state for k in s})
    return named, keys


def _state_by_name(named, optimizer):
    index = {id(p): i for i, p in enumerate(optimizer.params)}
    return {name: optimizer.state[index[id(p)]] for name, p in named}


def _arrays(named, states, keys):
    """Per name: [param, state[k] for k in keys] as host arrays (missing state: zeros)."""
    out = []
    for name, p in named:
        data = to_numpy(p.data)
        out.append([data] + [to_numpy(states[name][k]) if k in states[name]
                             else np.zeros_like(data) for k in keys])
    return out


def _flat(arrays, dtype):
    parts = [a.ravel() for group in arrays for a in group]
    return np.concatenate(parts).astype(dtype, copy=False) if parts else np.zeros(0, dtype)


def _dropouts(model):
    """[(module name, module)] of every replicated dropout stream (a trainer: its .stage)."""
    model = model if hasattr(model, "named_modules") else getattr(model, "stage", None)
    if model is None:
        return []
    return [(name, m) for name, m in model.named_modules()
            if hasattr(m, "rng") and not getattr(m, "sharded", False)]


def _slice(name, full, tp_rank, tp_size, config):
    """tp rank ``tp_rank``'s shard of a full host array (the whole array when tp_size is 1)."""
    return to_numpy(shard_of(name, asarray(full), tp_rank, tp_size, config))


def _crc(a):
    return zlib.crc32(np.ascontiguousarray(a).tobytes())


# --- save -----------------------------------------------------------------------------------

def _gather_full(model, optimizer, grid, config, keys):
    """On world rank 0: {file key: full array}; elsewhere None (gathers over tp, then pp)."""
    named, dtype = _local(model, optimizer)[0], np.dtype(config.dtype)
    if grid.dp_rank != 0:
        return None
    arrays = _arrays(named, _state_by_name(named, optimizer), keys)
    shapes = [a.shape for group in arrays for a in group]
    flat = _flat(arrays, dtype)                                       # (this rank's elements,)
    sizes = comm.allgather_object(flat.size, grid.tp)
    shards = comm.gather(flat, grid.tp, root=0, sizes=sizes)          # (sum of tp shards,)
    if grid.tp_rank != 0:
        return None
    pieces = [unflatten(chunk, shapes) for chunk in np.split(shards, np.cumsum(sizes)[:-1])]
    full, width = {}, 1 + len(keys)
    for i, (name, _) in enumerate(named):
        for j, key in enumerate(["param"] + keys):
            tp_pieces = [piece[i * width + j] for piece in pieces]
            file_key = f"param/{name}" if key == "param" else f"optim/{name}/{key}"
            full[file_key] = to_numpy(unshard(name, [asarray(t) for t in tp_pieces], config))
    names = list(full)
    stage_flat = _flat([[full[k] for k in names]], dtype)
    meta = comm.gather_object([(k, full[k].shape) for k in names], grid.pp, root=0)
    sizes = comm.allgather_object(stage_flat.size, grid.pp)
    stages = comm.gather(stage_flat, grid.pp, root=0, sizes=sizes)   # (whole model,)
    if grid.pp_rank != 0:
        return None
    result = {}
    for chunk, stage_meta in zip(np.split(stages, np.cumsum(sizes)[:-1]), meta):
        for (key, shape), arr in zip(stage_meta, unflatten(chunk, [s for _, s in stage_meta])):
            result[key] = arr
    return result


def _write_atomic(path, arrays, meta):
    """np.savez into a temp file next to ``path``, fsync, os.replace: all or nothing."""
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=f".{os.path.basename(path)}.", suffix=".tmp",
                               dir=directory)
    try:
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)                      # mkstemp makes it 0600
        with os.fdopen(fd, "wb") as f:
            np.savez(f, meta=np.array(json.dumps(meta)), **arrays)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.remove(tmp)
        raise
    dir_fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


def save_checkpoint(model, optimizer, path, grid, step=None, rng_state=None, config=None):
    """Gather the model and optimizer of a dp x pp x tp run into ONE full file (on rank 0).

    Collective over ``grid.world``. ``rng_state``: any JSON-able value the
    caller wants back (e.g. the data position); replicated dropout streams are
    saved too. Raises the same CheckpointError on every rank if rank 0 fails.
    """
    config = _config_of(model, config)
    _, keys = _local(model, optimizer)
    keys = sorted(set().union(*comm.allgather_object(keys, grid.world)))  # same on every rank
    full = _gather_full(model, optimizer, grid, config, keys)
    streams = {name: m.rng.bit_generator.state for name, m in _dropouts(model)}  # JSON-able
    streams = comm.gather_object(streams if grid.dp_rank == grid.tp_rank == 0 else {},
                                 grid.world, root=0)
    error = None
    if grid.world.rank == 0:
        try:
            dropout = {k: v for s in streams for k, v in s.items()}
            meta = {"format": FORMAT, "version": VERSION, "config": dataclasses.asdict(config),
                    "step": optimizer.step_count if step is None else step,
                    "optimizer": {"class": type(optimizer).__name__, "keys": keys,
                                  "step_count": optimizer.step_count},
                    "rng": {"user": rng_state, "dropout": dropout},
                    "grid": {"dp": grid.dp_size, "pp": grid.pp_size, "tp": grid.tp_size},
                    "arrays": {k: {"shape": list(a.shape), "dtype": str(a.dtype),
                                   "crc32": _crc(a)} for k, a in sorted(full.items())}}
            _write_atomic(path, full, meta)
        except Exception as err:  # noqa: BLE001 - reported on every rank below
            error = f"checkpoint: could not save {path!r}: {type(err).__name__}: {err}"
    error = comm.bcast_object(error, grid.world, root=0)
    if error:
        raise CheckpointError(error)


# --- read and validate (rank 0) ---------------------------------------------------------------

def read_checkpoint(path):
    """(arrays {key: full array}, meta) of a checkpoint file, checksums verified.

    Raises CheckpointError with the reason for a missing, truncated or corrupt file.
    """
    if not os.path.isfile(path):
        raise CheckpointError(f"checkpoint {path!r}: no such file")
    try:
        with np.load(path, allow_pickle=False) as npz:
            loaded = {k: npz[k] for k in npz.files}
    except (zipfile.BadZipFile, EOFError, OSError, ValueError, KeyError) as err:
        raise CheckpointError(f"checkpoint {path!r} is truncated or corrupt (cannot read it: "
                              f"{type(err).__name__}: {err})") from err
    try:
        meta = json.loads(str(loaded.pop("meta")))
    except (KeyError, ValueError) as err:
        raise CheckpointError(f"checkpoint {path!r} is corrupt: no readable 'meta' "
                              f"record") from err
    if meta.get("format") != FORMAT or meta.get("version") != VERSION:
        raise CheckpointError(f"checkpoint {path!r}: format {meta.get('format')!r} version "
                              f"{meta.get('version')!r}, expected {FORMAT!r} version {VERSION}")
    listed = meta.get("arrays", {})
    if set(listed) != set(loaded):
        raise CheckpointError(f"checkpoint {path!r} is corrupt: arrays "
                              f"{sorted(set(listed) ^ set(loaded))[:4]} are missing or unlisted")
    for key, a in loaded.items():
        info = listed[key]
        if list(a.shape) != info["shape"] or str(a.dtype) != info["dtype"] or \
                _crc(a) != info["crc32"]:
            raise CheckpointError(f"checkpoint {path!r} is corrupt: array {key!r} does not "
                                  f"match its recorded shape/dtype/crc32 checksum")
    return loaded, meta


def _validate(arrays, meta, config, optimizer_class, wanted, path):
    """Raise CheckpointError unless the file fits every rank's (name, tp_rank, tp, shape)."""
    saved, ours = meta["config"], dataclasses.asdict(config)
    differ = [f"{k}: file {saved.get(k)!r} vs model {v!r}" for k, v in ours.items()
              if saved.get(k) != v]
    if differ:
        raise CheckpointError(f"checkpoint {path!r} was saved for a different config: "
                              + "; ".join(differ))
    if meta["optimizer"]["class"] != optimizer_class:
        raise CheckpointError(f"checkpoint {path!r} holds {meta['optimizer']['class']} state, "
                              f"this run uses {optimizer_class}")
    file_names = {k[len("param/"):] for k in arrays if k.startswith("param/")}
    model_names = {name for rank_wanted in wanted for name, *_ in rank_wanted}
    if file_names != model_names:
        raise CheckpointError(f"checkpoint {path!r}: parameter names differ from the model's "
                              f"(only in file: {sorted(file_names - model_names)[:3]}, only in "
                              f"model: {sorted(model_names - file_names)[:3]})")
    for rank, rank_wanted in enumerate(wanted):
        for name, tp_rank, tp_size, shape in rank_wanted:
            full = arrays[f"param/{name}"]
            if _slice(name, full, tp_rank, tp_size, config).shape != tuple(shape):
                raise CheckpointError(f"checkpoint {path!r}: {name} is {tuple(full.shape)} in "
                                      f"the file, rank {rank} expects a shard {tuple(shape)}")


# --- load -----------------------------------------------------------------------------------

def load_checkpoint(model, optimizer, path, grid, config=None):
    """Load a full checkpoint onto this grid: each rank takes its own slice. Returns meta.

    Collective over ``grid.world``. meta["step"] and meta["rng"]["user"] give the
    caller's step and rng_state back; replicated dropout streams are restored.
    """
    config = _config_of(model, config)
    named, _ = _local(model, optimizer)
    dtype = np.dtype(config.dtype)
    mine = [(name, grid.tp_rank, grid.tp_size, tuple(p.shape)) for name, p in named]
    wanted = comm.gather_object(mine, grid.world, root=0)
    arrays = meta = error = None
    if grid.world.rank == 0:
        try:
            arrays, meta = read_checkpoint(path)
            _validate(arrays, meta, config, type(optimizer).__name__, wanted, path)
        except CheckpointError as err:
            error = str(err)
    error = comm.bcast_object(error, grid.world, root=0)     # the same verdict everywhere
    if error:
        raise CheckpointError(error)
    meta = comm.bcast_object({k: v for k, v in meta.items() if k != "arrays"}
                             if grid.world.rank == 0 else None, grid.world, root=0)
    keys = meta["optimizer"]["keys"]
    shapes = [shape for _, _, _, shape in mine for _ in range(1 + len(keys))]
    if grid.world.rank == 0:
        for rank in range(grid.world.size - 1, -1, -1):      # rank 0's own slice last
            flat = _flat([[_slice(name, arrays[k], tp_rank, tp_size, config)
                           for k in [f"param/{name}"] + [f"optim/{name}/{s}" for s in keys]]
                          for name, tp_rank, tp_size, _ in wanted[rank]], dtype)
            if rank:
                comm.send(flat, rank, grid.world, tag=7)
    else:
        flat = np.empty(sum(int(np.prod(s)) for s in shapes), dtype)
        comm.recv(flat, 0, grid.world, tag=7)                # (this rank's elements,)
    pieces = unflatten(flat, shapes)
    states = _state_by_name(named, optimizer)
    width = 1 + len(keys)
    for i, (name, p) in enumerate(named):
        p.data[...] = asarray(pieces[i * width])
        states[name].clear()
        states[name].update({k: asarray(pieces[i * width + 1 + j].copy())
                             for j, k in enumerate(keys)})
    optimizer.step_count = int(meta["optimizer"]["step_count"])
    streams = meta["rng"]["dropout"]
    for name, m in _dropouts(model):
        if name in streams:
            m.rng.bit_generator.state = streams[name]
    return meta
