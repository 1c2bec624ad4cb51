"""``minimegatron verify``: every parallel scheme, on every grid that fits, against one process.

The idea. Each scheme has a check in ``minimegatron/checks/`` that trains a
small GPT for a few AdamW steps from the same seed as ``serial_reference`` and
returns this rank's max |difference| of the loss, the gradients (after
backward) and the weights (after each step). This command calls those checks
for every scheme and grid and prints one table on rank 0:

    scheme      checks function                        grids on N ranks
    dp          data.check_data_parallel (master)      dp = every divisor d > 1 of N
    ddp         data.check_ddp                         dp = d
    zero1/2/3   data.check_zero(stage)                 dp = d
    fsdp2       fsdp.check_fsdp2 (each weight on dim 0) dp = d
    hsdp        fsdp.check_fsdp2(replicate 2 x shard)  dp = d even (replicate 2, shard d/2)
    tp          tensor.check_gpt                       tp = d
    tp-sp       tensor.check_gpt(sequence_parallel)    tp = d (d divides seq_len)
    pp-naive    pipeline.check_pipeline("naive", M=1)  pp = d
    pp-gpipe    pipeline.check_pipeline("gpipe", M=4)  pp = d
    pp-1f1b     pipeline.check_pipeline("1f1b", M=4)   pp = d
    3d          threed.check_3d (dp, pp, tp, M=2)      every dp*pp*tp = N with 2+ axes > 1
    pp-interleaved  pipeline.check_pipeline("interleaved", M=4, v=2 chunks)  pp = d
    pp-zb-h1    pipeline.check_pipeline("zb-h1", M=8)  pp = d; and dp = 2 x pp = N/2
    pp-zb-h2    the same, "zb-h2"                      (threed.check_3d: DDP over 2
    pp-zbv      the same, "zbv" (2 chunks in a V)       pipelines, pp a strict subgroup)
    pp-dualpipe     the same, "dualpipe", M = 2pp       pp = d (even; each stage held twice,
    pp-dualpipev    the same, "dualpipev", M = 2pp       grads summed over the mirror pair);
                                                        and dp = 2 x pp = N/2
    cp-ring     context.check_context_parallel("ring")       every dp x cp = N with cp > 1
    cp-allgather  context.check_context_parallel("allgather")  the same grids
    cp-ulysses  context.check_context_parallel("ulysses")    the same (heads divide by cp)
    4d-ring     threed.check_3d (dp, pp, tp, cp, "ring", M=2)  every dp*pp*tp*cp = N with
    4d-allgather  the same, "allgather"                        cp > 1 and tp or pp > 1
    4d-ulysses  the same, "ulysses"                            (H/tp heads divide by cp)
    moe-ep      moe.check_moe (E=8, top-2, capacity 1.0)   dp = N, ep = every divisor d > 1
    moe-dropless  the same, dropless (all_to_allv)         the same grids
    moe-3d      moe.check_moe with tp / pp (M=2) / cp      every dp*pp*tp = N with dp > 1 and
                (cp: dropless)                             tp or pp > 1, ep = dp; dp x tp x
                                                           cp=2 with ep = dp*cp; dp x pp=2 x
                                                           tp=2 x cp=2 with ep = dp*cp/2
    moe-zero1/2 moe.check_moe(zero_stage), dense over dp x cp,  dp = N, ep = N/2 (edp of 2)
                experts over edp (expert_parallel/zero.py)
    moe-sp      moe.check_moe(sequence_parallel)           dp = N/2, tp = 2, ep = N/2
    moe-recompute / moe-interleaved (v=2) / moe-zb (zb-h1)  dp = N/2, pp = 2, M = 2, ep = N/2
    moe-balanced  aux-loss-free balancing (the expert bias,  dp = N/2, cp = 2, ep = N/2,
                gamma 0.05, no aux loss; dropless), the      dropless; the biases count as
                loads summed over dp x cp                    weights ("weight" column)
    4d-sp       threed.check_3d (ring, sequence parallel)  the 4d-ring grids with tp > 1
    (the MoE feature rows train checks/composition.COMPOSE_CONFIG: 4 layers, 16 tokens;
    an odd world is a SKIP for SP and the pipeline features. ``verify --matrix`` prints which
    axes and features compose: checks/composition.py)

On one rank every scheme runs once with groups of 1. The data-parallel
schemes train demo.SMALL_CONFIG (2 layers), the context-parallel ones
demo.CONTEXT_CONFIG (the same with 16 tokens; also the 4d rows, so pp <= 2
layers and tp <= 4 heads); the others VERIFY_CONFIG (8 layers, 8 heads,
d_model 32); a cp row's grid reads "dp x pp x tp, M, cp". The MoE rows train
MoEGPT on SMALL_CONFIG (checks/moe.py), their grid adds "ep" (folded over dp x cp);
their tolerance is the MoEGPT's own drift (checks/moe.moe_sensitivity: in float16 a
one-ulp nudge flips some router choices, so it is looser than the dense GPT's).
Any world size works: the batch (8 for data and pipeline rows, 4 for tp and
cp, 16 for 3D) is rounded up to a multiple of dp x M,
pipelines split 8 layers as evenly as they can (3 stages: 3 + 3 + 2), and a
grid whose model cannot split (tp = 3 does not divide 8 heads, 16 stages
exceed 8 layers) is a SKIP with that reason, never a FAIL (``fit``); a
scheme with no grid at all on N ranks (3d, 4d-*, moe-3d on a prime N) is one SKIP
row that says what it needs: verify never drops a requested scheme. The
interleaved row needs K*v = 2K layer groups (K = 8: SKIP) and M = 4 a
multiple of K (K = 3: SKIP, the schedule's own rule); the zero-bubble rows need
M = 8 >= K (zb-h1) or >= 2K-1 (zb-h2, zbv: K = 8 is a SKIP) and zbv 2K layer groups;
the DualPipe rows run M = 2K, dualpipe an even K (odd: SKIP), dualpipev 2K layer groups.

A grid of d < N ranks runs on sub-communicators (``world.split(rank // d)``):
N/d copies of it run at once, so every rank takes part. Each row's diffs are
reduced with one all-reduce (max) over the world, NaN as a separate flag
(MPI's max may drop a NaN), so a NaN on any rank fails the row. A row whose
check raises on some ranks: the raising ranks wait (bounded) for the others
to report, so a failure seen by every rank becomes an ERROR row; if the others
never arrive (stuck in a collective), the job is aborted instead of hanging.

Tolerances (absolute, on loss, gradients and weights), derived per row from
the problem itself (``tolerance``): max(FLOOR, SAFETY x drift), where drift is
how far one process moves from ITSELF when every initial weight is nudged by
one unit in the last place (``checks.common.serial_sensitivity``, max over the
steps). A parallel scheme only reorders sums, which is rounding of that size,
so correct code stays within a small multiple of the drift at any ``--steps``.
FLOOR is 1e-9 in float64 and 1e-4 in float32: at the default 2 steps the drift
is ~1e-14 (float64) and ~4e-5 (float32 weights), and a missing all-reduce moves
gradients by ~1e-1 and weights by ~1e-2. Training amplifies rounding: for
VERIFY_CONFIG the float64 drift is 3e-10 at 20 steps and 1e-3 at 50; float32's
is 4e-2 at 20 steps. When a row needs a tolerance above WEAK (1e-3 float64,
1e-2 float32) the table warns that a small bug could hide in the drift.

Mixed precision (``--precision mixed``, the same as ``--dtype float16``): every
scheme trains the float16 model with float32 master weights, a dynamic loss scale
(found-inf MAX over every rank holding gradients: the dp, tp or pp group, the
whole world for 3D) and SGD, not AdamW (checks/precision.py says why: AdamW
moves a weight by +-lr whatever its gradient's size, so a float16 rounding that
flips a tiny gradient's sign moves it by 2 lr, as much as a bug). Two tests:

  (a) against ONE process in mixed precision, tight: max(EPS16, MIXED_SAFETY x
      drift), the drift from a one-ulp float16 nudge as above. One float16 ulp is
      2^-10 relative, so the nudge already moves the run about as far as a
      reordered float16 sum does (observed: parallel ~0.5-1 x drift); 4 x, not
      100 x (100 x would be ~0.1, a missing all-reduce's size).
  (b) against the float64 run of the same SGD, looser: |parallel - float64| <=
      (a) + |mixed serial - float64| (triangle inequality; the second term is
      one process's float16 error, checks.common.float64_gap), which must stay
      below VS_FLOAT64 = 8 eps16 (0.8%) of the float64 run's largest |loss|,
      |gradient| and |weight|: a few float16 roundings per layer.
      The table's "vs f64" is the worst bound / that tolerance (<= 1 passes).

bf16 and fp8 (``--dtype bfloat16``, ``--dtype fp8``): a bf16 model (ml_dtypes), float32
master weights, no loss scale (bf16 has float32's range), the same SGD; fp8 adds scaled
e4m3 / e5m2 matmuls in every block (autodiff/fp8.py). "Equal to one process", restated
honestly for these: bit for bit equal to ONE process that uses the same reduction order
(tests/test_bf16_parallel.py: DDP against one process summing the same half-batches in
float32 in rank order), and, against the usual one-process run, within a stated bound:

  (a) against one process in bf16 (fp8): max(EPS_BF16 = 2^-7, 4 x the drift of a one-ulp
      bf16 nudge); for fp8 gradients at least FLIPS = 2^-4 x the float32 run's largest
      |gradient| (a bf16-ulp change upstream flips an e4m3 rounding, 2^-3 relative).
      Observed at 2 steps: bf16 <= 4e-3, fp8 <= 1.2e-2 on gradients; a missing
      all-reduce ~0.2 (tests/test_verify.py plants it).
  (b) against float32 with the same SGD: (a) + one process's own bf16 (fp8) gap, at most
      8 (fp8: 16) x EPS_BF16 of the float32 run's largest |value|: "vs f32" <= 1.
      Observed 0.1-0.4.

Reductions of bf16 run in float32 on the wire (comm/wire.py) and inside every op
(autodiff/function.py); the fp8 rows cover the schemes whose matmuls go through
``x @ W`` (FP8_SCHEMES: sequence parallelism gathers its e4m3 bytes, the MoE experts run
a grouped fp8 matmul with a scale per expert), the others are a SKIP that says why. The
fp8 moe-balanced row leaves the expert biases out (FP8_NO_BIAS): a bias moves by a whole
gamma on the sign of (mean - load), and one token routed otherwise flips that sign.

The command (argparse, printing) is ``minimegatron/commands/verify.py``; this module
is the plain functions it calls (``run_rows``, ``table``).

    minimegatron run -n 8 verify       (one rank, plain minimegatron verify: nothing parallel)
    minimegatron run -n 4 verify --schemes ddp,tp --dtype float32 --steps 2
    minimegatron run -n 8 verify --precision mixed --steps 2
    minimegatron run -n 8 verify --dtype bfloat16        (and --dtype fp8)
"""
import dataclasses
import importlib
import time
import traceback

