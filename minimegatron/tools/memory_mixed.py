"""``minimegatron memory mixed``: bytes per parameter under mixed precision, measured.

One process trains demo.SMALL_CONFIG in float16 for two AdamW steps
(``checks.mixed.measured_per_param``: run_mixed, DDP on a group of one rank so
its float32 reduce buffer exists) and ``tools/memory_measure.measure`` counts the
arrays it holds between backward and the step; ``mixed_text`` sets those bytes
next to the formula (ZeRO paper, K = 12):

    float16 weights 2 + float16 grads 2 + float32 master, m, v 12 = 16 (model state)
    + DDP's float32 gradient / communication buffer 4              = 20

Then ZeRO over N ranks shards the 16 (stage 1: 4 + 12/N, stage 2: 2 + 14/N,
stage 3: 16/N), and the 7.5B, Nd = 64 example runs through the same
``tools.memory.sharded_state_bytes`` with the MEASURED bytes per parameter.
"""
from minimegatron.i18n import text as say
from minimegatron.i18n.columns import fit
from minimegatron.tools.memory import GB, model_state_bytes, sharded_state_bytes

FORMULA = {"weights": 2, "grads": 2, "optimizer": 12, "buffers": 4}
NAMES = {"weights": "weights16", "grads": "grads16", "optimizer": "master",
         "buffers": "buffers"}                                   # report.row.* (i18n)


def mixed_text(per_param, counted, params=7.5e9, dp=64):
    """The table: measured bytes per parameter by kind (``per_param``, of a run of
    ``counted`` parameters) beside the formula, then ZeRO's stages for ``params`` on ``dp``."""
    out = [say("report.mixed.title", count=counted),
           " " * 28 + fit(say("report.col.measured"), 9) + fit(say("report.col.formula"), 9)]
    for kind, name in NAMES.items():
        out.append(fit(say(f"report.row.{name}"), 28, "<")
                   + f"{per_param.get(kind, 0.0):9.1f}{FORMULA[kind]:9d}")
    state = sum(per_param[k] for k in ("weights", "grads", "optimizer"))
    out.append(fit(say("report.row.total"), 28, "<")
               + f"{sum(per_param.values()):9.1f}{sum(FORMULA.values()):9d}"
               + say("report.mixed.state", state=state, buffer=per_param.get("buffers", 0.0)))
    out.append(say("report.mixed.zero", billions=params / 1e9, dp=dp))
    out.append(fit(say("report.col.stage"), 8, "<") + fit(say("report.col.bytes_param"), 12)
               + fit(say("report.col.measured_gb"), 13) + fit(say("report.col.formula_gb"), 12))
    for zero in range(4):
        got = sharded_state_bytes(per_param, params, dp, zero)["total"]
        want = model_state_bytes(params, dp, zero)["total"]
        out.append(f"{zero:<8}{got / params:12.3f}{got / GB:13.1f}{want / GB:12.1f}")
    return "\n".join(out)
