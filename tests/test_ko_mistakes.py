"""A Korean student's mistakes are answered in Korean: no English-only line under
MINIMEGATRON_LANG=ko (tests/korean_lines.py's rule, each error line judged after its
"오류:" label), each mistake answered by the error it is about, on every rank.

- ``MISTAKES``: what a student gets wrong at the command line (40 or more), in ONE process
  (tests/workers/ko_mistakes.py: ``python -m minimegatron ...`` is ``commands.cli.main``,
  a tutorial runs as ``__main__``): misspelt commands and flags (with the one meant),
  bad numbers (negative, zero, not a number, sizes that do not divide), missing files,
  folders and checkpoints, verify on one rank (its SKIP reasons) and tutorials on one
  rank where they need more, or with a bad flag;
- ``WRONG_N``: every tutorial that has a wrong rank count, on 5 ranks in ONE launch
  (tutorials 00, 01 and 05 run on any count), with verify's bad flags (``UNDER_RUN``): each
  rank must end with the same error before any collective, printed once, in Korean; a script that fails on rank 0 alone
  (``workers/ko_mistake_rank0_only.py``, the bug tutorial 13 had) is caught;
- argparse's own "unrecognized arguments" (``parse_args`` builds it after the wrapped
  ``parse_known_args`` returned, so it needs its own wrapping), with the flag meant;
- verify's SKIP reasons, its own and the book's, for every scheme on 1 and 3 ranks;
- the rule fails when one Korean string of the catalogue is English again.
"""
import importlib.util
import json
import os
import subprocess
import sys

import pytest

from korean_lines import english_lines, english_messages
from minimegatron import i18n
from minimegatron.checks import verify
from minimegatron.commands.parser import ArgumentParser
from mpi_harness import run_mpi

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
WORKER = os.path.join(ROOT, "tests", "workers", "ko_mistakes.py")