import numpy as np

from minimegatron import comm, i18n
from minimegatron.i18n import book_errors
from minimegatron.comm import comm_check
from minimegatron.runtime import faults
from minimegatron.checks.common import float64_gap, serial_sensitivity
from minimegatron.data.demo import CONTEXT_CONFIG, SMALL_CONFIG, VERIFY_CONFIG
from minimegatron.parallel.context_parallel.gpt import check_config as check_cp_config
from minimegatron.parallel.grid import ProcessGrid, factorisations
from minimegatron.parallel.pipeline_parallel.schedules import check_interleaved, get_schedule
from minimegatron.parallel.pipeline_parallel.stage import stage_layers
from minimegatron.parallel.split import padded
from minimegatron.parallel.tensor_parallel.gpt import check_tp_config
from minimegatron.parallel.tensor_parallel.sequence import check_sequence_length

FLOOR = {"float64": 1e-9, "float32": 1e-4}
SAFETY = 100.0
WEAK = {"float64": 1e-3, "float32": 1e-2}   # a tolerance above this cannot tell right from wrong
# --precision mixed (float16 model, float32 masters, loss scale, SGD: checks/precision.py).
EPS16 = 2.0 ** -10                          # float16's machine epsilon
FLOOR["float16"], WEAK["float16"] = EPS16, 1e-2
MIXED_SAFETY = 4.0        # x the float16 drift (see "Mixed precision" in the docstring)
VS_FLOAT64 = 8 * EPS16    # x the float64 run's largest |value| of each kind
# bf16 and fp8 (see "bf16 and fp8" in the docstring): no loss scale, the same SGD.
EPS_BF16 = 2.0 ** -7                        # bf16's machine epsilon (8 significant bits)
FLOOR["bfloat16"], WEAK["bfloat16"] = EPS_BF16, 2e-2
FLOOR["fp8"], WEAK["fp8"] = EPS_BF16, 5e-2
# (b) of each low precision: the run it is bounded against, and the bound's factor.
TWIN = {"float16": ("float64", VS_FLOAT64), "bfloat16": ("float32", 8 * EPS_BF16),
        "fp8": ("float32", 16 * EPS_BF16)}
