"""``minimegatron grade [EXERCISE] [--path DIR]``: check a student copy, exercise by exercise.

EXERCISE is an id (``3.2``), a group (``3``) or ``all`` (the default); DIR
holds the copy's ``minimegatron/`` (default: the current directory). For each
exercise it prints PASS or FAIL; a failure says what to fix (rank, value,
expected against got), or "not done yet: Exercise 3.2: <hint>" while the
block still raises, and quotes the line of the source notes it is about.
The exit status is 0 only if every graded exercise passes.

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
import shutil
import subprocess
import sys
import tempfile
import time

from minimegatron.exercise_checks import EXERCISES, by_id
from minimegatron.exercises import (IGNORE, PACKAGE_DIR, find_blocks, is_blank,
                                    replace_bodies, select)
from minimegatron.launcher import child_env, find_mpiexec, kill_group, mpiexec_flags

RUNNER = "minimegatron.exercise_checks.runner"
GRADER_FILES = ("exercise_checks", "gradcheck.py", "grader.py", "exercises.py")
POLL_S = 0.1


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
    """Run jobs in one process (nprocs 1) or one mpiexec launch; (results, tail of output)."""
    tag = f"{nprocs}_{time.monotonic_ns()}"
    jobs_file = os.path.join(workdir, f"jobs_{tag}.json")
    results_file = os.path.join(workdir, f"results_{tag}.jsonl")
    log_file = os.path.join(workdir, f"log_{tag}.txt")
    with open(jobs_file, "w") as f:
        json.dump(jobs, f)
    cmd = [sys.executable, "-m", RUNNER, jobs_file, results_file]
    if nprocs > 1:
        mpiexec = find_mpiexec()
        cmd = [mpiexec] + mpiexec_flags(mpiexec, nprocs) + ["-n", str(nprocs)] + cmd + ["--mpi"]
    env = child_env(nprocs)
    env["PYTHONPATH"] = jobs[0]["path"]           # the copy under test, nothing else
    with open(log_file, "w") as log:
        proc = subprocess.Popen(cmd, cwd=workdir, env=env, stdout=log, stderr=subprocess.STDOUT,
                                start_new_session=True)
        done, last_change = 0, time.monotonic()
        try:
            while proc.poll() is None:
                time.sleep(POLL_S)
                now_done = _count_lines(results_file)
                if now_done != done:
                    done, last_change = now_done, time.monotonic()
                elif time.monotonic() - last_change > timeout:
                    kill_group(proc)
                    break
        except KeyboardInterrupt:
            kill_group(proc)
            raise
    with open(log_file) as f:
        tail = f.read()[-2000:]
    results = []
    if os.path.exists(results_file):
        with open(results_file) as f:
            results = [json.loads(line) for line in f if line.strip()]
    return results, tail, proc.returncode


def _count_lines(path):
    if not os.path.exists(path):
        return 0
    with open(path) as f:
        return sum(1 for _ in f)


def run_jobs(jobs, nprocs, workdir, timeout):
    """{id: result}; a job that hangs or crashes is reported and the rest run again."""
    results, pending = {}, list(jobs)
    while pending:
        got, tail, code = _launch(pending, nprocs, workdir, timeout)
        for result in got:
            results[result["id"]] = result
        pending = [job for job in pending if job["id"] not in results]
        if not pending:
            break
        stuck = pending.pop(0)
        why = (f"no result after {timeout:g} s: killed. A rank may be waiting in a collective "
               "or a receive the other ranks never join (does every rank call it?)"
               if code is None or code < 0 or code in (124, 137) else
               f"the check crashed (exit code {code}); its output ends with:\n{tail}")
        results[stuck["id"]] = {"id": stuck["id"], "ranks": [["error", why]], "seconds": None}
    return results


def _verdict(result):
    """(passed, lines): rank verdicts merged (identical messages once, with their ranks)."""
    ranks = result["ranks"]
    if all(status == "pass" for status, _ in ranks):
        return True, [ranks[0][1]]
    lines, seen = [], {}
    for rank, (status, message) in enumerate(ranks):
        if status != "pass":
            text = f"not done yet: {message}" if status == "todo" else message
            text = re.sub(r"^rank \d+: ", "", text)   # the prefix is added back per group
            seen.setdefault(text, []).append(rank)
    for text, who in seen.items():
        everyone = len(who) == len(ranks) and text.startswith("not done yet")
        prefix = "" if len(ranks) == 1 or everyone else (
            f"rank {who[0]}: " if len(who) == 1 else f"ranks {', '.join(map(str, who))}: ")
        lines.append(prefix + text)
    return False, lines


def grade(path=".", spec=None, timeout=60.0, out=sys.stdout):
    """Grade the copy at path; {id: passed}. Prints one verdict per exercise to out."""
    student_pkg = os.path.join(os.path.abspath(path), "minimegatron")
    if not os.path.isdir(student_pkg):
        raise ValueError(f"no minimegatron/ package in {os.path.abspath(path)} (make a copy "
                         "with: minimegatron exercises make DIR, then grade --path DIR)")
    reference = find_blocks(PACKAGE_DIR)
    student = find_blocks(student_pkg)
    ids = select(spec, [ex.id for ex in EXERCISES])
    if any(is_blank(block) for block in reference.values()):
        print("note: this minimegatron is itself a student copy, so other exercises cannot "
              "be filled in; a check may stop at another exercise's NotImplementedError",
              file=out)
    verdicts, runnable = {}, []
    for ex_id in ids:
        if ex_id not in reference:
            verdicts[ex_id] = (False, [f"Exercise {ex_id} is not marked in {PACKAGE_DIR}"])
        elif ex_id not in student:
            verdicts[ex_id] = (False, [
                f"the markers '# EXERCISE {ex_id} begin/end' are missing from "
                f"minimegatron/{reference[ex_id].path} in {path}: put them back around "
                "your code"])
        else:
            runnable.append(ex_id)
    with tempfile.TemporaryDirectory(prefix="mm_grade_") as workdir:
        jobs = plan(student_pkg, runnable, workdir, reference, student)
        for nprocs in sorted({by_id(job["id"]).nprocs for job in jobs}):
            batch = [job for job in jobs if by_id(job["id"]).nprocs == nprocs]
            for ex_id, result in run_jobs(batch, nprocs, workdir, timeout).items():
                verdicts[ex_id] = _verdict(result)
    print(f"grading {len(ids)} exercise(s) in {student_pkg}", file=out)
    for ex_id in ids:
        exercise, (passed, lines) = by_id(ex_id), verdicts[ex_id]
        ranks = f" [{exercise.nprocs} ranks]" if exercise.nprocs > 1 else ""
        print(f"{'PASS' if passed else 'FAIL'}  {ex_id:<4} {exercise.title}{ranks}", file=out)
        for line in lines:
            print("      " + line.replace("\n", "\n      "), file=out)
        if not passed:
            print(f'      source notes: "{exercise.note}"', file=out)
    passed = sum(ok for ok, _ in verdicts.values())
    print(f"{passed} of {len(ids)} exercise(s) pass", file=out)
    return {ex_id: verdicts[ex_id][0] for ex_id in ids}


def main(argv=None):
    parser = argparse.ArgumentParser(prog="minimegatron grade",
                                     description="check a student copy, exercise by exercise")
    parser.add_argument("exercise", nargs="?", default="all",
                        help="an id (3.2), a group (3) or all (default)")
    parser.add_argument("--path", default=".", help="directory holding the copy's minimegatron/")
    parser.add_argument("--timeout", type=float, default=60.0,
                        help="seconds a check may run without finishing (default 60)")
    opts = parser.parse_args(argv)
    try:
        results = grade(opts.path, opts.exercise, opts.timeout)
    except (ValueError, FileNotFoundError) as err:      # FileNotFoundError: no mpiexec
        print(f"minimegatron grade: {err}", file=sys.stderr)
        return 2
    return 0 if all(results.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
