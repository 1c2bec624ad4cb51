"""A scheme takes its optimizer and model as arguments: nothing in parallel/ imports a demo.

DESIGN.md section 1: "A scheme ... never imports a demo or a tool." Every ``.py``
under minimegatron/parallel is parsed; an import of ``minimegatron.data.demo``
(the demo's configs and its ``make_optimizer``) fails, wherever it sits.
"""
import ast
import os

ROOT = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "minimegatron")
DEMO = "minimegatron.data.demo"


def demo_imports(source, name):
    """'name:line' of every import of the demo in ``source``."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and node.module and (
                node.module == DEMO or node.module == "minimegatron.data" and
                any(alias.name == "demo" for alias in node.names)):
            found.append(f"{name}:{node.lineno}")
        elif isinstance(node, ast.Import) and any(a.name == DEMO for a in node.names):
            found.append(f"{name}:{node.lineno}")
    return found


def test_no_scheme_imports_the_demo():
    found, files = [], 0
    for folder, _, names in os.walk(os.path.join(ROOT, "parallel")):
        for name in names:
            if name.endswith(".py"):
                files += 1
                path = os.path.join(folder, name)
                with open(path) as f:
                    found += demo_imports(f.read(), os.path.relpath(path, ROOT))
    assert files > 20, files
    assert found == [], found


def test_the_check_catches_a_scheme_importing_the_demo():
    assert demo_imports("def f():\n    from minimegatron.data.demo import make_optimizer\n",
                        "threed.py") == ["threed.py:2"]
    assert demo_imports("from minimegatron.data import demo\n", "x.py") == ["x.py:1"]
    assert demo_imports("from minimegatron.data.loader import batches\n", "x.py") == []
