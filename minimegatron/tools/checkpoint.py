"""Checkpoints: save ONE full (serial-named) file from any grid, load it onto any other grid.

The idea. Every parallel form of the GPT keeps the serial parameter names
(shards.py says which slice of ``blocks.3.mlp.fc1.weight`` a tp rank holds; a
pipeline stage owns whole names). So a checkpoint can be the *serial* model:
gather the shards into full arrays when saving, slice them again when
loading, and the grid of the loading job need not be the grid that saved.

Every decision is taken on ONE rank (world rank 0) and broadcast, so every
rank raises the same CheckpointError together, never one rank alone:

    0. every rank reports what it holds (names, shard shapes, optimizer, dropout
       streams) or why it cannot take part: gather_object -> rank 0

Saving, on a dp x pp x tp grid (every rank of ``grid.world`` calls it)::

    1. rank 0 opens the temp file (stale ones removed); verdict: bcast_object
    2. per weight, on the dp-rank-0 ranks: gather(its flat shards, grid.tp) ->
       tp rank 0 unshards it (Igatherv); a stage's tp rank 0 sends the weight's
       full arrays to rank 0 (Send/Recv), which streams them into the zip
    3. rank 0 writes meta, fsyncs and renames; verdict: bcast_object

    bytes: each tp group sends its stage's parameters + optimizer state (3 x
    params for AdamW) once; rank 0 receives the whole model once, one weight at
    a time: its peak memory is the largest weight, not the model.

Loading: rank 0 checks meta against every rank's report (config field by
field, optimizer, names, full shapes, dropout states), then reads each array
within the size the model expects (checkpoint_format.py: no decompression, no
unpickling, crc32, finite values). Only then is the verdict broadcast, and only
after a good verdict does rank 0 cut every rank's slice (shards.shard_of) and
send it (one flat buffer per rank), and every rank set its weights, optimizer
state, step count and dropout streams: a bad file touches no weight anywhere.

Usage, on every rank::

    save_checkpoint(trainer, trainer.optimizer, "ckpt.npz", grid, rng_state={"step": 2})
    meta = load_checkpoint(other_trainer, other_trainer.optimizer, "ckpt.npz", other_grid)

ZeRO-partitioned optimizer state is not supported (a clear CheckpointError).
tests/test_checkpoint.py saves on 2x2x2 and resumes on 1x1x1, 1x2x4 and 8x1x1;
tests/workers/ckpt_fuzz.py loads hundreds of damaged files on 2 ranks (tp=2).
"""
import dataclasses
import json
import math

import numpy as np

from minimegatron import comm
from minimegatron.backend import asarray, to_numpy
from minimegatron.optim import Optimizer
from minimegatron.parallel.split import unflatten
from minimegatron.parallel.tensor_parallel.shards import shard_of, unshard
from minimegatron.tools.checkpoint_format import (FORMAT, MAX_STATE_KEYS, VERSION, AtomicZip,
                                                  CheckpointError, check_path, expected_arrays,
                                                  full_shape, full_shapes, read_checkpoint,
                                                  size_limit)

__all__ = ["CheckpointError", "load_checkpoint", "read_checkpoint", "save_checkpoint"]
TAG = 7


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
    return named, sorted({k for s in optimizer.state for k in s})


def _state_by_name(named, optimizer):
    index = {id(p): i for i, p in enumerate(optimizer.params)}
    return {name: optimizer.state[index[id(p)]] for name, p in named}


def _flat(arrays, dtype):
    parts = [to_numpy(a).ravel() for group in arrays for a in group]
    return np.concatenate(parts).astype(dtype, copy=False) if parts else np.zeros(0, dtype)


def _dropouts(model):
    """[(module name, module)] of every replicated dropout stream (a trainer: its .stage)."""
    model = model if hasattr(model, "named_modules") else getattr(model, "stage", None)
    if model is None:
        return []
    return [(name, m) for name, m in model.named_modules()
            if hasattr(m, "rng") and not getattr(m, "sharded", False)]


def _report(model, optimizer, path, grid, config):
    """(this rank's report for rank 0, (config, named) or None if it cannot take part)."""
    try:
        check_path(path)
        config = _config_of(model, config)
        named, keys = _local(model, optimizer)
    except CheckpointError as err:
        return {"error": str(err)}, None
    streams = _dropouts(model)
    owner = grid.dp_rank == 0 and grid.tp_rank == 0
    return {"error": None, "config": dataclasses.asdict(config), "keys": keys,
            "optimizer": type(optimizer).__name__, "step_count": optimizer.step_count,
            "pp": grid.pp_rank, "dp": grid.dp_rank, "tp": grid.tp_rank, "tp_size": grid.tp_size,
            "names": [(name, list(p.shape)) for name, p in named],
            "streams": {name: type(m.rng.bit_generator).__name__ for name, m in streams},
            "states": {name: m.rng.bit_generator.state for name, m in streams} if owner else {},
            }, (config, named)


