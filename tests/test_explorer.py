"""The explorer page's arithmetic equals the command line's, to the byte.

docs/assets/explorer/calc.js (with schedule.js) is what the explorer page (docs/explorer.md)
computes with: a port of ``minimegatron.tools.memory.rank_report`` (memory per rank and bytes
per step, what ``minimegatron memory`` prints), of ``simulator.simulate`` (the timeline and its
idle fraction, what ``minimegatron timeline`` prints) and of ``scaling.step_time`` (the
predicted step time printed under the memory table; its integer FLOPs as BigInt). This test
runs those same files under node over thousands of random configurations (every precision, ZeRO stage, schedule, sequence
parallelism, recomputation, cp with each attention) and asserts every number equal to the
Python's: bytes exactly (==, the same double), every timeline slot exactly, the idle
fraction to 1e-12. Planted differences (one per kind of mistake: a constant, a sharding
rule, a schedule's warm-up, a term left out) must each be caught.

Skipped with a reason when node is missing, unless CI=true or MINIMEGATRON_REQUIRE_NODE is set
(.ci/run sets it and installs node): there it fails.
"""
import json
import os
import random
import re
import shutil
import subprocess

import pytest

from minimegatron.parallel.pipeline_parallel.schedules import bubble_formula, get_schedule, \
    peak_in_flight
from minimegatron.parallel.pipeline_parallel.simulator import simulate
from minimegatron.tools import memory, memory_moe, scaling

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXPLORER = os.path.join(ROOT, "docs", "assets", "explorer")
CALC = os.path.join(EXPLORER, "calc.js")            # it loads schedule.js from its folder
CASES = 3000
PLANT_CASES = 600                     # a planted mistake must show within the first 600
EXACT_BELOW = 2 ** 53                 # JavaScript integers are exact below this, as Python's

# Reads the configurations on stdin, prints what calc.js computes for each.
RUNNER = r"""
const calc = require(process.argv[1]);
const moe = require(require("path").join(require("path").dirname(process.argv[1]), "moe.js"));
const cases = JSON.parse(require("fs").readFileSync(0, "utf8"));
const out = cases.map(c => { try {
  const rows = [];
  for (let stage = 0; stage < c.pp; stage++) rows.push(calc.rankReport(c, stage));
  const sim = calc.simulate(c.schedule, c.pp, c.micro_batches, c.t_forward, c.t_backward, 2,
                            c.t_weight);
  const peaks = [];
  for (let k = 0; k < c.pp; k++)
    peaks.push(calc.peakInFlight(calc.program(c.schedule, c.pp, c.micro_batches, k, 2)));
  return {rows, sim, peaks, formula: calc.bubbleFormula(c.pp, c.micro_batches,
                                                        c.schedule === "interleaved" ? 2 : 1),
          check: calc.checkConfig(c), step: calc.stepTime(c),
          moe: c.experts ? moe.report(c) : null,
          moe_check: moe.check(c), params: calc.paramCount(
            {vocab: c.vocab, seq_len: c.seq, n_layer: c.layers, d_model: c.hidden})};
} catch (error) { return {error: String(error)}; } });
process.stdout.write(JSON.stringify(out));
"""


def node():
    exe = shutil.which("node")
    if exe is None:
        if os.environ.get("CI", "").lower() == "true" or \
                os.environ.get("MINIMEGATRON_REQUIRE_NODE"):
            pytest.fail("node is missing in CI: the explorer's arithmetic is not checked")
        pytest.skip("node is not installed (Debian: apt-get install nodejs); CI runs this")
    return exe


SCHEDULES = ["gpipe", "1f1b", "interleaved", "zb-h1", "zb-h2", "zbv", "dualpipe", "dualpipev"]
SPLIT = ("zb-h1", "zb-h2", "zbv", "dualpipe", "dualpipev")        # B and W apart: T_W > 0
LEAST = {"zb-h1": lambda K: K, "zb-h2": lambda K: 2 * K - 1, "zbv": lambda K: 2 * K - 1,
         "dualpipe": lambda K: 2 * K, "dualpipev": lambda K: 2 * K}  # the schedules' own M
