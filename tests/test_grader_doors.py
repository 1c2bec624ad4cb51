"""No door in the grader's wall: what a check plants in its run folder is never followed.

A check may write its run folder (the evidence goes there), so student code can put,
at any name the grader reads or writes there, a link to a file of the teacher's (a
reference answer), a link to nothing, a FIFO (an ``open`` that never returns) or a
device. The grader's every read and write there goes through ``runtime/plain_files.py``
(O_NOFOLLOW, O_NONBLOCK, O_EXCL, a rename for ``dump.request``; the log's end read
through the file the grader holds open), and a run folder that holds such a thing when
the check ends makes its cell ERROR, naming it. Planted at every one of those names,
each kind: the teacher's file is unchanged, not a byte of it is in the feedback, and the
cell reads ERROR in bounded time, in bubblewrap and in the fallback.

The unit tests below plant the same things for each function that touches a run folder
(``hang_report.dump_request``, ``job_files``, the evidence, ``gradebook.write``, the
runner's evidence line) and show that the old plain ``open`` (the mutants) truncates,
appends to or quotes the file. The planting check then returns a right answer, so the
runner (inside the sandbox) reads its jobs and writes its evidence after the planting:
through ``plain_files`` too, never through what is there.
"""
import os
import shutil
import stat
import time

import pytest

from minimegatron.classroom import exercises, gradebook, grader
from minimegatron.runtime import hang_report, job_files
from minimegatron.runtime.plain_files import (NotPlain, append_plain, create_plain, publish,
                                              read_plain, tail_of, write_plain)

SECRET = "REFERENCE_ANSWER_" + "7f3a" * 8
HAS_BWRAP = shutil.which("bwrap") is not None
IN_CI = (os.environ.get("CI", "").lower() == "true"
         or os.environ.get("MINIMEGATRON_REQUIRE_SANDBOX") == "1")
ROOT = os.geteuid() == 0
KINDS = ("link", "dangling", "fifo", "device")
RUN_NAMES = ("log.txt", "evidence_rank0.jsonl", "rank0.pid", "rank0.end", "rank0.dump",
             "jobs.json", "dump.request", ".dump.request")
BOUND_S = 240.0         # a whole grade of one copy, on a loaded machine
RIGHT_1_2 = "        return grad_out * ctx.saved[0]\n"     # then writes its evidence line


def plant(kind, path, teacher):
    """Put ``kind`` at path (whatever was there removed): what a check can do to a name."""
    if os.path.lexists(path):
        os.unlink(path)
    if kind == "link":
        os.symlink(teacher, path)
    elif kind == "dangling":
        os.symlink(teacher + ".missing", path)
    elif kind == "fifo":
        os.mkfifo(path)
    else:
        os.mknod(path, stat.S_IFCHR | 0o600, os.makedev(1, 3))     # /dev/null


def _teacher_file(tmp_path):
    path = tmp_path / "teacher" / "answer.py"
    path.parent.mkdir()
    path.write_text(f"ANSWER = {SECRET!r}\n")
    return str(path), path.stat()


def _unchanged(path, before):
    after = os.stat(path)
    with open(path, encoding="utf-8") as f:
        text = f.read()
    return text == f"ANSWER = {SECRET!r}\n" and after.st_mtime_ns == before.st_mtime_ns


def _need(kind, mode):
    if kind == "device" and not ROOT:
        pytest.skip("planting a device (mknod) needs root")
    if kind == "device" and mode == "bwrap":
        pytest.skip("inside bubblewrap no device can be made (mknod is refused in a user "
                    "namespace): a device can only come with a copy, which is CHANGED")
    if mode == "bwrap" and not HAS_BWRAP:
        if IN_CI:
            pytest.fail("in CI bubblewrap (bwrap) must be installed: the sandbox is tested")
        pytest.skip("bubblewrap (bwrap) is not installed")


# ---- every function that touches a run folder, each kind at each of its names -------------

@pytest.mark.parametrize("kind", KINDS)
def test_the_hang_request_and_the_rank_files_never_go_through_what_is_planted(tmp_path, kind):
    _need(kind, "off")
    teacher, before = _teacher_file(tmp_path)
    run = tmp_path / "run"
    run.mkdir()
    for name in ("dump.request", ".dump.request", "rank0.dump", "rank1.pid", "rank2.end",
                 "rank0.pid"):
        plant(kind, str(run / name), teacher)
    (run / "rank3.pid").write_text(str(os.getpid()))
    start = time.monotonic()
    dumps = hang_report.dump_request(str(run), 0.3)
    assert time.monotonic() - start < 10
    assert _unchanged(teacher, before)
    assert SECRET not in "".join(dumps.values()) and list(dumps) == [3]
    assert job_files.read(str(run), "rank0.dump") == ""
    assert job_files.rank_pids(str(run)) == {3: os.getpid()}
    assert job_files.failures(str(run)) == []
    assert os.path.isfile(run / "dump.request") and not os.path.islink(run / "dump.request")
    assert grader._progress(str(run), 1) == ({0: {}}, set())
    why = {"link": "symbolic link", "dangling": "symbolic link", "fifo": "FIFO",
           "device": "device"}[kind]
    assert grader._odd_run_files(str(run)) == [
        f"{name} ({why})"
        for name in (".dump.request", "rank0.dump", "rank0.pid", "rank1.pid", "rank2.end")]


