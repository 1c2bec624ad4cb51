"""Checkpoints: ONE full (serial-named) file from any grid, loaded onto any other grid.

The idea. Every parallel form of the GPT keeps the serial parameter names
(shards.py says which slice of ``blocks.3.mlp.fc1.weight`` a tp rank holds; an
expert weight ``blocks.0.mlp.experts.fc1.weight`` holds rows e*E/ep.. of all E
experts; a pipeline stage owns whole names). So a checkpoint can be the
*serial* model: assemble the pieces into full arrays when saving, cut them
again when loading, and the grid of the loading job need not be the grid that
saved it. Which rank holds which piece, and which one replica of each piece
writes it (Megatron's ShardedTensor + replica_id), is checkpoint_layout.py:
dp, cp and edp ranks are replicas, tp and ep ranks hold different pieces. What
the optimizer keeps per weight (AdamW's m, v; float16's float32 master and loss
scale; ZeRO's flat slices) is checkpoint_state.py.

Every decision is taken on ONE rank (world rank 0) and broadcast, so every
rank raises the same CheckpointError together, never one rank alone:

    0. every rank reports what it holds (names, piece shapes and placements,
       optimizer, dropout streams, expert biases) or why it cannot take part:
       gather_object -> rank 0

Saving, on a tp x cp x ep x dp x pp grid (every rank of ``grid.world`` calls it)::

    1. rank 0 checks that the writers cover every piece of every name exactly
       once, opens the temp file (stale ones removed); verdict: bcast_object
    2. ZeRO-1/2: each flat group all-gathers its optimizer state slices (its
       group: dp x cp), so every rank holds its parameters' state (Allgather)
    3. each writer sends each piece it writes, [weight, state per key] as one
       flat buffer, to rank 0 (Send/Recv), which assembles the full arrays one
       weight at a time (stage order) and streams them into the zip
    4. rank 0 writes meta, fsyncs and renames; verdict: bcast_object

    bytes: each piece of the model + optimizer state (3 x params for AdamW)
    reaches rank 0 once; rank 0's peak is the largest weight, not the model.

Loading: rank 0 checks meta against every rank's report (config and MoE
config field by field, optimizer, names, full shapes, dropout states), then
reads each array within the size the model expects (checkpoint_format.py: no
decompression, no unpickling, crc32, finite values). Only then is the verdict
broadcast, and only after a good verdict does rank 0 cut every rank's piece
(checkpoint_layout.piece_of) and send it (one flat buffer per rank), and every
rank set its weights, optimizer state (ZeRO: its own slice of the flat
state), step count and dropout streams: a bad file touches no weight anywhere.

Usage, on every rank::

    save_checkpoint(trainer, trainer.optimizer, "ckpt.npz", grid, rng_state={"step": 2})
    meta = load_checkpoint(other_trainer, other_trainer.optimizer, "ckpt.npz", other_grid)

ZeRO-3 (Zero3) and other optimizers without per-parameter state are refused
(a clear CheckpointError). tests/test_checkpoint.py saves on 2x2x2 and resumes
on 1x1x1, 1x2x4 and 8x1x1, saves MoE and context-parallel runs (with ZeRO) and
resumes them on other grids; tests/workers/ckpt_fuzz.py loads hundreds of
damaged files on 2 ranks (tp=2).
"""
import dataclasses
import json
import math

import numpy as np

from minimegatron import comm
from minimegatron.backend import asarray, to_numpy
from minimegatron.i18n import text
from minimegatron.nn.moe import MoE
from minimegatron.parallel.split import unflatten
from minimegatron.tools.checkpoint_format import (FLOAT_DTYPES, FORMAT, MAX_STATE_KEYS, VERSION,
                                                  AtomicZip, CheckpointError, check_path,
                                                  expected_arrays, full_shapes, read_checkpoint,
                                                  size_limit, state_dtypes)
