"""A Korean student's mistakes are answered in Korean: no English-only line under
MINIMEGATRON_LANG=ko (tests/korean_lines.py's rule), each proven to catch the English it
replaced.

- argparse's own "unrecognized arguments" (``parse_args`` builds it after the wrapped
  ``parse_known_args`` returned, so it needs its own wrapping), with the flag meant;
- the rank-count errors of tutorials 02 and 08 (one process, where they need 2 and 8);
- verify's SKIP reasons, its own and the book's, for every scheme on 1 and 3 ranks.
"""
import os
import subprocess
import sys

import pytest

from korean_lines import english_lines
from minimegatron import i18n
from minimegatron.checks import verify
from minimegatron.commands.parser import ArgumentParser

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run_ko(*argv):
    """(returncode, stdout + stderr) of ``python argv...`` under MINIMEGATRON_LANG=ko."""
    env = dict(os.environ, MINIMEGATRON_LANG="ko")
    env["PYTHONPATH"] = ROOT + os.pathsep + env.get("PYTHONPATH", "")
    done = subprocess.run([sys.executable, *argv], capture_output=True, text=True, env=env,
                          cwd=ROOT, timeout=120)
    return done.returncode, done.stdout + done.stderr


def test_the_rule_catches_the_english_these_mistakes_used_to_print():
    for english in ("minimegatron memory: 오류: unrecognized arguments: --bogus",
                    "error: the worked example splits A over 2 ranks; run it with -n 2, not -n 1",
                    "SKIP (sequence parallelism needs tp > 1 (an even world))"):
        tail = english.split(": ", 2)[-1] if english.startswith("minimegatron") else english
        assert english_lines(tail), tail


@pytest.mark.parametrize("argv, said", [
    (["-m", "minimegatron", "memory", "--layrs=4", "--bogus"],
     "알 수 없는 인자: --layrs=4 --bogus. 혹시 --layers를 뜻했나요?"),
    (["tutorials/02_worked_example.py"], "-n 1이 아니라 -n 2로 실행하세요"),
    (["tutorials/08_3d_parallel.py"], "이 job의 rank는 1개입니다. -n 8로 실행하거나"),
])
def test_a_mistake_is_answered_in_korean(argv, said):
    code, out = run_ko(*argv)
    assert code != 0 and said in out, out
    assert english_lines(out) == [], out


def test_a_misspelt_flag_is_answered_with_the_one_meant(capsys):
    parser = ArgumentParser(prog="demo")
    parser.add_argument("--layers", type=int)
    parser.add_argument("--micro-batches", type=int)
    for argv, said in ((["--layrs=2"], "arguments: --layrs=2; did you mean --layers?"),
                       (["--micro-bathces", "2"], "did you mean --micro-batches?"),
                       (["--zzz"], "unrecognized arguments: --zzz\n")):
        with pytest.raises(SystemExit):
            parser.parse_args(argv)
        assert said in capsys.readouterr().err


def test_every_verify_skip_reason_is_korean(monkeypatch):
    monkeypatch.setenv("MINIMEGATRON_LANG", "ko")
    notes = []
    for world_size in (1, 3):
        for scheme, dims in verify.plan_rows(list(verify.SCHEMES), world_size):
            if dims is None:
                notes.append(i18n.text("cli.verify.skip.unavailable"))
            elif dims == ():
                notes.append(verify.no_grid(scheme, world_size))
            else:
                notes.append(verify.fit(scheme, dims)[1])
    notes = [verify.skip_note(n) for n in notes if n]
    assert len(set(notes)) >= 8, notes               # the book's reasons and verify's own
    assert any("tp=3으로 나누어떨어지지" in n for n in notes), notes
    rows = [{"label": "x", "grid": "-", "loss": None, "grad": None, "weight": None,
             "tol": None, "status": "SKIP", "note": n, "vs64": None} for n in notes]
    table = verify.table(rows, "float64")
    assert english_lines(table) == [], english_lines(table)
