"""Bad input is refused before any rank starts or any buffer is allocated: one line, exit 2,
no traceback, in English and Korean.

Before: ``run -n 100000`` started ranks until mpiexec ran out of descriptors (a 2-core
machine at load 241, then the OOM killer); ``run -n 2 verifyy`` started the ranks and each
printed the error; ``timeline --stages 100000 --micro-batches 100000`` ended in
MemoryError; ``memory --heads 5 --hidden 3072`` printed a result; ``MoETrainer(clip_grad=
-1.0)`` ascended and ``clip_grad=nan`` skipped clipping; ``MoEConfig(capacity_factor=1e4)``
allocated (8, 160000, 64) buffers; True was taken as 1 for micro-batches, the ZeRO stage
and the vocabulary size.
"""
import math
import re

import numpy as np
import pytest

from mpi_harness import minimegatron_run
from minimegatron.commands import argtypes, memory, run, timeline
from minimegatron.data.demo import SMALL_CONFIG, make_optimizer
from minimegatron.i18n import book_errors
from minimegatron.nn.gpt import GPTConfig
from minimegatron.nn.moe import MoEConfig
from minimegatron.parallel.expert_parallel import MoETrainer
from minimegatron.parallel.grid import ProcessGrid
from minimegatron.parallel.threed import Trainer3D
from minimegatron.runtime import capacity, launcher

HANGUL = re.compile("[\uac00-\ud7a3]")
MAINS = {"memory": memory.main, "timeline": timeline.main, "run": run.main}
CLI = [("timeline", ["--stages", "100000", "--micro-batches", "100000"], "--stages"),
       ("timeline", ["--micro-batches", "100000"], "--micro-batches"),
       ("timeline", ["--schedule", "interleaved", "--chunks", "100000"], "--chunks"),
       ("memory", ["--heads", "5", "--hidden", "3072"], "--heads 5"),
       ("memory", ["--pp", "100000", "--layers", "100000"], "--pp"),
       ("memory", ["--schedule", "zbv", "--pp", "4", "--layers", "8", "--micro-batches",
                   "100000"], "--micro-batches 128"),
       ("run", ["-n", "100000", "verify"], "MINIMEGATRON_MAX_RANKS=100000"),
       ("run", ["-n", "2", "verifyy"], "'verify'"),
       ("run", ["-n", "2", "nothing"], "'nothing'")]


@pytest.fixture
def no_launch(monkeypatch):
    """Any rank started fails the test: the launcher's command is never built."""
    def started(*args, **kwargs):
        raise AssertionError("ranks were started")
    monkeypatch.setattr(launcher, "build_command", started)
    monkeypatch.setattr(launcher, "supervise", started)


def one_line_error(command, argv, capsys):
    """(the error line, stdout): exit 2, no traceback, exactly one error line."""
    with pytest.raises(SystemExit) as stop:
        MAINS[command](argv)
    out, err = capsys.readouterr()
    assert stop.value.code == 2, (argv, out, err)
    assert "Traceback" not in out + err
    lines = [line for line in err.splitlines() if line.startswith(f"minimegatron {command}: ")]
    assert len(lines) == 1 and ("error:" in lines[0] or "오류:" in lines[0]), err
    return lines[0], out


@pytest.mark.parametrize("lang", ["en", "ko"])
@pytest.mark.parametrize("command, argv, named", CLI, ids=[" ".join([c] + a) for c, a, _ in CLI])
def test_bad_sizes_and_names_are_one_line_before_any_work(command, argv, named, lang,
                                                           monkeypatch, capsys, no_launch):
    monkeypatch.setenv("MINIMEGATRON_LANG", lang)
    monkeypatch.delenv(capacity.MAX_RANKS_ENV, raising=False)
    line, out = one_line_error(command, argv, capsys)
    assert named in line, line
    assert out == ""                                        # nothing printed, nothing computed
    assert bool(HANGUL.search(line)) == (lang == "ko"), line


def test_run_names_the_limit_and_its_override(monkeypatch, capsys, no_launch):
    monkeypatch.delenv(capacity.MAX_RANKS_ENV, raising=False)
    most, why = capacity.max_ranks()
    assert 1 <= most <= why["cores"] * capacity.RANKS_PER_CORE
    line, _ = one_line_error("run", ["-n", str(most + 1), "verify"], capsys)
    assert f"at most {most} ranks ({why['cores']} cores x 32" in line, line
    monkeypatch.setenv(capacity.MAX_RANKS_ENV, "3")
    assert "more than MINIMEGATRON_MAX_RANKS=3 allows" in one_line_error(
        "run", ["-n", "4", "verify"], capsys)[0]
    monkeypatch.setenv(capacity.MAX_RANKS_ENV, "many")
    assert "MINIMEGATRON_MAX_RANKS must be a positive integer, got 'many'" in one_line_error(
        "run", ["-n", "4", "verify"], capsys)[0]


