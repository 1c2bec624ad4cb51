"""Full <-> shard: which slice of each GPT parameter a tensor-parallel rank holds.

Every rule is keyed by the parameter's dotted name (the names nn.GPT uses), so
checks, checkpoints and 3D parallelism can move between one full array and tp
shards without building a model::

    name                  full shape   rank r holds                          tp_axis
    wte.weight            (V, D)       rows   r*Vp/tp .. (r+1)*Vp/tp  (*)    0
    head.weight           (D, V)       cols   r*Vp/tp .. (r+1)*Vp/tp  (*)    1
    *.attn.qkv.weight     (D, 3D)      [Q_r | K_r | V_r]              (**)   1
    *.attn.qkv.bias       (3D,)        [Q_r | K_r | V_r]              (**)   0
    *.mlp.fc1.weight      (D, 4D)      cols   r*4D/tp .. (r+1)*4D/tp         1
    *.mlp.fc1.bias        (4D,)        the same slice                        0
    *.attn.proj.weight    (D, D)       rows   r*D/tp .. (r+1)*D/tp           0
    *.mlp.fc2.weight      (4D, D)      rows   r*4D/tp .. (r+1)*4D/tp         0
    anything else         (...)        the whole array (replicated)          None

(*) the vocabulary is padded with zero rows/columns to Vp, the next multiple
of tp; ``unshard`` drops the padding again when given the config.
(**) Q_r is columns r*D/tp .. (r+1)*D/tp of the Q part (heads r*H/tp ..
(r+1)*H/tp - 1), likewise K_r and V_r: a rank holds whole heads.
No communication here: pure slicing and concatenation on xp arrays.
"""
from minimegatron.backend import xp
from minimegatron.parallel.split import pad, rows_of

_AXIS = {"wte.weight": 0, "head.weight": 1, "qkv.weight": 1, "qkv.bias": 0,
         "fc1.weight": 1, "fc1.bias": 0, "proj.weight": 0, "fc2.weight": 0}
_VOCAB = ("wte.weight", "head.weight")


def _rule(name):
    key = ".".join(name.split(".")[-2:])
    return key if key in _AXIS else None


def tp_axis(name):
    """The axis along which parameter ``name`` is split over tp ranks (None: replicated)."""
    rule = _rule(name)
    return None if rule is None else _AXIS[rule]


def is_vocab(name):
    return _rule(name) in _VOCAB


def is_qkv(name):
    return _rule(name) in ("qkv.weight", "qkv.bias")


def _chunk(a, axis, rank, size):
    width = a.shape[axis]
    if width % size:
        raise ValueError(f"axis {axis} of length {width} is not divisible by tp={size}")
    return rows_of(a, rank, size, axis)


def shard_of(name, full, tp_rank, tp_size, config=None):
    """Rank ``tp_rank``'s shard of the full array of parameter ``name`` (a copy).

    A vocabulary array is padded to a multiple of tp_size whether or not it
    already is (a padded full array passes through unchanged); ``config`` is
    accepted for symmetry with ``unshard``.
    """
    axis = tp_axis(name)
    if axis is None:
        return full.copy()
    if is_vocab(name):
        full = pad(full, axis, tp_size)            # (Vp, D) or (D, Vp)
    if is_qkv(name):
        parts = xp.split(full, 3, axis=-1)                            # Q, K, V: (..., D) each
        return xp.concatenate([_chunk(p, -1, tp_rank, tp_size) for p in parts], axis=-1)
    return _chunk(full, axis, tp_rank, tp_size).copy()


def unshard(name, shards, config=None):
    """The full array of parameter ``name`` from every rank's shard (rank order).

    Replicated parameters return shard 0. With ``config``, vocabulary padding
    is removed (rows/columns past config.vocab_size).
    """
    axis = tp_axis(name)
    if axis is None:
        return shards[0].copy()
    if is_qkv(name):
        parts = [xp.split(s, 3, axis=-1) for s in shards]             # per rank: Q_r, K_r, V_r
        return xp.concatenate([p[i] for i in range(3) for p in parts], axis=-1)
    full = xp.concatenate(shards, axis=axis)
    if is_vocab(name) and config is not None:
        index = [slice(None)] * full.ndim
        index[axis] = slice(0, config.vocab_size)
        full = full[tuple(index)].copy()
    return full