# fp8: an element near a rounding boundary of e4m3 (3 mantissa bits) flips by an fp8 ulp when
# anything upstream moves by one bf16 ulp, so a reordered sum can move a gradient by up to
# half of e4m3's relative ulp 2^-3 of the largest one: the grad tolerance is at least FLIPS x
# the float32 run's max |gradient| (~0.03 here; a missing all-reduce moves one by ~0.2). The
# weights, bf16 roundings of float32 masters, keep the bf16 tolerance.
FLIPS = {"fp8": 2.0 ** -4}
# fp8 rows: the schemes whose Linear matmuls go through ``x @ W`` (autodiff/fp8.py),
FP8_SCHEMES = ("dp", "ddp", "zero1", "zero2", "zero3", "tp", "pp-naive", "pp-gpipe",
               "pp-1f1b", "3d", "pp-interleaved", "cp-ring", "cp-allgather", "cp-ulysses",
               "4d-ring", "4d-allgather", "4d-ulysses", "pp-zb-h1", "pp-zb-h2", "pp-zbv")
# sequence parallelism's fused gather (tensor_parallel/sequence_fp8.py: the e4m3 bytes
# travel) and the MoE experts (a grouped fp8 matmul, one scale per expert):
FP8_SCHEMES += ("tp-sp", "4d-sp")
FP8_SCHEMES += ("moe-ep", "moe-dropless", "moe-3d", "moe-zero1", "moe-zero2", "moe-sp",
                "moe-recompute", "moe-interleaved", "moe-zb", "moe-balanced")
# moe-balanced in fp8: each expert bias moves by +-gamma on sign(mean - load), and one token
# routed otherwise (an e4m3 rounding flipped by another rank's amax) flips a sign, a whole
# gamma step: its row compares the loss, the gradients and the weights, not the biases.
FP8_NO_BIAS = ("moe-balanced",)
KEYS = ("loss", "grad", "weight")
ABORT_AFTER_S = 60.0      # a rank that raised waits this long for the others to report


@dataclasses.dataclass(frozen=True)
class Scheme:
    """One row kind of the table: its label, its kind (which check) and micro-batches M."""
    label: str
    kind: str                 # "data", "tp", "pipe", "3d", "cp" or "4d" (cp with tp / pp)
    micro_batches: int = 1


