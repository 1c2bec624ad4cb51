"""Every command's help, usage errors and exercises output: complete, and Korean under ko.

In-process (each command module's ``main(argv)``): the parsers are caught as they parse
(every command builds a ``commands.parser.ArgumentParser``) and walked, sub-commands
included; ``--help`` and the usage errors are printed under MINIMEGATRON_LANG=ko and
counted with tests/korean_lines.py's rule (its docstring says what an English-only line
is). The counts must be 0.
"""
import argparse
import json
import os
import subprocess
import sys

import pytest

from minimegatron.commands import (calibrate, exercises, grade, memory, parser, run, sample,
                                   timeline, verify)
from minimegatron.commands.cli import COMMANDS, main as dispatch, usage
from minimegatron.parallel.pipeline_parallel.schedules import SCHEDULES
from korean_lines import english_lines, english_only
from mpi_harness import REPO_ROOT

MAINS = {"run": run.main, "verify": verify.main, "memory": memory.main,
         "calibrate": calibrate.main, "timeline": timeline.main, "exercises": exercises.main,
         "grade": grade.main, "sample": sample.main}
HELPS = [[name, "--help"] for name in MAINS] + [["exercises", action, "--help"]
                                                for action in ("list", "make", "solve")]
USAGE_ERRORS = [["run"], ["run", "-n", "0", "x.py"], ["run", "-n", "2", "/no/such.py"],
                ["verify", "--schemes", "foo"], ["verify", "--steps", "0"],
                ["verify", "--dtype", "x"], ["memory", "--layers", "0"],
                ["memory", "moe", "--capacity-factor", "-1"], ["memory", "--layers", "3",
                                                               "--pp", "2"],
                ["memory", "--schedule", "zb-h2", "--pp", "4"], ["memory", "--bogus"],
                ["timeline", "--schedule", "x"], ["timeline", "--out", "/no/such/dir/t.png"],
                ["calibrate", "--ranks", "0"], ["exercises"], ["exercises", "make"],
                ["grade", "--timeout", "nan"], ["grade", "9.9", "--path", REPO_ROOT], ["sample"], ["sample", "--checkpoint", "x",
                                                            "--tokens", "-1"]]


class Caught(Exception):
    def __init__(self, parser):
        self.parser = parser


def parser_of(name, monkeypatch):
    """The parser command ``name`` builds, caught when it starts to parse."""
    def catch(self, args=None, namespace=None):
        raise Caught(self)
    monkeypatch.setattr(parser.ArgumentParser, "parse_known_args", catch)
    with pytest.raises(Caught) as caught:
        MAINS[name]([])
    monkeypatch.undo()
    return caught.value.parser


def actions(p):
    """(parser, action) of every argument of ``p`` and of its sub-commands."""
    for action in p._actions:
        yield p, action
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                yield from actions(sub)


def test_english_only_rule():
    for line in ["step  serial  DataParallel  DDP", "minimegatron memory: error: argument "
                 "--layers: must be a positive integer, got '0'", "options:",
                 "  -h, --help   show this help message and exit"]:
        assert english_only(line) == (line != "options:"), line
    for line in ["  --layers L", "   3   0.012345  [0, 1, 2, 3]", "minimegatron run -n 8 verify",
                 "  {config,table1,zero,scaling}", "사용법: minimegatron memory [-h]",
                 "  pp-1f1b, 3d, pp-interleaved, tp-sp, cp-ring,", "DataParallel DDP ZeRO-1",
                 "  --checkpoint   activation checkpointing: 각 층의 입력만"]:
        assert not english_only(line), line


@pytest.mark.parametrize("name", list(MAINS))
def test_every_option_has_a_help_text(name, monkeypatch):
    p = parser_of(name, monkeypatch)
    assert isinstance(p, parser.ArgumentParser), name          # speaks MINIMEGATRON_LANG
    missing = [(sub.prog, action.dest) for sub, action in actions(p) if not action.help]
    assert missing == [], missing
    for sub, action in actions(p):
        if isinstance(action, argparse._SubParsersAction):     # each sub-command's line
            assert all(choice.help for choice in action._choices_actions), sub.prog
    text = p.format_help()
    assert "`" not in text, text                               # no raw ``backticks``
    assert len(text.splitlines()) < 80, text


def test_every_number_of_memory_is_a_checked_type(monkeypatch):
    from minimegatron.commands import argtypes
    checked = {getattr(argtypes, n) for n in dir(argtypes) if callable(getattr(argtypes, n))}
    p = parser_of("memory", monkeypatch)
    typed = [a for _, a in actions(p) if a.nargs is None and not a.option_strings == []
             and a.const is None and a.choices is None]
    assert {a.dest for a in typed} >= {"layers", "capacity_factor", "hardware", "experts"}
    assert [a.dest for a in typed if a.type not in checked] == []
    schedule = next(a for _, a in actions(p) if a.dest == "schedule")
    assert list(schedule.choices) == list(SCHEDULES)             # the registry, not a list


