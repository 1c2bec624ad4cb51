"""The checkpoint file: a plain, uncompressed ``.npz``, written atomically, read within bounds.

Format (``np.load(path)`` reads it; docs/checkpoints.md)::

    param/<name>.npy         full weight, serial name and shape, the config's dtype
                             (an expert weight: all E experts, row e = expert e)
    optim/<name>/<key>.npy   optimizer state of that weight (AdamW: m, v), full shape
    meta.npy                 0-d str array: JSON {format, version, config, moe (the
                             MoEConfig, or null), step, optimizer, rng, grid,
                             arrays: {key: {shape, dtype, crc32}}}

Writing (``AtomicZip``): remove stale temp files of the same target (a SIGKILLed
save leaves one), open a temp file next to it, stream each array into its own
zip entry as it arrives, meta last, fsync, os.replace, fsync the directory.

Reading (``read_checkpoint``) never unpickles, never decompresses, and checks
every size before reading the bytes it covers: the file size (``max_bytes``,
from the model); the zip directory (entries stored as is, not encrypted, sizes
within the file); meta (at most META_LIMIT); ``expect(meta)``, the caller's
{key: (shape, dtype)}, which must name exactly the entries; every entry's
declared size = .npy header + prod(shape) * itemsize. Then each array is read
in CHUNKs into a preallocated array and checked: zip CRC, meta crc32, finite.
Whatever fails (zipfile, numpy's header parser, json) is a CheckpointError.
``expected_arrays`` is that expectation for a model, from every rank's report.
"""
import dataclasses
import json
import math
import os
import re
import tempfile
import zipfile
import zlib

import numpy as np

from minimegatron.i18n import text
from minimegatron.tools.checkpoint_layout import full_shape, stage_order

FORMAT, VERSION = "minimegatron-checkpoint", 1
META_LIMIT = 8 * 2**20          # bytes of meta.npy (utf-32 JSON)
NPY_HEADER_LIMIT = 4096         # bytes of one .npy header (numpy writes 128)
ENTRY_OVERHEAD = 8192           # zip bytes per entry besides its array data (headers, name)
CHUNK = 16 * 2**20              # bytes read at a time
MAX_STATE_KEYS = 4              # optimizer state arrays per weight (AdamW: m, v)
FLOAT_DTYPES = ("float16", "float32", "float64")


class CheckpointError(ValueError):
    """A checkpoint that cannot be written, read, or loaded onto this model."""


def check_path(path):
    """The path as a str; a clear CheckpointError for an empty path or a directory."""
    path = os.fspath(path) if isinstance(path, (str, os.PathLike)) else path
    if not isinstance(path, str) or not path.strip():
        raise CheckpointError(text("ckpt.err.empty_path", path=path))
    if path.endswith(os.sep) or os.path.isdir(path):
        raise CheckpointError(text("ckpt.err.directory", path=path))
    return path


def size_limit(array_bytes, entries):
    """The largest file that can hold ``array_bytes`` of arrays in ``entries`` zip entries."""
    return array_bytes + META_LIMIT + entries * ENTRY_OVERHEAD


def crc32(array):
    return zlib.crc32(np.ascontiguousarray(array).reshape(-1).view(np.uint8))


# --- writing --------------------------------------------------------------------------------

def _temp_prefix(path):
    return f".{os.path.basename(path)}."


def stale_temps(path):
    """Temp files a killed save of ``path`` left behind (``.<name>.XXXXXXXX.tmp``)."""
    directory = os.path.dirname(os.path.abspath(path))
    pattern = re.compile(re.escape(_temp_prefix(path)) + r"[a-z0-9_]{8}\.tmp")
    return [os.path.join(directory, f) for f in sorted(os.listdir(directory))
            if pattern.fullmatch(f)]