LEAST.update(dict.fromkeys(("gpipe", "1f1b", "interleaved"), lambda K: 1))


def random_config(rng):
    """A configuration that ``minimegatron memory``'s check_config accepts."""
    while True:                       # odd sizes too: a rounding slip shows only on them
        tp, pp = rng.choice([1, 2, 3, 4, 6, 8]), rng.choice([1, 2, 3, 4, 5, 8])
        cp = rng.choice([1, 2, 3, 4])
        heads = tp * cp * rng.choice([1, 2, 3, 5])
        hidden = heads * rng.choice([8, 12, 20, 64, 96, 100])
        schedule = rng.choice(SCHEDULES)
        micro_batches = rng.randint(LEAST[schedule](pp), LEAST[schedule](pp) + 12)
        if schedule == "interleaved":
            micro_batches = pp * rng.randint(1, 4)
        if schedule == "dualpipe":
            micro_batches += micro_batches % 2
        if schedule == "dualpipe" and pp % 2:
            continue
        chunks = 2 if schedule in ("zbv", "dualpipev") else 1   # two chunks in a V
        c = dict(layers=chunks * pp * rng.randint(1, 12), hidden=hidden, heads=heads,
                 vocab=rng.choice([16, 50, 1000, 50257, 51200]),
                 seq=2 * cp * tp * rng.randint(1, 300),
                 micro_batch=rng.randint(1, 16), micro_batches=micro_batches,
                 dp=rng.choice([1, 2, 3, 4, 6, 8, 64]), pp=pp, tp=tp, cp=cp,
                 zero=rng.randint(0, 3), schedule=schedule, checkpoint=rng.random() < 0.4,
                 precision=rng.choice(list(memory.PRECISIONS)),
                 sequence_parallel=rng.random() < 0.4,
                 attention=rng.choice(list(memory.ATTENTION)),
                 t_forward=rng.choice([1.0, 0.5, 1.3, 0.1]),
                 t_backward=rng.choice([1.0, 2.0, 2.7, 0.3]),
                 t_weight=rng.choice([0.5, 1.0, 1.7] + ([] if schedule in SPLIT else [0.0] * 3)),
                 experts=rng.choice([2, 4, 8, 16, 64]), top_k=rng.randint(1, 2),
                 capacity_factor=rng.choice([0.5, 1.0, 1.25, 2.0, 0.3]),
                 moe_every=rng.randint(1, 3))
        c["ep"] = rng.choice([d for d in range(1, c["experts"] + 1)
                              if c["experts"] % d == 0 and c["dp"] * cp % d == 0])
        if 5 * heads * c["seq"] ** 2 * c["micro_batch"] * 8 < EXACT_BELOW:
            return c


def python_side(c):
    """What the command line computes for the configuration c."""
    g = memory.GPTShape(c["vocab"], c["seq"], c["layers"], c["hidden"], c["heads"])
    rows = [memory.rank_report(g, c["micro_batch"], c["micro_batches"], c["dp"], c["pp"],
                               c["tp"], stage, c["zero"], c["schedule"], c["checkpoint"],
                               c["precision"], c["sequence_parallel"], c["cp"],
                               c["attention"]) for stage in range(c["pp"])]
    chunks = 2 if c["schedule"] == "interleaved" else 1
    sim = simulate(c["schedule"], c["pp"], c["micro_batches"], c["t_forward"],
                   c["t_backward"], chunks, c["t_weight"])
    fn = get_schedule(c["schedule"], chunks)
    peaks = [peak_in_flight(fn(c["pp"], c["micro_batches"], k)) for k in range(c["pp"])]
    step = scaling.step_time(g, scaling.Hardware(), c["dp"], c["tp"], c["pp"], c["micro_batch"],
                             c["micro_batches"], c["checkpoint"],
                             memory.PRECISIONS[c["precision"]])
    moe = [dict(memory_moe.moe_rank_params(g, c["experts"], c["moe_every"], c["ep"], c["pp"],
                                           c["tp"], stage),
                ep=memory_moe.ep_bytes(g, c["experts"], c["top_k"], c["capacity_factor"],
                                       c["micro_batch"], c["micro_batches"], c["ep"], c["pp"],
                                       stage, c["moe_every"], c["precision"]))
           for stage in range(c["pp"])]
    buffer = memory_moe.dispatch_buffer_bytes(g, c["experts"], c["top_k"],
                                              c["capacity_factor"], c["micro_batch"],
                                              c["precision"])
    return rows, sim, peaks, bubble_formula(c["pp"], c["micro_batches"], chunks), \
        memory.param_count(g), step, {"stages": moe, "buffer": buffer}


