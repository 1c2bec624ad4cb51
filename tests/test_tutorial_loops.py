"""Every tutorial is its lesson's loop in the open: it calls its scheme itself, and it
compares with one process itself.

Read from each tutorial's source (ast), not from its output:
- it CALLS its scheme's own function or class (the table below: ring attention in 12,
  the dropless dispatch in 14, the pipeline engine in 13...), in the tutorial file;
- it imports nothing from ``minimegatron.checks`` (a check would run the scheme for it;
  the byte formulas it prints beside its loop come from tools/memory.py);
- the tutorials that train (every one from 02 on, but the collectives of 01) build a
  one-process model or reference themselves and step an optimizer.
The rule is proven to fail on synthetic sources: a tutorial that reaches its scheme
through checks/ and one that never calls it.
"""
import ast
import os

import pytest

TUTORIALS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                         "tutorials")

# tutorial -> the names of its scheme (at least one must be called in the tutorial itself)
SCHEME = {
    "00": {"GPT", "backward"},
    "01": {"all_reduce", "all_gather", "reduce_scatter", "broadcast"},
    "02": {"ColumnParallelLinear", "RowParallelLinear"},
    "03": {"ParallelMLP"},
    "04": {"ParallelGPT"},
    "05": {"DataParallel", "DistributedDataParallel"},
    "06": {"zero_optimizer"},
    "07": {"PipelineEngine"},
    "08": {"Trainer3D"},
    "09": {"PipelineEngine", "ChunkedStage"},
    "10": {"ParallelGPT"},
    "11": {"MixedPrecisionOptimizer", "DynamicLossScaler"},
    "12": {"ring_attention"},
    "13": {"PipelineEngine"},
    "14": {"dispatch_dropless", "MoETrainer"},
}
FROM_CHECKS = set()           # what a tutorial may import from checks/: nothing
# a one-process reference the tutorial builds itself (a serial model) and an optimizer step
SERIAL = {"GPT", "MoEGPT", "Linear", "MLP", "causal_attention"}
OPTIMIZER_STEP = {"step", "train_step"}


def tutorial_files():
    return sorted(f for f in os.listdir(TUTORIALS) if f[:2].isdigit() and f.endswith(".py"))


def called_names(tree):
    """Every name a call in ``tree`` calls: f(...) -> f, a.b.f(...) -> f."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            func = node.func
            names.add(func.id if isinstance(func, ast.Name) else getattr(func, "attr", None))
    return names


def from_checks(tree):
    """The names imported from minimegatron.checks (a module import counts as '*')."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith(
                "minimegatron.checks"):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.Import):
            names |= {"*" for alias in node.names if alias.name.startswith("minimegatron.checks")}
        elif isinstance(node, ast.ImportFrom) and node.module == "minimegatron":
            names |= {"*" for alias in node.names if alias.name == "checks"}
    return names


def problems(number, source):
    """What breaks the rule in one tutorial's source ([] when it holds)."""
    tree, found = ast.parse(source), []
    calls = called_names(tree)
    if not calls & SCHEME[number]:
        found.append(f"tutorial {number} never calls its scheme ({sorted(SCHEME[number])})")
    extra = from_checks(tree) - FROM_CHECKS
    if extra:
        found.append(f"tutorial {number} imports {sorted(extra)} from minimegatron.checks")
    if number not in ("00", "01"):
        if not calls & OPTIMIZER_STEP:
            found.append(f"tutorial {number} takes no optimizer step itself")
        if not calls & SERIAL and "one_process" not in source:
            found.append(f"tutorial {number} builds no one-process reference itself")
    return found


def test_every_tutorial_is_listed():
    assert sorted(f[:2] for f in tutorial_files()) == sorted(SCHEME)


@pytest.mark.parametrize("name", tutorial_files())
def test_the_tutorial_runs_its_scheme_and_compares_with_one_process(name):
    with open(os.path.join(TUTORIALS, name), encoding="utf-8") as f:
        assert problems(name[:2], f.read()) == []


def test_the_rule_fails_on_synthetic_tutorials():
    through_checks = ("from minimegatron.checks.context import check_attention\n"
                      "def main():\n    check_attention(4)\n")
    assert any("imports ['check_attention']" in p for p in problems("12", through_checks))
    assert any("never calls its scheme" in p for p in problems("12", through_checks))
    whole_module = "import minimegatron.checks.moe\ndef main():\n    dispatch_dropless(1)\n"
    assert any("imports ['*']" in p for p in problems("14", whole_module))
    no_reference = ("from minimegatron.parallel.pipeline_parallel import PipelineEngine\n"
                    "def main():\n    e = PipelineEngine(1)\n")
    found = problems("13", no_reference)
    assert any("no optimizer step" in p for p in found)
    assert any("no one-process reference" in p for p in found)
    honest = ("from minimegatron.nn import GPT\nfrom minimegatron.parallel.context_parallel "
              "import ring_attention\ndef main():\n    ring_attention(1)\n    s = GPT(1)\n"
              "    opt.step()\n")
    assert problems("12", honest) == []
