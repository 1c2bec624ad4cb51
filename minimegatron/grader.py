"""``minimegatron grade [EXERCISE] [--path DIR]``: check a student copy, exercise by exercise.

EXERCISE is an id (``3.2``), a group (``3``) or ``all`` (the default); DIR
holds the copy's ``minimegatron/`` (default: the current directory). For each
exercise it prints PASS or FAIL; a failure says what to fix (rank, value,
expected against got), or "not done yet: Exercise 3.2: <hint>" while the
block still raises, and quotes the line of the source notes it is about.
The exit status is 0 only if every graded exercise passes. With
``MINIMEGATRON_LANG=ko`` every message is Korean (``minimegatron.i18n``; the
checks' own messages too: the runner inherits the environment).

How one exercise is graded, in isolation. Exercise X's check runs against
the student's copy in which every OTHER exercise block has been put back to
this (the reference) package's solution, so X passes or fails on X alone:
a DDP check does not stop at an unfinished MatMul backward; the checks
(``exercise_checks/``, ``gradcheck.py``) are this package's too. The copies live
in a temporary directory; the checks run in a fresh subprocess with that copy
first on sys.path (never mixed with this package), multi-rank checks under
``mpiexec -n N`` (``launcher.find_mpiexec``). All exercises of one kind run in
one process or one mpiexec launch; a check that makes no progress for
``--timeout`` seconds (a rank waiting for a collective nobody joins) is
killed, reported, and the remaining ones are run again without it.
"""
import argparse
import json
import os
import re
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time

from minimegatron import faults, i18n
from minimegatron.argtypes import finite_positive_float
from minimegatron.entry import banner
from minimegatron.exercise_checks import EXERCISES, by_id
from minimegatron.exercises import (IGNORE, PACKAGE_DIR, find_blocks, is_blank,
                                    replace_bodies, select)
from minimegatron.launcher import child_env, find_mpiexec, kill_group, mpiexec_flags

RUNNER = "minimegatron.exercise_checks.runner"
GRADER_FILES = ("exercise_checks", "gradcheck.py", "grader.py", "exercises.py", "i18n")
POLL_S = 0.1
DUMP_WAIT_S = 3.0   # how long the ranks get to say where they wait before the kill
SKEW_S = 10.0       # some ranks finished a check, the others still inside it after this: HANG
MAX_OUTPUT = 64 * 2 ** 20         # bytes of output a check may print before it is killed
RANK_PREFIX = re.compile(r"^(rank|랭크) \d+: ")    # a check's own "rank 1: " (en or ko)


def _overlay(student_pkg, dest, own_id, reference, student):
    """Copy student_pkg to dest/minimegatron with every block but own_id back to reference.

    The checks themselves (GRADER_FILES) always come from this package, so an
    old or edited copy is graded by the current checks.
    """
    target = os.path.join(dest, "minimegatron")
    shutil.copytree(student_pkg, target, ignore=IGNORE)
    for rel in GRADER_FILES:
        source, copy = os.path.join(PACKAGE_DIR, rel), os.path.join(target, rel)
        if os.path.isdir(source):
            shutil.rmtree(copy, ignore_errors=True)
            shutil.copytree(source, copy, ignore=IGNORE)
        else:
            shutil.copyfile(source, copy)
    by_file = {}
    for ex_id, block in reference.items():
        if ex_id != own_id and ex_id in student and not is_blank(block):
            by_file.setdefault(student[ex_id].path, {})[ex_id] = block.body
    for rel, bodies in by_file.items():
        path = os.path.join(target, rel)
        with open(path, encoding="utf-8") as f:
            text = f.read()
        with open(path, "w", encoding="utf-8") as f:
            f.write(replace_bodies(text, rel, bodies))
    return dest


def plan(student_pkg, ids, workdir, reference, student):
    """[{"id", "path"}]: the copy each exercise is checked against (shared when identical)."""
    shared, jobs = None, []
    for ex_id in ids:
        same = ex_id in reference and student[ex_id].body == reference[ex_id].body
        if same:
            if shared is None:
                shared = _overlay(student_pkg, os.path.join(workdir, "reference"), None,
                                  reference, student)
            path = shared
        else:
            path = _overlay(student_pkg, os.path.join(workdir, f"ex{ex_id}"), ex_id,
                            reference, student)
        jobs.append({"id": ex_id, "path": path})
    return jobs