def run_js(calc_path, cases):
    done = subprocess.run([node(), "-e", RUNNER, calc_path], input=json.dumps(cases),
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout, parse_int=float)   # JavaScript numbers are all doubles


KEYS = ("params", "weights", "grads", "optimizer", "activations", "ring_in_flight", "total")


def mismatches(cases, results, expected=None):
    """[(case, what differs)] between the page's numbers and the command line's
    (``expected``: python_side of each case, when already computed)."""
    found = []
    for c, js, want in zip(cases, results, expected or map(python_side, cases)):
        rows, sim, peaks, formula, params, step, moe = want
        if "error" in js:                     # calc.js threw where the Python computes
            found.append((c, js["error"]))
            continue
        bad = []
        for stage, (py, got) in enumerate(zip(rows, js["rows"])):
            bad += [(stage, k, py[k], got[k]) for k in KEYS if py[k] != got[k]]
            bad += [(stage, "comm " + k, py["comm"][k], got["comm"][k])
                    for k in py["comm"] if py["comm"][k] != got["comm"][k]]
        want = [[(s.start, s.end, s.op, s.micro_batch, s.chunk) for s in row]
                for row in sim.slots]
        have = [[(s["start"], s["end"], s["op"], s["mb"], s.get("chunk")) for s in row]
                for row in js["sim"]["slots"]]
        if want != have or sim.makespan != js["sim"]["makespan"]:
            bad.append(("timeline", want, have))
        if abs(sim.bubble_fraction - js["sim"]["bubble_fraction"]) > 1e-12 or \
                abs(sim.bubble - js["sim"]["bubble"]) > 1e-9:
            bad.append(("idle fraction / bubble", sim.bubble_fraction, sim.bubble,
                        js["sim"]["bubble_fraction"], js["sim"]["bubble"]))
        if peaks != js["peaks"] or [formula.numerator, formula.denominator] != js["formula"]:
            bad.append(("peaks / formula", peaks, js["peaks"], formula, js["formula"]))
        if params != js["params"] or js["check"] != "":
            bad.append(("param_count / check", params, js["params"], js["check"]))
        if step != js["step"]:
            bad.append(("step time", step, js["step"]))
        if moe != js["moe"] or js["moe_check"] != "":
            bad.append(("moe", moe, js["moe"], js["moe_check"]))
        if bad:
            found.append((c, bad))
    return found


@pytest.fixture(scope="module")
def cases():
    rng = random.Random(20261128)
    return [random_config(rng) for _ in range(CASES)]


@pytest.fixture(scope="module")
def expected(cases):
    return [python_side(c) for c in cases]


def test_the_page_computes_what_the_command_line_prints(cases, expected):
    results = run_js(CALC, cases)
    assert len(results) == len(cases)
    bad = mismatches(cases, results, expected)
    assert not bad, f"{len(bad)} of {len(cases)} configurations differ; first: {bad[0]}"
    # the random configurations reach every branch: each setting appears
    for key in ("precision", "zero", "schedule", "attention", "cp", "checkpoint",
                "sequence_parallel"):
        assert len({str(c[key]) for c in cases}) > 1, key
    assert any(r["rows"][0]["ring_in_flight"] > 0 for r in results)
    assert any(r["sim"]["bubble_fraction"] > 0.3 for r in results)
    for schedule in SCHEDULES:                # every schedule of the page, many times, W too
        assert sum(c["schedule"] == schedule for c in cases) > 150, schedule
    assert any(slot["op"] == "W" for r in results for row in r["sim"]["slots"] for slot in row)