# (what the student typed after `python -m minimegatron` or `python`, what must be said)
MISTAKES = [
    # a misspelt command: the commands, and the one meant
    ("rnu -n 2 x.py", "알 수 없는 명령 'rnu'. 혹시 'run'"),
    ("memroy", "혹시 'memory'"),
    ("veryfi", "혹시 'verify'"),
    ("exercise list", "혹시 'exercises'"),
    ("grde 3.2", "혹시 'grade'"),
    ("smaple --checkpoint x", "혹시 'sample'"),
    ("timelin", "혹시 'timeline'"),
    ("run -n 2 verfy", "혹시 'verify'"),
    # a misspelt flag, and the one meant
    ("memory --layrs=4 --bogus", "알 수 없는 인자: --layrs=4 --bogus. 혹시 --layers"),
    ("memory --micro-bathces 2", "혹시 --micro-batches"),
    ("timeline --stags 4", "혹시 --stages"),
    ("verify --dtpye float32", "혹시 --dtype"),
    ("grade --pth copy", "혹시 --path"),
    ("sample --chekpoint x.npz", "다음 인자가 필요합니다: --checkpoint. 혹시 --checkpoint"),
    ("calibrate --rnaks 2", "혹시 --ranks"),
    ("exercises list --bogus", "알 수 없는 인자: --bogus"),
    ("exercises mkae x", "잘못된 선택 'mkae'"),
    ("memory tabel1", "잘못된 선택 'tabel1'"),
    ("memory --schedule 1f1f", "잘못된 선택 '1f1f'"),
    ("memory --zero 4", "잘못된 선택 4"),
    ("tutorials/05_data_parallel.py --stpes 3", "혹시 --steps"),
    ("tutorials/08_3d_parallel.py --save x.npz", "알 수 없는 인자: --save x.npz"),
    ("tutorials/00_autodiff_and_gpt.py --bogus", "알 수 없는 인자: --bogus"),
    # a bad number: zero, negative, not a number
    ("memory --layers 0", "인자 --layers: 양의 정수여야 합니다, 받은 값 '0'"),
    ("memory --layers -2", "받은 값 '-2'"),
    ("memory --hidden abc", "인자 --hidden: 양의 정수여야 합니다, 받은 값 'abc'"),
    ("memory --micro-batches 0", "인자 --micro-batches: 양의 정수여야"),
    ("memory --dp 0", "인자 --dp: 양의 정수여야"),
    ("memory moe --top-k 0", "인자 --top-k: 양의 정수여야"),
    ("timeline --stages 0", "1부터 64까지의 정수여야 합니다, 받은 값 '0'"),
    ("timeline --micro-batches -1", "1부터 128까지의 정수여야"),
    ("timeline --schedule interleaved --chunks 0", "인자 --chunks"),
    ("grade --timeout -1", "인자 --timeout: 유한한 양수여야"),
    ("grade --jobs 0 --class class", "인자 --jobs: 양의 정수여야"),
    ("sample --checkpoint x.npz --temperature 0", "인자 --temperature: 유한한 양수여야"),
    ("verify --steps 0", "인자 --steps: 양의 정수여야"),
    ("verify --schemes dpp", "알 수 없는 방식 ['dpp']"),
    ("run -n 0 tutorials/03_tensor_parallel_mlp.py", "인자 -n/--np: 양의 정수여야"),
    ("run -n two x.py", "받은 값 'two'"),
    ("run -n 2 --timeout -5 x.py", "인자 --timeout: 유한한 양수여야"),
    ("calibrate --ranks 0", "인자 --ranks: 양의 정수여야"),
    ("tutorials/05_data_parallel.py --steps 0", "인자 --steps: 양의 정수여야 합니다, 받은 값 '0'"),
    ("tutorials/06_zero.py --steps -1", "인자 --steps: 양의 정수여야 합니다, 받은 값 '-1'"),
    ("tutorials/11_mixed_precision.py --steps abc", "인자 --steps: 양의 정수여야"),
    ("tutorials/07_pipeline.py --repeats 0", "인자 --repeats: 양의 정수여야"),
    ("tutorials/13_zero_bubble.py --t-step 0", "인자 --t-step: 유한한 양수여야"),
    # sizes that do not divide
    ("memory --hidden 100 --heads 3", "--hidden 100은 --heads 3으로 나누어떨어져야"),
    ("memory --tp 3", "--tp 3으로 나누어떨어져야"),
    ("memory --pp 5", "--layers 72는 --pp 5로"),
    ("memory --seq 1000 --cp 3", "--seq 1000을 같은 크기의 조각 6개로"),
    ("memory moe --experts 3 --ep 2", "--ep 2는 --experts 3과"),
    ("timeline --schedule dualpipe --stages 3", "짝수 개의 stage와"),
    ("timeline --schedule interleaved --micro-batches 6", "stage 수의 배수여야 합니다: M=6, K=4"),
    ("tutorials/08_3d_parallel.py --dp 3", "= 12인데 이 job의 rank는 1개입니다. -n 12로"),
    # something missing: an argument, a file, a folder, a checkpoint
    ("run tutorials/03_tensor_parallel_mlp.py", "다음 인자가 필요합니다: -n/--np"),
    ("run -n 2 tutorials/nope.py", "스크립트가 없습니다: tutorials/nope.py"),
    ("memory --hardware nope.json", "파일이 없습니다: 'nope.json'"),
    ("timeline --trace nope.json", "파일이 없습니다: 'nope.json'"),
    ("calibrate --out nope/x.json --no-mpi", "'nope/x.json'의 폴더가 없습니다"),
    ("sample", "다음 인자가 필요합니다: --checkpoint"),
    ("sample --checkpoint nope.npz", "checkpoint 'nope.npz': 그런 파일이 없습니다"),
    ("sample --checkpoint README.md", "checkpoint 'README.md'가 잘렸거나 손상되었습니다"),
    ("grade --path nope", "minimegatron/ 패키지가 없습니다"),
    ("grade --class nope", "반 폴더 nope가 없습니다"),
    ("grade 9.9", "연습 문제 '9.9'가 없습니다"),
    ("exercises make", "다음 인자가 필요합니다: DIR"),
    ("exercises make README.md", "README.md는 파일입니다: 새 폴더를 고르세요"),
    ("exercises solve nope", "다음 인자가 필요합니다: ID"),
    ("exercises solve nope 1.1", "nope에 minimegatron/ 패키지가 없습니다"),
    ("exercises make /", "/에는 사본을 쓰지 않습니다"),
    ("memory --hardware README.md", "인자 --hardware: 'README.md'를 읽을 수 없습니다"),
    ("timeline --trace README.md", "span 목록이 아닙니다"),
    # verify on one rank: what it skips and why
    ("verify --schemes pp-interleaved,hsdp,3d,4d-ring,pp-dualpipe,moe-sp,moe-recompute",
     "SKIP (HSDP는 2개씩 복제하므로"),
    # a tutorial on one rank that needs more
    ("tutorials/02_worked_example.py", "-n 1이 아니라 -n 2로 실행하세요"),
    ("tutorials/08_3d_parallel.py", "이 job의 rank는 1개입니다. -n 8로 실행하거나"),
    ("tutorials/13_zero_bubble.py", "K가 짝수여야 합니다: 이 job의 rank는 1개입니다. -n 4로"),
    ("tutorials/14_mixture_of_experts.py", "ep=4가 grid에 맞지 않습니다"),
] + ([] if importlib.util.find_spec("cupy") else [       # a laptop: no CuPy for --backend cupy
    ("verify --backend cupy --schemes tp", "--backend cupy에는 CuPy와 GPU가 필요합니다")])
