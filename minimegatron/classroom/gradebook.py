"""``minimegatron grade --class DIR``: grade a whole class in one command, into a gradebook.

    minimegatron grade --class class/ --csv grades.csv --json grades.json
    minimegatron grade 3 --class class/ --jobs 2 --student-timeout 900

Every folder under DIR is one student's copy (``exercises make`` wrote it;
the folder's name is the student's). Each copy is graded by its own
``minimegatron grade --path COPY`` process of THIS package (teacher mode:
the student's exercise blocks run inside the reference, nothing else of the
copy does), ``--jobs`` copies at once (default: the cores / 4, since a
multi-rank check takes 4 ranks). A copy that hangs past ``--student-timeout``
is killed: its unfinished cells read TIMEOUT (its clock runs slower while the
machine is busy, ``load.py``). A copy that cannot be graded (no ``minimegatron/``,
broken markers, a crash) reads ERROR. Neither stops the class.

Each copy's grader reports down a pipe of its own (``--report-fd``), as JSON
sealed with a nonce this process sends it on stdin: no file a student's check
could write or rewrite, and a grader that was killed or exits non-zero, or whose
report lacks the nonce, gives ERROR for every cell. Each runs with a bytecode
cache of its own (PYTHONPYCACHEPREFIX), so a .pyc a check wrote beside the
grader's package is never loaded. This process is the class's child subreaper:
what is still running below it when the class is done is killed.

While it runs, one progress line per finished copy goes to stderr. At the
end: a table (students x exercises) on stdout, and the gradebook as CSV and
JSON, one row per cell::

    student, exercise, result, point, seconds

``result`` is PASS, FAIL, TODO, HANG, ERROR, CHANGED, TIMEOUT or SUSPECT
(``exercise_checks/judge.py``); ``point`` names the first point of the
lesson that was missed (the JSON also has every missed point and the
grader's full text). A last column, ``sandbox``, says where the checks ran:
``bwrap``, or ``unsandboxed`` (no bubblewrap: ``sandbox.py``). The exit status is 0
when every cell got a result (grading worked), whatever the students scored; 2 on a
usage error.

The class options (``--class``, ``--csv``, ``--json``, ``--jobs``, ``--student-timeout``)
are parsed by ``minimegatron/commands/grade.py``; the functions here take them as
plain arguments.
"""
import csv
import io
import json
import os
import secrets
import subprocess
import sys
import tempfile
import time

from minimegatron import i18n
from minimegatron.i18n.columns import fit, width
from minimegatron.classroom import inert, load, sandbox
from minimegatron.classroom.exercise_checks import EXERCISES
from minimegatron.classroom.exercises import select
from minimegatron.runtime.plain_files import write_plain
from minimegatron.runtime.processes import kill_group

SHORT = {"PASS": "pass", "FAIL": "FAIL", "TODO": "todo", "HANG": "HANG", "ERROR": "ERR",
         "CHANGED": "CHGD", "TIMEOUT": "TIME", "SUSPECT": "SUSP"}


def students(class_dir):
    """The student folders under class_dir (sorted; hidden folders left out)."""
    if not os.path.isdir(class_dir):
        raise ValueError(i18n.text("gradebook.no_class", path=class_dir))
    found = sorted(name for name in os.listdir(class_dir)
                   if not name.startswith(".") and os.path.isdir(os.path.join(class_dir, name)))
    if not found:
        raise ValueError(i18n.text("gradebook.empty", path=class_dir))
    return found


def report(verdicts):
    """One copy's verdicts as JSON data ({id: {result, missed, lines, seconds}})."""
    return {ex_id: {"result": v.result, "missed": v.missed, "lines": v.lines,
                    "seconds": v.seconds} for ex_id, v in verdicts.items()}


class Copy:
    """One copy's grader: its process, the pipe its report comes down, the nonce, the
    clock of its --student-timeout (scaled by the load, like a check's)."""

    def __init__(self, student_dir, spec, timeout, cache):
        read_fd, write_fd = os.pipe()
        self.nonce = secrets.token_hex(16)
        cmd = [sys.executable, "-m", "minimegatron", "grade", spec, "--path", student_dir,
               "--timeout", str(timeout), "--report-fd", str(write_fd)]
        env = {**os.environ, "PYTHONPYCACHEPREFIX": cache, "PYTHONDONTWRITEBYTECODE": "1"}
        try:
            self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                                         stderr=subprocess.PIPE, start_new_session=True,
                                         pass_fds=(write_fd,), env=env)
        finally:
            os.close(write_fd)
        try:
            self.proc.stdin.write((self.nonce + "\n").encode())
            self.proc.stdin.close()
        except BrokenPipeError:                # it ended at once: its exit code says why
            pass
        self.pipe, self.report, self.err = read_fd, [], []
        os.set_blocking(read_fd, False)
        os.set_blocking(self.proc.stderr.fileno(), False)
        self.clock, self.started = load.ProgressClock(), time.monotonic()

    def drain(self):
        """Read what the report pipe and stderr hold now (they never fill up and block)."""
        for fd, into in ((self.pipe, self.report), (self.proc.stderr.fileno(), self.err)):
            while True:
                try:
                    chunk = os.read(fd, 2 ** 16)
                except BlockingIOError:
                    break
                if not chunk:
                    break
                into.append(chunk)

    def finish(self, ids, ended):
        """{id: cell} once the grader ended (or was stopped); the pipes closed."""
        self.drain()
        os.close(self.pipe)
        self.proc.stderr.close()
        stderr = b"".join(self.err).decode("utf-8", "replace")
        return _cells(b"".join(self.report), self.nonce, self.proc.returncode, ids, ended,
                      stderr)


