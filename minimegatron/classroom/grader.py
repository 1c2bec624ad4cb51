"""``minimegatron grade [EXERCISE] [--path DIR | --class DIR]``: check copies, exercise by
exercise, against what each exercise teaches.

EXERCISE is an id (``3.2``), a group (``3``), a list (``1.1,3``) or ``all`` (the
default); DIR holds the copy's ``minimegatron/`` (default: the current
directory). Each exercise gets PASS, FAIL (which point of the lesson was
missed, in plain words, with a hint), TODO (not done yet), HANG, ERROR,
CHANGED or SUSPECT (``exercise_checks/judge.py``), and a failure quotes the line of the
source notes it is about. The exit status is 0 only if every graded exercise
passes. ``--class DIR`` grades every copy under DIR into a gradebook
(``gradebook.py``). With ``MINIMEGATRON_LANG=ko`` every message is Korean.

How one exercise is graded (teacher mode: this package holds every answer).

1. The copy it runs is THIS package with one block, the exercise's own, taken
   from the student. No other file or block of the student's copy runs, so a
   DDP check does not stop at an unfinished MatMul backward, and an edited
   check, ``__init__`` or backend changes nothing. That copy holds no judge and
   no other answer (``staging.py``): its check modules are cut to what collects
   the evidence, ``judge.py`` is left out, and every other exercise's block is
   the handout's raise but those the check runs through.
2. The student side (``exercise_checks/runner.py``) runs in a fresh process with
   that copy first on sys.path, multi-rank checks under ``mpiexec -n 4``; it
   calls the lesson's ``collect`` on a problem drawn from a random seed and
   writes every rank's evidence as JSON data. It decides nothing.
3. The judge is this process, which runs no student code: it reads the
   evidence back (``evidence.py``: data, never pickles) and judges each point
   of the lesson (``lesson.py``). A second report for one check (student code
   writing lines) is a FAIL.
4. Before anything runs, each block is read (``static_read.py``): an import, a
   name or an attribute outside its allow-list makes the cell SUSPECT, with the
   line; a SUSPECT block is not run at all.
5. Every file of the copy outside the exercise blocks is compared with the
   handout (``exercises.changed_outside``): any difference makes every cell
   CHANGED, with the paths, never PASS.

All exercises of one rank count run in one process or one mpiexec launch; a
check that makes no progress for ``--timeout`` seconds (a rank waiting for a
collective nobody joins) is killed, reported as HANG with where each rank
waits, and the remaining ones run again without it. Those seconds follow the
load (``load.py``): a check that ran out of them on a busy machine while its
processes kept working is TIMEOUT (grade again), never HANG. A launch that ends
with a signal or a non-zero code is ERROR.

Teacher mode runs the student side in a sandbox (``sandbox.py``: bubblewrap, one
launch per copy that runs student code; without bubblewrap the fallback, said on
the first line). A copy holding a link, FIFO, device or oversized file is
CHANGED, naming it, and nothing of it runs; every file the grader reads from or
writes into a copy or a run folder goes through ``runtime/plain_files.py`` (never
through a link, FIFO or device; the log's end read through the file the grader holds),
and a run folder left holding a link, FIFO or device makes its launch's cells ERROR. A
launch with more than ``process_cap.MAX_PROCESSES`` processes is killed (ERROR). What
it prints of a student's (messages, names) is escaped for the terminal (``inert.py``).

Self-check mode (this package is itself a student copy, so it has no answers):
the copy runs as it is, with this package's checks; an exercise that needs an
unfinished earlier one says so.

The command's arguments are ``minimegatron/commands/grade.py``; ``grade_copy``
and ``grade`` here take plain arguments.
"""
import functools
import importlib
import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time

from minimegatron import i18n
from minimegatron.classroom import inert, load, process_cap, sandbox, staging
from minimegatron.runtime import hang_report, job_files
from minimegatron.classroom import static_read
from minimegatron.runtime.plain_files import (create_plain, odd_entries, read_plain, tail_of,
                                              write_plain)