def test_run_within_the_limit_and_a_known_command_still_launch(monkeypatch):
    """The checks refuse only what they should: -n at the override, ``verify``, a script."""
    launched = []
    monkeypatch.setattr(launcher, "build_command", lambda n, target, args: launched.append(
        (n, target)) or ["true"])
    monkeypatch.setattr(launcher, "supervise", lambda cmd, n, timeout, env: 0)
    monkeypatch.setenv(capacity.MAX_RANKS_ENV, "100000")
    assert run.main(["-n", "100000", "verify"]) == 0
    assert run.main(["-n", "2", __file__]) == 0
    assert launched == [(100000, "verify"), (2, __file__)]


def test_a_misspelt_command_is_said_once_before_any_rank_starts():
    code, out, err, seconds = minimegatron_run("-n", "2", "verifyy", timeout=60)
    assert code == 2 and "Traceback" not in out + err
    errors = [line for line in err.splitlines() if "error" in line]
    assert errors == ["minimegatron run: error: no such script or command: 'verifyy' (a "
                      "script ends in .py; commands: run, verify, memory, calibrate, "
                      "timeline, exercises, grade, sample); did you mean 'verify'?"], err
    assert "[rank" not in out + err and "package" not in out    # no rank, no banner


def test_the_bounds_cost_seconds_at_their_corner(capsys):
    """At the bounds the timeline still draws (it is a limit, not a wall before nothing)."""
    assert timeline.main(["--stages", str(argtypes.MAX_STAGES), "--micro-batches",
                          str(argtypes.MAX_STAGES), "--out", ""]) == 0
    assert "makespan" in capsys.readouterr().out


def _moe(**options):
    return MoETrainer(SMALL_CONFIG, MoEConfig(4, 2, 1.0), ProcessGrid(),
                      optimizer_fn=make_optimizer, **options)


BOOK = {
    "clip_negative": (lambda: _moe(clip_grad=-1.0), "clip_grad must be a finite number"),
    "clip_nan": (lambda: _moe(clip_grad=math.nan), "got nan"),
    "clip_true": (lambda: _moe(clip_grad=True), "got True"),
    "capacity": (lambda: MoEConfig(8, 2, 1e4), "capacity_factor=10000.0 > num_experts/top_k"),
    "micro_true": (lambda: Trainer3D(SMALL_CONFIG, ProcessGrid(), micro_batches=True,
                                             optimizer_fn=make_optimizer),
                   "micro_batches must be an int >= 1, got True"),
    "zero_true": (lambda: Trainer3D(SMALL_CONFIG, ProcessGrid(), zero_stage=True,
                                            optimizer_fn=make_optimizer),
                  "got zero_stage=True"),
    "vocab_true": (lambda: GPTConfig(vocab_size=True), "GPTConfig.vocab_size must be an int"),
}


@pytest.mark.parametrize("case", sorted(BOOK))
def test_the_book_refuses_nonsense_numbers_in_both_languages(case):
    call, words = BOOK[case]
    with pytest.raises(ValueError) as error:
        call()
    message = str(error.value)
    assert words in message and "\n" not in message, message
    assert HANGUL.search(book_errors.translate(message, "ko")), message


def test_numbers_at_the_bounds_and_numpy_integers_are_taken():
    assert MoEConfig(8, 2, 4.0).capacity(8) == 8                 # f = E/k: C = T, the most
    moe = MoEConfig(np.int64(8), np.int64(2), np.float32(1.0))
    assert (type(moe.num_experts), type(moe.capacity_factor)) == (int, float)
    config = GPTConfig(vocab_size=np.int64(16), n_layer=np.int32(2), seed=np.int64(3))
    assert (type(config.vocab_size), type(config.seed)) == (int, int)
    trainer = Trainer3D(SMALL_CONFIG, ProcessGrid(np.int64(1)), micro_batches=np.int64(2),
                        zero_stage=np.int64(1), optimizer_fn=make_optimizer)
    assert (trainer.micro_batches, trainer.zero_stage) == (2, 1)
    assert type(trainer.zero_stage) is int