class AtomicZip:
    """A temp file next to ``path`` that becomes ``path`` on commit(), or vanishes on abort()."""

    def __init__(self, path):
        self.path = check_path(path)
        for stale in stale_temps(self.path):   # one writer per target: these are dead saves'
            os.remove(stale)
        self.directory = os.path.dirname(os.path.abspath(self.path))
        fd, self.tmp = tempfile.mkstemp(prefix=_temp_prefix(self.path), suffix=".tmp",
                                        dir=self.directory)
        self.file, self.listed, self.error = os.fdopen(fd, "wb"), {}, None
        try:
            umask = os.umask(0)
            os.umask(umask)
            os.chmod(self.tmp, 0o666 & ~umask)              # mkstemp makes it 0600
            self.zip = zipfile.ZipFile(self.file, "w", zipfile.ZIP_STORED, allowZip64=True)
        except BaseException:
            self.file.close()
            os.remove(self.tmp)
            raise

    def add(self, key, array):
        """Stream one array into entry ``key``.npy; after a failure, nothing (commit raises it)."""
        if self.error is not None:
            return
        try:
            array = np.ascontiguousarray(array)
            if array.dtype.kind == "f" and not np.isfinite(array).all():
                raise CheckpointError(text("ckpt.err.nan_save", path=self.path, key=key))
            with self.zip.open(key + ".npy", "w", force_zip64=True) as f:
                np.lib.format.write_array(f, array, allow_pickle=False)
            self.listed[key] = {"shape": list(array.shape), "dtype": str(array.dtype),
                                "crc32": crc32(array)}
        except Exception as err:  # noqa: BLE001 - the save goes on draining, commit raises it
            self.error = err

    def commit(self, meta):
        """Write meta (with the arrays' listing), fsync, os.replace over the target."""
        if self.error is not None:
            raise self.error
        record = np.array(json.dumps({**meta, "arrays": dict(sorted(self.listed.items()))}))
        if record.nbytes + NPY_HEADER_LIMIT > META_LIMIT:          # what a load would refuse
            raise CheckpointError(text("ckpt.err.meta_size", path=self.path,
                                       nbytes=record.nbytes, limit=META_LIMIT))
        with self.zip.open("meta.npy", "w") as f:
            np.lib.format.write_array(f, record, allow_pickle=False)
        self.zip.close()
        self.file.flush()
        os.fsync(self.file.fileno())
        self.file.close()
        os.replace(self.tmp, self.path)
        dir_fd = os.open(self.directory, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)

    def abort(self):
        for close in (self.zip.close, self.file.close):
            try:
                close()
            except Exception:  # noqa: BLE001 - the temp file goes either way
                pass
        if os.path.exists(self.tmp):
            os.remove(self.tmp)


# --- reading --------------------------------------------------------------------------------

def read_checkpoint(path, expect=None, max_bytes=None):
    """(arrays {key: full array}, meta) of a checkpoint file, every check passed.

    ``expect(meta)`` returns {key: (shape, dtype)} the caller needs (raising
    CheckpointError if meta does not fit its model); without it, meta's own
    listing is used and memory is bounded by the file's size. Raises
    CheckpointError for a missing, oversized, truncated, corrupt or unfitting file.
    """
    path = check_path(path)
    if not os.path.isfile(path):
        raise CheckpointError(text("ckpt.err.no_file", path=path))
    size = os.path.getsize(path)
    if max_bytes is not None and size > max_bytes:
        raise CheckpointError(text("ckpt.err.too_big", path=path, size=size, limit=max_bytes))
    try:
        with open(path, "rb") as f, zipfile.ZipFile(f) as zf:
            return _read(zf, path, size, expect)
    except CheckpointError:
        raise
    except Exception as err:  # noqa: BLE001 - whatever a damaged file makes a parser raise
        raise CheckpointError(text("ckpt.err.unreadable", path=path,
                                   error=f"{type(err).__name__}: {err}")) from err


def _corrupt(path, why, /, **fields):
    """CheckpointError "checkpoint PATH is corrupt: ..." (``why``: a ckpt.why.* key)."""
    return CheckpointError(text("ckpt.err.corrupt", path=path,
                                why=text(f"ckpt.why.{why}", **fields)))


