"""``minimegatron exercises make DIR``: a classroom copy with the key lines blanked out.

The idea. The reference code itself carries the exercises: a block a student
should write is fenced by two marker comments inside a function body,

    # EXERCISE <group>.<n> begin
    ...solution lines...
    # EXERCISE <group>.<n> end

``make DIR`` copies the package (and ``tutorials/``, ``exercises/``, the student's own
README.md and README.ko.md from ``handout/``) into DIR and replaces every fenced block by
one line at the block's indentation,

    raise NotImplementedError("Exercise 1.1: <hint>")

keeping the markers so the student sees where to write. The module still
imports (the raise sits inside a function body); only calling the function
raises, and the grader reports that as "not done yet". Ids are
``<group>.<n>``: 1 autodiff, 2 pipeline schedules, 3 tensor parallel, 4 data
parallel, 5 ZeRO; their titles, hints and checks live in
``minimegatron.classroom.exercise_checks``.

    minimegatron exercises list                 the exercises and where they are
    minimegatron exercises make DIR [--force]   write the student copy into DIR
    minimegatron exercises solve DIR 1.1 [..]   put the reference block back (teachers)
    minimegatron grade [EXERCISE] --path DIR    check a copy (see grader.py)
"""
import json
import os
import re
import shutil
from dataclasses import dataclass

from minimegatron import i18n
from minimegatron.i18n import text_or_english as say
from minimegatron.classroom import PACKAGE_DIR
from minimegatron.classroom.exercise_checks import by_id, chapter_of
from minimegatron.runtime.plain_files import odd_entries, odd_entry, read_plain, write_plain
REPO_ROOT = os.path.dirname(PACKAGE_DIR)
EXTRA_DIRS = ("tutorials", "exercises")     # copied next to the package when present
EXTRA_FILES = ("setup.cfg", "pyproject.toml")   # so `pip install -e DIR` works
# the student's own README, in both languages (how to work, grade, ask for help), in place of
# the teacher's: setup.cfg's long_description reads README.md
HANDOUT_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "handout")
HANDOUT_FILES = ("README.md", "README.ko.md")
MARKER = re.compile(r"^(?P<indent>[ \t]*)# EXERCISE (?P<id>\d+\.\d+) (?P<end>begin|end)\s*$")
IGNORE = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info", ".pytest_cache")


@dataclass
class Block:
    """One fenced block: lines[begin] and lines[end] are the markers of ``path``."""
    id: str
    path: str           # relative to the package directory, e.g. "ops.py"
    begin: int
    end: int
    indent: str
    body: list          # the lines strictly between the markers (with their newlines)


def parse_blocks(text, path="<text>"):
    """The blocks of one source text, in order; ValueError on unmatched or nested markers."""
    blocks, open_block = [], None
    lines = text.splitlines(keepends=True)
    for number, line in enumerate(lines):
        match = MARKER.match(line)
        if not match:
            continue
        where = f"{path}:{number + 1}"
        if match["end"] == "begin":
            if open_block:
                raise ValueError(f"{where}: EXERCISE {match['id']} begins inside "
                                 f"EXERCISE {open_block[0]}")
            if not match["indent"]:
                raise ValueError(f"{where}: EXERCISE {match['id']} must sit inside a "
                                 "function body (indented), so the module still imports")
            open_block = (match["id"], number, match["indent"])
        else:
            if not open_block or open_block[0] != match["id"]:
                raise ValueError(f"{where}: EXERCISE {match['id']} end without its begin")
            ex_id, begin, indent = open_block
            blocks.append(Block(ex_id, path, begin, number, indent, lines[begin + 1:number]))
            open_block = None
    if open_block:
        raise ValueError(f"{path}:{open_block[1] + 1}: EXERCISE {open_block[0]} never ends")
    return blocks


def find_blocks(package_dir=PACKAGE_DIR):
    """{exercise id: Block} over every .py file of a package directory."""
    found = {}
    for root, dirs, files in os.walk(package_dir):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        for name in sorted(files):
            if not name.endswith(".py"):
                continue
            full = os.path.join(root, name)
            rel = os.path.relpath(full, package_dir)
            text = read_plain(full).decode("utf-8")     # never through a link or a FIFO
            for block in parse_blocks(text, rel):
                if block.id in found:
                    raise ValueError(f"EXERCISE {block.id} is marked twice: "
                                     f"{found[block.id].path} and {rel}")
                found[block.id] = block
    return found


def blank_line(ex_id, indent):
    """The line a student copy has instead of the solution."""
    message = f"Exercise {ex_id}: {by_id(ex_id).hint}"
    return f"{indent}raise NotImplementedError({json.dumps(message)})\n"


def is_blank(block):
    """True if the block is still the student copy's raise (nothing written yet)."""
    code = [line.strip() for line in block.body if line.strip()]
    return code == [blank_line(block.id, "").strip()]


def replace_bodies(text, path, bodies):
    """text with the body of each block whose id is in ``bodies`` ({id: lines}) replaced."""
    lines = text.splitlines(keepends=True)
    for block in reversed(parse_blocks(text, path)):
        if block.id in bodies:
            lines[block.begin + 1:block.end] = bodies[block.id]
    return "".join(lines)