def test_calibrate_help_is_short_and_names_no_internals(capsys):
    with pytest.raises(SystemExit):
        calibrate.main(["--help"])
    out = capsys.readouterr().out
    assert len(out.splitlines()) <= 12, out
    for internal in ("REPEATS", "fit_alpha_beta", "per_rank_flops", "busy"):
        assert internal not in out, out


def test_one_way_to_start_a_run_in_every_help(capsys):
    """``minimegatron run -n N`` everywhere; plain mpirun once, in run's help, as the other."""
    said = {}
    for argv in HELPS:
        with pytest.raises(SystemExit):
            MAINS[argv[0]](argv[1:])
        said[" ".join(argv)] = " ".join(capsys.readouterr().out.split())
    assert "minimegatron run -n N verify" in said["verify --help"]
    assert "minimegatron run -n N" in usage()
    assert {k: v.count("mpirun") for k, v in said.items() if "mpirun" in v} == {
        "run --help": 1}


@pytest.mark.parametrize("lang", ["en", "ko"])
def test_memory_capacity_factor_nan_or_negative_is_one_line(lang, monkeypatch, capsys):
    monkeypatch.setenv("MINIMEGATRON_LANG", lang)
    for value in ("-1", "nan", "inf", "x"):
        with pytest.raises(SystemExit) as code:
            memory.main(["moe", "--capacity-factor", value])
        out, err = capsys.readouterr()
        assert code.value.code == 2 and out == "", out
        errors = [line for line in err.splitlines() if "--capacity-factor" in line
                  and not line.startswith(" ")]
        assert len(errors) == 1 and repr(value) in errors[0], err
        assert ("오류" in errors[0]) == (lang == "ko"), err


def _korean(argv, capsys):
    """What ``minimegatron ARGV`` prints (stdout + stderr) under MINIMEGATRON_LANG=ko."""
    try:
        code = MAINS[argv[0]](argv[1:]) if argv[0] in MAINS else dispatch(argv)
    except SystemExit as exit_:
        code = exit_.code
    out, err = capsys.readouterr()
    return code, out + err


def test_korean_help_and_usage_errors_have_no_english_only_line(monkeypatch, capsys, tmp_path):
    monkeypatch.setenv("MINIMEGATRON_LANG", "ko")
    counts, seen = {}, {}
    for argv in HELPS + USAGE_ERRORS + [["--help"], ["nonsense"]]:
        code, text = _korean(argv, capsys)
        assert code == (0 if "--help" in argv else 2), (argv, text)
        assert "Traceback" not in text, text
        counts[" ".join(argv)] = english_lines(text)
        seen[" ".join(argv)] = text
    code, listed = _korean(["exercises", "list"], capsys)
    counts["exercises list"] = english_lines(listed)
    code, made = _korean(["exercises", "make", str(tmp_path / "alice")], capsys)
    assert code == 0 and "다음 (학생)" in made, made
    counts["exercises make"] = english_lines(made)
    assert {k: v for k, v in counts.items() if v} == {}
    assert "사용법: minimegatron memory" in seen["memory --layers 0"]
    assert "오류: 인자 --layers: 양의 정수여야 합니다, 받은 값 '0'" in seen["memory --layers 0"]
    assert "이 도움말을 보여 주고 끝냅니다" in seen["run --help"]
    assert "연습 문제 '9.9'가 없습니다" in seen[f"grade 9.9 --path {REPO_ROOT}"]
    assert sum(len(text.splitlines()) for text in seen.values()) > 300


def test_english_is_argparse_own_text(capsys):
    with pytest.raises(SystemExit):
        memory.main(["--layers", "0"])
    err = capsys.readouterr().err
    assert err.startswith("usage: minimegatron memory [-h]"), err
    assert err.splitlines()[-1] == ("minimegatron memory: error: argument --layers: must be a "
                                    "positive integer, got '0'"), err
    assert sorted(parser.MSGIDS.values()) == sorted(
        k for k in __import__("minimegatron").i18n.en_cli.MESSAGES if k.startswith("argparse."))
    from minimegatron.i18n import en_cli
    for msgid, key in parser.MSGIDS.items():
        assert en_cli.MESSAGES[key] == msgid or key == "argparse.n1" and "%s argument" in msgid