# each tutorial with a wrong rank count at 5 ranks: what every rank must end with
WRONG_N = {
    "02_worked_example": "-n 5가 아니라 -n 2로 실행하세요",
    "03_tensor_parallel_mlp": "out_features=32가 tp=5로 나누어떨어지지 않습니다",
    "04_megatron_gpt": "d_model=32가 tp=5로 나누어떨어지지 않습니다",
    "06_zero": "rank 5개에 똑같이 나뉘지 않습니다",
    "07_pipeline": "stage 5개의 pipeline인데 모델의 layer는 4개뿐입니다",
    "08_3d_parallel": "이 job의 rank는 5개입니다. -n 8로 실행하거나",
    "09_interleaved_1f1b": "stage 10개의 pipeline인데 모델의 layer는 8개뿐입니다",
    "10_sequence_parallel": "d_model=32가 tp=5로 나누어떨어지지 않습니다",
    "11_mixed_precision": "rank 5개에 똑같이 나뉘지 않습니다",
    "12_context_parallel": "chunk 10개로 나뉘지 않습니다",
    "13_zero_bubble": "이 job의 rank는 5개입니다. -n 4로 실행하세요",
    "14_mixture_of_experts": "ep는 5를 나눠야 합니다",
}
# commands under `minimegatron run -n 5`: a bad flag ends every rank the same way
UNDER_RUN = {
    "verify --schemes dpp": "알 수 없는 방식 ['dpp']",
    "verify --steps 0": "인자 --steps: 양의 정수여야 합니다, 받은 값 '0'",
    "verify --stesp 2": "혹시 --steps",
}
RANK0_ONLY = "tests/workers/ko_mistake_rank0_only.py"


def test_the_list_is_long_and_covers_every_command():
    commands = {argv.split()[0] for argv, _ in MISTAKES}
    assert len(MISTAKES) >= 40 and len({argv for argv, _ in MISTAKES}) == len(MISTAKES)
    assert {"run", "verify", "memory", "timeline", "exercises", "grade", "sample",
            "calibrate"} <= commands, commands
    tutorials = {name[:-3] for name in os.listdir(os.path.join(ROOT, "tutorials"))
                 if name.endswith(".py")}
    # a tutorial missing from WRONG_N runs on any rank count (its own test says so)
    assert tutorials - set(WRONG_N) == {"00_autodiff_and_gpt", "01_collectives",
                                        "05_data_parallel"}, tutorials - set(WRONG_N)


@pytest.fixture(scope="module")
def answers(tmp_path_factory):
    """{argv: (exit code, output)} of every mistake, run in one process under ko."""
    folder = tmp_path_factory.mktemp("ko_mistakes")
    source, destination = folder / "mistakes.json", folder / "answers.json"
    source.write_text(json.dumps([argv.split() for argv, _ in MISTAKES]))
    env = dict(os.environ, MINIMEGATRON_LANG="ko")
    env["PYTHONPATH"] = ROOT + os.pathsep + env.get("PYTHONPATH", "")
    subprocess.run([sys.executable, WORKER, str(source), str(destination)], env=env, cwd=ROOT,
                   check=True, timeout=300)
    found = json.loads(destination.read_text())
    return {argv: tuple(answer) for (argv, _), answer in zip(MISTAKES, found)}


