"""The copy a student's block runs in holds no judge: the check modules cut to what collects.

A lesson module (``exercise_checks/moe_routing.py``...) holds both halves of a
lesson: ``collect``, which runs the student's block and records evidence, and the
points' judges, which compute the expected values (the judge's own top-k, the
one-process run of ``dp_problem.py``, the zigzag positions) and compare. The judge
runs in the grader's process; only ``collect`` runs beside the student's code. So
the copy staged for a student's block (``grader._overlay``) gets each check module
CUT to what ``collect`` of the exercise under test reaches:

    keep    every module-level definition ``LESSONS[id].collect`` reaches, followed
            by name through the module and across the check modules it imports from
            (a problem's inputs: ``layer_problem(seed, ...)``, ``tie_cases(seed)``)
    drop    everything else: every ``judge_*``, every expected value and reference
            run, the other exercises' collects, the module docstrings
    LESSONS {id: Lesson(<the same collect>, ())}: no point, so no judge

``judge.py`` is not staged at all. The modules with no answer in them are staged
whole (``KEEP_WHOLE``: the runner, the evidence's encoding, the trace's helpers, the
product watch, the MPI counter, the exercise list and its public hints). A block
that imports a judge helper from the staged copy (past the static read, with it
switched off) finds no such name; ``tests/test_grader_forgeries_judge.py`` proves it.

The other exercises' blocks go back to the handout's raise too (``blank_others``),
but for the ones the check runs through (``NEEDS``: 4.1's DDP trains a GPT, whose
backward runs 1.1's MatMul and 1.5's unbroadcast) and those of its own chapter, which a
student's block may call (``kept_blocks``). So a 10.1 copy holds no answer outside
chapter 10: no ``fromfile`` (were the static read off) finds 8.2's reference in it.
``tests/test_grader_forgeries_judge.py`` grades every reference block in a copy staged
this way: each PASSes, so no block of NEEDS is missing.

In a student's own copy (self-check mode: no answers anywhere) a check that runs through
a block of NEEDS still blank stopped at "needs Exercise X first". Now such a block is
stood in for (``exercise_checks/standins.py``), only where it still raises the handout's
raise, and only for the check that runs through it:

    chapter 1    (1.1, 1.2, 1.3, 1.5, 1.6) the judge's way, swapped in at run time in
                 the check and in the judge's own one-process runs: the gradient by
                 basis, the complex step. No sum over stretched axes, no expansion of
                 reduced axes, no broadcast batches are written: their lessons stay.
    a chapter's  (3.1, 3.2, 3.4, 3.5, 5.1, 5.2, 10.1) a body written into the staged
    interplay    copy (``stand_ins``, one staged copy per set): split.py's row rule
                 (3.4), ZeRO-1's all-reduce then my slice (5.1: its own check FAILs
                 that, twice the bytes), an all-gather then a sum (3.1: not its one
                 all-reduce; 3.5: not g), the judge's own top-k and queue (10.1), an
                 all-reduce of zeros but my slice (5.2's all-gather). g (3.2) is the
                 one exception: it IS one all-reduce and 3.5's lesson counts exactly
                 that collective, so its stand-in is its hint's words in code.
    never        over a block the student wrote, right or wrong: 3.4's check with the
                 student's own 3.5 runs that 3.5 (the interplay is theirs to see);
                 never for the exercise under check; never in the student's files;
                 never in teacher mode (the staged copy keeps the reference's NEEDS).

Whether a stand-in gives an answer away: each hint already says its formula in words;
chapter 1's stand-ins probe the forward instead of writing the formula; 3.4's is split.py's
own rule and 10.1's the judge's own, both in every copy already; 3.1's and 5.1's are
mistakes their own checks FAIL; 3.5's and 5.2's reach the sum another way (an all-gather,
an all-reduce) that their checks FAIL. Only g's (3.2) is its answer: one call.
``tests/test_exercise_alone.py`` grades all 27 exercises alone in fresh copies, right and
wrong, in Korean.

Dependencies between cut modules are followed by ``from ... import`` name, at module
level and inside a kept function; a check module reached any other way (by its text,
``importlib``) is not followed, and none of the lessons does so.
"""
import ast
import os

from minimegatron.runtime.plain_files import read_plain, write_plain

CHECKS = os.path.join("classroom", "exercise_checks")
CHECKS_PACKAGE = "minimegatron.classroom.exercise_checks"
KEEP_WHOLE = ("__init__.py", "common.py", "evidence.py", "lesson.py", "mpi_count.py",
              "runner.py", "standins.py", "watched.py")
