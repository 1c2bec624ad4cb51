"""The README's demo writes text, and ``minimegatron sample`` writes it again from the file.

Three tutorial runs (tutorials/08_3d_parallel.py), each saving its model:
the default 300 steps on one process (dp = pp = tp = 1: the same training as
the 8-rank demo, one rank), and 3 steps on 4 ranks (pp 2 x tp 2) and on one
process. The trained text must be word-like (most of its words are corpus
words), the untrained and the 3-step text must not be; ``sample`` must write
exactly the text the tutorial printed, from a serial and from a parallel
checkpoint, and fail in one line for bad files and prompts. About 60-90 s.
"""
import os
import re
import subprocess
import sys

import pytest

from mpi_harness import REPO_ROOT, run_mpi, run_script

TUTORIAL = "tutorials/08_3d_parallel.py"
SERIAL = ["--dp", "1", "--pp", "1", "--tp", "1"]


def samples(out):
    """{"before training" | "after N steps": (found, total, text)} from the tutorial's output."""
    found = {}
    for when, hit, total, body in re.findall(
            r"^(before training|after \d+ steps): (\d+) of (\d+) words are corpus words "
            r"\(\d+%\)\n((?:  \| .*\n)+)", out, re.M):
        text = "\n".join(line[4:] for line in body.rstrip("\n").split("\n"))
        found[when] = (int(hit), int(total), text)
    return found


def sample_cli(*args):
    env = {**os.environ, "PYTHONPATH": REPO_ROOT}
    done = subprocess.run([sys.executable, "-m", "minimegatron", "sample", *args], env=env,
                          capture_output=True, text=True, timeout=120, cwd=REPO_ROOT)
    text = done.stdout.split("\n", 1)[1] if "\n" in done.stdout else ""   # after the banner
    return done.returncode, text[:-1], done.stderr                      # less print's "\n"


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    out = {}
    for name, ranks, args in [("trained", 1, SERIAL), ("serial3", 1, SERIAL + ["--steps", "3"]),
                              ("pp2tp2", 4, ["--dp", "1", "--pp", "2", "--tp", "2",
                                             "--steps", "3"])]:
        folder = tmp_path_factory.mktemp(name)
        code, stdout, stderr = run_script(ranks, TUTORIAL, args + ["--out", str(folder)],
                                          timeout=400)
        assert code == 0, stdout + stderr
        out[name] = (stdout, os.path.join(folder, "3d_gpt.npz"))
    return out


def test_the_demo_ends_with_words(runs):
    stdout, _ = runs["trained"]
    got = samples(stdout)
    assert sorted(got) == ["after 300 steps", "before training"]
    hit, total, text = got["after 300 steps"]
    assert text.startswith("In ") and len(text) > 150 and total >= 15
    assert hit / total >= 0.35                                       # trained: words
    hit0, total0, _ = got["before training"]
    assert hit0 / total0 <= 0.15                                     # random weights: letters
    assert "the serial model writes the same text: yes" in stdout
    assert stdout.rstrip().endswith("--prompt 'In pipeline'")       # the sample ends the demo


def test_three_steps_are_not_enough(runs):
    for name in ("serial3", "pp2tp2"):
        hit, total, _ = samples(runs[name][0])["after 3 steps"]
        assert hit / total <= 0.15, name


def test_sample_writes_the_tutorial_text_from_any_grid(runs):
    for name in ("trained", "serial3", "pp2tp2"):
        stdout, path = runs[name]
        code, text, err = sample_cli("--checkpoint", path, "--tokens", "160",
                                     "--temperature", "0.8", "--seed", "0")
        assert code == 0, err
        after = [v for k, v in samples(stdout).items() if k.startswith("after")]
        assert len(after) == 1 and text.rstrip("\n") == after[0][2], name   # as printed
    _, serial3 = runs["serial3"]
    _, parallel3 = runs["pp2tp2"]
    assert sample_cli("--checkpoint", serial3)[1] == sample_cli("--checkpoint", parallel3)[1]
    code, text, _ = sample_cli("--checkpoint", runs["trained"][1], "--prompt", "In pipeline",
                               "--tokens", "40", "--top-k", "3", "--seed", "7")
    assert code == 0 and text.startswith("In pipeline") and len(text) == 11 + 40


def test_sample_errors_are_one_line(runs, tmp_path):
    good = runs["serial3"][1]
    broken = tmp_path / "broken.npz"
    broken.write_bytes(open(good, "rb").read()[:2000])
    repeat = str(tmp_path / "repeat.npz")
    assert run_mpi(1, "workers/sample_checks.py:save_repeat_task_model", args=(repeat,)) == [24]
    for args, words in [(["--checkpoint", str(tmp_path / "none.npz")], "no such file"),
                        (["--checkpoint", str(broken)], "truncated or corrupt"),
                        (["--checkpoint", repeat], "vocabulary of 24 tokens"),
                        (["--checkpoint", good, "--prompt", "Zebra"],
                         "character 'Z' is not in the vocabulary"),
                        (["--checkpoint", good, "--prompt", ""], "the prompt is empty")]:
        code, _, err = sample_cli(*args)
        lines = err.strip().splitlines()
        assert code == 2 and len(lines) == 1 and words in lines[0], (args, err)
        assert lines[0].startswith("error: ")