from minimegatron.classroom.exercise_checks import EXERCISES, by_id, standins
from minimegatron.classroom.exercise_checks.judge import Verdict, judge
from minimegatron.classroom.exercises import (IGNORE, PACKAGE_DIR, changed_outside, find_blocks,
                                              is_blank, odd_paths, select)
from minimegatron.runtime.launcher import child_env
from minimegatron.runtime.mpiexec import find_mpiexec, mpiexec_flags
from minimegatron.runtime.processes import kill_group

RUNNER = "minimegatron.classroom.exercise_checks.runner"
GRADER_FILES = ("classroom", "i18n")
POLL_S = 0.1
DUMP_WAIT_S = 3.0   # how long the ranks get to say where they wait before the kill
SKEW_S = 10.0       # some ranks finished a check, the others still inside it after this: HANG
MAX_OUTPUT = 64 * 2 ** 20         # bytes of output a check may print before it is killed
TAIL_BYTES = 3000   # the end of a launch's output quoted in an ERROR
MAX_ENTRIES = 1000  # files a check's run folder may hold (evidence, pids, dumps, TMPDIR)
SEED = 20261125     # the problem seed of the mutation tests (a real grade draws one)


def _overlay(source_pkg, dest, bodies, grader_files=False):
    """Copy source_pkg to dest/minimegatron with the blocks in ``bodies`` ({id: lines})
    replaced; with ``grader_files`` the checks (GRADER_FILES) come from this package.
    One block of a student's (teacher mode, mutation tests): staged by ``staging.stage``."""
    target = os.path.join(dest, "minimegatron")
    shutil.copytree(source_pkg, target, ignore=IGNORE)
    for rel in GRADER_FILES if grader_files else ():
        source, copy = os.path.join(PACKAGE_DIR, rel), os.path.join(target, rel)
        if os.path.isdir(source):
            shutil.rmtree(copy, ignore_errors=True)
            shutil.copytree(source, copy, ignore=IGNORE)
        else:
            shutil.copyfile(source, copy)
    by_file = {}
    for ex_id, body in bodies.items():
        by_file.setdefault(_block_path(ex_id), {})[ex_id] = body
    staging.write_bodies(target, by_file)
    if not grader_files and len(bodies) == 1:    # a student's block: no judge, no answer
        staging.stage(target, next(iter(bodies)))
    return dest


@functools.lru_cache(maxsize=None)
def _block_path(ex_id):
    """The file (relative to the package) that holds exercise ex_id's block, in this package."""
    return find_blocks(PACKAGE_DIR)[ex_id].path


def plan(student_pkg, ids, workdir, reference, student):
    """[{"id", "path"}]: the copy each exercise is checked against (shared when identical).

    Teacher mode (this package holds every answer): the copy is THIS package with
    one block, the exercise's own, taken from the student; every other file and
    block is the reference's, so nothing else of the student's copy runs.
    Self-check mode (this package is itself a student copy): the student's own
    package as it is, with this package's checks; where a block the check runs through
    (``staging.NEEDS``) is still the handout's raise, with a stand-in for it in that
    copy (``staging.stand_ins``), never in the student's files. The exercises graded
    together share one such copy (the stand-ins of all, but of those graded: a check
    never runs through a block it does not need); one whose stand-ins include an
    exercise graded here gets its own.
    """
    teacher = not any(is_blank(block) for block in reference.values())
    shared, jobs, staged = None, [], {}
    needed = {} if teacher else {ex_id: staging.stand_ins(student, ex_id) for ex_id in ids}
    common = {other: body for bodies in needed.values() for other, body in bodies.items()
              if other not in ids}          # never an exercise graded here: not its own
    for ex_id in ids:
        same = ex_id in reference and student[ex_id].body == reference[ex_id].body
        stand_ins = needed.get(ex_id, {})
        stand_ins = common if set(stand_ins) <= set(common) else stand_ins
        if stand_ins:                  # a self-check copy, a block it runs through still blank
            key = tuple(sorted(stand_ins))                   # one copy per set of stand-ins
            if key not in staged:
                staged[key] = _overlay(student_pkg, os.path.join(
                    workdir, "self_" + "_".join(key)), stand_ins, grader_files=True)
            path = staged[key]
        elif same or not teacher:
            if shared is None:
                shared = (_overlay(PACKAGE_DIR, os.path.join(workdir, "reference"), {})
                          if teacher else
                          _overlay(student_pkg, os.path.join(workdir, "self"), {},
                                   grader_files=True))
            path = shared
        else:
            path = _overlay(PACKAGE_DIR, os.path.join(workdir, f"ex{ex_id}"),
                            {ex_id: student[ex_id].body})
        trusted = same or is_blank(student[ex_id])   # no student code: launches may be shared
        jobs.append({"id": ex_id, "path": path, "trusted": trusted})
    return jobs