from minimegatron.tools.checkpoint_layout import (assemble, check_writers, piece_of, placement,
                                                  writers)
from minimegatron.tools.checkpoint_state import (held_state, is_sharded, kind_of, mixed_record,
                                                 rule_of, set_state, state_of)

__all__ = ["CheckpointError", "load_checkpoint", "read_checkpoint", "save_checkpoint"]
TAG = 7


# --- what this rank holds -------------------------------------------------------------------

def _config_of(model, config):
    config = config if config is not None else getattr(model, "config", None)
    if config is None:
        raise CheckpointError(text("ckpt.err.no_config"))
    return config


def _modules(model):
    """[(name, module)] of the model (a trainer: of its .stage)."""
    model = model if hasattr(model, "named_modules") else getattr(model, "stage", None)
    return [] if model is None else list(model.named_modules())


def _moe_of(model):
    """The model's MoEConfig as a dict (its .moe, else its MoE layers'), or None (dense)."""
    moe = getattr(model, "moe", None)
    if moe is None:
        moe = next((m.moe for _, m in _modules(model) if isinstance(m, MoE)), None)
    return None if moe is None else dataclasses.asdict(moe)


def _check_experts(model, grid):
    """CheckpointError unless every expert-parallel layer splits its experts over grid.ep
    (the placement of an expert weight is read from the grid)."""
    ep = getattr(grid, "ep", None)
    ep_size, ep_rank = (ep.size, ep.rank) if ep is not None else (1, 0)
    for name, m in _modules(model):
        group = getattr(m, "ep_group", None)
        if group is not None and (group.size, group.rank) != (ep_size, ep_rank):
            raise CheckpointError(text("ckpt.ep_group", name=name, size=group.size,
                                       rank=group.rank, ep=ep_size, ep_rank=ep_rank))


def _flat(arrays, dtype):
    parts = [to_numpy(a).ravel() for group in arrays for a in group]
    return np.concatenate(parts).astype(dtype, copy=False) if parts else np.zeros(0, dtype)


def _dropouts(model):
    """[(module name, module)] of every replicated dropout stream (a trainer: its .stage)."""
    return [(name, m) for name, m in _modules(model)
            if hasattr(m, "rng") and not getattr(m, "sharded", False)]


def _biased(model):
    """[(MoE layer name, layer)] of every router with an expert bias (aux-loss-free
    balancing: state that no optimizer holds), named by its router weight's full name."""
    names = {id(p): name for name, p in model.named_parameters()}
    return [(names[id(m.router.weight)][:-len(".router.weight")], m)
            for _, m in _modules(model) if isinstance(m, MoE) and m.expert_bias is not None]


def _grid_record(grid, optimizer):
    return {"dp": grid.dp_size, "pp": grid.pp_size, "tp": grid.tp_size,
            "cp": getattr(grid, "cp_size", 1), "ep": getattr(grid, "ep_size", 1),
            "zero": optimizer.stage if is_sharded(optimizer) else 0}


def _report(model, optimizer, path, grid, config):
    """(this rank's report for rank 0, (config, named) or None if it cannot take part)."""
    try:
        check_path(path)
        config = _config_of(model, config)
        named, kinds, rule = held_state(model, optimizer)
        _check_experts(model, grid)
    except CheckpointError as err:
        return {"error": str(err)}, None
    streams = _dropouts(model)
    owner = getattr(grid, "dp_cp", grid.dp).rank == 0 and grid.tp_rank == 0
    return {"error": None, "config": dataclasses.asdict(config), "moe": _moe_of(model),
            "kinds": kinds, "optimizer": rule, "step_count": optimizer.step_count,
            "kind": kind_of(rule_of(optimizer)),
            "mixed": mixed_record(rule_of(optimizer)),
            "pp": grid.pp_rank, "grid": _grid_record(grid, optimizer),
            "names": [(name, list(p.shape), placement(name, grid)) for name, p in named],
            "streams": {name: type(m.rng.bit_generator).__name__ for name, m in streams},
            "states": {name: m.rng.bit_generator.state for name, m in streams} if owner else {},
            "biases": {name: [float(b) for b in to_numpy(m.expert_bias)]
                       for name, m in _biased(model)} if owner else {},
            }, (config, named)