def _launch(jobs, nprocs, workdir, timeout):
    """Run jobs in one process (nprocs 1) or one mpiexec launch.

    Returns a dict: "results" (the result lines carrying this launch's nonce),
    "forged" (keys of lines without it), "tail" (the output's end), "code",
    "ended" ("done"; "hang": no new result for ``timeout`` s, or ranks split
    for SKEW_S; "output": more than MAX_OUTPUT bytes printed; killed either
    way), "progress" (each rank's own verdicts), "waited" and "stacks".
    """
    tag = f"{nprocs}_{time.monotonic_ns()}"
    run_dir = os.path.join(workdir, f"run_{tag}")
    os.makedirs(run_dir)
    jobs_file = os.path.join(run_dir, "jobs.json")
    results_file = os.path.join(run_dir, "results.jsonl")
    log_file = os.path.join(run_dir, "log.txt")
    with open(jobs_file, "w") as f:
        json.dump(jobs, f)
    cmd = [sys.executable, "-m", RUNNER, jobs_file, results_file]
    if nprocs > 1:
        mpiexec = find_mpiexec()
        cmd = [mpiexec] + mpiexec_flags(mpiexec, nprocs) + ["-n", str(nprocs)] + cmd + ["--mpi"]
    env = child_env(nprocs)
    env["PYTHONPATH"] = jobs[0]["path"]           # the copy under test, nothing else
    env[faults.JOB_DIR_ENV] = run_dir             # each rank's pid, end and stack dumps
    nonce = secrets.token_hex(16)
    ended, waited, stacks = "done", 0.0, ""
    with open(log_file, "w") as log:
        proc = subprocess.Popen(cmd, cwd=run_dir, env=env, stdin=subprocess.PIPE, stdout=log,
                                stderr=subprocess.STDOUT, start_new_session=True)
        proc.stdin.write(f"{nonce}\n".encode())
        proc.stdin.close()
        done, last_change = 0, time.monotonic()
        try:
            while proc.poll() is None:
                time.sleep(POLL_S)
                now_done = _count_lines(results_file)
                if now_done != done:
                    done, last_change = now_done, time.monotonic()
                elif time.monotonic() - last_change > timeout or (
                        time.monotonic() - last_change > SKEW_S and
                        _split(_progress(run_dir, nprocs), done)):
                    ended = "hang"
                elif os.path.getsize(log_file) > MAX_OUTPUT:
                    ended = "output"
                if ended != "done":
                    waited = time.monotonic() - last_change
                    if ended == "hang" and nprocs > 1:     # where each rank waits, then kill
                        stacks = faults.format_dumps(faults.dump_request(run_dir, DUMP_WAIT_S))
                    break
        finally:
            _kill_all(proc, run_dir)
    results, forged = [], []
    if os.path.exists(results_file):
        with open(results_file) as f:
            for line in f:
                record = _parse(line)
                if record is None:
                    continue                  # not a result at all: it claims nothing
                if record.get("nonce") != nonce:
                    forged.append(record.get("key", record["id"]))
                elif all(r["key"] != record["key"] for r in results):
                    results.append(record)
    return {"results": results, "forged": forged, "tail": _tail(log_file), "ended": ended,
            "code": proc.returncode, "progress": _progress(run_dir, nprocs), "waited": waited,
            "stacks": stacks}