# The one table of schemes, in the order verify runs them.
SCHEMES = {"dp": Scheme("DataParallel", "data"),
           "ddp": Scheme("DDP", "data"),
           "zero1": Scheme("ZeRO-1", "data"),
           "zero2": Scheme("ZeRO-2", "data"),
           "zero3": Scheme("ZeRO-3", "data"),
           "fsdp2": Scheme("FSDP2", "data"),
           "hsdp": Scheme("HSDP", "data"),
           "tp": Scheme("tensor", "tp"),
           "pp-naive": Scheme("pipe naive", "pipe", 1),
           "pp-gpipe": Scheme("pipe GPipe", "pipe", 4),
           "pp-1f1b": Scheme("pipe 1F1B", "pipe", 4),
           "3d": Scheme("3D", "3d", 2),
           "pp-interleaved": Scheme("pipe interleaved", "pipe", 4),
           "tp-sp": Scheme("tensor+seq", "tp"),
           "cp-ring": Scheme("cp ring", "cp"),
           "cp-allgather": Scheme("cp allgather", "cp"),
           "cp-ulysses": Scheme("cp Ulysses", "cp"),
           "4d-ring": Scheme("4D ring", "4d", 2),
           "4d-allgather": Scheme("4D allgather", "4d", 2),
           "4d-ulysses": Scheme("4D Ulysses", "4d", 2),
           "pp-zb-h1": Scheme("pipe ZB-H1", "zb", 8),
           "pp-zb-h2": Scheme("pipe ZB-H2", "zb", 8),
           "pp-zbv": Scheme("pipe ZBV", "zb", 8),
           "pp-dualpipe": Scheme("pp DualPipe", "dual", 2),
           "pp-dualpipev": Scheme("pp DualPipeV", "dual", 2),
           "moe-ep": Scheme("MoE ep", "moe"),
           "moe-dropless": Scheme("MoE dropless", "moe"),
           "moe-3d": Scheme("MoE ep+3D", "moe3d", 2),
           "moe-zero1": Scheme("MoE ZeRO-1", "moex"),
           "moe-zero2": Scheme("MoE ZeRO-2", "moex"),
           "moe-sp": Scheme("MoE tp+SP", "moex"),
           "moe-recompute": Scheme("MoE recomp.", "moex", 2),
           "moe-interleaved": Scheme("MoE interl.", "moex", 2),
           "moe-zb": Scheme("MoE ZB-H1", "moex", 2),
           "moe-balanced": Scheme("MoE bias bal.", "moex"),
           "4d-sp": Scheme("4D ring+SP", "4d", 2)}
CHECKS = {"data": "data", "tp": "tensor", "pipe": "pipeline", "3d": "threed",
          "cp": "context", "4d": "threed", "zb": "pipeline", "dual": "pipeline", "moe": "moe",
          "moe3d": "moe", "moex": "moe"}                                  # checks/<name>
BATCH = {"data": 8, "tp": 4, "pipe": 8, "3d": 16, "cp": 4,   # rounded up to a multiple of dp x M
         "4d": 4, "zb": 8, "dual": 8, "moe": 8, "moe3d": 8, "moex": 8}
INTERLEAVED_CHUNKS = 2    # v of pp-interleaved: 8 layers make K*v groups up to K = 4
NO_GRID = {"3d": "cli.verify.skip.rule_3d",      # why a kind has no grid on N: "dp x pp x tp
           "4d": "cli.verify.skip.rule_4d",      # with two axes > 1" (i18n/en_cli.py)
           "moe3d": "cli.verify.skip.rule_moe3d"}


def _checks(name):
    """minimegatron.checks.<name>, or None if it (or a scheme module it needs) is missing.

    Imported by name, not at the top, so a student copy without a scheme's module
    still verifies the others (that scheme's row says SKIP, not available).
    """
    try:
        return importlib.import_module(f"minimegatron.checks.{name}")
    except ModuleNotFoundError as err:
        if (err.name or "").startswith("minimegatron"):
            return None
        raise


def group_sizes(n):
    """The group sizes a world of n ranks is checked with: every divisor d > 1 (1 alone)."""
    return [1] if n == 1 else [d for d in range(2, n + 1) if n % d == 0]