def _read(zf, path, size, expect):
    infos = zf.infolist()
    entries = {info.filename: info for info in infos}
    if len(entries) != len(infos):
        raise _corrupt(path, "duplicate")
    for info in infos:
        if info.compress_type != zipfile.ZIP_STORED or info.flag_bits & 0x1 or \
                info.compress_size != info.file_size:
            raise _corrupt(path, "compressed", name=info.filename)
    if sum(info.file_size for info in infos) > size:
        raise _corrupt(path, "declared")
    if "meta.npy" not in entries or entries["meta.npy"].file_size > META_LIMIT:
        raise _corrupt(path, "no_meta")
    meta = _read_meta(zf, entries["meta.npy"], path)
    listed = listed_arrays(meta, path)
    expected = expect(meta) if expect is not None else \
        {k: (tuple(v["shape"]), np.dtype(v["dtype"])) for k, v in listed.items()}
    wanted = {key + ".npy" for key in expected} | {"meta.npy"}
    if set(listed) != set(expected) or set(entries) != wanted:
        odd = sorted((set(listed) ^ set(expected)) | {e[:-4] for e in set(entries) ^ wanted})
        raise _corrupt(path, "missing", arrays=odd[:4])
    nbytes = {}
    for key, (shape, dtype) in expected.items():         # every size, before any array byte
        nbytes[key], declared = math.prod(shape) * dtype.itemsize, entries[key + ".npy"].file_size
        if [list(shape), str(dtype)] != [listed[key]["shape"], listed[key]["dtype"]] or \
                not nbytes[key] < declared <= nbytes[key] + NPY_HEADER_LIMIT:
            raise _corrupt(path, "listed_as", key=key, shape=listed[key]["shape"],
                           dtype=listed[key]["dtype"], size=declared,
                           want_shape=list(shape), want_dtype=dtype)
    if size > size_limit(sum(nbytes.values()), len(entries)):
        raise _corrupt(path, "too_big", size=size)
    arrays = {}
    for key, (shape, dtype) in expected.items():
        arrays[key] = _read_entry(zf, entries[key + ".npy"], path, (shape, dtype))
        if crc32(arrays[key]) != listed[key]["crc32"]:
            raise _corrupt(path, "checksum", key=key)
        if not np.isfinite(arrays[key]).all():
            raise CheckpointError(text("ckpt.err.nan_load", path=path, key=key))
    return arrays, meta


def _read_entry(zf, info, path, want=None):
    """The .npy array in entry ``info``, its header (at most NPY_HEADER_LIMIT bytes) giving
    ``want`` = (shape, dtype) (None: a 0-d str) and the entry's size exactly; read in CHUNKs."""
    with zf.open(info) as f:
        read = {(1, 0): np.lib.format.read_array_header_1_0,
                (2, 0): np.lib.format.read_array_header_2_0}.get(np.lib.format.read_magic(f))
        if read is None:
            raise _corrupt(path, "not_npy", name=info.filename)
        shape, fortran_order, dtype = read(f, max_header_size=NPY_HEADER_LIMIT)
        fits = (shape, dtype) == want if want else shape == () and dtype.kind == "U"
        if fortran_order or not fits or \
                f.tell() + math.prod(shape) * dtype.itemsize != info.file_size:
            raise _corrupt(path, "holds", name=info.filename, shape=shape, dtype=dtype,
                           size=info.file_size)
        out = np.empty(shape, dtype)
        flat, done = out.reshape(-1).view(np.uint8), 0
        while done < flat.size:
            chunk = f.read(min(CHUNK, flat.size - done))
            if not chunk:
                raise _corrupt(path, "truncated", name=info.filename)
            flat[done:done + len(chunk)] = np.frombuffer(chunk, np.uint8)
            done += len(chunk)
        if f.read(1):                                     # at the end: the zip CRC is checked
            raise _corrupt(path, "too_long", name=info.filename)
    return out


def _read_meta(zf, info, path):
    meta = json.loads(str(_read_entry(zf, info, path)[()]))
    if not isinstance(meta, dict) or meta.get("format") != FORMAT or \
            meta.get("version") != VERSION:
        got = meta if not isinstance(meta, dict) else (meta.get("format"), meta.get("version"))
        raise CheckpointError(text("ckpt.err.format", path=path, got=got, format=FORMAT,
                                   version=VERSION))
    return meta


