"""The layer tree holds: data flows one way, and only comm/ and runtime/ touch mpi4py.

Every ``.py`` under ``minimegatron/`` is parsed with ``ast``; every import (at
the top of a file or inside a function) is mapped to the layer it names, and
an import may only reach a strictly lower tier or its own layer. Layers in one
tier are siblings: neither imports the other. The root ``__init__``/``__main__``
are the package's face and may import anything; nothing imports the root
package itself (a path goes through a layer's own ``PACKAGE_DIR``).
"""
import ast
import os

import pytest

ROOT = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "minimegatron")

# Bottom to top (DESIGN.md section 1). A layer imports strictly lower tiers, or itself.
LAYERS = [
    ("backend", "i18n"),
    ("runtime",),
    ("autodiff",),
    ("nn", "optim"),
    ("data",),
    ("comm",),
    ("mixed_precision",),
    ("parallel",),
    ("tools",),
    ("checks",),
    ("classroom",),
    ("commands",),
]
TIER = {layer: tier for tier, names in enumerate(LAYERS) for layer in names}
FACE = "face"                      # minimegatron/__init__.py, __main__.py
MPI_LAYERS = ("comm", "runtime")   # the only layers that may import mpi4py


def module_name(relpath):
    """'autodiff/ops.py' -> 'minimegatron.autodiff.ops'; '__init__.py' -> 'minimegatron'."""
    parts = ["minimegatron"] + relpath[:-len(".py")].split("/")
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def layer_of_module(name):
    """The layer of a dotted module inside the package: its first component below the root."""
    parts = name.split(".")
    if parts[0] != "minimegatron":
        return None
    if len(parts) == 1 or parts[1] in ("__init__", "__main__"):
        return FACE
    return parts[1]


def layer_of_file(relpath):
    """'comm/local.py' -> 'comm'; the root's __init__.py and __main__.py are the face."""
    if relpath in ("__init__.py", "__main__.py"):
        return FACE
    return layer_of_module(module_name(relpath))


def imported_modules(tree, relpath):
    """(line, dotted module) for every import in the tree, relative ones resolved.

    ``from minimegatron import x`` names the submodule ``minimegatron.x``, so it lands
    in x's layer, not the root's.
    """
    package = module_name(relpath)
    if not relpath.endswith("__init__.py"):
        package = package.rpartition(".")[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[:len(package.split(".")) - node.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            for alias in node.names:
                if base == "minimegatron":
                    yield node.lineno, f"minimegatron.{alias.name}"
                else:
                    yield node.lineno, base


def violations(source, relpath):
    """Lines 'file:line: <layer> imports <module> (<layer>), against the flow' for one file."""
    tree = ast.parse(source, filename=relpath)
    mine = layer_of_file(relpath)
    found = []
    for line, name in sorted(set(imported_modules(tree, relpath))):
        theirs = layer_of_module(name)
        if theirs is None or mine == FACE or theirs == mine:
            continue
        if theirs == FACE or theirs not in TIER or mine not in TIER or TIER[theirs] >= TIER[mine]:
            found.append(f"minimegatron/{relpath}:{line}: {mine} imports {name} ({theirs}), "
                         f"against the flow")
    return found


def mpi_imports(source, relpath):
    """Lines 'file:line: <layer> imports mpi4py' unless the file is in comm/ or runtime/."""
    mine = layer_of_file(relpath)
    if mine in MPI_LAYERS:
        return []
    tree = ast.parse(source, filename=relpath)
    return [f"minimegatron/{relpath}:{line}: {mine} imports {name}"
            for line, name in imported_modules(tree, relpath)
            if name == "mpi4py" or name.startswith("mpi4py.")]


def package_files():
    for folder, _, names in os.walk(ROOT):
        for name in sorted(names):
            if name.endswith(".py"):
                path = os.path.join(folder, name)
                yield os.path.relpath(path, ROOT).replace(os.sep, "/"), path


def read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


def test_every_file_belongs_to_a_layer():
    unknown = sorted({layer_of_file(rel) for rel, _ in package_files()} - set(TIER) - {FACE})
    assert unknown == [], f"folders with no place in LAYERS: {unknown}"
    assert [layer_of_file(rel) for rel in ("backend.py", "__main__.py", "comm/local.py",
                                           "parallel/tensor_parallel/linear.py")] == [
        "backend", FACE, "comm", "parallel"]


def test_no_import_goes_against_the_flow():
    found = [v for rel, path in package_files() for v in violations(read(path), rel)]
    assert found == [], "\n".join(found)


def test_only_comm_and_runtime_import_mpi4py():
    found = [v for rel, path in package_files() for v in mpi_imports(read(path), rel)]
    assert found == [], "\n".join(found)


@pytest.mark.parametrize("relpath, source, expected", [
    ("autodiff/fake.py", "import minimegatron.comm\n",
     "minimegatron/autodiff/fake.py:1: autodiff imports minimegatron.comm (comm)"),
    ("nn/fake.py", "def f():\n    from minimegatron import optim\n",
     "minimegatron/nn/fake.py:2: nn imports minimegatron.optim (optim)"),
    ("tools/fake.py", "x = 1\nfrom ..commands.argtypes import positive_int\n",
     "minimegatron/tools/fake.py:2: tools imports minimegatron.commands.argtypes (commands)"),
    ("classroom/fake.py", "import minimegatron\n",
     "minimegatron/classroom/fake.py:1: classroom imports minimegatron (face)"),
    ("i18n/fake.py", "from minimegatron.backend import xp\n",
     "minimegatron/i18n/fake.py:1: i18n imports minimegatron.backend (backend)"),
])
def test_the_flow_check_catches_an_upward_import(relpath, source, expected):
    assert violations(source, relpath) == [expected + ", against the flow"]


@pytest.mark.parametrize("relpath, source", [
    ("parallel/fake.py", "from minimegatron.comm import all_reduce\nimport numpy\n"),
    ("commands/fake.py", "from minimegatron.classroom import grader\n"),
    ("nn/fake.py", "from . import layers\nfrom minimegatron.autodiff import ops\n"),
    ("__init__.py", "from minimegatron.commands import cli\n"),
])
def test_the_flow_check_passes_a_downward_import(relpath, source):
    assert violations(source, relpath) == []


def test_the_mpi_check_catches_mpi4py_outside_comm_and_runtime():
    source = "import os\ndef world():\n    from mpi4py import MPI\n    return MPI.COMM_WORLD\n"
    assert mpi_imports(source, "parallel/fake.py") == [
        "minimegatron/parallel/fake.py:3: parallel imports mpi4py"]
    assert mpi_imports("import mpi4py.MPI\n", "tools/fake.py") == [
        "minimegatron/tools/fake.py:1: tools imports mpi4py.MPI"]
    assert mpi_imports(source, "comm/fake.py") == []
    assert mpi_imports(source, "runtime/fake.py") == []