def grids(scheme, world_size):
    """[(dp, pp, tp, M)] this scheme is checked on, for a world of ``world_size`` ranks
    ((dp, pp, tp, M, cp) for a context-parallel scheme: every dp x cp = N with cp > 1;
    for a 4d one every dp x pp x tp x cp = N with cp > 1 and tp or pp > 1)."""
    kind, m = SCHEMES[scheme].kind, SCHEMES[scheme].micro_batches
    if kind == "moe":                                   # (dp, pp, tp, M, cp, ep)
        return [(world_size, 1, 1, m, 1, ep) for ep in group_sizes(world_size)]
    if kind == "moe3d":
        rows = [(dp, pp, tp, m if pp > 1 else 1, 1, dp)
                for dp, pp, tp in factorisations(world_size) if dp > 1 and (pp > 1 or tp > 1)]
        if world_size % 4 == 0 and world_size > 4:
            rows.append((world_size // 4, 1, 2, 1, 2, world_size // 2))
        if world_size % 8 == 0:                                        # all four axes
            rows.append((world_size // 8, 2, 2, m, 2, world_size // 4))
        return rows
    if kind == "moex":                                  # one grid: the feature on ep rows
        return [moe_feature_grid(scheme, world_size)]
    if kind == "4d":
        return [(dp, pp, tp, m, cp) for cp in group_sizes(world_size) if cp > 1
                for dp, pp, tp in factorisations(world_size // cp)
                if (pp > 1 or tp > 1) and (tp > 1 or scheme != "4d-sp")]
    if kind == "cp":
        if world_size == 1:
            return [(1, 1, 1, m, 1)]
        return [(world_size // cp, 1, 1, m, cp) for cp in group_sizes(world_size)]
    if kind == "data":
        return [(d, 1, 1, m) for d in group_sizes(world_size)]
    if kind == "tp":
        return [(1, 1, d, m) for d in group_sizes(world_size)]
    if kind == "pipe":
        return [(1, d, 1, m) for d in group_sizes(world_size)]
    if kind == "dual":                        # M = 2 pp (the least both take); and dp = 2
        twice = group_sizes(world_size // 2) if world_size % 2 == 0 and world_size > 2 else []
        return ([(1, d, 1, m * d) for d in group_sizes(world_size)]
                + [(2, d, 1, m * d) for d in twice if d > 1])
    if kind == "zb":                          # also 2 data-parallel pipelines of N/2 stages
        twice = group_sizes(world_size // 2) if world_size % 2 == 0 and world_size > 2 else []
        return ([(1, d, 1, m) for d in group_sizes(world_size)]
                + [(2, d, 1, m) for d in twice if d > 1])
    return [(dp, pp, tp, m) for dp, pp, tp in factorisations(world_size)
            if sum(x > 1 for x in (dp, pp, tp)) >= 2]


def moe_feature_grid(scheme, n):
    """(dp, pp, tp, M, cp, ep) of an MoE feature row on n ranks: ZeRO dp = n with an edp group
    of 2 (n >= 4); SP tp = 2; the pipeline features pp = 2, M = 2; ep = what dp x cp leaves."""
    feature, m = scheme[4:], SCHEMES[scheme].micro_batches
    if n % 2:                                 # one process (or odd): fit says SKIP for SP, pp
        return (n, 1, 1, m, 1, 1)
    if feature in ("zero1", "zero2"):
        return (n, 1, 1, 1, 1, n // 2 if n >= 4 else n)
    if feature == "sp":
        return (n // 2, 1, 2, 1, 1, n // 2)
    if feature == "balanced":                 # the loads sum over dp x cp, cp = 2
        return (n // 2, 1, 1, 1, 2, n // 2)
    return (n // 2, 2, 1, m, 1, n // 2)


def moe_feature_options(scheme):
    """check_moe's options of an MoE feature row (moe-zero1 ... moe-zb)."""
    feature = scheme[4:]
    return {"zero_stage": int(feature[-1]) if feature.startswith("zero") else 0,
            "sequence_parallel": feature == "sp",
            "checkpoint_activations": feature == "recompute",
            "schedule": {"interleaved": "interleaved", "zb": "zb-h1"}.get(feature, "1f1b"),
            "chunks": INTERLEAVED_CHUNKS if feature == "interleaved" else 1}


def fit(scheme, dims):
    """(batch size, None) for a grid that can train its config, or (None, the reason why not).

    The batch is the scheme's usual one (BATCH) rounded up to a multiple of
    dp x M, so every world size gets its data-parallel rows; a model that does
    not split (heads or d_model over tp, fewer layers than stages) is a SKIP.
    """
    dp, pp, tp, m, cp = _unpack(dims)
    config = common_config(scheme)
    chunks = {"pp-interleaved": INTERLEAVED_CHUNKS, "pp-zbv": 2, "pp-dualpipev": 2}.get(
        scheme, 1)                            # dualpipe: two whole stages, pp layer groups
    try:
        if scheme == "hsdp" and dp % 2:
            raise ValueError(i18n.text("cli.verify.skip.hsdp", dp=dp))
        if SCHEMES[scheme].kind in ("moe", "moe3d", "moex"):
            _checks("moe").check_moe_fits(config, moe_config(scheme, cp), dims)
        if SCHEMES[scheme].kind == "moex":
            _moe_feature_fits(scheme, config, dims)
        if SCHEMES[scheme].kind in ("cp", "4d"):
            attention = _attention(scheme)
            check_cp_config(config, cp, attention,
                            "contiguous" if attention == "ulysses" else "zigzag", tp)
        check_tp_config(config, tp)
        stage_layers(config.n_layer, pp * chunks, 0)          # K*v layer groups
        if scheme == "pp-interleaved":
            check_interleaved(pp, m, chunks)                  # M a multiple of K
        if SCHEMES[scheme].kind in ("zb", "dual"):
            get_schedule(scheme[3:])(pp, m, 0)                # M >= K, 2K-1 or 2K; K even
        if scheme in ("tp-sp", "4d-sp"):
            check_sequence_length(config.seq_len // cp, tp)
    except ValueError as err:
        prefix = i18n.text("cli.verify.skip.chunks", chunks=chunks, pp=pp) if chunks > 1 else ""
        return None, prefix + str(err)
    return padded(BATCH[SCHEMES[scheme].kind], dp * m), None


def _attention(scheme):
    """The cp attention variant of a cp / 4d row ("4d-sp": ring with sequence parallelism)."""
    return "ring" if scheme == "4d-sp" else scheme[3:]


def _moe_feature_fits(scheme, config, dims):
    """ValueError unless an MoE feature row's grid has what its feature needs."""
    dp, pp, tp, m, cp = _unpack(dims)
    options = moe_feature_options(scheme)
    if options["sequence_parallel"] and tp == 1:
        raise ValueError(i18n.text("cli.verify.skip.sp_tp"))
    if scheme in ("moe-recompute", "moe-interleaved", "moe-zb") and pp == 1:
        raise ValueError(i18n.text("cli.verify.skip.needs_pp", scheme=scheme))
    stage_layers(config.n_layer, pp * options["chunks"], 0)
    if options["schedule"] == "interleaved":
        check_interleaved(pp, m, options["chunks"])
    if options["schedule"] == "zb-h1":
        get_schedule("zb-h1")(pp, m, 0)


def common_config(scheme):
    kind = SCHEMES[scheme].kind
    if kind == "moex":                      # 4 layers, 16 tokens: checks/composition.py's
        return _checks("composition").COMPOSE_CONFIG
    return (SMALL_CONFIG if kind in ("data", "moe", "moe3d")
            else CONTEXT_CONFIG if kind in ("cp", "4d") else VERIFY_CONFIG)


def _unpack(dims):
    """(dp, pp, tp, M, cp) of a row's dims (cp = 1 unless the row has a cp axis)."""
    return (tuple(dims) + (1,) * 5)[:5]


def moe_config(scheme, cp=1):
    """The MoEConfig of an MoE row: capacity 1.0 (drops), dropless for moe-dropless and cp;
    moe-balanced: the expert bias in place of the aux loss (checks/moe.BALANCED)."""
    moe = _checks("moe")
    if scheme == "moe-balanced":
        return moe.BALANCED
    return moe.DROPLESS if scheme == "moe-dropless" or cp > 1 else moe.MOE


def _with_dtype(config, dtype):
    """config in ``dtype``; "fp8" is a bf16 model whose blocks' matmuls run in fp8."""
    if dtype == "fp8":
        return dataclasses.replace(config, dtype="bfloat16", fp8=True)
    return dataclasses.replace(config, dtype=dtype)


def precision_of(config):
    """The FLOOR / WEAK / TWIN key of a config: its dtype, or "fp8"."""
    return "fp8" if getattr(config, "fp8", False) else config.dtype


def run_check(scheme, group, dims, dtype, steps, batch_size):
    """This rank's {"loss", "grad", "weight"} for one row (None: this rank compares nothing)."""
    dp, pp, tp, m, cp = _unpack(dims)
    config = _with_dtype(common_config(scheme), dtype)
    kind = SCHEMES[scheme].kind
    if scheme in ("fsdp2", "hsdp"):
        return _checks("fsdp").check_fsdp2(group, 2 if scheme == "hsdp" else 1, config=config,
                                           steps=steps, batch_size=batch_size)
    if kind == "data":
        data = _checks("data")
        if scheme == "dp":
            out = data.check_data_parallel(group, config=config, steps=steps,
                                           batch_size=batch_size)
            out["weight"] = max(out["weight"] or 0.0, out["final_weight"])
            return out
        if scheme == "ddp":
            return data.check_ddp(group, config=config, steps=steps, batch_size=batch_size)
        return data.check_zero(group, int(scheme[-1]), config=config, steps=steps,
                               batch_size=batch_size)
    if kind == "tp":
        return _checks("tensor").check_gpt(group, config, steps=steps, batch_size=batch_size,
                                           sequence_parallel=scheme == "tp-sp")
    if kind == "cp":
        return _checks("context").check_context_parallel(
            ProcessGrid(dp=dp, cp=cp, comm=group.comm), scheme[3:], config=config, steps=steps,
            batch_size=batch_size)
    if kind == "4d":
        return _checks("threed").check_3d((dp, pp, tp, cp), steps=steps, micro_batches=m,
                                          batch_size=batch_size, config=config,
                                          mpi_comm=group.comm, attention=_attention(scheme),
                                          sequence_parallel=scheme == "4d-sp")
    if kind in ("moe", "moe3d", "moex"):
        options = moe_feature_options(scheme) if kind == "moex" else {}
        out = _checks("moe").check_moe((dp, pp, tp, cp, dims[5]), moe_config(scheme, cp),
                                       steps=steps, micro_batches=m, batch_size=batch_size,
                                       config=config, mpi_comm=group.comm, **options)
        if dtype != "fp8" or scheme not in FP8_NO_BIAS:      # the expert biases: state too
            out["weight"] = max(out["weight"], out["bias"])
        return out
    if kind in ("zb", "dual") and dp > 1:     # DDP over dp pipelines (Trainer3D)
        return _checks("threed").check_3d((dp, pp, tp), steps=steps, schedule=scheme[3:],
                                          micro_batches=m, batch_size=batch_size,
                                          config=config, mpi_comm=group.comm)
    if kind in ("pipe", "zb", "dual"):
        return _checks("pipeline").check_pipeline(group, scheme[3:], m, config=config,
                                                  steps=steps, batch_size=batch_size,
                                                  chunks=INTERLEAVED_CHUNKS)
    return _checks("threed").check_3d((dp, pp, tp), steps=steps, micro_batches=m,
                                      batch_size=batch_size, config=config)


def available(scheme):
    return _checks(CHECKS[SCHEMES[scheme].kind]) is not None


def _agree_on_failure(error, world):
    """True if any rank failed. A failed rank waits at most ABORT_AFTER_S, then aborts all."""
    with comm_check.checking(False):   # a bounded wait needs the call itself not to block
        handle = comm.iall_reduce(np.array([0.0 if error is None else 1.0]), world, op="max")
    if error is not None:
        start = time.time()
        while not handle.test():
            if time.time() - start > ABORT_AFTER_S:
                faults.abort_job(f"[rank {world.rank}] verify: {error}[rank {world.rank}] "
                                 f"the other ranks did not report within {ABORT_AFTER_S:.0f}"
                                 " s (stuck in a collective?); aborting the job", 1)
            time.sleep(0.01)
    return bool(handle.wait()[0] > 0)


def run_row(scheme, dims, dtype, steps, world, split_cache):
    """One row on every rank: the check on this rank's sub-grid, diffs reduced over the world."""
    dp, pp, tp, m, cp = _unpack(dims)
    size, start, error = dp * pp * tp * cp, time.time(), None
    if scheme != "3d" and size not in split_cache:
        split_cache[size] = world.split(color=world.rank // size, name=f"verify{size}")
    diffs, (batch_size, reason) = {}, fit(scheme, dims)
    if dtype == "fp8" and scheme not in FP8_SCHEMES:
        reason = i18n.text("cli.verify.skip.fp8")
    if reason:                                  # decided alike on every rank, no message
        return _row(scheme, dims, None, "SKIP", 0.0, note=reason)
    try:
        group = split_cache.get(size)
        with comm_check.agreed_step(f"verify row {scheme}", {      # one check per group and
                "row": scheme, "dims": dims, "dtype": dtype,       # row, not one per call
                "steps": steps, "batch": batch_size}, groups=(group,) if group else ()):
            diffs = run_check(scheme, group, dims, dtype, steps, batch_size)
        moe = (moe_config(scheme, cp) if SCHEMES[scheme].kind in ("moe", "moe3d", "moex")
               else None)
        tol = tolerance(_with_dtype(common_config(scheme), dtype), steps, batch_size, moe)
    except Exception:  # noqa: BLE001 - every rank learns of it below
        error = traceback.format_exc()
    if _agree_on_failure(error, world):
        errors = comm.allgather_object(error, world)
        first = next(e for e in errors if e)
        last_line = first.strip().splitlines()[-1]
        return _row(scheme, dims, None, "ERROR", time.time() - start, note=last_line,
                    traceback=first)
    values = [-1.0 if diffs.get(k) is None else float(diffs[k]) for k in KEYS]
    is_nan = [float(np.isnan(v)) for v in values]       # MPI's max may drop a NaN: send a flag
    worst = comm.all_reduce(np.array(values + is_nan), world, op="max")
    worst = [float("nan") if worst[i + 3] else None if worst[i] < 0 else float(worst[i])
             for i in range(3)]
    ok = all(v is not None and v <= tol[k] for k, v in zip(KEYS, worst))   # NaN fails
    vs64 = None
    if dtype in TWIN:                 # (b): the bound against float64 (float32), / tolerance
        reference, factor = TWIN[dtype]
        twin = float64_gap(_with_dtype(common_config(scheme), dtype), steps, batch_size,
                           reference)
        vs64 = max((v + twin["gap"][k]) / (factor * twin["scale"][k])
                   for k, v in zip(KEYS, worst) if v is not None)
        ok = ok and vs64 <= 1.0
    unbiased = dtype == "fp8" and scheme in FP8_NO_BIAS
    return _row(scheme, dims, worst, "PASS" if ok else "FAIL", time.time() - start,
                tol=max(tol.values()), vs64=vs64,
                note="fp8: the expert biases are not compared" if unbiased else "")


def tolerance(config, steps, batch_size, moe=None):
    """{"loss", "grad", "weight"}: max(FLOOR, SAFETY x one process's drift from a 1-ulp nudge).

    See the module docstring: correct code passes at any ``--steps``, and the
    tolerance says how much the comparison can still tell apart. ``moe``: the MoEConfig
    of an MoE row, whose drift is the MoEGPT's (checks/moe.moe_sensitivity).
    """
    drift = (serial_sensitivity(config, steps, batch_size) if moe is None else
             _checks("moe").moe_sensitivity(config, moe, steps, batch_size))
    precision = precision_of(config)
    safety = MIXED_SAFETY if precision in TWIN else SAFETY
    tol = {k: max(FLOOR[precision], safety * drift[k]) for k in KEYS}
    if precision in FLIPS:            # fp8: one flipped rounding of the largest |value|
        scale = float64_gap(config, steps, batch_size, TWIN[precision][0])["scale"]
        tol["grad"] = max(tol["grad"], FLIPS[precision] * scale["grad"])
    return tol


def _row(scheme, dims, worst, status, seconds, note="", traceback=None, tol=None, vs64=None):
    dp, pp, tp, m, cp = _unpack(dims)
    loss, grad, weight = worst or (None, None, None)
    grid = f"{dp}x{pp}x{tp}, M={m}" + (f", cp={cp}" if len(dims) == 5 or cp > 1 else "")
    grid += f", ep={dims[5]}" if len(dims) > 5 else ""
    return {"scheme": scheme, "label": SCHEMES[scheme].label, "dp": dp, "pp": pp, "tp": tp, "M": m,
            "cp": cp, "grid": "-" if dims == (0, 0, 0, 0) else grid,
            "loss": loss, "grad": grad, "weight": weight, "tol": tol,
            "status": status, "seconds": round(seconds, 2), "note": note,
            "traceback": traceback, "vs64": vs64}


def _fmt(v):
    return "-" if v is None else f"{v:.1e}"


def _ratio(v):
    return "-" if v is None else f"{v:.2f}"


def progress_line(i, total, row):
    diffs = i18n.text("cli.verify.progress", loss=_fmt(row["loss"]), grad=_fmt(row["grad"]),
                      weight=_fmt(row["weight"]))
    return (f"[{i:>2}/{total}] {row['label']:<12} {row['grid']:<14} {diffs}  "
            f"{row['status']:<5} {row['seconds']:5.1f} s {skip_note(row['note'])}").rstrip()


def skip_note(note):
    """A row's note in the reader's language: a reason the book raised (in English) is read
    back by ``book_errors``; verify's own reasons are i18n texts already."""
    try:
        return book_errors.translate(note, i18n.language())
    except ValueError:                 # an unknown MINIMEGATRON_LANG: as it is
        return note


def table(rows, dtype):
    mixed = dtype in TWIN
    ref = TWIN[dtype][0].replace("float", "f") if mixed else ""
    head = i18n.text("cli.verify.head", vs64=f"{'vs ' + ref:>8}" if mixed else "")
    lines = [head, "-" * len(head)]
    for r in rows:
        status = r["status"] + (f" ({skip_note(r['note'])})" if r["status"] == "SKIP" else "")
        lines.append(f"{r['label']:<12} {r['grid']:<24}{_fmt(r['loss']):>15}{_fmt(r['grad']):>15}"
                     f"{_fmt(r['weight']):>17}{_fmt(r['tol']):>11}"
                     + (f"{_ratio(r['vs64']):>8}" if mixed else "") + f"  {status}")
    bad = [r for r in rows if r["status"] in ("FAIL", "ERROR")]
    skipped = sum(r["status"] == "SKIP" for r in rows)
    failed = (i18n.text("cli.verify.failed", rows=", ".join(f"{r['label']} {r['grid']}"
                                                             for r in bad))
              if bad else i18n.text("cli.verify.none_failed"))
    lines.append(i18n.text(
        "cli.verify.summary", passed=len(rows) - len(bad) - skipped, count=len(rows),
        skipped=skipped, dtype=dtype, floor=f"{FLOOR[dtype]:g}",
        safety=f"{MIXED_SAFETY if mixed else SAFETY:g}", failed=failed,
        vs64=i18n.text("cli.verify.vs64", scale=f"{TWIN[dtype][1]:g}", ref=ref,
                       reference=TWIN[dtype][0], half=dtype) if mixed else ""))
    if dtype in FLIPS:
        lines.append(i18n.text("cli.verify.flips", flips=f"{FLIPS[dtype]:g}"))
    weak = [r for r in rows if r["tol"] is not None and r["tol"] > WEAK[dtype]]
    if weak:
        lines.append(i18n.text("cli.verify.weak", count=len(weak), limit=f"{WEAK[dtype]:g}")
                     + (i18n.text("cli.verify.or_float64") if dtype == "float32" else "."))
    return "\n".join(lines)


def plan_rows(schemes, world_size):
    """[(scheme, dims or None)] in order; None: the scheme's module is not available;
    (): no grid of this kind fits the world. Every requested scheme has at least one."""
    plan = []
    for scheme in schemes:
        if not available(scheme):
            plan.append((scheme, None))
        else:
            plan += [(scheme, dims) for dims in grids(scheme, world_size)] or [(scheme, ())]
    return plan


def no_grid(scheme, world_size):
    """The SKIP reason of a scheme with no grid on ``world_size`` ranks."""
    rule = i18n.text(NO_GRID.get(SCHEMES[scheme].kind, "cli.verify.skip.rule_other"))
    return i18n.text("cli.verify.skip.no_grid", n=world_size, rule=rule)


def run_rows(schemes=None, dtype="float64", steps=3, progress=False):
    """Every (scheme, grid) row on this world, in order; the same list on every rank."""
    if dtype not in FLOOR:
        raise ValueError(f"dtype must be one of {sorted(FLOOR)}, got {dtype!r}")
    schemes = list(SCHEMES) if schemes is None else list(schemes)
    unknown = [s for s in schemes if s not in SCHEMES]
    if unknown:
        raise ValueError(f"unknown scheme(s) {unknown}; choose from {','.join(SCHEMES)}")
    world = comm.world()
    plan = plan_rows(schemes, world.size)
    rows, split_cache = [], {}
    for i, (scheme, dims) in enumerate(plan, 1):
        if dims is None:
            row = _row(scheme, (0, 0, 0, 0), None, "SKIP", 0.0,
                       note=i18n.text("cli.verify.skip.unavailable"))
        elif dims == ():                        # never dropped: a SKIP that says why
            row = _row(scheme, (0, 0, 0, 0), None, "SKIP", 0.0, note=no_grid(scheme, world.size))
        else:
            row = run_row(scheme, dims, dtype, steps, world, split_cache)
        rows.append(row)
        if progress:
            comm.print0(progress_line(i, len(plan), row))
    return rows