def _sealed(data, nonce, code):
    """(verdicts, sandbox kind, "") from a report sealed with nonce by a grader that exited
    0; else (None, "", why)."""
    if code != 0:
        how = (i18n.text("sandbox.signal", signal=-code) if code < 0 else
               i18n.text("sandbox.exit_code", code=code))
        return None, "", i18n.text("sandbox.no_seal", how=how)
    try:
        payload = json.loads(data.decode("utf-8"))
        if payload["nonce"] != nonce or not isinstance(payload["verdicts"], dict):
            raise ValueError("not sealed with this grade's nonce")
        return payload["verdicts"], str(payload["sandbox"]), ""
    except (ValueError, KeyError, TypeError, UnicodeDecodeError) as err:
        return None, "", i18n.text("sandbox.no_seal", how=f"{type(err).__name__}: {err}")


def _cells(data, nonce, code, ids, ended, stderr):
    """{id: cell} for one copy, from its sealed report; TIMEOUT / ERROR for what is missing."""
    verdicts, kind, why = _sealed(data, nonce, code) if ended == "done" else (None, "", "")
    if stderr.strip():                        # the grader's own last words come first
        why = stderr.strip().splitlines()[-1]
    cells = {}
    for ex_id in ids:
        if verdicts and ex_id in verdicts:
            cells[ex_id] = {**verdicts[ex_id], "sandbox": kind}
        elif ended == "timeout":
            cells[ex_id] = {"result": "TIMEOUT", "missed": ["timeout"], "seconds": None,
                            "lines": [i18n.text("gradebook.timeout")], "sandbox": ""}
        else:
            cells[ex_id] = {"result": "ERROR", "missed": ["error"], "seconds": None,
                            "lines": [why or i18n.text("gradebook.no_report")],
                            "sandbox": ""}
    return cells


def grade_class(class_dir, spec="all", timeout=60.0, jobs=1, student_timeout=1200.0,
                err=sys.stderr):
    """{student: {id: cell}}: every copy graded, ``jobs`` at once, progress on err."""
    names = students(class_dir)
    ids = select(spec, [ex.id for ex in EXERCISES])
    book, running, waiting = {}, {}, list(names)
    sandbox.become_subreaper()
    before = sandbox.descendants()
    with tempfile.TemporaryDirectory(prefix="mm_class_") as workdir:
        while waiting or running:
            while waiting and len(running) < jobs:
                name = waiting.pop(0)
                cache = os.path.join(workdir, f"pycache{len(book) + len(running)}")
                running[name] = Copy(os.path.join(class_dir, name), spec, timeout, cache)
            time.sleep(0.2)
            sandbox.reap(keep={copy.proc.pid for copy in running.values()})
            for name, copy in list(running.items()):
                copy.drain()
                late = copy.clock.tick() > student_timeout
                if copy.proc.poll() is None and not late:
                    continue
                ended = "timeout" if copy.proc.poll() is None else "done"
                if ended == "timeout":
                    kill_group(copy.proc)
                    sandbox.reap(keep={c.proc.pid for c in running.values() if c is not copy})
                book[name] = copy.finish(ids, ended)
                del running[name]
                passed = sum(c["result"] == "PASS" for c in book[name].values())
                print(i18n.text("gradebook.progress", done=len(book), count=len(names),
                                student=inert.line(name), passed=passed, total=len(ids),
                                seconds=time.monotonic() - copy.started), file=err, flush=True)
    sandbox.sweep(before)                 # what a killed copy's grader left running
    return {name: book[name] for name in names}


def rows(book):
    """The gradebook as rows: student, exercise, result, point, seconds (and the details)."""
    return [{"student": name, "exercise": ex_id, "result": cell["result"],
             "point": cell["missed"][0] if cell["missed"] else "",
             "seconds": cell["seconds"], "missed": cell["missed"], "lines": cell["lines"],
             "sandbox": cell.get("sandbox", "")}
            for name, cells in book.items() for ex_id, cell in cells.items()]


def table(book):
    """A text table: one row per student (the folder's name shown escaped, ``inert.py``),
    one column per exercise, and the pass count; columns by display width (``columns.py``)."""
    ids = list(next(iter(book.values())))
    shown = {name: inert.line(name) for name in book}
    size = max(7, *(width(name) for name in shown.values()))    # a Hangul name: 2 columns
    lines = [f"{'':<{size}} " + " ".join(f"{ex_id:>4}" for ex_id in ids) + "  pass"]
    for name, cells in book.items():
        marks = " ".join(f"{SHORT[cells[ex_id]['result']]:>4}" for ex_id in ids)
        passed = sum(c["result"] == "PASS" for c in cells.values())
        lines.append(f"{fit(shown[name], size, '<')} {marks}  {passed}/{len(ids)}")
    return "\n".join(lines)


def csv_text(book):
    """The gradebook as CSV text: every cell inert for a spreadsheet (``inert.cell``:
    a folder named ``=HYPERLINK(...)`` is text, not a formula)."""
    text = io.StringIO()
    out = csv.writer(text)
    out.writerow(["student", "exercise", "result", "point", "seconds", "sandbox"])
    for row in rows(book):
        out.writerow([inert.cell(value) for value in (
            row["student"], row["exercise"], row["result"], row["point"],
            "" if row["seconds"] is None else row["seconds"], row["sandbox"])])
    return text.getvalue()


def write(book, csv_path=None, json_path=None):
    """The gradebook into the CSV and / or JSON files named: a new file, or a plain file
    written over, never through a link, FIFO or device (``runtime/plain_files.py``)."""
    if csv_path:
        write_plain(csv_path, csv_text(book), replace=True)
    if json_path:
        write_plain(json_path, json.dumps(rows(book), indent=1, ensure_ascii=False),
                    replace=True)
