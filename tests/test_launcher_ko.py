"""`minimegatron run` under MINIMEGATRON_LANG=ko: a failing and a hanging job say it in Korean.

The launcher's own lines (the summary, HANG, where each rank waits, the kill) and the
ranks' reports go through minimegatron/i18n; a book error (here a CollectiveMismatch) is
said again in Korean after its traceback. What Python prints itself (the traceback, from
"Traceback (most recent call last):" through the exception's line) is not counted, nor
what the MPI library prints itself (MPICH's "Abort(1) on node ..." at MPI_Abort, Hydra's
"BAD TERMINATION" box when the launcher kills the ranks): every other line must not be
English-only (tests/korean_lines.py).
"""
import os
import re
import string

import pytest
from korean_lines import english_lines
from mpi_harness import TESTS_DIR, minimegatron_run, time_bound

from minimegatron import i18n
from minimegatron.i18n import en_launcher, ko_launcher
from minimegatron.runtime import hang_report, job_files, reaper

WORKERS = os.path.join(TESTS_DIR, "workers")
HANGUL = re.compile(r"[\uac00-\ud7a3]")
EXCEPTION_LINE = re.compile(r"^[A-Za-z_][\w.]*(Error|Exception|Mismatch|Interrupt)\b.*")
MPI_LINES = re.compile(r"^(Abort\(\d+\) on node |=====|=   |YOUR APPLICATION TERMINATED |"
                       r"This typically refers to a problem with your application|"
                       r"Please see the FAQ page)")


def ours(text):
    """``text`` less Python's own traceback blocks ("Traceback (most recent call last):"
    through the exception's line, "CollectiveMismatch: ...", and the indented lines of a
    multi-line message after it) and less the MPI library's own lines."""
    kept, inside, message = [], False, False
    for line in text.splitlines():
        if MPI_LINES.match(line):
            continue
        if line.startswith("Traceback (most recent call last):"):
            inside, message = True, False
            continue
        if inside:
            if EXCEPTION_LINE.match(line):
                inside, message = False, True
            continue
        if message and line.startswith("  "):
            continue
        message = False
        kept.append(line)
    return "\n".join(kept)


def korean_run(*argv):
    env_lang = os.environ.get("MINIMEGATRON_LANG")
    os.environ["MINIMEGATRON_LANG"] = "ko"
    try:
        return minimegatron_run(*argv)
    finally:
        if env_lang is None:
            del os.environ["MINIMEGATRON_LANG"]
        else:
            os.environ["MINIMEGATRON_LANG"] = env_lang


def test_a_failing_job_in_korean():
    code, out, err, seconds = korean_run("-n", "2", "--timeout", "50",
                                         os.path.join(WORKERS, "mismatch_job.py"))
    assert code not in (0, 124), (code, out, err)
    assert seconds < time_bound(20, 49)
    said = ours(out + "\n" + err)
    assert english_lines(said) == [], said
    for rank in (0, 1):        # the abort hook's line, the error again in Korean, the summary
        assert f"[rank {rank}] 처리되지 않은 예외, 모든 rank를 중단합니다:" in err, err
    assert "CollectiveMismatch: group 'world'에서 collective 불일치 (shape가 다릅니다), " \
           "데이터는 옮기지 않았습니다:" in err, err
    assert re.search(r"  rank 1 \(world 1\): \S+mismatch_job.py:\d+에서 "
                     r"all_reduce\(shape=\(3,\), dtype=float64, op='sum'\)", err), err
    assert ("minimegatron run: job이 실패했습니다 (종료 코드 1): rank 0: CollectiveMismatch "
            "예외 발생: group 'world'에서 collective 불일치 (shape가 다릅니다), 데이터는 "
            "옮기지 않았습니다:; rank 1: ") in err, err


