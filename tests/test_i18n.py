"""MINIMEGATRON_LANG=ko: the grader, the exercise checks and tutorial 02 speak Korean.

The catalogs (minimegatron/i18n/en.py, ko.py) must have the same keys with the
same {fields}; a Korean grader run (the checks run in a subprocess that
inherits the environment) must print Hangul in every verdict line and none of
the English phrases; an unknown language is one line of error, never a
traceback.
"""
import io
import os
import re
import string

import pytest

from minimegatron import i18n
from minimegatron.classroom import exercises, grader
from minimegatron.commands import grade as grade_command
from minimegatron.classroom.exercise_checks import EXERCISES, by_id
from korean_lines import english_lines
from mpi_harness import REPO_ROOT, run_script

HANGUL = re.compile(r"[\uac00-\ud7a3]")
ENGLISH = ["not done yet", "source notes", "expected", "got ", "PASS", "FAIL", "exercise(s)",
           "ranks 0", "grading", "micro-batches", "in order", "the sum is"]
WRONG = {   # plausible wrong answers: all-reduce over the world, backwards in reverse order,
            # tanh's derivative with the wrong sign (docs/exercises.ko.md's sample)
    "1.3": ["        return grad_out * (1 + ctx.saved[0] ** 2)\n"],
    "3.2": ["        from minimegatron.comm import world\n",
            "        return x if group.size == 1 else all_reduce(x, world())\n"],
    "2.1": ["    for i in range(num_micro_batches):\n",
            "        actions += forward_actions(num_stages, stage, i)\n",
            "    for i in reversed(range(num_micro_batches)):\n",
            "        actions += backward_actions(num_stages, stage, i)\n"]}


def fields(template):
    return sorted(name for _, name, _, _ in string.Formatter().parse(template) if name)


@pytest.mark.parametrize("en, ko", [(i18n.en.MESSAGES, i18n.ko.MESSAGES),
                                     (i18n.en_lessons.MESSAGES, i18n.ko_lessons.MESSAGES),
                                     (i18n.en_cli.MESSAGES, i18n.ko_cli.MESSAGES),
                                     (i18n.en_tables.MESSAGES, i18n.ko_tables.MESSAGES)],
                         ids=["grader", "lessons", "cli", "tables"])
def test_every_key_in_both_languages_with_the_same_fields(en, ko):
    assert sorted(en) == sorted(ko)
    for key in en:
        assert fields(en[key]) == fields(ko[key]), key
        assert not key.startswith("point.") or HANGUL.search(ko[key]), key
    assert sorted(i18n.ko.EXERCISES) == sorted(ex.id for ex in EXERCISES)
    for ex_id, parts in i18n.ko.EXERCISES.items():
        assert sorted(parts) == ["hint", "note", "title"], ex_id
        assert HANGUL.search(parts["title"] + parts["hint"]), ex_id


def test_language_default_and_unknown(monkeypatch):
    monkeypatch.delenv("MINIMEGATRON_LANG", raising=False)
    assert i18n.text("grader.summary", passed=1, count=2) == "1 of 2 exercise(s) pass"
    monkeypatch.setenv("MINIMEGATRON_LANG", " KO ")
    assert i18n.text("grader.summary", passed=1, count=2) == "연습 문제 2개 중 1개 통과"
    assert i18n.exercise_text(by_id("2.1"), "title") == "GPipe schedule"
    monkeypatch.setenv("MINIMEGATRON_LANG", "fr")
    with pytest.raises(ValueError, match=r"^MINIMEGATRON_LANG='fr' is not a language"):
        i18n.text("grader.pass")


