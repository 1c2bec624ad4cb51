"""What the grader reads from a copy or a run folder: plain files only, never through a link.

A FIFO would block ``open`` forever, a link to /dev/zero would read until memory runs
out, a link to the teacher's package would read the answers: each is named, never
opened (``runtime/plain_files.py``, ``exercises.odd_paths``).
"""
import os
import time

import pytest

from minimegatron.classroom import exercises
from minimegatron.runtime.plain_files import NotPlain, odd_entries, read_plain


def test_a_plain_file_is_read_and_everything_else_is_refused(tmp_path):
    (tmp_path / "ok.py").write_text("x = 1\n")
    assert read_plain(str(tmp_path / "ok.py")) == b"x = 1\n"
    os.mkfifo(tmp_path / "pipe.py")
    os.symlink("/dev/zero", tmp_path / "zero.py")
    os.symlink(tmp_path / "ok.py", tmp_path / "link.py")
    (tmp_path / "big.py").write_bytes(b"#" * 2048)
    start = time.monotonic()
    for name, why in (("pipe.py", "FIFO"), ("zero.py", "symbolic link"),
                      ("link.py", "symbolic link")):
        with pytest.raises(NotPlain, match=why):
            read_plain(str(tmp_path / name))
    with pytest.raises(NotPlain, match="file over"):
        read_plain(str(tmp_path / "big.py"), cap=1024)
    assert time.monotonic() - start < 5                  # nothing blocked, nothing read long
    assert odd_entries(str(tmp_path)) == [("link.py", "symbolic link"), ("pipe.py", "FIFO"),
                                          ("zero.py", "symbolic link")]


def test_odd_entries_of_a_copy_are_named_and_changed(tmp_path):
    copy = tmp_path / "copy"
    exercises.make(str(copy))
    assert exercises.odd_paths(str(copy)) == []
    os.mkfifo(copy / "minimegatron" / "autodiff" / "pipe.py")
    os.symlink("/etc", copy / "minimegatron" / "etc")
    odd = exercises.odd_paths(str(copy))
    assert odd == ["minimegatron/autodiff/pipe.py (FIFO)", "minimegatron/etc (symbolic link)"]
    assert exercises.changed_outside(str(copy)) == odd
    linked = tmp_path / "linked"
    linked.mkdir()
    os.symlink(exercises.PACKAGE_DIR, linked / "minimegatron")
    assert exercises.odd_paths(str(linked)) == ["minimegatron (symbolic link)"]


def test_a_package_linked_to_the_teachers_is_changed_and_would_pass_unchecked(tmp_path,
                                                                               monkeypatch):
    """The mutation: without the link check the teacher's own blocks are read as the
    student's, and every cell PASSES."""
    from minimegatron.classroom import grader
    os.symlink(exercises.PACKAGE_DIR, tmp_path / "minimegatron")
    verdicts = grader.grade_copy(str(tmp_path), "1.2,1.3", timeout=30)
    assert {v.result for v in verdicts.values()} == {"CHANGED"}
    assert "minimegatron (symbolic link)" in verdicts["1.2"].lines[0]
    monkeypatch.setattr(grader, "odd_paths", lambda root: [])
    monkeypatch.setattr(exercises, "odd_paths", lambda root: [])
    verdicts = grader.grade_copy(str(tmp_path), "1.2,1.3", timeout=30)
    assert {v.result for v in verdicts.values()} == {"PASS"}