def _launch(jobs, nprocs, workdir, timeout, box=None):
    """Run jobs (the student side of each check) in one process or one mpiexec launch;
    with ``box`` (a ``sandbox.Sandbox``; every job on one staged copy) inside it.

    Returns a dict: "records" ({key: [one record per rank]} for the jobs every rank
    reported), "forged" (keys reported twice by one rank: student code wrote a
    line), "tail" (the output's end), "code", "ended" ("done"; "hang": no new
    record for ``timeout`` s, or ranks split for SKEW_S, both on the load-scaled
    clock of ``load.py``; "slow": the same on a busy machine with working processes;
    "output": more than MAX_OUTPUT bytes or MAX_ENTRIES files; "processes": more than
    ``process_cap.MAX_PROCESSES`` processes below the grader; killed either way),
    "progress" ({rank: {key: record}}), "waited", "load" and "stacks".
    """
    tag = f"{nprocs}_{time.monotonic_ns()}"
    run_dir = os.path.join(workdir, f"run_{tag}")
    os.makedirs(run_dir)
    jobs_file = os.path.join(run_dir, "jobs.json")
    log_file = os.path.join(run_dir, "log.txt")
    write_plain(jobs_file, json.dumps(jobs))
    cmd = [sys.executable, "-m", RUNNER, jobs_file, run_dir]
    if nprocs > 1:
        mpiexec = find_mpiexec()
        cmd = [mpiexec] + mpiexec_flags(mpiexec, nprocs) + ["-n", str(nprocs)] + cmd + ["--mpi"]
    env = child_env(nprocs)
    env["PYTHONPATH"] = jobs[0]["path"]           # the copy under test, nothing else
    env[job_files.JOB_DIR_ENV] = run_dir             # each rank's pid, end and stack dumps
    preexec, before = None, sandbox.descendants()
    if box is not None:
        copies = sorted({job["path"] for job in jobs})
        cmd, env, preexec = box.wrap(cmd, env, run_dir, copies, timeout)
        env["PYTHONPATH"] = jobs[0]["path"]
    ended, waited, stacks, busy = "done", 0.0, "", 0.0
    with create_plain(log_file) as log:     # held open: the tail is read through it
        proc = subprocess.Popen(cmd, cwd=run_dir, env=env, stdin=subprocess.DEVNULL,
                                stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
                                preexec_fn=preexec)
        done, clock = 0, load.ProgressClock()
        try:
            while proc.poll() is None:
                time.sleep(POLL_S)
                counts, waited = _counts(run_dir, nprocs), clock.tick()
                if max(counts) != done:
                    done = max(counts)
                    clock.reset()
                elif waited > timeout or (waited > SKEW_S and min(counts) < done):
                    ended = "hang"
                elif max(_run_bytes(run_dir), os.fstat(log.fileno()).st_size) > MAX_OUTPUT:
                    ended = "output"
                elif len(sandbox.descendants() - before) > process_cap.MAX_PROCESSES:
                    ended = "processes"                        # a fork bomb: killed now
                if ended != "done":
                    dumps = None
                    if ended == "hang" and nprocs > 1:     # where each rank waits, then kill
                        dumps = hang_report.dump_request(run_dir, DUMP_WAIT_S)
                        stacks = hang_report.format_dumps(dumps)
                    if ended == "hang" and clock.busy() and load.starved(
                            clock, load.cpu_share(lambda: _tree(proc)), dumps):
                        ended, busy = "slow", clock.peak * load.cores()
                    break
        finally:
            _kill_all(proc, run_dir, ranks=box is None or box.bwrap is None)
            if box is not None:
                sandbox.sweep(before)
                box.release()
        tail = tail_of(log.fileno(), TAIL_BYTES).decode("utf-8", "replace")
    progress, forged = _progress(run_dir, nprocs)
    keys = [job["key"] for job in jobs]
    records = {key: [progress[rank][key] for rank in range(nprocs)] for key in keys
               if key not in forged and all(key in progress[rank] for rank in range(nprocs))}
    return {"records": records, "forged": forged, "tail": tail, "ended": ended,
            "code": proc.returncode, "progress": progress, "waited": waited, "stacks": stacks,
            "load": busy, "odd": _odd_run_files(run_dir)}


