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
from minimegatron.tools.memory import GB, model_state_bytes, sharded_state_bytes

FORMULA = {"weights": 2, "grads": 2, "optimizer": 12, "buffers": 4}
NAMES = {"weights": "float16 weights", "grads": "float16 gradients",
         "optimizer": "float32 master, m, v", "buffers": "DDP float32 reduce buffer"}


def mixed_text(per_param, counted, params=7.5e9, dp=64):
    """The table: measured bytes per parameter by kind (``per_param``, of a run of
    ``counted`` parameters) beside the formula, then ZeRO's stages for ``params`` on ``dp``."""
    out = [f"Mixed precision, bytes per parameter: measured on a float16 GPT of {counted} "
           "parameters (AdamW, DDP reducing in float32) | formula",
           f"{'':<28}{'measured':>9}{'formula':>9}"]
    for kind, name in NAMES.items():
        out.append(f"{name:<28}{per_param.get(kind, 0.0):9.1f}{FORMULA[kind]:9d}")
    state = sum(per_param[k] for k in ("weights", "grads", "optimizer"))
    out.append(f"{'total':<28}{sum(per_param.values()):9.1f}{sum(FORMULA.values()):9d}"
               f"   (model state {state:g} + buffer {per_param.get('buffers', 0.0):g})")
    out.append(f"ZeRO over N ranks, model state per parameter: stage 1 4 + 12/N, "
               f"stage 2 2 + 14/N, stage 3 16/N; {params / 1e9:g}B parameters, N = {dp} "
               "(GB = 1e9 bytes):")
    out.append(f"{'stage':<8}{'bytes/param':>12}{'measured GB':>13}{'formula GB':>12}")
    for zero in range(4):
        got = sharded_state_bytes(per_param, params, dp, zero)["total"]
        want = model_state_bytes(params, dp, zero)["total"]
        out.append(f"{zero:<8}{got / params:12.3f}{got / GB:13.1f}{want / GB:12.1f}")
    return "\n".join(out)