def _is_count(x):
    return isinstance(x, int) and not isinstance(x, bool) and x >= 0


def listed_arrays(meta, path):
    """meta["arrays"] after checking its form: {key: {shape: [int], dtype, crc32}}."""
    listed = meta.get("arrays")
    if not isinstance(listed, dict):
        raise _corrupt(path, "no_listing")
    for key, info in listed.items():
        if not (isinstance(info, dict) and isinstance(info.get("shape"), list)
                and all(_is_count(n) for n in info["shape"])
                and info.get("dtype") in FLOAT_DTYPES
                and _is_count(info.get("crc32")) and info["crc32"] < 2**32):
            raise _corrupt(path, "meta_lists", key=key, info=info)
    return listed


# --- does the file fit this model? (rank 0, given every rank's report) -----------------------

def full_shapes(reports, config):
    """{name: full shape} over every rank's report, in stage order; the ranks must agree."""
    full = {}
    for rank, r in enumerate(reports):
        for name, shape, place in r["names"]:
            shape = full_shape(name, shape, place, config)
            if full.setdefault(name, shape) != shape:
                raise CheckpointError(text("ckpt.err.disagree", name=name, first=full[name],
                                           shape=shape, rank=rank))
    return {name: full[name] for name in stage_order(reports)}


def _check_stream(name, kind, state, path):
    try:
        getattr(np.random, kind)().state = state
    except Exception as err:  # noqa: BLE001 - any refusal of the state is a bad file
        raise CheckpointError(text("ckpt.err.stream", path=path, name=name,
                                   error=type(err).__name__)) from err


def state_dtypes(meta, config):
    """{state key: dtype} of the file (a file without "dtypes": the config's dtype)."""
    opt = meta["optimizer"]
    return opt.get("dtypes") or {k: config.dtype for k in opt["keys"]}


def _is_scale(x):
    return isinstance(x, float) and math.isfinite(x) and x > 0


def _check_state_record(opt, path):
    """The state dtypes (one float dtype per key) and the mixed-precision record (the loss
    scaler's scale and counts), if the file has them."""
    dtypes, mixed = opt.get("dtypes"), opt.get("mixed")
    if dtypes is not None and not (isinstance(dtypes, dict) and list(dtypes) == opt["keys"]
                                   and all(d in FLOAT_DTYPES for d in dtypes.values())):
        raise _corrupt(path, "state_dtypes", dtypes=dtypes)
    counts = ("clean_steps", "skipped_steps", "steps_taken")
    if mixed is not None and not (isinstance(mixed, dict) and set(mixed) == {"scale", *counts}
                                  and _is_scale(mixed["scale"])
                                  and all(_is_count(mixed[k]) for k in counts)):
        raise _corrupt(path, "mixed", record=mixed)


def _check_biases(saved, reports, path):
    """The routers' expert biases (aux-loss-free balancing): one list of E finite numbers
    for each MoE layer the model balances with a bias (its MoE config says so)."""
    moe = reports[0]["moe"] or {}
    wanted = moe.get("bias_update_rate", 0) and [
        i for i in range(reports[0]["config"]["n_layer"]) if i % moe["every"] == 0]
    ok = isinstance(saved, dict) and all(
        isinstance(v, list) and len(v) == moe.get("num_experts") and all(
            type(b) in (int, float) and math.isfinite(b) for b in v) for v in saved.values())
    if not ok or sorted(saved) != sorted(f"blocks.{i}.mlp" for i in wanted or []):
        raise _corrupt(path, "expert_bias")