def test_a_parser_that_only_parses_never_reaches_the_catalogue(monkeypatch):
    """Every tutorial's parser: built and given good arguments, it asks the catalogue for
    nothing; its --help says what argparse built in English in the reader's language, and
    the parser stays as built."""
    monkeypatch.setenv("MINIMEGATRON_LANG", "ko")
    asked, say = [], parser.say
    monkeypatch.setattr(parser, "say",
                        lambda key, **fields: asked.append(key) or say(key, **fields))
    p = parser.ArgumentParser(prog="t")
    p.add_argument("--layers", type=int)
    assert p.parse_args(["--layers", "2"]).layers == 2 and asked == []
    shown = p.format_help()
    assert "옵션:" in shown and "이 도움말을 보여 주고 끝냅니다" in shown, shown
    assert {"argparse.options", "argparse.help"} <= set(asked), asked
    assert p._optionals.title == "options"
    assert p._actions[0].help == "show this help message and exit"


@pytest.mark.parametrize("lang,words", [("en", "nothing parallel ran"),
                                        ("ko", "병렬로 실행된 것이 없습니다")])
def test_verify_on_one_rank_says_nothing_parallel_ran(lang, words):
    env = {**os.environ, "PYTHONPATH": REPO_ROOT, "MINIMEGATRON_LANG": lang}
    proc = subprocess.run([sys.executable, "-m", "minimegatron", "verify", "--schemes", "ddp",
                           "--steps", "1"], capture_output=True, text=True, env=env,
                          cwd=REPO_ROOT, timeout=300)
    assert proc.returncode == 0, proc.stderr
    last = proc.stdout.strip().splitlines()[-1]
    assert words in last and "minimegatron run -n 8 verify" in last, proc.stdout
    if lang == "ko":                          # the progress lines, the table and its summary
        assert english_lines(proc.stdout) == [], proc.stdout
        assert "행 1개 중 1개 통과, 0개 건너뜀 (float64, 허용 오차 = max(1e-09, 100 x" in proc.stdout


def test_the_dispatcher_table_is_every_command():
    assert sorted(COMMANDS) == sorted(MAINS)


def report_runs(tmp_path):
    """``minimegatron memory`` and ``timeline`` with their usual options (the docstrings' and
    the notes' examples): every view, every schedule, a trace."""
    calib = tmp_path / "calib.json"
    calib.write_text('{"gemm_flops": 2e10, "bandwidth_bytes_per_s": 5e9, "latency_s": 1e-6}')
    trace = tmp_path / "trace.json"
    trace.write_text(json.dumps([{"rank": r, "op": op, "start": r + b, "end": r + b + 1,
                                  "label": "mb0"} for r in range(2)
                                 for b, op in [(0, "forward"), (1, "wait"), (2, "backward")]]))
    png, chrome = str(tmp_path / "t.png"), str(tmp_path / "t.json")
    memory_runs = [[], ["table1"], ["table2"], ["zero"], ["scaling"], ["mixed"], ["moe"],
                   ["moe", "--ep", "4", "--dp", "4", "--capacity-factor", "1.25"],
                   ["--dp", "64", "--tp", "8", "--zero", "1"],
                   ["--tp", "8", "--sequence-parallel", "--checkpoint"],
                   ["--cp", "4", "--attention", "ring", "--pp", "4", "--micro-batches", "8"],
                   ["--cp", "2", "--attention", "ulysses", "--precision", "float32"],
                   ["--pp", "4", "--micro-batches", "8", "--schedule", "interleaved"],
                   ["scaling", "--hardware", str(calib)], ["--hardware", str(calib)]]
    timeline_runs = [["--schedule", name, "--out", png, "--chrome-trace", chrome]
                     for name in SCHEDULES]
    timeline_runs += [["--schedule", "1f1b", "--t-backward", "2", "--out", ""],
                      ["--schedule", "zb-h1", "--t-weight", "2", "--out", ""],
                      ["--schedule", "zbv", "--t-weight", "0.5", "--out", ""],
                      ["--trace", str(trace), "--out", png, "--chrome-trace", chrome]]
    return [["memory"] + argv for argv in memory_runs] + [["timeline"] + argv
                                                          for argv in timeline_runs]


def test_korean_memory_and_timeline_print_no_english_only_line(monkeypatch, capsys, tmp_path):
    """Their tables and lines under ko (tests/korean_lines.py's rule), every run a success."""
    pytest.importorskip("matplotlib")
    monkeypatch.setenv("MINIMEGATRON_LANG", "ko")
    counts, lines = {}, 0
    for argv in report_runs(tmp_path):
        code, text = _korean(argv, capsys)
        assert code == 0, (argv, text)
        counts[" ".join(argv)] = english_lines(text)
        lines += len(text.splitlines())
    english = {k: v for k, v in counts.items() if v}
    assert english == {}, (sum(map(len, english.values())), english)
    assert lines > 200
