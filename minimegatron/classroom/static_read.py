"""The static read: a student's exercise block is read (Python's ``ast``) before it runs.

An exercise block computes with arrays, the autodiff engine and the package's
collectives; it never needs to open a file, import the interpreter's
machinery or switch the trace off. The grader reads each block's syntax tree
before the block runs; anything outside the allow-list below makes the cell
SUSPECT, with the line in the student's file and the reason, for the teacher
to read. A SUSPECT cell is NOT RUN: running it is exactly what a forgery needs
(a block that reads the teacher's answer, kills the grader or writes into
other copies does nothing if it never runs), and it is cheaper. SUSPECT is
never PASS; the teacher reads the line and decides.

The allow-list (what a block may use):
- imports of numpy, of ``math``, ``itertools``, ``functools``, ``collections``,
  ``contextlib``, ``warnings``, ``time`` (pure helpers: a student may time a step,
  or wait too long, which is a HANG, not a forgery), and of the package's book: the
  package itself and ``minimegatron.<BOOK>...`` (backend, autodiff, nn, optim,
  data, comm, mixed_precision, parallel). The lab (runtime, tools, checks,
  classroom, i18n, commands) is never a block's business: no check module, no
  judge helper. Of NumPy only ``numpy``, ``numpy.linalg`` and ``numpy.random``.
- of NumPy (or ``xp``), only the names of ``allowed_names.py``: ufuncs, scalar
  types and a listed set of array functions; nothing that reads or writes a
  file, unpickles (``load``, ``save``, ``savetxt``, ``fromfile``, ``memmap``,
  ``DataSource``...), maps raw memory or calls back into code. However it is
  reached: ``np.load``, ``xp.load``, ``from numpy import load``,
  ``getattr(np, "load")``.
- the names of its own function and file. A name the file imported, or an
  attribute path from one (``comm.collectives.MPI``), is followed through the
  package's source (read, never imported: importing ``comm`` would start MPI in
  the grader; numpy and the pure helpers are looked up where they are loaded):
  reaching a module outside the allow-list (``mpi4py``, ``os``, the lab) is
  SUSPECT, as the import would be.

SUSPECT (the reason is an ``i18n`` key ``static.<kind>``):
- import     an import outside the allow-list, or ``from X import *``;
- reaches    a name or attribute path that leads to a module outside it;
- builtin    ``open exec eval compile getattr setattr delattr globals locals vars dir
             __import__ breakpoint input help exit quit``, ``type`` with 3 arguments
             (``getattr(x, "name", default)`` with a public name written out is read
             as ``x.name``: a right answer may keep a counter that way; never of a
             module);
- dunder     any ``__name__``-style name or attribute (``x.__class__``);
- private    ``obj._secret``. ``self._x`` is allowed: the block is a method of
             the class whose private members it uses (4.1's and 7.1's code
             around the block calls ``self._launch``, ``self._at_floor``);
             a module's own helpers (``_name``) are plain names, allowed too;
- module     an attribute named after a module the lesson never needs (``.os``,
             ``.sys``, ``.ctypes``, ``.subprocess``, ``.MPI``, ``.faults``...);
- frame      the interpreter's frames and code (``gi_frame``, ``f_globals``...);
- spawn      MPI's process starters and joiners on a communicator
             (``group.comm.Spawn``, ``Connect``...): processes outside the job;
- file_io    numpy's file and raw-memory functions (``load``, ``fromfile``,
             ``tofile``, ``save``, ``memmap``, ``ctypeslib``...), as a name of
             numpy or as any object's attribute (``a.tofile``);
- numpy      any other name of numpy outside the allow-list (``allowed_names.py``);
- function_state  an attribute set on a function the block made (a lambda, a
             ``def`` inside it, a ``functools.partial``): ``h = lambda: None;
             h.wait = h`` is a hand-made handle, and a function's attributes are
             state a check never sees;
- trace      the trace's or the collective checks' switches: anything of
             ``comm.trace`` but ``span label now current_label bytes_moved
             max_spans dropped`` (so no ``disable``, ``record``, ``reset``,
             ``spans``), anything of ``comm_check`` but ``enabled``, or either
             module passed around as a value;
- env        a string naming a ``MINIMEGATRON_`` setting (``MINIMEGATRON_CHECK``);
- handle     ``Handle``: a collective's handle comes from comm's ``i*`` functions;
- class      a class defined inside the block, or made by ``namedtuple`` or
             ``make_dataclass`` (a made-up stand-in for the package's own objects,
             such as a handle whose ``wait`` does nothing);
- global     a ``global`` statement;
- patch      an assignment to an attribute or item of something that is not the
             function's own (a module, a module-level object: monkeypatching);
- alias      a package or stdlib module used as a value (``m = comm``): the read
             follows a module by its name only (numpy and ``xp`` are fine);
- string     a string holding a dunder name or a ``{x._y}`` format field (an
             attribute looked up by text);
- escape     a statement indented less than the block (it left its function);
- past_end   code that runs on past the block's end marker;
- unread     the read itself failed on the block (never waved through as clean).

What the static read is not: a proof that a block is harmless. It is the first
wall: with it, a block can name no file function, no loader of code, no module of
the lab and no switch of the trace, so it cannot reach what records its evidence;
the sandbox (teacher mode) is the second, and the staged copy holds no judge and
no other exercise's answer (``staging.py``). A block that does not parse is left to
the run, which reports the syntax error as it always did. Where a name leads (read
from the package's source, never imported) is ``static_names.py``.
"""
import ast
import os
import re
from dataclasses import dataclass