PRINTED = [                                 # argv of `minimegatron memory`, as a student types
    "--layers 72 --hidden 3072 --heads 32 --dp 64 --tp 8 --zero 1 --checkpoint",
    "--layers 8 --hidden 512 --heads 8 --pp 2 --tp 2 --dp 4 --zero 2 --micro-batches 4 "
    "--sequence-parallel",
    "--layers 4 --hidden 256 --heads 8 --pp 4 --cp 2 --attention allgather --dp 2 "
    "--micro-batches 8 --schedule gpipe --precision float32",
]


@pytest.mark.parametrize("argv", PRINTED)
def test_the_page_shows_the_table_the_command_prints(argv, capsys):
    """Each stage's row of ``minimegatron memory``'s table, as printed, from calc.js."""
    from minimegatron.commands import memory as command
    command.main(argv.split())
    printed = [line.split() for line in capsys.readouterr().out.splitlines()
               if re.match(r"\s+\d+\s+[\d,]+\s+\d", line)]
    a = command.parser().parse_args(argv.split())
    c = {key: getattr(a, key) for key in ("layers", "hidden", "heads", "vocab", "seq",
                                          "micro_batch", "micro_batches", "dp", "pp", "tp",
                                          "cp", "zero", "schedule", "checkpoint", "precision",
                                          "sequence_parallel", "attention")}
    c.update(t_forward=1.0, t_backward=1.0)
    rows = run_js(CALC, [c])[0]["rows"]
    assert len(printed) == a.pp == len(rows)
    for stage, (line, js) in enumerate(zip(printed, rows)):
        size = 1e9 if max(r["total"] for r in rows) >= 1e9 else 1e6
        shown = [js[k] for k in ("weights", "grads", "optimizer", "activations", "total")]
        shown += [js["comm"][k] for k in ("dp", "tp", "pp") + (("cp",) if a.cp > 1 else ())]
        assert line == [str(stage), f"{int(js['params']):,d}"] + [f"{x / size:.2f}" for x in shown]


# One planted mistake per kind: (what, text in calc.js, its wrong replacement).
PLANTED = [
    ("Adam's 12 bytes in mixed precision", "optimizer: precision === MIXED ? 12",
     "optimizer: precision === MIXED ? 8"),
    ("ZeRO-2 not sharding the gradients", "grads: params * perParam.grads / (zero >= 2",
     "grads: params * perParam.grads / (zero >= 3"),
    ("replicated LayerNorms split by tp", "idiv(12 * h * h + 7 * h, t) + 6 * h",
     "idiv(12 * h * h + 13 * h, t)"),
    ("sequence parallel not splitting the 10sbh", "return sbh * (10 / split + 24 / t + att",
     "return sbh * (10 + 24 / t + att"),
    ("1F1B warm-up one too many", "var warm = Math.min(K - k - 1, M);",
     "var warm = Math.min(K - k, M);"),
    ("1F1B holding K micro-batches on every stage", "return Math.min(M, pp - stage);",
     "return Math.min(M, pp);"),
    ("the ring's in-flight buffers left out", "r.total += r.activations + r.ring_in_flight;",
     "r.total += r.activations;"),
    ("ZeRO-1 counted as an all-reduce", "(zero === 1 || zero === 3 ? 3 : 2)",
     "(zero === 3 ? 3 : 2)"),
    ("float rounding: the same sum in another order",
     "return sbh * (10 / split + 24 / t + attentionTerm);",
     "return sbh * 10 / split + sbh * 24 / t + sbh * attentionTerm;"),
    ("float rounding: another product order", "return held * layers * perLayer;",
     "return held * (layers * perLayer);"),
    ("interleaved's pp sends counted as 1F1B's", "sends = 2 * 2 -", "sends = 2 * 1 -"),
    ("the V's pp sends counted as 1F1B's", "sends = 2 * sends;", "sends = 1 * sends;"),
    ("dualpipe's dp gradients of one stage",
     "var grads = pipelineParamCount(g, pp, tp, stage, schedule) * b;",
     "var grads = rankParamCount(g, pp, tp, stage) * b;"),
    ("ZB-H1 holding one more before its W", 'return K - k; }, K, "zb-h1"',
     'return K - k; }, K + 1, "zb-h1"'),
    ("ZBV's cool-down B0 W0 as W0 B0", 'run("B", 0); run("W", 0); }',
     'run("W", 0); run("B", 0); }'),
    ("DualPipe's W last in, first out", "out.push(waiting.shift())", "out.push(waiting.pop())"),
    ("DualPipe's messages placed in a loop", 'schedule === "zbv" || schedule === "dualpipe" ||',
     'schedule === "zbv" ||'),
    ("W's activations released at B", '? "weight"\n', '? "backward"\n'),
    ("dualpipe holding its stage once", "(pp - 1 - stage === stage ? 0 :", "(true ? 0 :"),
    ("MoE: the all-to-all's backward left out", "return M * nP * 4 *", "return M * nP * 2 *"),
    ("MoE: the experts' MLP split by tp", "idiv(nP * experts, ep) * expertSize(h)",
     "idiv(nP * experts, ep * tp) * expertSize(h)"),
    ("MoE: the capacity rounded down", "return Math.ceil(topK", "return Math.floor(topK"),
    ("the step time without the bubble", "BigInt(M + pp - 1) * flopsMb", "BigInt(M) * flopsMb"),
    ("the backward as long as the forward", "backward: (tB + (split", "backward: (tF + (split"),
]