def test_the_old_plain_open_of_the_hang_request_truncates_the_teachers_file(tmp_path):
    """The mutant: ``open(".dump.request", "w")`` as the grader had it follows the link."""
    teacher, before = _teacher_file(tmp_path)
    run = tmp_path / "run"
    run.mkdir()
    plant("link", str(run / ".dump.request"), teacher)
    with open(run / ".dump.request", "w") as f:
        f.write("id")
    assert not _unchanged(teacher, before)


@pytest.mark.parametrize("kind", ["link", "fifo"])
def test_the_runner_never_reads_its_jobs_through_what_is_planted(tmp_path, kind):
    """A FIFO at jobs.json held the old runner's ``open`` for ever; a link read the
    teacher's file as its jobs. The runner ends at once, naming it, and writes nothing."""
    import subprocess
    import sys
    teacher, before = _teacher_file(tmp_path)
    run = tmp_path / "run"
    run.mkdir()
    plant(kind, str(run / "jobs.json"), teacher)
    start = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", grader.RUNNER, str(run / "jobs.json"),
                           str(run)], capture_output=True, text=True, timeout=60)
    assert proc.returncode != 0 and "NotPlain" in proc.stderr, proc.stderr
    assert {"link": "symbolic link", "fifo": "FIFO"}[kind] in proc.stderr, proc.stderr
    assert time.monotonic() - start < 30 and _unchanged(teacher, before)
    assert sorted(os.listdir(run)) == ["jobs.json"]


def test_the_runners_old_plain_append_of_its_evidence_writes_the_teachers_file(tmp_path):
    """The mutant: ``open("evidence_rank0.jsonl", "a")`` as the runner had it follows the
    link and adds its line to the teacher's file; ``append_plain`` refuses it."""
    teacher, before = _teacher_file(tmp_path)
    plant("link", str(tmp_path / "evidence_rank0.jsonl"), teacher)
    with pytest.raises(NotPlain, match="symbolic link"):
        append_plain(str(tmp_path / "evidence_rank0.jsonl"), "{}\n")
    assert _unchanged(teacher, before)
    with open(tmp_path / "evidence_rank0.jsonl", "a") as f:
        f.write("{}\n")
    assert not _unchanged(teacher, before)


@pytest.mark.parametrize("kind", KINDS)
def test_a_plain_write_refuses_what_is_there_and_a_new_file_is_made_whole(tmp_path, kind):
    _need(kind, "off")
    teacher, before = _teacher_file(tmp_path)
    target = str(tmp_path / "target")
    plant(kind, target, teacher)
    for replace in (False, True):
        start = time.monotonic()
        with pytest.raises(NotPlain):
            write_plain(target, "x", replace=replace)
        with pytest.raises(NotPlain):
            gradebook.write({"a": {"1.2": _cell()}}, csv_path=target)
        with pytest.raises(NotPlain):
            append_plain(target, "the runner's evidence line\n")
        assert time.monotonic() - start < 5
    assert _unchanged(teacher, before)
    fresh = str(tmp_path / "fresh")
    write_plain(fresh, "one")
    write_plain(fresh, "two", replace=True)
    assert read_plain(fresh) == b"two"
    publish(str(tmp_path), "fresh", "three")
    assert read_plain(fresh) == b"three"
    append_plain(fresh, "four")
    append_plain(str(tmp_path / "new"), "five")
    assert read_plain(fresh) == b"threefour" and read_plain(str(tmp_path / "new")) == b"five"


def test_a_hard_link_to_the_teachers_file_is_never_written_over(tmp_path):
    teacher, before = _teacher_file(tmp_path)
    os.link(teacher, tmp_path / "hard")
    with pytest.raises(NotPlain, match="hard link"):
        write_plain(str(tmp_path / "hard"), "x", replace=True)
    assert _unchanged(teacher, before)


def test_the_logs_end_is_read_through_the_file_held_open(tmp_path):
    teacher, before = _teacher_file(tmp_path)
    log_path = str(tmp_path / "log.txt")
    with create_plain(log_path) as log:
        log.write(b"x" * 5000 + b"the student's last words")
        log.flush()
        plant("link", log_path, teacher)                # the name now points elsewhere
        tail = tail_of(log.fileno(), 100)
    assert tail.endswith(b"the student's last words") and len(tail) == 100
    assert SECRET.encode() not in tail and _unchanged(teacher, before)
    with pytest.raises(NotPlain):
        create_plain(log_path)                          # never opened through the link


def _cell():
    return {"result": "PASS", "missed": [], "lines": [], "seconds": 1.0, "sandbox": "bwrap"}


# ---- a real check planting them, graded: ERROR, nothing of the teacher's -------------------

def _copy(tmp_path, ex_id, lines):
    copy = str(tmp_path / "copy")
    exercises.make(copy)
    exercises.put_block(copy, ex_id, lines)
    return copy