def _tree(proc):
    """The processes of a launch: mpiexec (or bwrap, or the runner) and all below it."""
    from minimegatron.runtime.processes import descendants
    return {proc.pid} | descendants(proc.pid)


def _kill_all(proc, run_dir, ranks=True):
    """The whole job, then every process group it made: the runner's (1 rank) and each
    rank's (hydra starts each rank in its own session). A process that student code
    started stays in its parent's group even after that parent has ended. In bubblewrap
    (``ranks=False``) the pids the ranks wrote are another namespace's: killing the
    sandbox ends its every process."""
    ranks = job_files.rank_pids(run_dir).values() if ranks else ()
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
    ok = isinstance(record, dict) and all(k in record for k in ("key", "id", "status"))
    return record if ok else None


def _odd_run_files(run_dir):
    """["log.txt (symbolic link)", ...]: what in a run folder is not a plain file or folder
    (the private TMPDIR of the fallback aside: MPI may leave a socket there). Only student
    code makes one: the launch's cells read ERROR, naming them. A big file is not one:
    the output cap (MAX_OUTPUT) says that."""
    try:
        found = odd_entries(run_dir, cap=2 ** 62)
    except OSError:
        return []
    return [f"{rel} ({why})" for rel, why in found
            if rel.split(os.sep)[0] != sandbox.PRIVATE_TMP]


def _evidence(run_dir, rank):
    """Rank ``rank``'s evidence lines; none if the file is missing or not a plain file
    (a sandboxed check may write its run folder: never a FIFO or a link is opened)."""
    try:
        data = read_plain(os.path.join(run_dir, f"evidence_rank{rank}.jsonl"), MAX_OUTPUT)
    except OSError:
        return []
    return data.decode("utf-8", "replace").splitlines()


def _progress(run_dir, nprocs):
    """({rank: {key: record}}, forged keys): what each rank reported when the launch ended.

    The runner writes one line per job and rank; a second line for the same key
    can only come from student code, and marks that key as forged."""
    seen, forged = {}, set()
    for rank in range(nprocs):
        seen[rank] = {}
        for line in _evidence(run_dir, rank):
            record = _parse(line)
            if record is None:
                continue
            if record["key"] in seen[rank]:
                forged.add(record["key"])
            seen[rank][record["key"]] = record
    return seen, forged


def _counts(run_dir, nprocs):
    """Lines written so far by each rank."""
    return [len(_evidence(run_dir, rank)) for rank in range(nprocs)]


def _run_bytes(run_dir):
    """Bytes in the run folder (lstat, links not followed); past MAX_ENTRIES files, more
    than MAX_OUTPUT: a check may not fill the disk or the folder."""
    total, entries = 0, 0
    for here, dirs, files in os.walk(run_dir):
        for name in dirs + files:
            entries += 1
            try:
                total += os.lstat(os.path.join(here, name)).st_size
            except OSError:
                pass
        if entries > MAX_ENTRIES:
            return MAX_OUTPUT + 1
    return total


def _hang_report(key, launch):
    """HANG, then for each rank: its own status if it finished first, else 'still inside'."""
    lines = [i18n.text("grader.hang", seconds=launch["waited"])]
    for rank, records in launch["progress"].items():
        record = records.get(key)
        if record is None:
            lines.append(i18n.text("grader.hang_waiting", rank=rank))
        else:
            lines.append(i18n.text("grader.hang_finished", rank=rank, status=record["status"],
                                   message=record["message"] or "-"))
    if launch["stacks"]:
        lines += [i18n.text("grader.hang_stacks"), launch["stacks"]]
    return "\n".join(lines)