def _problem(reports):
    """The first rank's reason not to go on (rank 0 decides), or None."""
    errors = [r["error"] for r in reports if r["error"]]
    if errors:
        return errors[0]
    if any(r["config"] != reports[0]["config"] for r in reports):
        return "checkpoint: the ranks' models have different configs"
    return None


# --- save -----------------------------------------------------------------------------------

def _unsharded(named, optimizer, keys, grid, config):
    """Per weight: (name, [full param, full state per key]) on tp rank 0, else (name, None)."""
    states, dtype, width = _state_by_name(named, optimizer), np.dtype(config.dtype), 1 + len(keys)
    shapes = comm.allgather_object([list(p.shape) for _, p in named], grid.tp)
    for i, (name, p) in enumerate(named):
        parts = [p.data] + [states[name].get(k, np.zeros(p.shape, dtype)) for k in keys]
        sizes = [math.prod(rank_shapes[i]) * width for rank_shapes in shapes]
        shards = comm.gather(_flat([parts], dtype), grid.tp, root=0, sizes=sizes)  # (tp x,)
        if grid.tp_rank != 0:
            yield name, None
            continue
        per_rank = [unflatten(chunk, [rank_shapes[i]] * width) for chunk, rank_shapes in
                    zip(np.split(shards, np.cumsum(sizes)[:-1]), shapes)]
        yield name, [to_numpy(unshard(name, [asarray(r[j]) for r in per_rank], config))
                     for j in range(width)]


def _save_error(path, err):
    return str(err) if isinstance(err, CheckpointError) else \
        f"checkpoint: could not save {path!r}: {type(err).__name__}: {err}"


def _stream(named, optimizer, keys, grid, config, reports, writer):
    """Every weight's full arrays to world rank 0 (into ``writer``), one weight at a time."""
    dtype, width = np.dtype(config.dtype), 1 + len(keys)

    def sink(name, full):
        for key, array in zip([f"param/{name}"] + [f"optim/{name}/{k}" for k in keys], full):
            writer.add(key, array)
    if grid.dp_rank == 0:
        for name, full in _unsharded(named, optimizer, keys, grid, config):
            if writer is not None:
                sink(name, full)
            elif full is not None:
                comm.send(_flat([full], dtype), 0, grid.world, tag=TAG)
    if writer is None:
        return
    owners = sorted((r["pp"], source) for source, r in enumerate(reports)
                    if source and r["dp"] == r["tp"] == 0)
    for _, source in owners:                                  # the other stages, in pp order
        for name, shape in reports[source]["names"]:
            shapes = [full_shape(name, shape, reports[source]["tp_size"], config)] * width
            flat = np.empty(sum(math.prod(s) for s in shapes), dtype)
            sink(name, unflatten(comm.recv(flat, source, grid.world, tag=TAG), shapes))


def _open(path, reports, step, rng_state, grid):
    """On rank 0: (writer, meta without arrays, {error, keys}) before any array moves."""
    error = _problem(reports)
    keys = sorted(set().union(*(r["keys"] for r in reports))) if error is None else []
    if error is None and len(keys) > MAX_STATE_KEYS:
        error = f"checkpoint: {len(keys)} optimizer state arrays per weight, at most " \
                f"{MAX_STATE_KEYS} are supported"
    writer = meta = None
    if error is None:
        first = reports[0]
        meta = {"format": FORMAT, "version": VERSION, "config": first["config"],
                "step": first["step_count"] if step is None else step,
                "optimizer": {"class": first["optimizer"], "keys": keys,
                              "step_count": first["step_count"]},
                "rng": {"user": rng_state,
                        "dropout": {k: v for r in reports for k, v in r["states"].items()}},
                "grid": {"dp": grid.dp_size, "pp": grid.pp_size, "tp": grid.tp_size}}
        try:
            json.dumps(meta)                                  # JSON-able, before any byte
            writer = AtomicZip(path)
        except Exception as err:  # noqa: BLE001 - reported on every rank by the caller
            error = _save_error(path, err)
    return writer, meta, {"error": error, "keys": keys}


