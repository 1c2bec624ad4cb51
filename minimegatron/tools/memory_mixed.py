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

bf16 and fp8 (``precision_text``). A bf16 run holds the same 2 + 2 + 12 + 4 = 20 (bf16
weights and gradients, float32 master, m, v, DDP's float32 buffer), measured the same way;
fp8 holds the same model state too (its weights stay bf16; fp8 lives inside the matmuls).
Where fp8 saves is what backward keeps of the blocks' matmuls (``matmul_saved_bytes``),
per block and token, d = d_model (inputs of qkv, proj, fc1: d each; of fc2: 4d):

    bf16   X: 7d values x 2 bytes                    (W is the parameter itself: no copy)
    fp8    X: 7d values x 1 byte, + the e4m3 copy of W: 12 d^2 bytes per block (per step)
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


BF16_FORMULA = {"weights": 2, "grads": 2, "optimizer": 12, "buffers": 4}   # = FORMULA


def matmul_saved_formula(config, tokens):
    """Bytes backward keeps for the blocks' matmuls (the module docstring's formula)."""
    d, layers = config.d_model, config.n_layer
    if getattr(config, "fp8", False):
        return layers * (7 * d * tokens * 1 + 12 * d * d)
    return layers * 7 * d * tokens * 2


def matmul_saved_bytes(model, loss):
    """Bytes the graph of ``loss`` keeps for the blocks' Linear matmuls, measured: every
    array saved by a matmul node whose weight is a 2-D parameter of ``model.blocks``, not
    counting the parameters themselves (saved by reference)."""
    from minimegatron.tools.memory_measure import owner
    weights = {id(p): p for p in model.blocks.parameters() if p.ndim == 2}
    params = {id(owner(p.data)) for p in model.parameters()}
    total, seen, stack = 0, set(), [loss._node]
    while stack:
        node = stack.pop()
        if node is None or id(node) in seen:
            continue
        seen.add(id(node))
        inputs = list(node.inputs)
        if len(inputs) > 1 and inputs[1] is not None and id(inputs[1]) in weights:
            total += sum(a.nbytes for a in node.ctx.saved if id(owner(a)) not in params)
        stack += [t._node for t in inputs if t is not None and t._node is not None]
    return int(total)


def precision_text(rows):
    """bf16 and fp8 next to float16: measured bytes per parameter | formula, then the bytes
    backward keeps of the blocks' matmuls. ``rows``: [(name, per_param, (measured, formula))]."""
    out = [say("report.precision.title"),
           fit("", 28, "<") + "".join(fit(name, 16) for name, _, _ in rows)]
    for kind in BF16_FORMULA:
        out.append(fit(say(f"report.precision.{kind}"), 28, "<") + "".join(
            fit(f"{per.get(kind, 0.0):.1f} | {BF16_FORMULA[kind]}", 16) for _, per, _ in rows))
    out.append(fit(say("report.precision.total"), 28, "<") + "".join(
        fit(f"{sum(per.values()):.1f} | {sum(BF16_FORMULA.values())}", 16)
        for _, per, _ in rows))
    out.append(fit(say("report.precision.saved"), 28, "<") + "".join(
        fit(f"{got} | {want}", 16) for _, _, (got, want) in rows))
    return "\n".join(out)