def _judge(ex_id, records, seed):
    """judge(), where records that are not what the runner writes are a FAIL, not a crash."""
    try:
        return judge(ex_id, records, seed)
    except Exception as err:   # noqa: BLE001 -- records are data a student could write
        return Verdict("FAIL", [i18n.text("grader.bad_evidence", error=repr(err))],
                       ["evidence"])


def _judge_in(langs, ex_id, records, seed):
    """_judge() in the current language, or in langs[0] with ``.ko`` judged in Korean too."""
    if not langs:
        return _judge(ex_id, records, seed)
    with i18n.speaking(langs[0]):
        verdict = _judge(ex_id, records, seed)
    if "ko" in langs[1:]:
        with i18n.speaking("ko"):
            verdict.ko = _judge(ex_id, records, seed)
    return verdict


def _ending(launch):
    """"exit code 3" or "signal 9": how a launch that did not end cleanly ended."""
    code = launch["code"]
    return (i18n.text("sandbox.signal", signal=-code) if code < 0 else
            i18n.text("sandbox.exit_code", code=code))


def run_jobs(jobs, nprocs, workdir, timeout, seed, langs=None, box=None):
    """{key: Verdict} (a job's key is its exercise id unless it names one): the student
    side runs in launches of its own (in ``box``, a ``sandbox.Sandbox``, if given), the
    judging happens here, in ``langs`` if given (see grade_variants). A job that hangs
    or crashes is reported and the rest run again. A launch that ends with a signal or
    a non-zero code is an ERROR for the job it stopped in; in a box nothing it reported
    counts (student code may have written a report and then killed itself), and it runs
    once more first (MPI on a loaded machine may lose a rank: twice is the copy's)."""
    pending = [{**job, "key": job.get("key", job["id"]), "seed": seed} for job in jobs]
    verdicts, retried = {}, set()
    while pending:
        launch = _launch(pending, nprocs, workdir, timeout, box)
        if launch["odd"]:                   # student code planted a link, FIFO or device
            shown = ", ".join(launch["odd"][:5]) + (" ..." if len(launch["odd"]) > 5 else "")
            for job in pending:
                verdicts[job["key"]] = Verdict("ERROR", [i18n.text("sandbox.odd_run",
                                                                   paths=shown)], ["tampered"])
            break
        crashed = launch["ended"] == "done" and launch["code"] != 0
        if crashed and box is not None:
            stuck = next((job for job in pending if job["key"] not in launch["records"]),
                         pending[-1])
            if stuck["key"] not in retried:
                retried.add(stuck["key"])
                continue
            verdicts[stuck["key"]] = Verdict("ERROR", [i18n.text(
                "sandbox.crashed", how=_ending(launch), tail=launch["tail"])], ["crashed"])
            pending = [job for job in pending if job is not stuck]
            continue
        for key in launch["forged"]:
            verdicts[key] = Verdict("FAIL", [i18n.text("grader.forged")], ["forged"])
        for key, records in launch["records"].items():
            ex_id = next(job["id"] for job in pending if job["key"] == key)
            if key not in verdicts:
                verdicts[key] = _judge_in(langs, ex_id, records, seed)
        pending = [job for job in pending if job["key"] not in verdicts]
        if not pending:
            break
        stuck = pending.pop(0)
        if launch["ended"] == "hang":
            verdicts[stuck["key"]] = Verdict("HANG", [_hang_report(stuck["key"], launch)],
                                             ["hang"])
            continue
        if launch["ended"] == "slow":
            verdicts[stuck["key"]] = Verdict("TIMEOUT", [i18n.text(
                "sandbox.busy", seconds=launch["waited"], load=launch["load"],
                cores=load.cores())], ["timeout"])
            continue
        if launch["ended"] == "processes":
            verdicts[stuck["key"]] = Verdict("ERROR", [i18n.text(
                "sandbox.too_many_processes", count=process_cap.MAX_PROCESSES)], ["processes"])
            continue
        if launch["ended"] == "output":
            verdicts[stuck["key"]] = Verdict("FAIL", [i18n.text(
                "grader.too_much_output", mib=MAX_OUTPUT // 2 ** 20)], ["crashed"])
            continue
        verdicts[stuck["key"]] = Verdict("ERROR", [i18n.text(
            "grader.crashed", code=launch["code"], tail=launch["tail"])], ["crashed"])
    return verdicts


def grade_variants(variants, timeout=60.0, seed=SEED, langs=None):
    """{name: Verdict}: the reference with ONE block replaced, graded like an answer.

    ``variants`` is {name: (exercise id, body lines)}. Every variant of one rank
    count runs in one launch, each against its own copy. The mutation tests
    plant plausible bugs this way and assert that each one FAILS. With
    ``langs=("en", "ko")`` each verdict is judged in English, and its ``.ko`` is the
    same evidence judged in Korean.
    """
    with tempfile.TemporaryDirectory(prefix="mm_variants_") as workdir:
        jobs = []
        for name, (ex_id, body) in variants.items():
            dest = _overlay(PACKAGE_DIR, os.path.join(workdir, f"v{len(jobs)}"), {ex_id: body})
            jobs.append({"id": ex_id, "key": name, "path": dest})
        return _run_by_size(jobs, workdir, timeout, seed, langs)


def _run_by_size(jobs, workdir, timeout, seed, langs=None, box=None):
    """run_jobs over the jobs, one batch per rank count; in a box one per rank count and
    staged copy that runs student code, so its launch sees no other copy (each holds the
    other blocks' answers). Copies with no student code (the block is the reference's or
    the handout's blank) share one launch per rank count."""
    verdicts = {}
    batches = {}
    for job in jobs:
        alone = box is not None and not job.get("trusted")
        key = (by_id(job["id"]).nprocs, job["path"] if alone else "")
        batches.setdefault(key, []).append(job)
    for (nprocs, _), batch in sorted(batches.items()):
        verdicts.update(run_jobs(batch, nprocs, workdir, timeout, seed, langs, box))
    return verdicts


def teacher_mode():
    """True if this package holds every answer (so copies are graded in a sandbox)."""
    return not any(is_blank(block) for block in find_blocks(PACKAGE_DIR).values())


def _preload_lessons():
    """Import every lesson module the judge may need before any student code runs: what
    a check writes afterwards (a .pyc beside them) is never loaded by this process."""
    for exercise in EXERCISES:
        importlib.import_module(f"minimegatron.classroom.exercise_checks.{exercise.module}")


def grade_copy(path=".", spec=None, timeout=60.0, seed=None, box=None):
    """{id: Verdict} for the copy at path (no printing): see the module docstring.

    Teacher mode runs the student side in ``box`` (``sandbox.choose()`` if None)."""
    i18n.language()             # an unknown MINIMEGATRON_LANG: one line, before any work
    copy_root = os.path.abspath(path)
    student_pkg = os.path.join(copy_root, "minimegatron")
    seed = secrets.randbelow(2 ** 31) if seed is None else seed
    reference = find_blocks(PACKAGE_DIR)
    teacher = not any(is_blank(block) for block in reference.values())
    if teacher:
        box = box or sandbox.choose()
        _preload_lessons()
        odd = odd_paths(copy_root) if os.path.lexists(copy_root) else []
        if odd:                                   # nothing is read through a link or FIFO
            shown = ", ".join(odd[:5]) + (" ..." if len(odd) > 5 else "")
            return {ex_id: Verdict("CHANGED", [i18n.text("sandbox.odd", paths=shown)],
                                   ["changed: " + odd[0]])
                    for ex_id in select(spec, [ex.id for ex in EXERCISES])}
    else:
        box = None
        standins.install()        # the judge's one-process runs, in a copy with chapter 1 blank
    if not os.path.isdir(student_pkg):
        raise ValueError(_no_package(copy_root, teacher))
    try:
        student = find_blocks(student_pkg)
    except (ValueError, OSError) as err:                   # broken markers: every cell
        return {ex_id: Verdict("ERROR", [str(err)], ["markers"])
                for ex_id in select(spec, [ex.id for ex in EXERCISES])}
    ids = select(spec, [ex.id for ex in EXERCISES])
    verdicts, runnable = {}, []
    for ex_id in ids:
        if ex_id not in reference:
            verdicts[ex_id] = Verdict("ERROR", [i18n.text("grader.not_marked", id=ex_id,
                                                          package=PACKAGE_DIR)], ["markers"])
        elif ex_id not in student:
            verdicts[ex_id] = Verdict("ERROR", [i18n.text(
                "grader.markers_missing", id=ex_id, file=reference[ex_id].path, path=path)],
                ["markers"])
        else:
            runnable.append(ex_id)
    if os.environ.get(static_read.SWITCH, "on") != "off":        # off: the sandbox alone
        verdicts.update(static_read.suspects(student, runnable, reference))   # read, not run
    runnable = [ex_id for ex_id in runnable if ex_id not in verdicts]
    with tempfile.TemporaryDirectory(prefix="mm_grade_") as workdir:
        jobs = plan(student_pkg, runnable, workdir, reference, student)
        verdicts.update(_run_by_size(jobs, workdir, timeout, seed, box=box))
    changed = changed_outside(copy_root) if teacher else []
    if changed:
        shown = ", ".join(changed[:5]) + (" ..." if len(changed) > 5 else "")
        for ex_id, verdict in verdicts.items():
            verdicts[ex_id] = Verdict("CHANGED", [i18n.text(
                "grader.changed", paths=shown, result=verdict.result)] + verdict.lines,
                ["changed: " + changed[0]], verdict.seconds)
    return {ex_id: verdicts[ex_id] for ex_id in ids}


def _holds_copy(folder, teacher):
    """True if folder holds a copy's minimegatron/ (its exercise markers), the teacher's
    reference aside."""
    package = os.path.join(folder, "minimegatron")
    if not os.path.isdir(package) or (teacher and os.path.realpath(package) ==
                                      os.path.realpath(PACKAGE_DIR)):
        return False
    try:
        return bool(find_blocks(package))
    except (ValueError, OSError):
        return False


def _no_package(copy_root, teacher):
    """The error for a folder with no minimegatron/ package: where to ``cd``, if a copy is
    near (the nearest folder above that is a student copy, else, in self-check mode, the
    copy this grader belongs to), else how to make one."""
    here = copy_root
    while os.path.dirname(here) != here:
        here = os.path.dirname(here)
        if _holds_copy(here, teacher):
            return i18n.text("grader.cd_copy", path=copy_root, copy=here)
    if not teacher:
        return i18n.text("grader.cd_copy", path=copy_root, copy=os.path.dirname(PACKAGE_DIR))
    return i18n.text("grader.no_package", path=copy_root)


def grade(path=".", spec=None, timeout=60.0, out=sys.stdout, seed=None, box=None):
    """Grade the copy at path; {id: passed}. Prints one verdict per exercise to out."""
    if not teacher_mode():
        print(i18n.text("grader.self_check"), file=out)
    elif box is None:
        box = sandbox.choose()
        print(box.line(), file=out)
    verdicts = grade_copy(path, spec, timeout, seed, box)
    student_pkg = os.path.join(os.path.abspath(path), "minimegatron")
    print(i18n.text("grader.grading", count=len(verdicts), package=inert.line(student_pkg)),
          file=out)
    for ex_id, verdict in verdicts.items():
        exercise = by_id(ex_id)
        ranks = (i18n.text("grader.ranks", nprocs=exercise.nprocs, group=exercise.group)
                 if exercise.nprocs > 1 else "")
        word = i18n.text(f"grader.result.{verdict.result}")
        print(f"{word}  {ex_id:<4} {i18n.exercise_text(exercise, 'title')}{ranks}", file=out)
        for line in verdict.lines:          # a student's words: control characters escaped
            print("      " + inert.terminal(line).replace("\n", "\n      "), file=out)
        if not verdict.passed:
            note = i18n.exercise_text(exercise, "note")
            print("      " + i18n.text("grader.source_notes", note=note), file=out)
    passed = sum(v.passed for v in verdicts.values())
    print(i18n.text("grader.summary", passed=passed, count=len(verdicts)), file=out)
    return {ex_id: v.passed for ex_id, v in verdicts.items()}