def test_a_hanging_job_in_korean():
    code, out, err, seconds = korean_run("-n", "2", "--timeout", "3",
                                         os.path.join(WORKERS, "deadlock.py"))
    assert code == 124, (code, out, err)
    said = ours(out + "\n" + err)
    assert english_lines(said) == [], said
    assert "minimegatron run: HANG: 3초가 지나 시간 초과, 각 rank가 기다리는 곳:" in err, err
    assert "[rank 0] group 'world' (ranks [0, 1])의 recv (rank 1에게서)에서 기다립니다 (" in err
    assert "[rank 1] group 'world' (ranks [0, 1])의 barrier에서 기다립니다 (" in err, err
    assert "[rank 0]   main thread의 stack (가장 안쪽이 마지막):" in err, err
    assert "minimegatron run: rank 2개를 모두 끝냈습니다 (deadlock?" in err, err


@pytest.mark.parametrize("mode, korean", [
    ("sysexit", ["[rank 1] rank [0]이 1초 뒤에도 아직 도는 동안 끝났습니다 (종료 코드 3). "
                 "모든 rank를 중단합니다",
                 "minimegatron run: job이 실패했습니다 (종료 코드 3): rank 1: rank [0]이 "
                 "아직 도는 동안 끝났습니다 (종료 코드 3)"]),
    ("osexit", ["minimegatron run: job이 실패했습니다 (종료 코드 ",
                "rank 1: 정상 종료나 Python 예외 없이 끝났습니다 (종료 코드 1: "])])
def test_a_rank_that_exits_early_is_named_in_korean(mode, korean):
    """sys.exit(3) on rank 1 (the exit barrier's abort) and os._exit(1) (the waiter's record),
    tests/workers/chaos_rank.py at step 2."""
    code, out, err, _ = korean_run("-n", "2", "--timeout", "50",
                                   os.path.join(WORKERS, "chaos_rank.py"), mode, "ko-early")
    assert code == 3 if mode == "sysexit" else code not in (0, 124), (code, out, err)
    said = ours(out + "\n" + err)
    assert english_lines(said) == [], said
    for line in korean:
        assert line in err, (line, err)


def fields(template):
    return sorted(name for _, name, _, _ in string.Formatter().parse(template) if name)


def test_both_catalogs_have_the_same_keys_and_fields():
    assert sorted(en_launcher.MESSAGES) == sorted(ko_launcher.MESSAGES)
    for key, english in en_launcher.MESSAGES.items():
        assert fields(english) == fields(ko_launcher.MESSAGES[key]), key
        assert HANGUL.search(ko_launcher.MESSAGES[key]) or key in (
            "launcher.cause", "faults.grace_env"), key


def test_a_record_says_its_line_in_the_ranks_language(tmp_path):
    """The English first line orders the causes; ``said:`` is what the launcher shows."""
    for rank in range(2):
        (tmp_path / f"rank{rank}.pid").write_text("1\n")
    (tmp_path / "rank0.end").write_text("fail: finished (exit code 3) while ranks [1] still ran"
                                        "\nsaid: rank [1]이 아직 도는 동안 끝났습니다 "
                                        "(종료 코드 3)\n")
    (tmp_path / "rank1.end").write_text("fail: raised KeyError: 'w'\nsaid: KeyError 예외 발생: "
                                        "'w'\n")
    job = str(tmp_path)
    assert job_files.failures(job) == [     # English: the first lines, the exception first
        "rank 1: raised KeyError: 'w'", "rank 0: finished (exit code 3) while ranks [1] still ran"]
    (tmp_path / "rank1.exit").write_text("200 signal 9\n")
    with i18n.speaking("ko"):
        assert reaper.blame(job, 2, i18n.text)[0].startswith("rank 1: 정상 종료나 Python 예외 "
                                                              "없이 끝났습니다 (SIGKILL로 끝남: ")
        assert job_files.failures(job, i18n.text_or_english) == [
            "rank 1: KeyError 예외 발생: 'w'", "rank 0: rank [1]이 아직 도는 동안 끝났습니다 "
            "(종료 코드 3)"]
        assert hang_report.dump_request(job, wait_s=0.1)[1] == (
            "[rank 1] 0.1초 안에 답하지 않았습니다 (GIL을 쥔 C 코드 안에서 바쁘거나, 이미 끝남)")
    with i18n.speaking("xx"):                # an unknown language: the report still said
        assert job_files.failures(job, i18n.text_or_english)[0] == "rank 1: KeyError 예외 발생: 'w'"
        assert hang_report.format_dumps({}) == (
            "(no rank answered: none had started minimegatron yet)")
