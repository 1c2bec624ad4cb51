"""Exercise 8.2's point ``callers``: two callers of ``zigzag.positions`` share nothing.

In training, ``split_sequence`` and ``unsplit_sequence`` each call ``positions``, for
every rank and for q, k and v; a caller may shift the positions it got in place (the
positions of a second sequence packed behind the first). So each call must return
an array of its own:

    held     every rank's positions asked for in turn and all held: each still holds
             its own rank's values when the last call returns (no buffer reused)
    shifted  each caller then adds S to its array in place (where the array takes it);
             asking again gives the right positions (no cached array handed out twice)

The student side records both as lists, and each rank's answer read at once, before
any other call ("alone"); the judge compares held and again with alone (whether alone
is the right zigzag is the point mirror's).
"""
from minimegatron.classroom.exercise_checks.common import CheckFailed
from minimegatron.i18n import text

STEPS, CP = 24, 3           # 2cp = 6 chunks of 4 tokens


def collect_callers():
    """{"alone": [[...] per rank, each read before the next call], "held": [...],
    "again": [...]} or {"error": text}."""
    import numpy as np
    from minimegatron.backend import to_numpy
    from minimegatron.parallel.context_parallel.zigzag import positions
    def values(a):
        return [int(p) for p in np.asarray(to_numpy(a)).ravel()]
    try:
        out = {"alone": [values(positions(STEPS, rank, CP, "zigzag")) for rank in range(CP)]}
        held = [positions(STEPS, rank, CP, "zigzag") for rank in range(CP)]
        out["held"] = [values(a) for a in held]
        for a in held:
            try:
                a += STEPS                           # a caller shifting its own positions
            except (TypeError, ValueError):
                pass                                 # a read-only array: nobody can share it
        again = [positions(STEPS, rank, CP, "zigzag") for rank in range(CP)]
        out["again"] = [values(a) for a in again]
    except NotImplementedError:
        raise
    except Exception as err:   # noqa: BLE001 -- a wrong answer may raise: that is evidence
        return {"error": f"{type(err).__name__}: {err}"}
    return out


def judge_callers(ranks, seed):
    """Each held or repeated answer equals what the same call gave alone (whether that
    is the right zigzag is mirror's point, not this one's)."""
    for ev in ranks:
        got = ev["callers"]
        if "error" in got:
            raise CheckFailed(text("cp.raised", steps=STEPS, cp=CP, rank="*",
                                   error=got["error"]))
        for key in ("held", "again"):
            for rank, values in enumerate(got[key]):
                want = got["alone"][rank]
                if values != want:
                    raise CheckFailed(text(f"cp.callers_{key}", steps=STEPS, cp=CP,
                                           rank=rank, got=values, want=want))
