"""The layer tree holds: data flows one way, and only comm/ and runtime/ touch mpi4py.

Every ``.py`` under ``minimegatron/`` is parsed with ``ast``; every import (at
the top of a file or inside a function) is mapped to the layer it names, and
an import may only reach a strictly lower tier or its own layer. Layers in one
tier are siblings: neither imports the other. The root ``__init__``/``__main__``
are the package's face and may import anything; nothing imports the root
package itself (a path goes through a layer's own ``PACKAGE_DIR``).
"""
import ast
import json
import os
import subprocess
import sys

import pytest

ROOT = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "minimegatron")

# Bottom to top (DESIGN.md section 1). A layer imports strictly lower tiers, or itself.
# backend.py and cores.py are root modules at the bottom (cores: the core and rank counts
# comm waits by); i18n imports nothing of the package, so it sits there too, but it is lab.
LAYERS = [
    ("backend", "cores", "i18n"),
    ("autodiff",),
    ("nn", "optim"),
    ("data",),
    ("comm",),
    ("mixed_precision",),
    ("parallel",),
    ("runtime",),
    ("tools",),
    ("checks",),
    ("classroom",),
    ("commands",),
]
# The book is what a student reads to learn an idea; the lab keeps jobs alive and classes
# running. The book imports nothing from the lab, whatever the tiers say.
BOOK = {"backend", "cores", "autodiff", "nn", "optim", "data", "comm", "mixed_precision",
        "parallel"}
LAB = {"i18n", "runtime", "tools", "checks", "classroom", "commands"}
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
        if mine in BOOK and theirs in LAB:
            found.append(f"minimegatron/{relpath}:{line}: {mine} imports {name} ({theirs}): "
                         f"the book imports nothing from the lab")
        elif theirs == FACE or theirs not in TIER or mine not in TIER or \
                TIER[theirs] >= TIER[mine]:
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


@pytest.mark.parametrize("relpath, source, expected", [
    ("comm/fake.py", "from minimegatron.runtime.threads import cores\n",
     "minimegatron/comm/fake.py:1: comm imports minimegatron.runtime.threads (runtime)"),
    ("autodiff/fake.py", "def f():\n    from minimegatron import i18n\n",
     "minimegatron/autodiff/fake.py:2: autodiff imports minimegatron.i18n (i18n)"),
    ("parallel/fake.py", "from minimegatron.checks import verify\n",
     "minimegatron/parallel/fake.py:1: parallel imports minimegatron.checks (checks)"),
])
def test_the_book_check_catches_an_import_from_the_lab(relpath, source, expected):
    assert violations(source, relpath) == [expected + ": the book imports nothing from the lab"]


def side_effects(source, relpath):
    """Lines 'file:line: import runs <call>' for each call that importing the file makes.

    A module may define (def, class), import and bind names (``X = f()`` is a binding);
    a bare call at module level, also inside a top-level if/try/with/for, changes the
    process when it is imported (a signal handler, a thread, a fork, an env variable).
    ``__main__.py`` and ``if __name__ == "__main__":`` blocks run only when asked."""
    if relpath.endswith("__main__.py"):
        return []
    found = []

    def walk(statements):
        for node in statements:
            if isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
                found.append(f"minimegatron/{relpath}:{node.lineno}: import runs "
                             f"{ast.unparse(node.value)[:60]}")
            elif isinstance(node, ast.If) and "__name__" in ast.unparse(node.test):
                continue
            elif isinstance(node, (ast.If, ast.For, ast.While, ast.With)):
                walk(node.body + getattr(node, "orelse", []))
            elif isinstance(node, ast.Try):
                walk(node.body + node.orelse + node.finalbody +
                     [s for h in node.handlers for s in h.body])
    walk(ast.parse(source, filename=relpath).body)
    return found


def test_no_import_has_side_effects():
    found = [v for rel, path in package_files() for v in side_effects(read(path), rel)]
    assert found == [], "\n".join(found)