def test_the_rule_catches_the_english_these_mistakes_used_to_print():
    for english in ("minimegatron memory: 오류: unrecognized arguments: --bogus",
                    "error: the worked example splits A over 2 ranks; run it with -n 2, not -n 1",
                    "SKIP (sequence parallelism needs tp > 1 (an even world))",
                    "minimegatron exercises: 오류: /home/a/README.md is a file; choose a new "
                    "directory",
                    "오류: 13_zero_bubble.py: --micro-batches 8: ZBV needs at least 2K - 1 = 9",
                    "[13/36] pipe interl. 1x1x1, M=4     loss  1.8e-07  gradient  2.3e-06  "
                    "weight  4.7e-05  PASS    0.1 s"):
        assert english_messages(english), english


@pytest.mark.parametrize("argv, said", MISTAKES, ids=[argv for argv, _ in MISTAKES])
def test_a_mistake_is_answered_in_korean(answers, argv, said):
    code, out = answers[argv]
    expected = 0 if argv.startswith("verify --schemes pp-") else 2    # SKIP: not a failure
    assert code == expected and said in out, (code, out)
    assert "Traceback" not in out and english_messages(out) == [], out


def test_a_wrong_rank_count_ends_every_rank_with_one_korean_line():
    """One launch of 5 ranks runs each tutorial that cannot take 5, verify with bad flags, and
    a planted script that fails on rank 0 alone, which ``wrong_n_faults`` must name."""
    mistakes = {f"tutorials/{name}.py": said for name, said in WRONG_N.items()}
    mistakes.update(UNDER_RUN)
    ranks = run_mpi(5, "workers/ko_mistakes.py:wrong_n", args=(list(mistakes) + [RANK0_ONLY],),
                    timeout=180, env={"MINIMEGATRON_LANG": "ko"})
    for argv, said in mistakes.items():
        assert wrong_n_faults([rank[argv] for rank in ranks], said) == [], (argv, ranks)
    planted = wrong_n_faults([rank[RANK0_ONLY] for rank in ranks], "rank 0")
    assert any("ranks [1, 2, 3, 4] went on" in fault for fault in planted), planted


def wrong_n_faults(per_rank, said):
    """What is wrong with one tutorial's ending on every rank: [code, message, output] each."""
    faults = []
    went_on = [r for r, (code, _, _) in enumerate(per_rank) if code != 2]
    if went_on:
        faults.append(f"ranks {went_on} went on (exit codes "
                      f"{[per_rank[r][0] for r in went_on]})")
    if len({message for _, message, _ in per_rank}) != 1:
        faults.append(f"the ranks said different things: {[m for _, m, _ in per_rank]}")
    shown = [line for line in per_rank[0][2].splitlines() if "오류:" in line]
    if len(shown) != 1 or said not in shown[0]:
        faults.append(f"rank 0 printed {shown}, not one line with {said!r}")
    if any("오류:" in out for _, _, out in per_rank[1:]):
        faults.append("a rank other than 0 printed the error too (it is said once)")
    faults += [f"English: {line}" for line in english_messages(per_rank[0][2])]
    return faults


def test_one_korean_string_put_back_in_english_is_caught(monkeypatch, capsys):
    """The rule holds the catalogue: the same mistake, its Korean text reverted, fails it."""
    from minimegatron.commands import cli                     # (no MPI, no runtime setup)
    monkeypatch.setenv("MINIMEGATRON_LANG", "ko")
    monkeypatch.chdir(ROOT)
    argv = ["exercises", "make", "README.md"]
    assert cli.main(argv) == 2
    assert english_messages(capsys.readouterr().err) == []
    monkeypatch.setitem(i18n.CATALOGS["ko"], "cli.exercises.is_file",
                        i18n.CATALOGS["en"]["cli.exercises.is_file"])
    assert cli.main(argv) == 2
    out = capsys.readouterr().err
    assert english_messages(out) == [out.strip()], out


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
    needs = ArgumentParser(prog="demo")                 # argparse stops first at what is missing
    needs.add_argument("--checkpoint", required=True)
    needs.add_argument("--prompt")
    for argv, said in ((["--chekpoint", "x.npz"], "required: --checkpoint; did you mean "
                                                  "--checkpoint?"),
                       (["--prom", "x"], "required: --checkpoint\n")):   # an abbreviation: fine
        with pytest.raises(SystemExit):
            needs.parse_args(argv)
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