def _planting_block(kind, teacher, names, indent, then):
    """A block that plants ``kind`` at every one of ``names`` in its run folder (its cwd)
    once, then does ``then`` (exits at once, or sleeps until the grader's HANG)."""
    pad = " " * indent
    body = f"""import os, stat
run = os.getcwd()
if not os.path.exists(os.path.join(run, 'planted_once')):
    open(os.path.join(run, 'planted_once'), 'w').close()
    for name in {list(names)!r}:
        path = os.path.join(run, name)
        try:
            if os.path.lexists(path):
                os.unlink(path)
            if {kind!r} == 'link':
                os.symlink({teacher!r}, path)
            elif {kind!r} == 'dangling':
                os.symlink({teacher + '.missing'!r}, path)
            elif {kind!r} == 'fifo':
                os.mkfifo(path)
            else:
                os.mknod(path, stat.S_IFCHR | 0o600, os.makedev(1, 3))
        except OSError:
            pass
{then}"""
    return [pad + line + "\n" for line in body.splitlines()]


def _graded(monkeypatch, copy, spec, mode, timeout):
    monkeypatch.setenv("MINIMEGATRON_SANDBOX", mode)
    monkeypatch.setenv("MINIMEGATRON_STATIC_READ", "off")      # the block really runs
    start = time.monotonic()
    verdicts = grader.grade_copy(copy, spec, timeout=timeout, seed=grader.SEED)
    return verdicts[spec], time.monotonic() - start


@pytest.mark.parametrize("mode", ["off"])      # in bubblewrap: test_grader_forgery_class
@pytest.mark.parametrize("kind", KINDS)
def test_a_check_planting_at_every_run_folder_name_gets_ERROR_and_no_teacher_byte(
        tmp_path, monkeypatch, kind, mode):
    """In the fallback the teacher's file is in reach of the check, so a runner that
    followed the planted evidence link would write into it; the links, links to nothing
    and FIFOs planted in bubblewrap are the forgery class's (one launch each there)."""
    _need(kind, mode)
    teacher, before = _teacher_file(tmp_path)
    block = _planting_block(kind, teacher, RUN_NAMES, 8, "") + [RIGHT_1_2]   # the runner
    verdict, seconds = _graded(monkeypatch, _copy(tmp_path, "1.2", block), "1.2", mode, 30)
    text = "\n".join(verdict.lines)
    assert verdict.result == "ERROR" and verdict.missed == ["tampered"], text
    assert "log.txt (" in text and "evidence_rank0.jsonl (" in text, text
    assert SECRET not in text and _unchanged(teacher, before)
    assert seconds < BOUND_S


@pytest.mark.parametrize("mode", ["bwrap", "off"])
def test_without_the_run_folder_check_the_log_still_never_quotes_the_teacher(
        tmp_path, monkeypatch, mode):
    """The run-folder check switched off (a mutant): the cell is the crash it is, and its
    quoted output is the check's own, read through the grader's file, not the link."""
    _need("link", mode)
    monkeypatch.setattr(grader, "_odd_run_files", lambda run_dir: [])
    teacher, before = _teacher_file(tmp_path)
    block = _planting_block("link", teacher, RUN_NAMES, 8,
                            "    print('MY_OWN_LAST_WORDS', flush=True)\n    os._exit(3)\n")
    verdict, _ = _graded(monkeypatch, _copy(tmp_path, "1.2", block), "1.2", mode, 30)
    text = "\n".join(verdict.lines)
    assert verdict.result == "ERROR" and "MY_OWN_LAST_WORDS" in text, text
    assert SECRET not in text and _unchanged(teacher, before)


@pytest.mark.parametrize("mode", ["bwrap", "off"])
def test_a_hanging_check_with_links_and_fifos_at_the_dump_names_ends_in_bounded_time(
        tmp_path, monkeypatch, mode):
    """4 ranks, each plants at the names the grader uses at a HANG (the request, every
    rank's answer, its pid), then sleeps: the grader asks, reads, kills, and says ERROR."""
    _need("link", mode)
    teacher, before = _teacher_file(tmp_path)
    names = ["dump.request", ".dump.request"] + [f"rank{r}.{e}" for r in range(4)
                                                 for e in ("dump", "pid")]
    kinds = ["link", "dangling", "fifo"] + (["device"] if mode == "off" and ROOT else [])
    lines = []
    for i, kind in enumerate(kinds):             # each kind at its share of the names
        lines += _planting_block(kind, teacher, names[i::len(kinds)], 12, "")
        lines = [line.replace("planted_once", f"planted_{kind}") for line in lines]
    lines += ["            import time\n", "            time.sleep(600)\n"]
    verdict, seconds = _graded(monkeypatch, _copy(tmp_path, "3.1", lines), "3.1", mode, 8)
    text = "\n".join(verdict.lines)
    assert verdict.result == "ERROR" and verdict.missed == ["tampered"], text
    assert SECRET not in text and _unchanged(teacher, before)
    assert seconds < BOUND_S