def planted_copy(folder, right, wrong):
    """calc.js and schedule.js copied into folder, ``right`` replaced by ``wrong`` in the one
    file that has it; the copy's calc.js."""
    found = 0
    for name in ("calc.js", "schedule.js", "zb.js", "moe.js"):
        with open(os.path.join(EXPLORER, name), encoding="utf-8") as file:
            source = file.read()
        found += source.count(right)
        (folder / name).write_text(source.replace(right, wrong), encoding="utf-8")
    assert found == 1, f"the explorer's files have {right!r} {found} times, not once"
    return str(folder / "calc.js")


@pytest.mark.parametrize("what, right, wrong", PLANTED, ids=[p[0] for p in PLANTED])
def test_a_planted_difference_is_caught(cases, expected, tmp_path, what, right, wrong):
    """On the first PLANT_CASES configurations (every schedule and setting is among them), to
    keep the mutants' node runs short."""
    planted = planted_copy(tmp_path, right, wrong)
    some = cases[:PLANT_CASES]
    bad = mismatches(some, run_js(planted, some), expected[:PLANT_CASES])
    assert bad, f"the test did not notice {what}"


DIVIDE = r"""
const calc = require(process.argv[1]);
const pairs = JSON.parse(require("fs").readFileSync(0, "utf8"));
process.stdout.write(JSON.stringify(pairs.map(([a, b]) => calc.bigDivide(BigInt(a), BigInt(b)))));
"""

DIVIDE_PLANTED = [("two roundings", "return Number(q) / Math.pow(2, Number(shift));",
                   "return Number(scaled) / Number(b) / Math.pow(2, Number(shift));")]


def divide(calc_path, pairs):
    done = subprocess.run([node(), "-e", DIVIDE, calc_path],
                          input=json.dumps([[str(a), str(b)] for a, b in pairs]),
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout, parse_int=float)


@pytest.mark.parametrize("plant", [None] + DIVIDE_PLANTED,
                         ids=["calc.js"] + [p[0] for p in DIVIDE_PLANTED])
def test_big_integer_division_rounds_once_as_pythons(plant, tmp_path):
    """The step time divides integer FLOPs past 2^53: bigDivide(a, b) is Python's a / b, the
    exact quotient rounded once, also on the ties where rounding twice goes the other way."""
    rng = random.Random(7)
    pairs = [(rng.randrange(1, 1 << rng.choice([40, 60, 80, 120])), rng.randrange(1, 1 << 12))
             for _ in range(4000)]
    pairs += [((1 << 54) + 1, 1), ((1 << 53) + 1, 1), (3 * ((1 << 53) + 1), 3)]   # ties
    got = divide(planted_copy(tmp_path, *plant[1:]) if plant else CALC, pairs)
    wrong = [(a, b, a / b, x) for (a, b), x in zip(pairs, got) if a / b != x]
    assert bool(wrong) == bool(plant), wrong[:3]