def _kill_all(proc, run_dir):
    """The whole job, then every process group it made: the runner's (1 rank) and each
    rank's (hydra starts each rank in its own session). A process that student code
    started stays in its parent's group even after that parent has ended."""
    ranks = faults.rank_pids(run_dir).values()
    kill_group(proc, ranks)
    for leader in {proc.pid, *ranks}:
        try:
            os.killpg(leader, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass


def _parse(line):
    try:
        record = json.loads(line)
    except ValueError:
        return None
    return record if isinstance(record, dict) and "id" in record else None


def _tail(path, size=3000):
    """The last ``size`` bytes of a log, read without loading the whole file."""
    with open(path, "rb") as f:
        f.seek(max(0, os.path.getsize(path) - size))
        return f.read().decode("utf-8", "replace")


def _progress(run_dir, nprocs):
    """{rank: {exercise id: verdict}}: what each rank had reported when the launch ended."""
    seen = {}
    for rank in range(nprocs if nprocs > 1 else 0):
        path = os.path.join(run_dir, f"progress_rank{rank}.jsonl")
        seen[rank] = {}
        if os.path.exists(path):
            with open(path) as f:
                for line in f:
                    record = _parse(line)
                    if record:
                        seen[rank][record["key"]] = record.get("verdict")
    return seen


def _split(progress, done):
    """True if some ranks reported the check now running and others did not: a hang."""
    reported = [len(seen) > done for seen in progress.values()]
    return any(reported) and not all(reported)


def _count_lines(path):
    if not os.path.exists(path):
        return 0
    with open(path) as f:
        return sum(1 for _ in f)


def _hang_report(key, launch):
    """HANG, then for each rank: its own verdict if it finished first, else 'still inside'."""
    lines = [i18n.text("grader.hang", seconds=launch["waited"])]
    for rank, verdicts in launch["progress"].items():
        verdict = verdicts.get(key)
        if verdict is None:
            lines.append(i18n.text("grader.hang_waiting", rank=rank))
        else:
            status, message = verdict
            lines.append(i18n.text("grader.hang_finished", rank=rank, status=status,
                                   message=message))
    if launch["stacks"]:
        lines += [i18n.text("grader.hang_stacks"), launch["stacks"]]
    return "\n".join(lines)


def run_jobs(jobs, nprocs, workdir, timeout):
    """{key: result} (a job's key is its exercise id unless it names one); a job that hangs
    or crashes is reported and the rest run again."""
    pending = [{**job, "key": job.get("key", job["id"])} for job in jobs]
    results = {}
    while pending:
        launch = _launch(pending, nprocs, workdir, timeout)
        for key in launch["forged"]:
            results[key] = {"id": key, "ranks": [["error", i18n.text("grader.forged")]]}
        for result in launch["results"]:
            results.setdefault(result["key"], result)
        pending = [job for job in pending if job["key"] not in results]
        if not pending:
            break
        stuck = pending.pop(0)
        if launch["ended"] == "hang":
            why = _hang_report(stuck["key"], launch)
        elif launch["ended"] == "output":
            why = i18n.text("grader.too_much_output", mib=MAX_OUTPUT // 2 ** 20)
        else:
            why = i18n.text("grader.crashed", code=launch["code"], tail=launch["tail"])
        results[stuck["key"]] = {"id": stuck["id"], "ranks": [["error", why]], "seconds": None}
    return results


def _todo(message, own_id):
    """(text, own): "not done yet" (own block) or "needs Exercise X first" for a blank block.

    A blank block raises "Exercise X: <English hint>"; the hint is shown in
    the current language when it is the exercise's own.
    """
    ex_id, message = i18n.blank_message(message)
    if ex_id is None or ex_id == own_id:
        return i18n.text("grader.todo", message=message), True
    return i18n.text("grader.needs_first", id=ex_id, message=message), False


def _verdict(result):
    """(passed, lines): rank verdicts merged (identical messages once, with their ranks)."""
    ranks = result["ranks"]
    if all(status == "pass" for status, _ in ranks):
        return True, [ranks[0][1]]
    lines, seen, own_todo = [], {}, set()
    for rank, (status, message) in enumerate(ranks):
        if status != "pass":
            own = False
            if status == "todo":
                message, own = _todo(message, result["id"])
            message = RANK_PREFIX.sub("", message)      # the prefix is added back per group
            seen.setdefault(message, []).append(rank)
            if own:
                own_todo.add(message)
    for message, who in seen.items():
        everyone = len(who) == len(ranks) and message in own_todo
        prefix = "" if len(ranks) == 1 or everyone else (
            i18n.text("grader.rank", rank=who[0]) if len(who) == 1 else
            i18n.text("grader.ranks_prefix", ranks=", ".join(map(str, who))))
        lines.append(prefix + message)
    return False, lines


def grade_variants(variants, timeout=60.0):
    """{name: (passed, lines)}: the reference with ONE block replaced, graded like an answer.

    ``variants`` is {name: (exercise id, body lines)}. Every variant of one rank
    count runs in one launch, each against its own copy. The mutation tests
    plant plausible bugs this way and assert that each one FAILS.
    """
    reference = find_blocks(PACKAGE_DIR)
    with tempfile.TemporaryDirectory(prefix="mm_variants_") as workdir:
        jobs = []
        for name, (ex_id, body) in variants.items():
            dest = os.path.join(workdir, f"v{len(jobs)}")
            target = os.path.join(dest, "minimegatron")
            shutil.copytree(PACKAGE_DIR, target, ignore=IGNORE)
            rel = reference[ex_id].path
            with open(os.path.join(target, rel), encoding="utf-8") as f:
                text = replace_bodies(f.read(), rel, {ex_id: body})
            with open(os.path.join(target, rel), "w", encoding="utf-8") as f:
                f.write(text)
            jobs.append({"id": ex_id, "key": name, "path": dest})
        verdicts = {}
        for nprocs in sorted({by_id(job["id"]).nprocs for job in jobs}):
            batch = [job for job in jobs if by_id(job["id"]).nprocs == nprocs]
            for key, result in run_jobs(batch, nprocs, workdir, timeout).items():
                verdicts[key] = _verdict(result)
    return verdicts


def grade(path=".", spec=None, timeout=60.0, out=sys.stdout):
    """Grade the copy at path; {id: passed}. Prints one verdict per exercise to out."""
    i18n.language()             # an unknown MINIMEGATRON_LANG: one line, before any work
    student_pkg = os.path.join(os.path.abspath(path), "minimegatron")
    if not os.path.isdir(student_pkg):
        raise ValueError(i18n.text("grader.no_package", path=os.path.abspath(path)))
    reference = find_blocks(PACKAGE_DIR)
    student = find_blocks(student_pkg)
    ids = select(spec, [ex.id for ex in EXERCISES])
    if any(is_blank(block) for block in reference.values()):
        print(i18n.text("grader.self_check"), file=out)
    verdicts, runnable = {}, []
    for ex_id in ids:
        if ex_id not in reference:
            verdicts[ex_id] = (False, [i18n.text("grader.not_marked", id=ex_id,
                                                 package=PACKAGE_DIR)])
        elif ex_id not in student:
            verdicts[ex_id] = (False, [i18n.text("grader.markers_missing", id=ex_id,
                                                 file=reference[ex_id].path, path=path)])
        else:
            runnable.append(ex_id)
    with tempfile.TemporaryDirectory(prefix="mm_grade_") as workdir:
        jobs = plan(student_pkg, runnable, workdir, reference, student)
        for nprocs in sorted({by_id(job["id"]).nprocs for job in jobs}):
            batch = [job for job in jobs if by_id(job["id"]).nprocs == nprocs]
            for ex_id, result in run_jobs(batch, nprocs, workdir, timeout).items():
                verdicts[ex_id] = _verdict(result)
    print(i18n.text("grader.grading", count=len(ids), package=student_pkg), file=out)
    for ex_id in ids:
        exercise, (passed, lines) = by_id(ex_id), verdicts[ex_id]
        ranks = (i18n.text("grader.ranks", nprocs=exercise.nprocs, group=exercise.group)
                 if exercise.nprocs > 1 else "")
        verdict = i18n.text("grader.pass" if passed else "grader.fail")
        print(f"{verdict}  {ex_id:<4} {i18n.exercise_text(exercise, 'title')}{ranks}", file=out)
        for line in lines:
            print("      " + line.replace("\n", "\n      "), file=out)
        if not passed:
            note = i18n.exercise_text(exercise, "note")
            print("      " + i18n.text("grader.source_notes", note=note), file=out)
    passed = sum(ok for ok, _ in verdicts.values())
    print(i18n.text("grader.summary", passed=passed, count=len(ids)), file=out)
    return {ex_id: verdicts[ex_id][0] for ex_id in ids}


def main(argv=None):
    parser = argparse.ArgumentParser(prog="minimegatron grade",
                                     description="check a student copy, exercise by exercise")
    parser.add_argument("exercise", nargs="?", default="all",
                        help="an id (3.2), a group (3) or all (default)")
    parser.add_argument("--path", default=".", help="directory holding the copy's minimegatron/")
    parser.add_argument("--timeout", type=finite_positive_float, default=60.0,
                        help="seconds a check may run without finishing (default 60)")
    opts = parser.parse_args(argv)
    banner("grade")
    try:
        results = grade(opts.path, opts.exercise, opts.timeout)
    except (ValueError, FileNotFoundError) as err:      # FileNotFoundError: no mpiexec
        print(f"minimegatron grade: {err}", file=sys.stderr)
        return 2
    return 0 if all(results.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