def _check_kind(opt, ours, path):
    """The update rule inside the class (a mixed-precision SGD is not a mixed-precision AdamW)
    and its state fields: the file's kind and fields (if it records them) must be this run's,
    and every state array it holds one this run keeps."""
    saved = {k: opt[k] for k in ("kind", "fields") if k in opt}
    if not (isinstance(saved.get("kind", ""), str) and isinstance(saved.get("fields", []), list)
            and all(isinstance(f, str) for f in saved.get("fields", []))):
        raise _corrupt(path, "records")
    strangers = [k for k in opt["keys"] if k not in ours["fields"]]
    if any(saved[k] != ours[k] for k in saved) or strangers:
        raise CheckpointError(text(
            "ckpt.err.optimizer_kind", path=path, saved=saved.get("kind", opt["class"]),
            fields=", ".join(opt["keys"]) or "-", ours=ours["kind"],
            our_fields=", ".join(ours["fields"]) or "-"))


def _check_moe(saved, ours, path):
    """The MoE config of the file (None: a dense GPT) must be the model's, field by field."""
    if saved is not None and not isinstance(saved, dict):
        raise _corrupt(path, "moe", saved=saved)
    if saved is None or ours is None:
        if saved != ours:
            raise CheckpointError(text("ckpt.moe_config", path=path, differ=text(
                "ckpt.moe_kind", saved=saved, ours=ours)))
        return
    differ = [f"{k}: " + text("ckpt.moe_kind", saved=saved.get(k), ours=v)
              for k, v in ours.items() if saved.get(k) != v]
    if differ:
        raise CheckpointError(text("ckpt.moe_config", path=path, differ="; ".join(differ)))


def expected_arrays(meta, reports, config, path):
    """{file key: (full shape, dtype)} this model needs; CheckpointError unless meta fits it:
    config and MoE config field by field, optimizer class, kind, state fields and record,
    dropout states, names, full shapes."""
    saved, ours = meta.get("config"), dataclasses.asdict(config)
    if not isinstance(saved, dict):
        raise _corrupt(path, "no_config")
    differ = [f"{k}: " + text("ckpt.moe_kind", saved=saved.get(k), ours=v)
              for k, v in ours.items() if saved.get(k) != v]
    if differ:
        raise CheckpointError(text("ckpt.err.config", path=path, differ="; ".join(differ)))
    _check_moe(meta.get("moe"), reports[0]["moe"], path)
    opt, rng = meta.get("optimizer"), meta.get("rng")
    if not (isinstance(opt, dict) and isinstance(opt.get("class"), str)
            and isinstance(opt.get("keys"), list) and len(opt["keys"]) <= MAX_STATE_KEYS
            and all(isinstance(k, str) and k.isidentifier() for k in opt["keys"])
            and opt["keys"] == sorted(set(opt["keys"]))
            and type(opt.get("step_count")) is int and opt["step_count"] >= 0
            and isinstance(rng, dict) and isinstance(rng.get("dropout"), dict)):
        raise _corrupt(path, "records")
    _check_state_record(opt, path)
    classes = sorted({r["optimizer"] for r in reports})
    if classes != [opt["class"]]:
        raise CheckpointError(text("ckpt.err.optimizer_class", path=path, saved=opt["class"],
                                   ours="/".join(classes)))
    _check_kind(opt, reports[0]["kind"], path)
    for r in reports:
        for name, kind in r["streams"].items():
            if name in rng["dropout"]:
                _check_stream(name, kind, rng["dropout"][name], path)
    _check_biases(meta.get("expert_bias", {}), reports, path)
    full, listed = full_shapes(reports, config), listed_arrays(meta, path)
    in_file = {k[len("param/"):] for k in listed if k.startswith("param/")}
    if in_file != set(full):
        raise CheckpointError(text("ckpt.err.names", path=path,
                                   in_file=sorted(in_file - set(full))[:3],
                                   in_model=sorted(set(full) - in_file)[:3]))
    for name, shape in full.items():
        if tuple(listed[f"param/{name}"]["shape"]) != shape:
            raise CheckpointError(text("ckpt.err.shape", path=path, name=name,
                                       shape=tuple(listed[f"param/{name}"]["shape"]),
                                       ours=shape))
    dtype, kinds = np.dtype(config.dtype), state_dtypes(meta, config)
    return {key: (shape, np.dtype(d)) for name, shape in full.items()
            for key, d in [(f"param/{name}", dtype)] + [(f"optim/{name}/{k}", kind)
                                                        for k, kind in kinds.items()]}