def blank_text(text, path="<text>"):
    """The student version of one source text: every block's body is the raise line."""
    return replace_bodies(text, path, {b.id: [blank_line(b.id, b.indent)]
                                       for b in parse_blocks(text, path)})


def leaked_lines(student_text, reference_text, path="<text>"):
    """Solution lines found in a student text that occur nowhere else in the reference.

    A line that also appears outside every block (``return grad_out, None``)
    gives nothing away and is not counted.
    """
    lines = reference_text.splitlines()
    inside = set()
    for block in parse_blocks(reference_text, path):
        inside.update(range(block.begin + 1, block.end))
    outside = {lines[i].strip() for i in range(len(lines)) if i not in inside}
    student = {line.strip() for line in student_text.splitlines()}
    solution = {lines[i].strip() for i in inside} - outside - {""}
    return sorted(line for line in solution & student if not line.startswith("#"))


def without_bodies(text, path="<text>"):
    """text with every block's body removed (the markers stay): what must equal the handout."""
    return replace_bodies(text, path, {b.id: [] for b in parse_blocks(text, path)})


def _files(root, top_only=False):
    """Relative paths of the files under root (IGNORE's patterns left out)."""
    found = []
    for here, dirs, files in os.walk(root):
        dirs[:] = [] if top_only else [d for d in dirs if d not in ("__pycache__",)
                                       and not d.endswith(".egg-info")]
        found += [os.path.relpath(os.path.join(here, f), root) for f in files
                  if not f.endswith(".pyc")]
    return sorted(found)


def _code_lines(text, rel):
    """The lines of a source outside its blocks, as an editor may save them: line endings
    and trailing spaces do not count, nor blank lines at the end."""
    lines = [line.rstrip() for line in without_bodies(text, rel).splitlines()]
    while lines and not lines[-1]:
        lines.pop()
    return lines


def _same(copy_file, reference_file, rel):
    """True if the two files agree outside the exercise blocks (whitespace aside)."""
    try:
        mine = read_plain(copy_file)
    except OSError:                       # a link, FIFO, device or huge file: changed
        return False
    theirs = read_plain(reference_file)
    if mine == theirs:
        return True
    try:
        mine, theirs = mine.decode("utf-8"), theirs.decode("utf-8")
        if not rel.endswith(".py"):
            return mine.split() == theirs.split()
        return _code_lines(mine, rel) == _code_lines(theirs, rel)
    except (UnicodeDecodeError, ValueError):           # broken markers differ too
        return False


def changed_outside(copy_root, source_pkg=PACKAGE_DIR, source_root=REPO_ROOT):
    """Paths of the copy at copy_root that differ from the handout outside the blocks.

    Every file of the package must equal the reference's once the block bodies
    are taken out; a file the handout does not have (a new module, a
    ``sitecustomize.py``, ``conftest.py`` or ``.pth`` at the top) counts too, as do
    ``setup.cfg`` and ``pyproject.toml``. The grader shows these paths and never
    gives such a copy a PASS: it grades the blocks alone, inside the reference.
    A link, FIFO, device or oversized file (``odd_paths``) is named with what it is,
    and nothing is read through it.
    """
    changed = odd_paths(copy_root)
    if changed:
        return changed
    copy_pkg = os.path.join(copy_root, "minimegatron")
    reference = set(_files(source_pkg))
    for rel in sorted(reference | set(_files(copy_pkg))):
        mine, theirs = os.path.join(copy_pkg, rel), os.path.join(source_pkg, rel)
        if rel not in reference or not os.path.isfile(mine) or not _same(mine, theirs, rel):
            changed.append(os.path.join("minimegatron", rel))
    for rel in _files(copy_root, top_only=True):
        theirs = os.path.join(source_root, rel)
        if rel in ("setup.cfg", "pyproject.toml") and os.path.isfile(theirs):
            if not _same(os.path.join(copy_root, rel), theirs, rel):
                changed.append(rel)
        elif rel.endswith((".py", ".pth")):
            changed.append(rel)
    return changed


def odd_paths(copy_root):
    """["minimegatron/x (symbolic link)", ...]: what in a copy is not a plain file or folder.

    The copy's folder, its top-level entries and everything under its ``minimegatron/``
    are looked at with lstat, never followed (``runtime/plain_files.py``)."""
    why = odd_entry(copy_root)
    if why is not None:
        return [f". ({why})"]
    found = []
    for name in sorted(os.listdir(copy_root)):
        why = odd_entry(os.path.join(copy_root, name))
        if why is not None:
            found.append(f"{name} ({why})")
    package = os.path.join(copy_root, "minimegatron")
    if os.path.lexists(package) and odd_entry(package) is None:
        found += [f"{os.path.join('minimegatron', rel)} ({why})"
                  for rel, why in odd_entries(package)]
    return found