def save_checkpoint(model, optimizer, path, grid, step=None, rng_state=None, config=None):
    """Gather the model and optimizer of a dp x pp x tp run into ONE full file (on rank 0).

    Collective over ``grid.world``. ``rng_state``: any JSON-able value the
    caller wants back (e.g. the data position); replicated dropout streams are
    saved too. Raises the same CheckpointError on every rank if rank 0 fails.
    """
    report, local = _report(model, optimizer, path, grid, config)
    reports = comm.gather_object(report, grid.world, root=0)
    root = grid.world.rank == 0
    writer, meta, plan = _open(path, reports, step, rng_state, grid) if root else (None,) * 3
    plan = comm.bcast_object(plan, grid.world, root=0)
    if plan["error"]:
        raise CheckpointError(plan["error"])
    _stream(local[1], optimizer, plan["keys"], grid, local[0], reports, writer)
    error = None
    if root:
        try:
            writer.commit(meta)                       # raises the first failed write, if any
        except Exception as err:  # noqa: BLE001 - reported on every rank below
            error = _save_error(path, err)
            writer.abort()
    error = comm.bcast_object(error, grid.world, root=0)
    if error:
        raise CheckpointError(error)


# --- read and check on rank 0 ---------------------------------------------------------------

def _read_on_root(path, reports, config):
    """(arrays, verdict): the file read within the model's sizes, or the reason it cannot be."""
    error = _problem(reports)
    if error is not None:
        return None, {"error": error}
    try:
        full = full_shapes(reports, config)
        weight_bytes = sum(math.prod(s) for s in full.values()) * np.dtype(config.dtype).itemsize
        most = 1 + MAX_STATE_KEYS
        arrays, meta = read_checkpoint(path, lambda m: expected_arrays(m, reports, config, path),
                                       size_limit(most * weight_bytes, most * len(full) + 1))
    except CheckpointError as err:
        return None, {"error": str(err)}
    except Exception as err:  # noqa: BLE001 - every failure is a CheckpointError on every rank
        return None, {"error": f"checkpoint {path!r} cannot be loaded "
                               f"({type(err).__name__}: {err})"}
    return arrays, {"error": None, "meta": {k: v for k, v in meta.items() if k != "arrays"}}


# --- load -----------------------------------------------------------------------------------

def _slices(arrays, reports, keys, grid, named, config):
    """This rank's flat [param, state per key] per weight: rank 0 cuts and sends every rank's."""
    dtype, width = np.dtype(config.dtype), 1 + len(keys)
    if grid.world.rank != 0:
        flat = np.empty(sum(p.size for _, p in named) * width, dtype)
        return comm.recv(flat, 0, grid.world, tag=TAG)            # (this rank's elements,)
    for rank in range(grid.world.size - 1, -1, -1):               # rank 0's own slice last
        r = reports[rank]
        flat = _flat([[to_numpy(shard_of(name, asarray(arrays[k]), r["tp"], r["tp_size"]))
                       for k in [f"param/{name}"] + [f"optim/{name}/{s}" for s in keys]]
                      for name, _ in r["names"]], dtype)
        if rank:
            comm.send(flat, rank, grid.world, tag=TAG)
    return flat


def load_checkpoint(model, optimizer, path, grid, config=None):
    """Load a full checkpoint onto this grid: each rank takes its own slice. Returns meta.

    Collective over ``grid.world``. meta["step"] and meta["rng"]["user"] give the
    caller's step and rng_state back; replicated dropout streams are restored.
    Any failure raises the same CheckpointError on every rank, every weight unchanged.
    """
    report, local = _report(model, optimizer, path, grid, config)
    reports = comm.gather_object(report, grid.world, root=0)
    arrays = verdict = None
    if grid.world.rank == 0:
        arrays, verdict = _read_on_root(path, reports, local and local[0])
    verdict = comm.bcast_object(verdict, grid.world, root=0)     # the same verdict everywhere
    if verdict["error"]:
        raise CheckpointError(verdict["error"])
    (config, named), meta = local, verdict["meta"]
    keys, width = meta["optimizer"]["keys"], 1 + len(meta["optimizer"]["keys"])
    flat = _slices(arrays, reports, keys, grid, named, config)
    pieces = unflatten(flat, [tuple(p.shape) for _, p in named for _ in range(width)])
    states = _state_by_name(named, optimizer)
    for i, (name, p) in enumerate(named):
        p.data[...] = asarray(pieces[i * width])
        states[name].clear()
        states[name].update({k: asarray(pieces[i * width + 1 + j].copy())
                             for j, k in enumerate(keys)})
    optimizer.step_count = meta["optimizer"]["step_count"]
    streams = meta["rng"]["dropout"]
    for name, m in _dropouts(model):
        if name in streams:
            m.rng.bit_generator.state = streams[name]
    return meta