from minimegatron import i18n
from minimegatron.classroom import PACKAGE_DIR
from minimegatron.classroom.static_names import (FILE_IO, SWITCH_OPEN, Target, absolute,
                                                 import_targets, member, module_allowed,
                                                 module_names, target_problem)
from minimegatron.classroom.exercise_checks.judge import Verdict
from minimegatron.classroom.exercises import replace_bodies
from minimegatron.runtime.plain_files import read_plain

BUILTINS = {"open", "exec", "eval", "compile", "getattr", "setattr", "delattr", "globals",
            "locals", "vars", "dir", "__import__", "breakpoint", "input", "help", "exit",
            "quit"}
MODULE_ATTRS = {"sys", "os", "ctypes", "importlib", "inspect", "subprocess", "builtins",
                "pickle", "marshal", "shutil", "socket", "posix", "pty", "mmap", "runpy",
                "multiprocessing", "gc", "MPI", "mpi4py", "faults", "reaper", "launcher",
                "runtime", "classroom", "commands"}
FRAME_ATTRS = {"gi_frame", "gi_code", "gi_yieldfrom", "cr_frame", "cr_code", "ag_frame",
               "ag_code", "f_globals", "f_locals", "f_builtins", "f_back", "f_code", "f_trace",
               "tb_frame", "tb_next", "co_code", "co_consts", "func_globals"}
CLASS_MAKERS = {"namedtuple", "make_dataclass"}
FUNCTION_MAKERS = {"partial", "partialmethod", "wraps", "update_wrapper"}
SPAWN = {"Spawn", "Spawn_multiple", "Connect", "Accept", "Open_port", "Publish_name", "Join"}
DUNDER_TEXT = re.compile(r"__\w+__|\{[^{}]*[.\[]_")


@dataclass(frozen=True)
class Finding:
    """One reason for SUSPECT: ``line`` in the student's file, the source line's text."""
    line: int
    kind: str           # static.<kind> in i18n
    name: str           # what was found
    code: str


def _enclosing_function(tree, first, last):
    """The innermost function whose body holds lines first..last (None: module level)."""
    best = None
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and \
                node.lineno < first and node.end_lineno >= last:
            if best is None or node.lineno > best.lineno:
                best = node
    return best


def _local_names(function):
    """Every name a function binds itself: its (and its inner functions') arguments,
    assignment targets and ``except ... as`` names."""
    if function is None:
        return set()
    names = {arg.arg for arg in ast.walk(function) if isinstance(arg, ast.arg)}
    names |= {n.id for n in ast.walk(function)
              if isinstance(n, ast.Name) and isinstance(n.ctx, (ast.Store, ast.Del))}
    names |= {n.name for n in ast.walk(function) if isinstance(n, ast.ExceptHandler) and n.name}
    return names


def _root(node):
    """The name an attribute / item / call chain starts from (None if it starts elsewhere)."""
    while isinstance(node, (ast.Attribute, ast.Subscript, ast.Call)):
        node = node.func if isinstance(node, ast.Call) else node.value
    return node.id if isinstance(node, ast.Name) else None