@pytest.mark.parametrize("source, line", [
    ("from minimegatron.runtime import reaper\nreaper.reap_if_asked()\n", 2),
    ("import os\nif os.environ.get('PMI_SIZE'):\n    install()\n", 3),
    ("try:\n    import signal\n    signal.signal(2, print)\nexcept ImportError:\n    pass\n", 3),
])
def test_the_side_effect_check_catches_a_call_at_import(source, line):
    assert [v.split(": import runs")[0] for v in side_effects(source, "fake.py")] == [
        f"minimegatron/fake.py:{line}"]


def test_the_side_effect_check_passes_definitions_and_bindings():
    source = ("import os\nX = os.environ.get('A', '1')\ndef f():\n    f()\n"
              "if __name__ == '__main__':\n    f()\n")
    assert side_effects(source, "fake.py") == []


IMPORT_PROBE = r"""
import json, os, signal, sys, threading
import numpy, threadpoolctl          # NumPy's BLAS starts its own threads: before the baseline
def state():
    handlers = {}
    for s in signal.valid_signals():
        try:
            handlers[int(s)] = repr(signal.getsignal(s))
        except (OSError, ValueError):
            pass
    children = []
    for task in os.listdir("/proc/self/task"):
        with open(f"/proc/self/task/{task}/children") as f:
            children += f.read().split()
    return {"signals": handlers, "threads": [t.name for t in threading.enumerate()],
            "tasks": len(os.listdir("/proc/self/task")), "children": children,
            "excepthook": repr(sys.excepthook), "env": dict(os.environ),
            "blas": [lib["num_threads"] for lib in threadpoolctl.threadpool_info()],
            "pid": os.getpid(), "mpi": "mpi4py.MPI" in sys.modules}
before = state()
import minimegatron
import minimegatron.nn, minimegatron.optim, minimegatron.data.demo
after = state()
print(json.dumps({"before": before, "after": after}))
"""