def test_unknown_language_is_one_line_from_the_grader(monkeypatch, capsys):
    monkeypatch.setenv("MINIMEGATRON_LANG", "fr")
    assert grade_command.main(["3.2", "--path", REPO_ROOT]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "MINIMEGATRON_LANG='fr'" in err, err


def _verdicts(text):
    """{id: the verdict's lines}, from a grader report."""
    word = "(?:통과|실패|미완성)"
    pattern = rf"^{word}  (\d\.\d) .*?(?=^{word}  |^연습 문제 \d+개 중)"
    return {m.group(1): m.group(0) for m in re.finditer(pattern, text, re.MULTILINE | re.DOTALL)}


def _assert_korean(section):
    for line in section.splitlines():
        assert HANGUL.search(line), line
    for phrase in ENGLISH:
        assert phrase not in section, (phrase, section)


def _point(ex_id, name, hint=False):
    with i18n.speaking("ko"):
        return i18n.text(f"point.{ex_id}.{name}" + (".hint" if hint else ""))


def _page_sample():
    """The grader's Korean output as docs/exercises.ko.md shows it (its marked block)."""
    from test_docs_i18n import korean_outputs
    with open(os.path.join(REPO_ROOT, "docs", "exercises.ko.md"), encoding="utf-8") as f:
        sample, = korean_outputs(f.read())
    return sample


def _sample(copy, reports):
    """The page's sample (a wrong 1.3, a blank 3.2) from a run's reports, or the page's own
    block: the copy's path as /home/ana/class/ana, arrays (random values) as [[...]."""
    if "page" in reports:
        text = reports["page"]
    else:
        text = "".join([i18n.text("grader.grading", count=2, package=os.path.join(
            copy, "minimegatron")) + "\n", _verdicts(reports["wrong"])["1.3"],
            _verdicts(reports["blank"])["3.2"], i18n.text("grader.summary", count=2, passed=0)
            + "\n"]).replace(copy, "/home/ana/class/ana")
    return re.sub(r"\[\[.*\]", "[[...]", text)


def test_korean_grader_run(monkeypatch, tmp_path):
    blank, wrong = str(tmp_path / "blank"), str(tmp_path / "wrong")
    exercises.make(blank)
    exercises.make(wrong)
    pkg = os.path.join(wrong, "minimegatron")
    blocks = exercises.find_blocks(pkg)
    for ex_id, body in WRONG.items():
        path = os.path.join(pkg, blocks[ex_id].path)
        with open(path, encoding="utf-8") as f:
            code = exercises.replace_bodies(f.read(), blocks[ex_id].path, {ex_id: body})
        with open(path, "w", encoding="utf-8") as f:
            f.write(code)
    monkeypatch.setenv("MINIMEGATRON_LANG", "ko")
    reports = {}
    for name, path in (("blank", blank), ("wrong", wrong), ("reference", REPO_ROOT)):
        out, ids = io.StringIO(), ["1.3", "2.1", "3.2"] if name == "wrong" else ["2.1", "3.2"]
        verdicts = grader.grade(path, ",".join(ids), timeout=60, out=out)
        assert verdicts == {ex_id: name == "reference" for ex_id in ids}, name
        reports[name] = out.getvalue()
        sections = _verdicts(reports[name])
        assert sorted(sections) == ids, reports[name]
        for ex_id, section in sections.items():      # 1.3's formula line holds no Hangul
            if ex_id == "1.3":
                assert english_lines(section) == [], section
            else:
                _assert_korean(section)
        passed = 2 if name == "reference" else 0
        assert f"연습 문제 {len(ids)}개 중 {passed}개 통과" in reports[name]
    assert _sample(blank, reports) == _sample(blank, {"page": _page_sample()})
    blank_32 = _verdicts(reports["blank"])["3.2"]
    assert blank_32.startswith("미완성  3.2  g: forward는 all-reduce, backward는 항등 "
                               "[rank 4개, rank 2개짜리 tp group]")
    assert f"아직 하지 않음: 연습 문제 3.2: {i18n.ko.EXERCISES['3.2']['hint']}" in blank_32
    assert f"강의 노트: {i18n.ko.F_AND_G}" in blank_32
    wrong_32, wrong_21 = _verdicts(reports["wrong"])["3.2"], _verdicts(reports["wrong"])["2.1"]
    for section, ex_id, point in ((wrong_32, "3.2", "sum"), (wrong_32, "3.2", "one_all_reduce"),
                                  (wrong_21, "2.1", "forwards_first")):
        assert f"놓친 점: {_point(ex_id, point)}" in section, section
        assert f"힌트: {_point(ex_id, point, hint=True)}" in section, section
    assert re.search(r"rank 0: g\(x\) \(float64\): rank \[0, 1\]의 x의 합:\n\s+기댓값 ",
                     wrong_32), wrong_32
    assert "[[0, 1, 2, 3] 위의 all_reduce" in wrong_32, wrong_32
    assert ("gpipe(K=1, M=4) stage 0: forward (F)와 backward (B)의 순서가 F0 F1 F2 F3 B3 B2 B1 B0"
            in wrong_21)
    reference = _verdicts(reports["reference"])["3.2"]
    assert reference.startswith("통과  3.2") and f"통과: {_point('3.2', 'sum')}" in reference


def test_korean_verdict_texts(monkeypatch):
    """The texts no student copy shows by default: needs-first, HANG."""
    from minimegatron.classroom.exercise_checks.judge import judge
    monkeypatch.setenv("MINIMEGATRON_LANG", "ko")
    todo = f"Exercise 3.2: {by_id('3.2').hint}"

    def record(rank, status, message):
        return {"rank": rank, "status": status, "message": message, "evidence": None}
    verdict = judge("3.5", [record(0, "todo", todo), record(1, "todo", todo)], 0)
    assert verdict.result == "FAIL" and verdict.lines == [
        f"rank 0, 1: 먼저 연습 문제 3.2가 필요한데, 이 사본에서 아직 하지 않았습니다: "
        f"연습 문제 3.2: {i18n.ko.EXERCISES['3.2']['hint']}"]
    verdict = judge("3.2", [record(0, "todo", todo), record(1, "ok", "")], 0)
    assert verdict.lines == [f"rank 0: 아직 하지 않음: 연습 문제 3.2: "
                             f"{i18n.ko.EXERCISES['3.2']['hint']}"]
    hang = grader._hang_report("3.2", {"waited": 3.2, "stacks": "rank 1: comm.py:12",
                                       "progress": {0: {"3.2": record(0, "error", "x")},
                                                    1: {}}})
    assert hang.splitlines()[1:] == ["rank 0: 먼저 끝남, 결과 error: x",
                                     "rank 1: 아직 검사 안에 있음 (대기 중)",
                                     "종료될 때 각 rank가 기다리던 곳:", "rank 1: comm.py:12"]
    assert hang.startswith("멈춤(HANG): 3 초 동안 진행이 없어 모든 rank를 종료했습니다.")


def test_korean_check_messages():
    """Wrong answers of every kind of check, judged in Korean: no English phrase left."""
    verdicts = grader.grade_variants({
        "1.3": ("1.3", ["        return grad_out * (1 + ctx.saved[0] ** 2)\n"]),
        "3.4": ("3.4", ["        height = in_features // tp_group.size\n",
                        "        rows = slice(tp_group.rank, None, tp_group.size)\n"]),
        "4.1": ("4.1", ["            bucket.handle = comm.iall_reduce(bucket.reduce, "
                        "self.group, op=\"sum\",\n",
                        "                                             inplace=True)\n"])},
        langs=("en", "ko"))
    for key, verdict in verdicts.items():
        assert verdict.result == "FAIL", (key, verdict)
        body = "\n".join(verdict.ko.lines)
        assert "놓친 점: " in body and "힌트: " in body, body
        for phrase in ("expected", "missed:", "hint:", "ranks 0", "differs by up"):
            assert phrase not in body, (key, phrase, body)


def test_tutorial_02_in_korean():
    code, out, err = run_script(2, "tutorials/02_worked_example.py", timeout=60,
                                env={"MINIMEGATRON_LANG": "ko"})
    assert code == 0, err
    for heading in ("직렬 계산 Y = X A = [[ 74,  98], [258, 346]]",
                    "--- 열 방향 분할: A를 열 단위로 분할, X는 복사 (f), Y = cat(Y_1, Y_2)",
                    "--- 행 방향 분할: A를 행 단위로 분할, X는 열 단위로 분할, Y = Y_1 + Y_2 (g)",
                    "[rank 1] Y_2 = [[ 63,  83], [163, 215]]   합친 Y = [[ 74,  98], [258, 346]]",
                    "분할    부분 곱                 합치기        Y == X A",
                    "행 방향 Y_i = X_i A_i (2x2)     all-reduce    True"):
        assert heading in out, out
    for phrase in ("split", "serial", "combined", "input ="):
        assert phrase not in out, out
    assert english_lines(out) == [], out            # the rule: tests/korean_lines.py
    code, out, err = run_script(2, "tutorials/02_worked_example.py", timeout=60,
                                env={"MINIMEGATRON_LANG": "xx"})
    assert code == 2 and "Traceback" not in err, err
    assert err.strip() == ("error: MINIMEGATRON_LANG='xx' is not a language minimegatron "
                           "speaks: use one of en, ko (unset means en)"), err