def _problem(reports):
    """The first rank's reason not to go on (rank 0 decides), or None."""
    errors = [r["error"] for r in reports if r["error"]]
    if errors:
        return errors[0]
    if any(r["config"] != reports[0]["config"] for r in reports):
        return "checkpoint: the ranks' models have different configs"
    if any(r["moe"] != reports[0]["moe"] for r in reports):
        return text("ckpt.moe_ranks")
    if any(r["kind"] != reports[0]["kind"] for r in reports):
        return text("ckpt.kind_ranks", kinds=sorted({r["kind"]["kind"] for r in reports}))
    return None


# --- save -----------------------------------------------------------------------------------

def _save_error(path, err):
    return str(err) if isinstance(err, CheckpointError) else \
        text("ckpt.err.save", path=path, error=f"{type(err).__name__}: {err}")


def _keys_of(name, kinds):
    return [f"param/{name}"] + [f"optim/{name}/{k}" for k in kinds]


def _dtypes(config, kinds):
    """[the weight's dtype, each state key's], and the one dtype that carries them all."""
    dtypes = [np.dtype(config.dtype)] + [np.dtype(d) for d in kinds.values()]
    return dtypes, np.result_type(*dtypes)


def _stream(named, states, kinds, grid, config, report, reports, writer):
    """Each written piece to world rank 0, which assembles each full array into ``writer``
    (``report``: this rank's; ``reports``: every rank's, on rank 0)."""
    (dtypes, dtype), width = _dtypes(config, kinds), 1 + len(kinds)
    mine = {name: [p.data] + states[name] for name, p in named}
    if writer is None:
        for name, _, place in report["names"]:
            if place["writes"]:
                comm.send(_flat([mine[name]], dtype), 0, grid.world, tag=TAG)
        return
    for name, items in writers(reports).items():              # stage order, piece order
        pieces = []
        for source, shape, _ in items:
            if source == 0:
                pieces.append([to_numpy(a) for a in mine[name]])
                continue
            flat = np.empty(math.prod(shape) * width, dtype)
            pieces.append(unflatten(comm.recv(flat, source, grid.world, tag=TAG),
                                    [tuple(shape)] * width))
        for j, key in enumerate(_keys_of(name, kinds)):
            full = assemble(name, [asarray(piece[j]) for piece in pieces], items[0][2], config)
            writer.add(key, to_numpy(full).astype(dtypes[j], copy=False))


def _open(path, reports, step, rng_state):
    """On rank 0: (writer, meta without arrays, {error, kinds}) before any array moves."""
    error = _problem(reports)
    if error is None:
        error = check_writers(writers(reports))
    kinds = {}
    for r in reports if error is None else []:
        for key, dtype in r["kinds"].items():
            if kinds.setdefault(key, dtype) != dtype:
                error = text("ckpt.state_dtypes", key=key, first=kinds[key], other=dtype)
    kinds = dict(sorted(kinds.items())) if error is None else {}
    if error is None and len(kinds) > MAX_STATE_KEYS:
        error = text("ckpt.err.state_keys", count=len(kinds), most=MAX_STATE_KEYS)
    writer = meta = None
    if error is None:
        first = reports[0]
        meta = {"format": FORMAT, "version": VERSION, "config": first["config"],
                "moe": first["moe"], "step": first["step_count"] if step is None else step,
                "optimizer": {"class": first["optimizer"], **first["kind"], "keys": list(kinds),
                              "dtypes": kinds, "step_count": first["step_count"],
                              "mixed": first["mixed"]},
                "rng": {"user": rng_state,
                        "dropout": {k: v for r in reports for k, v in r["states"].items()}},
                "expert_bias": {k: v for r in reports for k, v in r["biases"].items()},
                "grid": first["grid"]}
        try:
            json.dumps(meta)                                  # JSON-able, before any byte
            writer = AtomicZip(path)
        except Exception as err:  # noqa: BLE001 - reported on every rank by the caller
            error = _save_error(path, err)
    return writer, meta, {"error": error, "kinds": kinds}