NOT_STAGED = ("judge.py",)
NEEDS = {           # the blocks each check runs through besides its own (found, then proven)
    "1.1": ("1.5",),
    "3.3": ("1.1", "1.5", "1.6", "3.1"), "3.4": ("1.1", "1.5", "1.6", "3.2", "3.5"),
    "3.5": ("1.1", "1.5", "1.6", "3.2", "3.4"), "4.1": ("1.1", "1.5"),
    "5.1": ("1.1", "1.5", "5.2"), "5.2": ("1.1", "1.5", "5.1"),
    "6.2": ("1.1", "1.5", "1.6", "3.1", "3.4"), "7.1": ("1.1", "1.5", "5.1", "5.2"),
    "8.1": ("1.1", "1.6"), "8.2": ("1.1", "1.6"), "9.1": ("1.1", "1.3", "1.5", "1.6"),
    "10.2": ("1.1", "1.2", "1.5", "1.6", "10.1"), "10.3": ("10.1",),
}
HEADER = ('"""Cut by the grader (classroom/staging.py): what collects the evidence of '
          'exercise {id}; no judge."""\n')


def _parse(checks_dir, module):
    text = read_plain(os.path.join(checks_dir, module + ".py")).decode("utf-8")
    return text, ast.parse(text)


def _bound(statement):
    """The names a module-level statement binds."""
    if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return {statement.name}
    if isinstance(statement, (ast.Import, ast.ImportFrom)):
        return {(a.asname or a.name).split(".")[0] for a in statement.names}
    if isinstance(statement, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
        targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target]
        return {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
    return set()


def _check_module(node):
    """The cut module an ``from X import`` names, or None."""
    if isinstance(node, ast.ImportFrom) and node.module and \
            node.module.startswith(CHECKS_PACKAGE + "."):
        name = node.module[len(CHECKS_PACKAGE) + 1:]
        return None if name + ".py" in KEEP_WHOLE else name
    return None


class _Cut:
    """The closure of module-level names that a collect reaches, over the check modules."""

    def __init__(self, checks_dir):
        self.checks_dir = checks_dir
        self.trees, self.texts, self.kept = {}, {}, {}

    def tree(self, module):
        if module not in self.trees:
            self.texts[module], self.trees[module] = _parse(self.checks_dir, module)
            self.kept[module] = set()          # indices of the statements kept
        return self.trees[module]

    def reach(self, module, names):
        work, seen = [(module, n) for n in names], set()
        while work:
            module, name = work.pop()
            if (module, name) in seen:
                continue
            seen.add((module, name))
            for index, statement in enumerate(self.tree(module).body):
                if name in _bound(statement):
                    self.kept[module].add(index)
                    work += self._follow(module, statement, name)

    def _follow(self, module, statement, name):
        """(module, name) pairs a kept statement needs."""
        needs = []
        if isinstance(statement, ast.ImportFrom):
            other = _check_module(statement)
            if other:
                needs += [(other, a.name) for a in statement.names
                          if (a.asname or a.name) == name]
            return needs
        for node in ast.walk(statement):
            if isinstance(node, ast.Name):
                needs.append((module, node.id))
            elif isinstance(node, ast.ImportFrom) and _check_module(node):
                needs += [(_check_module(node), a.name) for a in node.names]
        return needs

    def source(self, module, ex_id, collect=None):
        """The cut module's text: its kept statements in their order (an import from a cut
        module keeps only the names kept), then LESSONS if it holds ``ex_id``."""
        lines = self.texts.get(module, "").splitlines(keepends=True)
        out = [HEADER.format(id=ex_id)]
        for index, statement in enumerate(self.trees.get(module, ast.Module([], [])).body):
            if index not in self.kept.get(module, ()):
                continue
            if _check_module(statement):
                used = self._used(module) | (_names(ast.parse(collect)) if collect else set())
                statement = ast.ImportFrom(statement.module, [
                    a for a in statement.names if (a.asname or a.name) in used], 0)
                out.append(ast.unparse(statement) + "\n")
                continue
            first = min([statement.lineno] + [d.lineno for d in
                                               getattr(statement, "decorator_list", [])])
            out.append("".join(lines[first - 1:statement.end_lineno]))
        if collect is not None:
            out.append("from minimegatron.classroom.exercise_checks.lesson import "
                       "Lesson as _Lesson\n")
            out.append(f"LESSONS = {{{ex_id!r}: _Lesson({collect}, ())}}\n")
        return "\n".join(out)

    def _used(self, module):
        """Names the kept statements of ``module`` load."""
        used = set()
        for index in self.kept.get(module, ()):
            statement = self.trees[module].body[index]
            if not isinstance(statement, (ast.Import, ast.ImportFrom)):
                used |= {n.id for n in ast.walk(statement) if isinstance(n, ast.Name)}
        return used


def _names(tree):
    return {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}


def _collect_expression(tree, ex_id):
    """The source expression of ``LESSONS[ex_id]``'s collect (first argument of Lesson)."""
    for statement in tree.body:
        if isinstance(statement, ast.Assign) and any(
                isinstance(t, ast.Name) and t.id == "LESSONS" for t in statement.targets):
            for key, value in zip(statement.value.keys, statement.value.values):
                if isinstance(key, ast.Constant) and key.value == ex_id:
                    return value.args[0]
    raise ValueError(f"no LESSONS[{ex_id!r}] in the check module")


def cut_checks(package_dir, ex_id):
    """Cut the check modules of the staged package ``package_dir`` (a copy, written in
    place) to what collects exercise ``ex_id``'s evidence; remove the judge."""
    from minimegatron.classroom.exercise_checks import by_id
    checks_dir = os.path.join(package_dir, CHECKS)
    module = by_id(ex_id).module
    cut = _Cut(checks_dir)
    expression = _collect_expression(cut.tree(module), ex_id)
    cut.reach(module, _names(expression))
    collect = ast.unparse(expression)
    for name in sorted(os.listdir(checks_dir)):
        path = os.path.join(checks_dir, name)
        if not name.endswith(".py") or name in KEEP_WHOLE:
            continue
        if name in NOT_STAGED:
            os.remove(path)
            continue
        text = cut.source(name[:-3], ex_id, collect if name[:-3] == module else None)
        write_plain(path, text, replace=True)                    # the staged copy's file


def kept_blocks(ex_id, known):
    """The other blocks (of the ids ``known``) a copy for ``ex_id`` keeps: those its check
    runs through (NEEDS) and those of its own chapter, which a student's block may call
    (3.5 written with f instead of g must miss the lesson's point, not need 3.1)."""
    chapter = ex_id.split(".")[0]
    return {other for other in known if other != ex_id and (
        other in NEEDS.get(ex_id, ()) or other.split(".")[0] == chapter)}


def stand_ins(student, ex_id):
    """{id: body}: a stand-in (``standins.BODIES``) for each block of NEEDS[ex_id] still the
    handout's raise among ``student``'s blocks: what a self-check copy stages for ex_id."""
    from minimegatron.classroom.exercise_checks.standins import BODIES, bodies_for
    from minimegatron.classroom.exercises import is_blank
    return {other: bodies_for(other, student[other].indent) for other in NEEDS.get(ex_id, ())
            if other in BODIES and other in student and is_blank(student[other])}


def stage(package_dir, ex_id):
    """The staged copy of a student's block of ``ex_id``: checks cut, other answers out."""
    from minimegatron.classroom.exercise_checks import EXERCISES
    cut_checks(package_dir, ex_id)
    blank_others(package_dir, ex_id, kept_blocks(ex_id, [ex.id for ex in EXERCISES]))


def blank_others(package_dir, ex_id, needs):
    """Every exercise block of the staged package but ``ex_id``'s and those of ``needs``
    (the blocks its check runs through) back to the handout's raise: no other answer is
    in the copy a student's block runs beside."""
    from minimegatron.classroom.exercises import blank_line, find_blocks
    by_file = {}
    for other, block in find_blocks(package_dir).items():
        if other != ex_id and other not in needs:
            by_file.setdefault(block.path, {})[other] = [blank_line(other, block.indent)]
    write_bodies(package_dir, by_file)


def write_bodies(package_dir, by_file):
    """Replace blocks in the package's files, in place: ``by_file`` is {path relative to
    the package: {id: body lines}}."""
    from minimegatron.classroom.exercises import replace_bodies
    for rel, bodies in by_file.items():
        path = os.path.join(package_dir, rel)
        text = read_plain(path).decode("utf-8")                  # never through a link
        write_plain(path, replace_bodies(text, rel, bodies), replace=True)