@pytest.mark.skipif(not os.path.isdir("/proc/self/task"), reason="needs Linux's /proc")
def test_importing_the_package_starts_nothing_even_under_a_launcher(tmp_path):
    """Under an mpirun-like environment (8 ranks, the launcher's waiter asked for), importing
    minimegatron leaves signals, threads, processes, the excepthook and the environment as
    they were, and starts no MPI: the rank is set up only by runtime.setup()."""
    env = {**os.environ, "PMI_SIZE": "8", "PMI_RANK": "0", "MPI_LOCALNRANKS": "8",
           "MINIMEGATRON_REAP": "1", "MINIMEGATRON_JOB_DIR": str(tmp_path),
           "PYTHONPATH": os.path.dirname(ROOT)}
    env.pop("OPENBLAS_NUM_THREADS", None)
    out = subprocess.run([sys.executable, "-c", IMPORT_PROBE], env=env, capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    probe = json.loads(out.stdout.splitlines()[-1])
    before, after = probe["before"], probe["after"]
    for key in ("signals", "threads", "tasks", "children", "excepthook", "env", "blas", "pid",
                "mpi"):
        assert after[key] == before[key], key
    assert after["mpi"] is False
    assert os.listdir(tmp_path) == []                      # no waiter wrote a record


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


def private_imports(source, relpath):
    """Lines 'file:line: imports <name> from <module>, a name private to it' for one file.

    A leading underscore says "this module's own". A module that imports another's
    ``_helper`` leans on a detail the other may change, and two modules that take each
    other's helpers form a circle; a helper two modules share is public, in the lower
    one or in a small module both import. Dunders (``__version__``) are public, and
    names from outside the package are not the package's business."""
    package = module_name(relpath)
    if not relpath.endswith("__init__.py"):
        package = package.rpartition(".")[0]
    found = []
    for node in ast.walk(ast.parse(source, filename=relpath)):
        if isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[:len(package.split(".")) - node.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            names = [(alias.name, base) for alias in node.names]
        elif isinstance(node, ast.Import):
            names = [(alias.name.rpartition(".")[2], alias.name.rpartition(".")[0])
                     for alias in node.names]
        else:
            continue
        for name, module in names:
            inside = module == "minimegatron" or module.startswith("minimegatron.")
            hidden = [part for part in module.split(".") + [name]
                      if part.startswith("_") and not part.startswith("__")]
            if inside and hidden:
                found.append(f"minimegatron/{relpath}:{node.lineno}: imports {name} from "
                             f"{module}, a name private to it")
    return found


def test_no_module_imports_another_modules_private_name():
    found = [v for rel, path in package_files() for v in private_imports(read(path), rel)]
    assert found == [], "\n".join(found)


@pytest.mark.parametrize("relpath, source, expected", [
    ("parallel/pipeline_parallel/zero_bubble.py",
     "from minimegatron.parallel.pipeline_parallel.schedules import (Action, _check,\n"
     "                                                               _forward)\n",
     ["1: imports _check from minimegatron.parallel.pipeline_parallel.schedules",
      "1: imports _forward from minimegatron.parallel.pipeline_parallel.schedules"]),
    ("classroom/grader.py", "def f():\n    from ..runtime.launcher import _descendants\n",
     ["2: imports _descendants from minimegatron.runtime.launcher"]),
    ("tools/fake.py", "from minimegatron.comm import _hidden_module\n",
     ["1: imports _hidden_module from minimegatron.comm"]),
    ("tools/fake.py", "import minimegatron.comm._hidden.trace\n",
     ["1: imports trace from minimegatron.comm._hidden"]),
])
def test_the_private_check_catches_an_import_of_another_modules_underscore_name(
        relpath, source, expected):
    assert private_imports(source, relpath) == [
        f"minimegatron/{relpath}:{line}, a name private to it" for line in expected]


def test_the_private_check_passes_public_names_dunders_and_other_packages():
    source = ("from minimegatron.parallel.pipeline_parallel.actions import forward_actions\n"
              "from minimegatron import __version__\nfrom os import _exit\n"
              "from . import layers\nimport minimegatron.comm.trace\n")
    assert private_imports(source, "nn/fake.py") == []


def module_cycles(sources):
    """Each circle of module-level imports among ``sources`` ({relpath: source}), as a sorted
    list of dotted names. Imports inside functions run late and close no circle."""
    names = {module_name(rel): rel for rel in sources}
    graph = {}
    for name, rel in names.items():
        tree = ast.parse(sources[rel], filename=rel)
        graph[name] = set()
        for node in tree.body:
            if not isinstance(node, (ast.Import, ast.ImportFrom)):
                continue
            for _, module in imported_modules(ast.Module(body=[node], type_ignores=[]), rel):
                subs = {f"{module}.{a.name}" for a in getattr(node, "names", [])
                        if isinstance(node, ast.ImportFrom)} & set(names)
                graph[name] |= subs or ({module} & set(names))   # from package import submodule
        graph[name].discard(name)

    def reaches(start):
        seen, todo = set(), [start]
        while todo:
            for nxt in graph[todo.pop()] - seen:
                seen.add(nxt)
                todo.append(nxt)
        return seen
    reach = {name: reaches(name) for name in graph}
    cycles = {tuple(sorted({name} | {o for o in reach[name] if name in reach[o]}))
              for name in graph if name in reach[name]}
    return sorted(list(c) for c in cycles)


# Tensor's methods call ops and ops build Tensors: tensor.py binds ops at its end, on purpose.
KNOWN_CYCLES = [["minimegatron.autodiff.ops", "minimegatron.autodiff.tensor"]]


def test_no_module_level_import_cycle():
    sources = {rel: read(path) for rel, path in package_files()}
    assert module_cycles(sources) == KNOWN_CYCLES


def test_the_cycle_check_catches_two_modules_that_import_each_other():
    sources = {"parallel/pipeline_parallel/schedules.py":
               "from minimegatron.parallel.pipeline_parallel import zero_bubble\n",
               "parallel/pipeline_parallel/zero_bubble.py":
               "from minimegatron.parallel.pipeline_parallel.schedules import Action\n",
               "parallel/pipeline_parallel/actions.py": "import dataclasses\n"}
    assert module_cycles(sources) == [["minimegatron.parallel.pipeline_parallel.schedules",
                                       "minimegatron.parallel.pipeline_parallel.zero_bubble"]]
    sources["parallel/pipeline_parallel/zero_bubble.py"] = (
        "from minimegatron.parallel.pipeline_parallel.actions import Action\n"
        "def late():\n    from minimegatron.parallel.pipeline_parallel import schedules\n")
    assert module_cycles(sources) == []
