"""Where each weight of a checkpoint lives on a grid: which piece a rank holds, who writes it.

Megatron's distributed checkpoints describe every tensor a rank holds as a
ShardedTensor: the global shape, this rank's offset in it, and a replica id
that is 0 on exactly one holder of each piece, the one that writes it. The
same idea for a GPT on a tp x cp x ep x dp x pp grid (parallel/grid.py), with
the piece named by (ep rank, tp rank) instead of an offset::

    weight                    rank (ep e, tp t) holds           written by (replica 0)
    dense, split over tp      tp shard t (shards.py)            dp x cp rank 0, every t
    dense, replicated         the whole array                   dp x cp rank 0, tp rank 0
    expert (E, ...)           rows e*E/ep .. (e+1)*E/ep - 1     edp rank 0, tp rank 0

    full (E, ...) = cat_e( piece_e )            (an expert's global index is its row)
    full          = unshard(piece_0 .. piece_{tp-1})   (shards.py: qkv, vocab padding)

Replicas hold the same piece: dp ranks (the same weights, other rows), cp
ranks (the same weights, other tokens), the edp ranks of an expert (the same
experts, other tokens) and, for weights not split over tp (LayerNorms, the
router, the experts: the MoE is not split over tp), the tp ranks. A pipeline
stage owns whole names. So each piece has exactly one writer, and the writers
of a name cover it exactly (``check_writers`` refuses anything else before a
byte moves). Loading cuts a rank's piece from the full array with the same
rule (``piece_of``): a file saved on any grid loads on any other.
No communication here: index arithmetic on arrays and on the ranks' reports.
"""
from minimegatron.backend import xp
from minimegatron.i18n import text
from minimegatron.parallel.expert_parallel.gpt import is_expert
from minimegatron.parallel.split import rows_of
from minimegatron.parallel.tensor_parallel.shards import is_vocab, shard_of, tp_axis, unshard


def placement(name, grid):
    """{"tp": [t, tp] or None, "ep": [e, ep] or None, "writes": bool} of this rank's ``name``."""
    tp_rank, tp_size = grid.tp_rank, grid.tp_size
    dp_cp = getattr(grid, "dp_cp", grid.dp)
    if is_expert(name):
        ep = getattr(grid, "ep", None)
        ep_rank, ep_size = (ep.rank, ep.size) if ep is not None else (0, 1)
        edp = getattr(grid, "edp", dp_cp)
        return {"tp": None, "ep": [ep_rank, ep_size], "writes": edp.rank == 0 and tp_rank == 0}
    split = tp_axis(name) is not None
    return {"tp": [tp_rank, tp_size] if split else None, "ep": None,
            "writes": dp_cp.rank == 0 and (split or tp_rank == 0)}


def piece_index(place):
    """(ep rank, tp rank) of a placement: the piece's name."""
    return (place["ep"] or [0])[0], (place["tp"] or [0])[0]


def pieces_needed(place):
    """Every (e, t) a name with this placement is cut into, in write order."""
    ep, tp = (place["ep"] or [0, 1])[1], (place["tp"] or [0, 1])[1]
    return [(e, t) for e in range(ep) for t in range(tp)]


def full_shape(name, shape, place, config):
    """The full (serial) shape of ``name`` whose piece on a rank is ``shape``."""
    full = list(shape)
    if place["ep"] is not None:
        full[0] = shape[0] * place["ep"][1]                        # (E/ep, ...) -> (E, ...)
    elif place["tp"] is not None:
        axis = tp_axis(name)
        full[axis] = config.vocab_size if is_vocab(name) else shape[axis] * place["tp"][1]
    return tuple(full)


def piece_of(name, full, place):
    """This rank's piece of the full array (a copy): its experts' rows, then its tp shard."""
    if place["ep"] is not None:
        full = rows_of(full, *place["ep"])                         # (E/ep, ...)
    if place["tp"] is not None:
        return shard_of(name, full, *place["tp"])
    return full.copy()


def assemble(name, pieces, place, config):
    """The full array from the pieces of every (e, t) in ``pieces_needed`` order."""
    ep, tp = (place["ep"] or [0, 1])[1], (place["tp"] or [0, 1])[1]
    per_expert_block = [unshard(name, pieces[e * tp:(e + 1) * tp], config)
                        if place["tp"] is not None else pieces[e] for e in range(ep)]
    if place["ep"] is None:
        return per_expert_block[0]
    return xp.concatenate(per_expert_block, axis=0)                # (E, ...)


def stage_order(reports):
    """Every name once, stage by stage (pp order), in its stage's model order."""
    order, seen = [], set()
    for r in sorted(reports, key=lambda r: r["pp"]):
        for name, _, _ in r["names"]:
            if name not in seen:
                seen.add(name)
                order.append(name)
    return order


def writers(reports):
    """{name: [(source rank, local shape, placement)] of its writers, in pieces_needed order}."""
    found = {name: [] for name in stage_order(reports)}
    for source, r in enumerate(reports):
        for name, shape, place in r["names"]:
            if place["writes"]:
                found[name].append((source, shape, place))
    return {name: sorted(w, key=lambda item: piece_index(item[2])) for name, w in found.items()}


def check_writers(found):
    """None, or why the writers of some name do not cover it exactly once."""
    for name, items in found.items():
        have = [piece_index(place) for _, _, place in items]
        need = pieces_needed(items[0][2]) if items else ["(any)"]
        if have != need:
            return text("ckpt.writers", name=name, have=have, need=need,
                        ranks=[source for source, _, _ in items])
    return None