def _blank_package(dest_pkg):
    """Blank every marked block under dest_pkg; refuse if a solution line survives."""
    for root, _, files in os.walk(dest_pkg):
        for name in files:
            if not name.endswith(".py"):
                continue
            full = os.path.join(root, name)
            text = read_plain(full).decode("utf-8")
            if "# EXERCISE" not in text:
                continue
            student = blank_text(text, os.path.relpath(full, dest_pkg))
            leaks = leaked_lines(student, text)
            if leaks:
                raise RuntimeError(f"{full}: solution lines left in the student copy: {leaks}")
            write_plain(full, student, replace=True)


def check_destination(dest, force=False):
    """ValueError unless dest is a safe place for a copy: never /, never the home directory,
    and empty (or missing) unless ``force``."""
    full = os.path.realpath(dest)
    if full in (os.path.realpath(os.sep), os.path.realpath(os.path.expanduser("~"))):
        raise ValueError(say("cli.exercises.refuse", path=full))
    if os.path.isfile(full):
        raise ValueError(say("cli.exercises.is_file", path=full))
    if os.path.isdir(full) and os.listdir(full) and not force:
        raise ValueError(say("cli.exercises.not_empty", path=full, n=len(os.listdir(full))))


def make(dest, source_root=REPO_ROOT, force=False):
    """Write the student copy into dest (minimegatron/, tutorials/, exercises/ and the files
    that make it installable with ``pip install -e dest``); the list of paths written."""
    check_destination(dest, force)
    source_pkg = os.path.join(source_root, "minimegatron")
    blocks = find_blocks(source_pkg)
    blank = sorted(ex_id for ex_id, block in blocks.items() if is_blank(block))
    if blank:
        raise ValueError(say("cli.exercises.source_copy", path=source_pkg, ids=", ".join(blank)))
    target = os.path.join(dest, "minimegatron")
    os.makedirs(dest, exist_ok=True)
    if force:
        shutil.rmtree(target, ignore_errors=True)     # no solution file may survive in it
    shutil.copytree(source_pkg, target, ignore=IGNORE)
    _blank_package(target)
    written = [target]
    for extra in EXTRA_DIRS:
        src = os.path.join(source_root, extra)
        if os.path.isdir(src):
            shutil.copytree(src, os.path.join(dest, extra), ignore=IGNORE, dirs_exist_ok=True)
            written.append(os.path.join(dest, extra))
    for name in EXTRA_FILES:
        if os.path.isfile(os.path.join(source_root, name)):
            shutil.copyfile(os.path.join(source_root, name), os.path.join(dest, name))
            written.append(os.path.join(dest, name))
    for name in HANDOUT_FILES:
        shutil.copyfile(os.path.join(HANDOUT_DIR, name), os.path.join(dest, name))
        written.append(os.path.join(dest, name))
    return written


def solve(dest, ex_ids, source_pkg=PACKAGE_DIR):
    """Put the reference body of each exercise back into the copy at dest (a teacher's key)."""
    if not os.path.isdir(os.path.join(dest, "minimegatron")):
        raise ValueError(say("grader.no_package", path=dest))
    reference = find_blocks(source_pkg)
    for ex_id in ex_ids:
        if ex_id not in reference:
            raise ValueError(say("cli.exercises.no_such", id=ex_id, path=source_pkg,
                                 known=", ".join(sorted(reference))))
        block = reference[ex_id]
        if is_blank(block):
            raise ValueError(say("cli.exercises.no_solution", path=source_pkg, id=ex_id))
        put_block(dest, ex_id, block.body, block.path)


def put_block(dest, ex_id, lines, rel=None):
    """Write ``lines`` as the body of exercise ex_id's block in the copy at dest (its file
    ``rel`` in the package, found by its markers if not given); never through a link."""
    rel = rel or find_blocks(os.path.join(dest, "minimegatron"))[ex_id].path
    path = os.path.join(dest, "minimegatron", rel)
    text = read_plain(path).decode("utf-8")
    if ex_id not in {b.id for b in parse_blocks(text, path)}:
        raise ValueError(f"{path}: the markers of EXERCISE {ex_id} are missing")
    write_plain(path, replace_bodies(text, path, {ex_id: lines}), replace=True)


def order_text(chapter, mark=None):
    """"3.1 -> 3.2 -> **3.3** -> ...": a chapter's order, the id ``mark`` in bold."""
    return " -> ".join(f"**{i}**" if i == mark else i for i in chapter.order)


def order_line(ex_id):
    """The line of exercise ``ex_id``'s page (exercises/N.M.md, exercises/ko/N.M.md, in the
    current language) that gives its chapter's order and why."""
    chapter = chapter_of(ex_id)
    return i18n.text("cli.exercises.order_page", chapter=chapter.id,
                     order=order_text(chapter, ex_id), why=i18n.chapter_text(chapter))


def select(spec, known):
    """Ids matching "all", a group "3", an id "3.2" or a list "1.3,3"; ValueError if none."""
    if spec in (None, "all"):
        return list(known)
    parts = spec.split(",")
    chosen = [ex_id for ex_id in known if ex_id in parts or ex_id.split(".")[0] in parts]
    if not chosen:
        raise ValueError(i18n.text("cli.no_exercise", spec=repr(spec), known=", ".join(known)))
    return chosen