def save_checkpoint(model, optimizer, path, grid, step=None, rng_state=None, config=None):
    """Gather the model and optimizer of a tp x cp x ep x dp x pp run into ONE full file.

    Collective over ``grid.world``. ``rng_state``: any JSON-able value the
    caller wants back (e.g. the data position); replicated dropout streams are
    saved too. Raises the same CheckpointError on every rank if rank 0 fails.
    """
    report, local = _report(model, optimizer, path, grid, config)
    reports = comm.gather_object(report, grid.world, root=0)
    root = grid.world.rank == 0
    writer, meta, plan = _open(path, reports, step, rng_state) if root else (None,) * 3
    plan = comm.bcast_object(plan, grid.world, root=0)
    if plan["error"]:
        raise CheckpointError(plan["error"])
    config, named = local
    states = state_of(named, optimizer, plan["kinds"])
    _stream(named, states, plan["kinds"], grid, config, report, reports, writer)
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
        widest = max(np.dtype(d).itemsize for d in FLOAT_DTYPES)     # state may be wider
        weight_bytes = sum(math.prod(s) for s in full.values()) * widest
        most = 1 + MAX_STATE_KEYS
        arrays, meta = read_checkpoint(path, lambda m: expected_arrays(m, reports, config, path),
                                       size_limit(most * weight_bytes, most * len(full) + 1))
    except CheckpointError as err:
        return None, {"error": str(err)}
    except Exception as err:  # noqa: BLE001 - every failure is a CheckpointError on every rank
        return None, {"error": text("ckpt.err.load", path=path,
                                    error=f"{type(err).__name__}: {err}")}
    return arrays, {"error": None, "meta": {k: v for k, v in meta.items() if k != "arrays"}}


# --- load -----------------------------------------------------------------------------------

def _slices(arrays, reports, kinds, grid, named, config):
    """This rank's flat [param, state per key] per weight: rank 0 cuts every rank's piece
    (checkpoint_layout.piece_of) and sends it."""
    (_, dtype), width = _dtypes(config, kinds), 1 + len(kinds)
    if grid.world.rank != 0:
        flat = np.empty(sum(p.size for _, p in named) * width, dtype)
        return comm.recv(flat, 0, grid.world, tag=TAG)            # (this rank's elements,)
    for rank in range(grid.world.size - 1, -1, -1):               # rank 0's own slice last
        r = reports[rank]
        flat = _flat([[to_numpy(piece_of(name, asarray(arrays[k]), place))
                       for k in _keys_of(name, kinds)]
                      for name, _, place in r["names"]], dtype)
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
    kinds = state_dtypes(meta, config)
    width = 1 + len(kinds)
    flat = _slices(arrays, reports, kinds, grid, named, config)
    pieces = unflatten(flat, [tuple(p.shape) for _, p in named for _ in range(width)])
    for i, (name, p) in enumerate(named):
        p.data[...] = asarray(pieces[i * width])
    set_state(named, optimizer, kinds, {name: pieces[i * width + 1:(i + 1) * width]
                                        for i, (name, _) in enumerate(named)},
              meta["optimizer"].get("mixed"))
    optimizer.step_count = meta["optimizer"]["step_count"]
    streams = meta["rng"]["dropout"]
    for name, m in _dropouts(model):
        if name in streams:
            m.rng.bit_generator.state = streams[name]
    for name, m in _biased(model):                    # checked against the file on rank 0
        m.expert_bias = asarray(np.array(meta["expert_bias"][name], dtype=np.float64))
    return meta