class _Reader:
    """Walks the nodes of lines first..last of one parsed file and collects Findings."""

    def __init__(self, tree, first, last, indent, package, file_names):
        self.first, self.last, self.indent = first, last, indent
        self.nodes = [n for n in ast.walk(tree) if first <= getattr(n, "lineno", 0) <= last]
        self.parent = {child: node for node in ast.walk(tree)
                       for child in ast.iter_child_nodes(node)}
        function = _enclosing_function(tree, first, last)
        self.local = _local_names(function)
        self.names = dict(file_names)
        for node in self.nodes:           # the block's own imports bind names too
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                self.names.update(import_targets(node, package))
                for alias in node.names:
                    self.local.discard((alias.asname or alias.name).split(".")[0])
        self.package = package
        self.functions = self._made_functions(function)
        self.found = []

    def _made_functions(self, function):
        """The local names the function binds to a function object it makes: a lambda,
        a ``def`` inside it, a ``functools.partial`` (or ``wraps``) of something."""
        if function is None:
            return set()
        made = {n.name for n in ast.walk(function) if n is not function
                and isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
        for node in ast.walk(function):
            if isinstance(node, (ast.Assign, ast.AnnAssign, ast.NamedExpr)):
                value = node.value
                if isinstance(value, ast.Call):
                    target = self.resolve(value.func)
                    name = target.name if target is not None and not target.is_module \
                        else getattr(value.func, "attr", getattr(value.func, "id", None))
                    value = ast.Lambda if name in FUNCTION_MAKERS else value
                if value is ast.Lambda or isinstance(value, ast.Lambda):
                    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                    made |= {n.id for t in targets for n in ast.walk(t)
                             if isinstance(n, ast.Name)}
        return made

    def flag(self, node, kind, name):
        self.found.append((node.lineno, kind, name))

    def resolve(self, node):
        """The Target a Name or attribute path leads to, or None (a local, an object)."""
        if isinstance(node, ast.Name):
            return None if node.id in self.local else self.names.get(node.id)
        if isinstance(node, ast.Attribute):
            base = self.resolve(node.value)
            if base is not None and base.is_module and module_allowed(base.path):
                return member(base, node.attr)
        return None

    def read(self):
        for node in self.nodes:
            if isinstance(node, ast.stmt):
                if node.col_offset < len(self.indent):
                    self.flag(node, "escape", type(node).__name__)
            if getattr(node, "end_lineno", None) and node.end_lineno > self.last:
                self.flag(node, "past_end", type(node).__name__)
            method = getattr(self, "visit_" + type(node).__name__, None)
            if method:
                method(node)
        first = {}             # comm.Handle is one finding, not Handle and comm's Handle
        for line, kind, name in self.found:
            first.setdefault((line, kind, name.rpartition(".")[2]), name)
        return sorted((line, kind, name) for (line, kind, _), name in first.items())

    def visit_Import(self, node):
        for alias in node.names:
            if not module_allowed(alias.name):
                self.flag(node, "import", alias.name)

    def visit_ImportFrom(self, node):
        source = absolute(node.module, node.level, self.package)
        if not module_allowed(source):
            self.flag(node, "import", source)
            return
        for alias in node.names:
            if alias.name == "*":
                self.flag(node, "import", f"{source}.*")
                continue
            problem = target_problem(member(Target(source), alias.name))
            if problem:
                self.flag(node, *problem)

    def visit_Name(self, node):
        if node.id.startswith("__") and node.id.endswith("__"):
            self.flag(node, "dunder", node.id)
        elif node.id in BUILTINS and node.id not in self.local:
            name = self._plain_getattr(node)
            if name is None:
                self.flag(node, "builtin", node.id)
            else:
                self._check_attr(node, name, base=None)
        if node.id in CLASS_MAKERS:
            self.flag(node, "class", node.id)
        self._check_target(node)

    def _plain_getattr(self, node):
        """The attribute name of ``getattr(x, "name"[, default])`` with a public name
        written out (an attribute access with a default, as harmless as ``x.name``)."""
        call = self.parent.get(node)
        if node.id != "getattr" or not isinstance(call, ast.Call) or call.func is not node \
                or len(call.args) not in (2, 3) or call.keywords:
            return None
        name = call.args[1]
        of = self.resolve(call.args[0])
        if of is not None and of.is_module:          # getattr(np, "load"): never plain
            return None
        ok = isinstance(name, ast.Constant) and isinstance(name.value, str) and \
            name.value.isidentifier() and not name.value.startswith("_")
        return name.value if ok else None

    def _check_attr(self, node, attr, base):
        """The rules on an attribute's name (``base``: the expression it is taken of)."""
        if attr.startswith("__"):
            self.flag(node, "dunder", attr)
        elif attr.startswith("_") and not (isinstance(base, ast.Name) and base.id == "self"):
            self.flag(node, "private", attr)
        for kind, names in (("module", MODULE_ATTRS), ("frame", FRAME_ATTRS),
                            ("file_io", FILE_IO), ("spawn", SPAWN)):
            if attr in names:
                self.flag(node, kind, attr)
        if attr == "Handle":
            self.flag(node, "handle", attr)
        if attr in CLASS_MAKERS:
            self.flag(node, "class", attr)

    def visit_Attribute(self, node):
        self._check_attr(node, node.attr, node.value)
        if isinstance(node.ctx, (ast.Store, ast.Del)):
            self._check_patch(node)
        self._check_target(node)

    def visit_Subscript(self, node):
        if isinstance(node.ctx, (ast.Store, ast.Del)):
            self._check_patch(node)

    def visit_Call(self, node):
        if isinstance(node.func, ast.Name) and node.func.id == "type" and \
                "type" not in self.local and len(node.args) != 1:
            self.flag(node, "builtin", "type")

    def visit_ClassDef(self, node):
        self.flag(node, "class", node.name)

    def visit_Global(self, node):
        self.flag(node, "global", ", ".join(node.names))

    def visit_Constant(self, node):
        if isinstance(node.value, str):
            if "MINIMEGATRON_" in node.value:
                self.flag(node, "env", re.search(r"MINIMEGATRON_\w*", node.value).group(0))
            match = DUNDER_TEXT.search(node.value)
            if match:
                self.flag(node, "string", match.group(0))

    def _check_patch(self, node):
        root = _root(node)
        if root in self.functions:                     # h = lambda: None; h.wait = h
            self.flag(node, "function_state", ast.unparse(node))
        elif root is None or root not in self.local:
            self.flag(node, "patch", ast.unparse(node))

    def _check_target(self, node):
        target = self.resolve(node)
        if target is None:
            return
        problem = target_problem(target)
        if problem and not (problem[0] == "private" and isinstance(node, ast.Name)):
            self.flag(node, *problem)        # (the file's own _helpers are plain names)
            return
        parent = self.parent.get(node)
        as_base = isinstance(parent, ast.Attribute) and parent.value is node
        if target.is_module and not as_base:
            if target.path in SWITCH_OPEN:
                self.flag(node, "trace", target.path)
            elif target.path.split(".")[0] != "numpy":
                self.flag(node, "alias", target.path)


def read_block(ex_id, body, reference_block, student_line=None):
    """[Finding] for ``body`` (the student's lines of exercise ``ex_id``) put in the place
    of ``reference_block`` in this package's file; ``student_line`` is the 1-based line
    of the student's begin marker (default: the reference's)."""
    rel = reference_block.path
    text = replace_bodies(read_plain(os.path.join(PACKAGE_DIR, rel)).decode("utf-8"), rel,
                          {ex_id: body})
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return []                     # it cannot run either: the run reports the error
    first = reference_block.begin + 2            # the body's first line, 1-based
    code = [i for i, line in enumerate(body) if line.strip()
            and not line.strip().startswith("#")]   # a trailing blank or comment line is
    last = reference_block.begin + 2 + (code[-1] if code else 0)    # past the function's end
    dotted = "minimegatron." + rel[:-3].replace(os.sep, ".").replace("/", ".")
    package = dotted.rpartition(".")[0]
    reader = _Reader(tree, first, last, reference_block.indent, package,
                     module_names(dotted))
    shift = (reference_block.begin if student_line is None else student_line - 1) \
        - reference_block.begin
    lines = text.splitlines()
    return [Finding(line + shift, kind, name, lines[line - 1].strip())
            for line, kind, name in reader.read()]


MAX_SHOWN = 10      # source lines shown per cell (the count says if there are more)


def verdict(findings, path):
    """The SUSPECT Verdict of a block with ``findings``, in the current language: one
    entry per source line, with every reason found on it."""
    by_line = {}
    for finding in findings:
        kinds = by_line.setdefault((finding.line, finding.code), {})
        kinds.setdefault(finding.kind, []).append(finding.name)
    lines = [i18n.text("static.suspect", count=len(findings))]
    for (line, code), kinds in list(by_line.items())[:MAX_SHOWN]:
        reasons = [i18n.text(f"static.{kind}", name=", ".join(names))
                   for kind, names in kinds.items()]
        lines.append(i18n.text("static.line", path=path, line=line, code=code,
                               reason="; ".join(reasons)))
    if len(by_line) > MAX_SHOWN:
        lines.append(i18n.text("static.more", count=len(by_line) - MAX_SHOWN))
    return Verdict("SUSPECT", lines, [f"static: {findings[0].kind}"])


SWITCH = "MINIMEGATRON_STATIC_READ"   # "off" grades without the read: only to test the sandbox
                                      # alone (tests/test_grader_forgeries.py); never in class


def suspects(student, ids, reference):
    """{id: SUSPECT Verdict} for the exercises of ``ids`` whose student block
    (``student``: {id: Block}) the static read finds something in."""
    out = {}
    for ex_id in ids:
        block = student[ex_id]
        try:
            findings = read_block(ex_id, block.body, reference[ex_id], block.begin + 1)
        except Exception as err:    # noqa: BLE001 -- a read that breaks must not wave it on
            findings = [Finding(block.begin + 2, "unread", repr(err)[:200],
                                (block.body or [""])[0].strip())]
        if findings:
            out[ex_id] = verdict(findings, os.path.join("minimegatron", block.path))
    return out
