"""`grade` run from a folder that holds no copy says where to `cd`, in both languages."""
import os
import subprocess
import sys

import pytest

from minimegatron.classroom import exercises
from minimegatron.commands.grade import main as grade_main


@pytest.fixture(scope="module")
def copy(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("where") / "copy")
    exercises.make(path)
    return path


@pytest.mark.parametrize("lang, says", [
    ("en", "your copy is {copy}; go there with `cd {copy}` and grade again"),
    ("ko", "여러분의 사본은 {copy}에 있으니 `cd {copy}` 명령으로 옮겨 가서 다시 채점하세요")],
    ids=["en", "ko"])
def test_grade_inside_a_copys_subfolder_says_cd_to_the_copy(copy, lang, says, capsys,
                                                            monkeypatch):
    monkeypatch.setenv("MINIMEGATRON_LANG", lang)
    assert grade_main(["1.2", "--path", os.path.join(copy, "tutorials")]) == 2
    assert says.format(copy=copy) in capsys.readouterr().err


def test_grade_far_from_any_copy_says_how_to_make_one(tmp_path, capsys):
    assert grade_main(["1.2", "--path", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "make a copy with: minimegatron exercises make DIR" in err and "cd " not in err


def test_a_students_own_grader_run_elsewhere_names_its_copy(copy, tmp_path):
    """Self-check mode (the student's copy installed): from any folder, the copy is known."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env.update(PYTHONPATH=copy, MINIMEGATRON_LANG="ko")
    proc = subprocess.run([sys.executable, "-m", "minimegatron", "grade", "1.2"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120, env=env)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert f"{tmp_path}에 minimegatron/ 패키지가 없습니다" in proc.stderr, proc.stderr
    assert f"`cd {copy}` 명령으로 옮겨 가서 다시 채점하세요" in proc.stderr, proc.stderr
