"""What a name in a student's block leads to, read from the package's source (the static read's
half that follows names; ``static_read.py`` holds the reader and the verdict).

A name the block's file imported, or an attribute path from one
(``comm.collectives.MPI``), is followed through the package's source: read, never
imported (importing ``comm`` would start MPI in the grader); numpy and the pure
helpers are looked up where they are loaded. ``target_problem`` says whether what a
name leads to is outside the allow-list (a module of the lab, ``mpi4py``, ``os``, a
NumPy name ``allowed_names.py`` does not list, a switch of the trace).
"""
import ast
import functools
import importlib
import os
import types
from dataclasses import dataclass

from minimegatron.classroom import PACKAGE_DIR
from minimegatron.classroom.allowed_names import CLOSED, MODULES, numpy_name_allowed
from minimegatron.runtime.plain_files import read_plain

BOOK = ("backend", "autodiff", "nn", "optim", "data", "comm", "mixed_precision", "parallel")
LAB = ("runtime", "tools", "checks", "classroom", "i18n", "commands", "__main__")
STDLIB = ("math", "itertools", "functools", "collections", "contextlib", "warnings", "time")
DANGER = {"sys", "os", "ctypes", "importlib", "inspect", "subprocess", "builtins", "pickle",
          "marshal", "shutil", "socket", "signal", "gc", "io", "pathlib", "tempfile", "runpy",
          "types", "code", "codeop", "pty", "posix", "mmap", "threading", "multiprocessing",
          "atexit", "faulthandler", "mpi4py", "zipimport", "pkgutil", "site", "sysconfig"}
FILE_IO = CLOSED - {"vectorize", "frompyfunc", "apply_along_axis", "apply_over_axes",
                    "piecewise", "lib"}
SWITCH_OPEN = {"minimegatron.comm.trace": {"span", "label", "now", "current_label",
                                           "bytes_moved", "max_spans", "dropped"},
               "minimegatron.comm.comm_check": {"enabled"}}


@dataclass(frozen=True)
class Target:
    """What a name leads to: a module (``path`` is its dotted name) or an object ``name``
    of module ``path``."""
    path: str
    name: str = None

    @property
    def is_module(self):
        return self.name is None


def module_allowed(dotted):
    """True if a block may import (or reach) the module ``dotted``."""
    parts = dotted.split(".")
    if any(part.startswith("_") for part in parts):
        return False
    if parts[0] == "numpy":
        return dotted in MODULES
    if parts[0] == "minimegatron":
        return len(parts) == 1 or parts[1] in BOOK
    return parts[0] in STDLIB


def package_file(dotted):
    """The source of package module ``dotted`` (None if it is no module of the package)."""
    parts = dotted.split(".")
    if parts[0] != "minimegatron":
        return None
    base = os.path.join(os.path.dirname(PACKAGE_DIR), *parts)
    for path in (os.path.join(base, "__init__.py"), base + ".py"):
        if os.path.isfile(path):
            return path
    return None


def absolute(module, level, package):
    """The module a relative import ``from .. import`` names, seen from ``package``."""
    if not level:
        return module or ""
    base = package.split(".")[:len(package.split(".")) - level + 1]
    return ".".join(base + ([module] if module else []))


def import_targets(node, package):
    """{bound name: Target} of one import statement."""
    found = {}
    if isinstance(node, ast.Import):
        for alias in node.names:
            if alias.asname:
                found[alias.asname] = Target(alias.name)
            else:
                head = alias.name.split(".")[0]
                found[head] = Target(head)
    elif isinstance(node, ast.ImportFrom):
        source = absolute(node.module, node.level, package)
        for alias in node.names:
            if alias.name != "*":
                found[alias.asname or alias.name] = member(Target(source), alias.name)
    return found


@functools.lru_cache(maxsize=None)
def module_names(dotted):
    """{name: Target} a package module binds by its module-level imports (read, not run)."""
    path = package_file(dotted)
    if path is None:
        return {}
    tree = ast.parse(read_plain(path).decode("utf-8"))
    package = dotted if path.endswith("__init__.py") else dotted.rpartition(".")[0]
    names = {}
    for node in tree.body:
        for inner in ast.walk(node) if isinstance(node, (ast.If, ast.Try)) else [node]:
            if isinstance(inner, (ast.Import, ast.ImportFrom)):
                names.update(import_targets(inner, package))
    if dotted == "minimegatron.backend":
        names["xp"] = Target("numpy")        # the backend proxy forwards to numpy (or cupy)
    return names


def member(module, attr):
    """The Target of ``module.attr`` for a module Target."""
    dotted = f"{module.path}.{attr}"
    if module.path.split(".")[0] == "minimegatron":
        if package_file(dotted):
            return Target(dotted)
        return module_names(module.path).get(attr, Target(module.path, attr))
    if module_allowed(module.path):             # numpy or a pure stdlib helper: safe to look
        try:
            value = getattr(importlib.import_module(module.path), attr, None)
        except ImportError:                     # no such module: the run will say so
            value = None
        if isinstance(value, types.ModuleType):
            return Target(value.__name__)
    return Target(module.path, attr)


def target_problem(target):
    """(kind, name) if reaching ``target`` is SUSPECT, else None."""
    if target.is_module:
        return None if module_allowed(target.path) else ("reaches", target.path)
    full = f"{target.path}.{target.name}"
    if target.path.split(".")[0] == "numpy" and not numpy_name_allowed(target.path, target.name):
        return ("file_io" if target.name in FILE_IO else "numpy"), full
    if target.path in SWITCH_OPEN and target.name not in SWITCH_OPEN[target.path]:
        return "trace", full
    if target.name == "Handle":
        return "handle", full
    if target.name.startswith("_"):
        return "private", full
    parts = target.path.split(".")
    lab = parts[0] == "minimegatron" and len(parts) > 1 and parts[1] in LAB
    return ("reaches", full) if lab or parts[0] in DANGER else None
